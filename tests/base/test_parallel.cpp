// pacl::ParallelFor and pacl::NumThreads: the chunk partition, exactly-once coverage, determinism of chunked
// reductions (also across thread counts, in child processes), nesting, concurrent callers, exceptions, and the
// ACLNN_NUM_THREADS / affinity rules of NumThreads (child processes, since NumThreads is read once per process).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "acl/acl.h"
#include "pacl/parallel.h"
#include "portable_aclnn/threads.h"
#include "self_command.h"

extern char** environ;

namespace {

using Chunk = std::pair<int64_t, int64_t>;

// The partition ParallelFor promises, computed independently.
std::vector<Chunk> ExpectedChunks(int64_t total, int64_t chunk_size) {
  std::vector<Chunk> chunks;
  if (chunk_size < 1) chunk_size = 1;
  for (int64_t begin = 0; begin < total; begin += chunk_size) {
    chunks.emplace_back(begin, std::min(total, begin + chunk_size));
  }
  return chunks;
}

// Runs ParallelFor and returns the (begin, end) pairs it produced, sorted.
std::vector<Chunk> RecordChunks(int64_t total, int64_t chunk_size) {
  std::mutex mutex;
  std::vector<Chunk> chunks;
  pacl::ParallelFor(total, chunk_size, [&](int64_t begin, int64_t end) {
    std::lock_guard<std::mutex> lock(mutex);
    chunks.emplace_back(begin, end);
  });
  std::sort(chunks.begin(), chunks.end());
  return chunks;
}

TEST(ParallelForTest, NumThreadsIsInRange) {
  const int threads = pacl::NumThreads();
  EXPECT_GE(threads, 1);
  EXPECT_EQ(threads, pacl::NumThreads());  // read once
}

TEST(ParallelForTest, CoversEveryIndexExactlyOnceWithTheDocumentedChunks) {
  const int64_t totals[] = {0, 1, 2, 3, 7, 13, 64, 97, 1000, 4099};
  for (int64_t total : totals) {
    const int64_t chunk_sizes[] = {-5, 0, 1, 2, 3, 7, 31, 64, 1000, 5000, total, total + 1};
    for (int64_t chunk_size : chunk_sizes) {
      SCOPED_TRACE("total " + std::to_string(total) + ", chunk_size " + std::to_string(chunk_size));
      std::vector<std::atomic<int>> visits(static_cast<size_t>(total));
      for (auto& v : visits) v.store(0);
      std::mutex mutex;
      std::vector<Chunk> chunks;
      pacl::ParallelFor(total, chunk_size, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) visits[static_cast<size_t>(i)].fetch_add(1);
        std::lock_guard<std::mutex> lock(mutex);
        chunks.emplace_back(begin, end);
      });
      std::sort(chunks.begin(), chunks.end());
      EXPECT_EQ(chunks, ExpectedChunks(total, chunk_size));
      int64_t wrong = 0;
      for (auto& v : visits) wrong += v.load() != 1;
      EXPECT_EQ(wrong, 0);
    }
  }
}

TEST(ParallelForTest, NonPositiveTotalCallsNothing) {
  for (int64_t total : {int64_t{0}, int64_t{-1}, std::numeric_limits<int64_t>::min()}) {
    std::atomic<int> calls{0};
    pacl::ParallelFor(total, 4, [&](int64_t, int64_t) { calls.fetch_add(1); });
    EXPECT_EQ(calls.load(), 0) << "total " << total;
  }
}

TEST(ParallelForTest, ExtremeSizesDoNotOverflow) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(RecordChunks(10, kMax), (std::vector<Chunk>{{0, 10}}));
  EXPECT_EQ(RecordChunks(kMax, kMax), (std::vector<Chunk>{{0, kMax}}));
  const int64_t half = kMax / 2 + 1;
  EXPECT_EQ(RecordChunks(kMax, half), (std::vector<Chunk>{{0, half}, {half, kMax}}));
  const int64_t third = kMax / 3;
  EXPECT_EQ(RecordChunks(kMax, third),
            (std::vector<Chunk>{{0, third}, {third, 2 * third}, {2 * third, 3 * third}, {3 * third, kMax}}));
}

// Per-chunk float sums combined in chunk order: the pattern kernels use for deterministic reductions.
float ChunkedSum(const std::vector<float>& data, int64_t chunk_size) {
  const int64_t total = static_cast<int64_t>(data.size());
  const int64_t num_chunks = (total + chunk_size - 1) / chunk_size;
  std::vector<float> partial(static_cast<size_t>(num_chunks), std::numeric_limits<float>::quiet_NaN());
  pacl::ParallelFor(total, chunk_size, [&](int64_t begin, int64_t end) {
    float sum = 0.0f;
    for (int64_t i = begin; i < end; ++i) sum += data[static_cast<size_t>(i)] * data[static_cast<size_t>(i)];
    partial[static_cast<size_t>(begin / chunk_size)] = sum;
  });
  float result = 0.0f;
  for (float p : partial) result += p;
  return result;
}

std::vector<float> ReductionInput() {
  std::mt19937 rng(12345);
  std::uniform_real_distribution<float> dist(-3.0f, 3.0f);
  std::vector<float> data(100003);
  for (float& v : data) v = dist(rng);
  return data;
}

uint32_t Bits(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  return bits;
}

TEST(ParallelForTest, ChunkedReductionIsBitIdenticalAcrossRunsAndEqualsSerialOrder) {
  const std::vector<float> data = ReductionInput();
  constexpr int64_t kChunk = 997;
  // The same chunking evaluated serially, without ParallelFor.
  float serial = 0.0f;
  for (size_t begin = 0; begin < data.size(); begin += kChunk) {
    float sum = 0.0f;
    for (size_t i = begin; i < std::min(data.size(), begin + kChunk); ++i) sum += data[i] * data[i];
    serial += sum;
  }
  for (int run = 0; run < 20; ++run) {
    ASSERT_EQ(Bits(ChunkedSum(data, kChunk)), Bits(serial)) << "run " << run;
  }
}

TEST(ParallelForTest, UsesSeveralThreadsWhenAvailable) {
  if (pacl::NumThreads() < 2) GTEST_SKIP() << "one thread only";
  // Each chunk waits until a second thread has entered a chunk, so this passes only if two run at once.
  std::mutex mutex;
  std::set<std::thread::id> entered;
  std::atomic<bool> timed_out{false};
  pacl::ParallelFor(2, 1, [&](int64_t, int64_t) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      entered.insert(std::this_thread::get_id());
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline) {
      {
        std::lock_guard<std::mutex> lock(mutex);
        if (entered.size() >= 2) return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    timed_out = true;
  });
  EXPECT_FALSE(timed_out.load());
  EXPECT_EQ(entered.size(), 2u);
}

// paclSetNumThreads (include/portable_aclnn/threads.h): the count of the calls that follow, 0 back to the default.
TEST(ParallelForTest, PaclSetNumThreadsSetsTheCountOfLaterCalls) {
  const int default_count = pacl::NumThreads();
  auto threads_used = [] {  // distinct threads that run 32 chunks of 1 ms each
    std::mutex mutex;
    std::set<std::thread::id> used;
    pacl::ParallelFor(32, 1, [&](int64_t, int64_t) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      std::lock_guard<std::mutex> lock(mutex);
      used.insert(std::this_thread::get_id());
    });
    return used;
  };
  ASSERT_EQ(paclSetNumThreads(3), ACL_SUCCESS);
  int32_t count = 0;
  ASSERT_EQ(paclGetNumThreads(&count), ACL_SUCCESS);
  EXPECT_EQ(count, 3);
  EXPECT_EQ(pacl::NumThreads(), 3);
  EXPECT_LE(threads_used().size(), 3u);
  ASSERT_EQ(paclSetNumThreads(1), ACL_SUCCESS);
  EXPECT_EQ(threads_used(), std::set<std::thread::id>{std::this_thread::get_id()});  // serial, on the caller
  ASSERT_EQ(paclSetNumThreads(0), ACL_SUCCESS);
  ASSERT_EQ(paclGetNumThreads(&count), ACL_SUCCESS);
  EXPECT_EQ(count, default_count);
  // Out of range, or no output: ACL_ERROR_INVALID_PARAM with the rule, and the count unchanged.
  for (int32_t bad : {-1, 1025}) {
    EXPECT_EQ(paclSetNumThreads(bad), ACL_ERROR_INVALID_PARAM);
    EXPECT_EQ(std::string(aclGetRecentErrMsg()), "paclSetNumThreads: numThreads " + std::to_string(bad) +
                                                     " must be in [1, 1024], or 0 for the default");
  }
  EXPECT_EQ(paclGetNumThreads(nullptr), ACL_ERROR_INVALID_PARAM);
  EXPECT_STREQ(aclGetRecentErrMsg(), "paclGetNumThreads: numThreads must not be null");
  EXPECT_EQ(pacl::NumThreads(), default_count);
}

TEST(ParallelForTest, SingleChunkRunsOnTheCallingThread) {
  const std::thread::id caller = std::this_thread::get_id();
  std::thread::id ran_on;
  pacl::ParallelFor(100, 1000, [&](int64_t, int64_t) { ran_on = std::this_thread::get_id(); });
  EXPECT_EQ(ran_on, caller);
}

struct NestedRunResult {
  int64_t foreign_thread_runs = 0;  // inner chunks that ran on another thread than their outer chunk
  int64_t wrong_visits = 0;         // inner indices not visited exactly once
  int64_t wrong_partitions = 0;     // inner calls whose chunks were not the documented ones, in order
};

// ParallelFor inside every chunk of an outer ParallelFor.
NestedRunResult RunNested() {
  constexpr int64_t kOuter = 16;
  constexpr int64_t kInner = 101;
  std::vector<std::atomic<int>> visits(kOuter * kInner);
  for (auto& v : visits) v.store(0);
  std::atomic<int64_t> foreign_thread_runs{0};
  std::atomic<int64_t> wrong_partitions{0};
  pacl::ParallelFor(kOuter, 1, [&](int64_t outer_begin, int64_t outer_end) {
    const std::thread::id outer_thread = std::this_thread::get_id();
    for (int64_t o = outer_begin; o < outer_end; ++o) {
      std::mutex mutex;
      std::vector<Chunk> inner_chunks;
      pacl::ParallelFor(kInner, 7, [&](int64_t begin, int64_t end) {
        if (std::this_thread::get_id() != outer_thread) foreign_thread_runs.fetch_add(1);
        for (int64_t i = begin; i < end; ++i) visits[static_cast<size_t>(o * kInner + i)].fetch_add(1);
        std::lock_guard<std::mutex> lock(mutex);
        inner_chunks.emplace_back(begin, end);
      });
      // Serial on the chunk's thread means in order, too.
      if (inner_chunks != ExpectedChunks(kInner, 7)) wrong_partitions.fetch_add(1);
    }
  });
  NestedRunResult result;
  result.foreign_thread_runs = foreign_thread_runs.load();
  result.wrong_partitions = wrong_partitions.load();
  for (auto& v : visits) result.wrong_visits += v.load() != 1;
  return result;
}

TEST(ParallelForTest, NestedCallRunsSeriallyOnTheChunkThread) {
  const NestedRunResult result = RunNested();
  EXPECT_EQ(result.foreign_thread_runs, 0);
  EXPECT_EQ(result.wrong_visits, 0);
  EXPECT_EQ(result.wrong_partitions, 0);
  // After the nested use, a top-level call still covers everything.
  EXPECT_EQ(RecordChunks(50, 3), ExpectedChunks(50, 3));
}

TEST(ParallelForTest, ConcurrentCallersFromSeveralThreads) {
  constexpr int kCallers = 4;
  constexpr int kCallsEach = 40;
  const std::vector<float> data = ReductionInput();
  const float expected_sum = ChunkedSum(data, 1009);
  std::atomic<int> failures{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < kCallers; ++c) {
    callers.emplace_back([&, c] {
      for (int call = 0; call < kCallsEach; ++call) {
        const int64_t total = 1000 + 37 * c + call;
        std::vector<int> out(static_cast<size_t>(total), -1);
        pacl::ParallelFor(total, 1 + (call % 50), [&](int64_t begin, int64_t end) {
          for (int64_t i = begin; i < end; ++i) out[static_cast<size_t>(i)] = static_cast<int>(i * 3 + c);
        });
        for (int64_t i = 0; i < total; ++i) {
          if (out[static_cast<size_t>(i)] != static_cast<int>(i * 3 + c)) {
            failures.fetch_add(1);
            break;
          }
        }
        if (Bits(ChunkedSum(data, 1009)) != Bits(expected_sum)) failures.fetch_add(1);
      }
    });
  }
  for (auto& t : callers) t.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST(ParallelForTest, ExceptionFromABodyReachesTheCaller) {
  for (int64_t chunk_size : {int64_t{1}, int64_t{1000}}) {  // parallel, then the serial path
    std::atomic<int> calls{0};
    EXPECT_THROW(pacl::ParallelFor(100, chunk_size,
                                   [&](int64_t begin, int64_t end) {
                                     calls.fetch_add(1);
                                     if (begin <= 42 && 42 < end) throw std::runtime_error("chunk failed");
                                   }),
                 std::runtime_error);
    EXPECT_GE(calls.load(), 1);
    // The pool is still usable.
    EXPECT_EQ(RecordChunks(20, 3), ExpectedChunks(20, 3));
  }
}

// ---- Child processes: NumThreads' environment and affinity rules, determinism across thread counts, and nested
// calls under OpenMP settings that this process cannot change once libgomp is loaded. ----

constexpr char kChildModeVariable[] = "PACL_PARALLEL_TEST_CHILD";
constexpr char kChildOneCpuVariable[] = "PACL_PARALLEL_TEST_ONE_CPU";
constexpr char kReportMarker[] = "PACL_PARALLEL_CHILD_REPORT";

// Child mode: when kChildModeVariable is set, this binary prints NumThreads, the chunked reduction's bits and the
// outcome of RunNested, and exits before GoogleTest starts (a static initializer, so the child runs no test and the
// suite lists no placeholder test). Unset (every normal run), it does nothing.
int RunChildModeIfRequested() {
  if (std::getenv(kChildModeVariable) == nullptr) return 0;
  if (std::getenv(kChildOneCpuVariable) != nullptr) {
    // Restrict this process to the first CPU of its mask before anything reads NumThreads.
    cpu_set_t mask;
    CPU_ZERO(&mask);
    if (sched_getaffinity(0, sizeof mask, &mask) != 0) std::_Exit(2);
    int first = 0;
    while (!CPU_ISSET(first, &mask)) ++first;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(first, &one);
    if (sched_setaffinity(0, sizeof one, &one) != 0) std::_Exit(3);
  }
  const std::vector<float> data = ReductionInput();
  const NestedRunResult nested = RunNested();
  std::printf("%s num_threads=%d sum_bits=%08" PRIx32 " nested_foreign=%" PRId64 " nested_wrong=%" PRId64 "\n",
              kReportMarker, pacl::NumThreads(), Bits(ChunkedSum(data, 997)), nested.foreign_thread_runs,
              nested.wrong_visits + nested.wrong_partitions);
  std::fflush(stdout);
  std::_Exit(0);
}
const int g_child_mode = RunChildModeIfRequested();

struct ChildReport {
  int num_threads = -1;
  uint32_t sum_bits = 0;
  int64_t nested_foreign = -1;
  int64_t nested_wrong = -1;
};

// Runs this test binary in child mode with extra environment variables (this process's ACLNN_NUM_THREADS, OMP_*
// and GTEST_* variables are not passed on) and parses its report.
bool RunChild(const std::vector<std::string>& extra_environment, ChildReport* report) {
  std::vector<std::string> command = pacl_test::SelfCommand();
  if (command.empty()) return false;
  std::vector<std::string> environment;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string variable(*entry);
    if (variable.rfind("ACLNN_NUM_THREADS=", 0) == 0 || variable.rfind("GTEST_", 0) == 0 ||
        variable.rfind("PACL_PARALLEL_TEST_", 0) == 0 || variable.rfind("OMP_", 0) == 0) {
      continue;
    }
    environment.push_back(variable);
  }
  environment.push_back(std::string(kChildModeVariable) + "=1");
  for (const std::string& variable : extra_environment) environment.push_back(variable);
  std::vector<char*> envp;
  for (std::string& variable : environment) envp.push_back(&variable[0]);
  envp.push_back(nullptr);
  std::vector<char*> argv;
  for (std::string& argument : command) argv.push_back(argument.data());
  argv.push_back(nullptr);

  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) return false;  // only the dup2'ed stdout reaches the child
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
  pid_t pid = 0;
  const int spawn_error = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(pipe_fds[1]);
  std::string output;
  if (spawn_error == 0) {
    char buffer[4096];
    ssize_t got;
    while ((got = read(pipe_fds[0], buffer, sizeof buffer)) > 0) output.append(buffer, static_cast<size_t>(got));
  }
  close(pipe_fds[0]);
  if (spawn_error != 0) return false;
  int status = 0;
  if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    ADD_FAILURE() << "child failed, output:\n" << output;
    return false;
  }
  const size_t at = output.find(kReportMarker);
  if (at == std::string::npos) {
    ADD_FAILURE() << "no report in child output:\n" << output;
    return false;
  }
  return std::sscanf(output.c_str() + at + std::strlen(kReportMarker),
                     " num_threads=%d sum_bits=%" SCNx32 " nested_foreign=%" SCNd64 " nested_wrong=%" SCNd64,
                     &report->num_threads, &report->sum_bits, &report->nested_foreign, &report->nested_wrong) == 4;
}

int CpusInOwnAffinityMask() {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (sched_getaffinity(0, sizeof mask, &mask) != 0) return -1;
  return CPU_COUNT(&mask);
}

TEST(NumThreadsTest, HonoursValidAclnnNumThreads) {
  for (const char* value : {"1", "3", "7", "1024", " 5 "}) {
    ChildReport report;
    ASSERT_TRUE(RunChild({std::string("ACLNN_NUM_THREADS=") + value}, &report)) << value;
    EXPECT_EQ(report.num_threads, std::atoi(value)) << "ACLNN_NUM_THREADS='" << value << "'";
  }
}

TEST(NumThreadsTest, IgnoresInvalidAclnnNumThreadsAndUsesTheAffinityMask) {
  const int cpus = CpusInOwnAffinityMask();
  ASSERT_GE(cpus, 1);
  for (const char* value : {"", "0", "-2", "1025", "abc", "4x", "2.5", "99999999999999999999"}) {
    ChildReport report;
    ASSERT_TRUE(RunChild({std::string("ACLNN_NUM_THREADS=") + value}, &report)) << value;
    EXPECT_EQ(report.num_threads, cpus) << "ACLNN_NUM_THREADS='" << value << "'";
  }
  ChildReport unset;
  ASSERT_TRUE(RunChild({}, &unset));
  EXPECT_EQ(unset.num_threads, cpus);
}

TEST(NumThreadsTest, CountsOnlyTheCpusOfTheAffinityMask) {
  ChildReport report;
  ASSERT_TRUE(RunChild({std::string(kChildOneCpuVariable) + "=1"}, &report));
  EXPECT_EQ(report.num_threads, 1);
}

TEST(ParallelForProcessTest, ChunkedReductionIsBitIdenticalForAnyThreadCount) {
  const std::vector<float> data = ReductionInput();
  const uint32_t here = Bits(ChunkedSum(data, 997));
  for (const char* threads : {"1", "2", "5", "16"}) {
    ChildReport report;
    ASSERT_TRUE(RunChild({std::string("ACLNN_NUM_THREADS=") + threads}, &report)) << threads;
    EXPECT_EQ(report.num_threads, std::atoi(threads));
    EXPECT_EQ(report.sum_bits, here) << "ACLNN_NUM_THREADS=" << threads;
  }
}

// Even when the user enables OpenMP nesting, a nested call stays serial on the chunk's thread (the outer call
// already uses every worker).
TEST(ParallelForProcessTest, NestedCallStaysSerialWithOpenMpNestingEnabled) {
  ChildReport report;
  ASSERT_TRUE(RunChild({"ACLNN_NUM_THREADS=4", "OMP_MAX_ACTIVE_LEVELS=4", "OMP_NESTED=true"}, &report));
  EXPECT_EQ(report.nested_foreign, 0);
  EXPECT_EQ(report.nested_wrong, 0);
}

}  // namespace
