// Concurrency: several host threads, each with its own streams (and, in one test, its own context), run every
// operator in every dtype at the same time, in varied orders and synchronisation patterns. Every output must be
// bit-identical to the same call run serially first (which is itself checked against the float64 reference), and
// no guard byte around an output may change. Built with -DPACL_SANITIZE_THREAD=ON (scripts/tsan.sh), the same tests
// are the data-race check.
//
// Repeatable executors: the API lets a repeatable executor run on any stream, from any thread. Its tensors are
// bound in phase 1, so two runs that overlap in time write the same output memory: the application must order
// them (synchronise, or use one stream), as on Ascend. The tests run each repeatable executor on several streams
// one after the other, twice back to back on one stream, and destroy it while runs are still queued.
#include <gtest/gtest.h>

#include <algorithm>
#include <exception>
#include <functional>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "acl/acl.h"
#include "aclnn/acl_meta.h"
#include "op_test_util.h"
#include "system/op_cases.h"
#include "system/system_test_util.h"

namespace {

using systest::Barrier;
using systest::OpCase;

constexpr int kThreads = 4;
static_assert(kThreads >= 4, "BuildWork's per-thread dtype rotations must cover the four dtypes of GridSampler2D");

int Iterations() { return systest::kSanitized ? 2 : 3; }

// One thread's cases and the bytes each gave when run serially.
struct ThreadWork {
  std::vector<std::unique_ptr<OpCase>> cases;
  std::vector<std::vector<uint8_t>> serial_bytes;
};

// Runs body(0) .. body(threads - 1) on threads of their own, all at once, and joins them. An exception escaping a
// body (the test harness throws when a runtime call it needs fails) becomes a test failure.
void RunOnThreads(int threads, const std::function<void(int)>& body) {
  std::vector<std::thread> running;
  for (int t = 0; t < threads; ++t) {
    running.emplace_back([&body, t] {
      try {
        body(t);
      } catch (const std::exception& e) {
        ADD_FAILURE() << "thread " << t << " threw: " << e.what();
      }
    });
  }
  for (std::thread& thread : running) thread.join();
}

// Every thread's cases, from seeds of their own, built on the threads themselves at the same time: every operator
// in every dtype; under the sanitizers (several times slower) every operator in one dtype, a different one on each
// thread, so that the threads together still run every operator and dtype.
std::vector<ThreadWork> BuildWork() {
  std::vector<ThreadWork> work(kThreads);
  RunOnThreads(kThreads, [&](int t) {
    const uint64_t seed = static_cast<uint64_t>(t) + 1;
    work[t].cases = systest::kSanitized ? systest::MakeOneDTypePerOp(seed, t, systest::CaseSize::kConcurrency)
                                        : systest::MakeAllCases(seed, systest::CaseSize::kConcurrency);
  });
  return work;
}

// Runs every case once, one after the other, on one stream of the calling thread: the expected bytes. Each result is
// also checked against the float64 reference, so that identical but wrong (or unwritten) outputs cannot pass.
void RunSerially(std::vector<ThreadWork>* work) {
  optest::TestStream stream;
  for (ThreadWork& w : *work) {
    for (const auto& c : w.cases) {
      EXPECT_TRUE(c->RunAndWait(stream.get()));
      const std::string wrong = c->CheckAgainstReference();
      EXPECT_EQ(wrong, "");
      w.serial_bytes.push_back(c->OutputBytes());
    }
  }
}

void ExpectSameAsSerial(const ThreadWork& w, size_t i, const std::string& when) {
  const std::vector<uint8_t> bytes = w.cases[i]->OutputBytes();
  const std::vector<uint8_t>& expected = w.serial_bytes[i];
  if (bytes != expected) {
    size_t first = 0;
    while (first < bytes.size() && first < expected.size() && bytes[first] == expected[first]) ++first;
    ADD_FAILURE() << w.cases[i]->name() << " (" << when << "): output bytes differ from the serial run, first at byte "
                  << first << " of " << expected.size();
  }
  EXPECT_EQ(w.cases[i]->CheckGuards(), "") << when;
}

std::vector<size_t> ShuffledOrder(size_t count, std::mt19937_64& rng) {
  std::vector<size_t> order(count);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  return order;
}

// The rounds of one thread on its own stream. Each round: reset the outputs, wait for every thread, enqueue every
// case in a shuffled order (phase 1 and 2 while the other threads' kernels run; in odd rounds with a synchronisation
// after every third case), synchronise, wait for every thread again (so the reads below do not wait for other
// threads' kernels), then compare.
void RunRounds(ThreadWork& w, Barrier& barrier, int t) {
  ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS) << optest::RecentErrorMessage();
  aclrtStream stream = nullptr;
  EXPECT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS) << optest::RecentErrorMessage();
  std::mt19937_64 rng(static_cast<uint64_t>(t) * 7919 + 1);
  for (int round = 0; round < Iterations(); ++round) {
    const std::vector<size_t> order = ShuffledOrder(w.cases.size(), rng);
    for (size_t i : order) w.cases[i]->ResetOutputs();
    EXPECT_TRUE(barrier.Wait()) << "thread " << t << " timed out at the barrier";
    std::vector<void*> workspaces;
    for (size_t k = 0; k < order.size(); ++k) {
      void* workspace = nullptr;
      w.cases[order[k]]->Enqueue(stream, &workspace);
      workspaces.push_back(workspace);
      if (round % 2 == 1 && k % 3 == 2) {
        EXPECT_EQ(aclrtSynchronizeStream(stream), ACL_SUCCESS) << optest::RecentErrorMessage();
      }
    }
    EXPECT_EQ(aclrtSynchronizeStream(stream), ACL_SUCCESS) << optest::RecentErrorMessage();
    EXPECT_TRUE(barrier.Wait()) << "thread " << t << " timed out at the barrier";
    for (void* workspace : workspaces) {
      if (workspace != nullptr) {
        EXPECT_EQ(aclrtFree(workspace), ACL_SUCCESS);
      }
    }
    for (size_t i = 0; i < w.cases.size(); ++i) {
      ExpectSameAsSerial(w, i, "thread " + std::to_string(t) + ", round " + std::to_string(round));
    }
  }
  EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS) << optest::RecentErrorMessage();
  EXPECT_EQ(aclrtResetDevice(0), ACL_SUCCESS) << optest::RecentErrorMessage();
}

// The cases of every thread and their serial results are made once for all the tests of the suite (each test
// resets the outputs it uses).
class Concurrency : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    work_ = new std::vector<ThreadWork>(BuildWork());
    RunSerially(work_);
    baseline_ok_ = !::testing::Test::HasFailure();
  }
  static void TearDownTestSuite() {
    delete work_;
    work_ = nullptr;
  }
  void SetUp() override { ASSERT_TRUE(baseline_ok_) << "the serial runs failed: nothing to compare with"; }

  static std::vector<ThreadWork>* work_;
  static bool baseline_ok_;
};
std::vector<ThreadWork>* Concurrency::work_ = nullptr;
bool Concurrency::baseline_ok_ = false;

TEST_F(Concurrency, EveryOperatorOnOwnStreamsFromSeveralThreads) {
  std::vector<ThreadWork>& work = *work_;
  Barrier barrier(kThreads);
  RunOnThreads(kThreads, [&](int t) { RunRounds(work[t], barrier, t); });
}

// The same input tensors (the same aclTensor handles) used by every thread at once, each with its own outputs.
// (Clones of thread 0's cases: the same inputs, outputs of their own; the serial results are thread 0's.)
TEST_F(Concurrency, SharedInputTensorsAcrossThreads) {
  std::vector<ThreadWork> work(kThreads);
  RunOnThreads(kThreads, [&](int t) {
    for (const auto& c : (*work_)[0].cases) work[t].cases.push_back(c->Clone());
    work[t].serial_bytes = (*work_)[0].serial_bytes;
  });
  Barrier barrier(kThreads);
  RunOnThreads(kThreads, [&](int t) { RunRounds(work[t], barrier, t); });
}

// Each thread with a context of its own, using its default stream (nullptr) and a stream of its own in turn,
// without barriers: phase 1, phase 2, synchronisation and the copies of one thread overlap everything the others
// do. Round kinds: enqueue everything then synchronise the stream; run and wait case by case; enqueue everything
// then aclrtSynchronizeDevice (which waits for every thread's streams).
TEST_F(Concurrency, OwnContextsDefaultAndCreatedStreamsFreeRunning) {
  std::vector<ThreadWork>& work = *work_;
  RunOnThreads(kThreads, [&](int t) {
    ThreadWork& w = work[t];
    aclrtContext context = nullptr;
    ASSERT_EQ(aclrtCreateContext(&context, 0), ACL_SUCCESS) << optest::RecentErrorMessage();
    aclrtStream own_stream = nullptr;
    EXPECT_EQ(aclrtCreateStream(&own_stream), ACL_SUCCESS) << optest::RecentErrorMessage();
    std::mt19937_64 rng(static_cast<uint64_t>(t) * 104729 + 3);
    // Three round kinds: every one is run by some thread even with two rounds (sanitizer builds).
    for (int round = 0; round < Iterations() + (systest::kSanitized ? 0 : 1); ++round) {
      const aclrtStream stream = round % 2 == 0 ? own_stream : nullptr;
      const int kind = (round + t) % 3;
      const std::vector<size_t> order = ShuffledOrder(w.cases.size(), rng);
      for (size_t i : order) w.cases[i]->ResetOutputs();
      if (kind == 1) {
        for (size_t i : order) w.cases[i]->RunAndWait(stream);
      } else {
        std::vector<void*> workspaces;
        for (size_t i : order) {
          void* workspace = nullptr;
          w.cases[i]->Enqueue(stream, &workspace);
          workspaces.push_back(workspace);
        }
        if (kind == 0) {
          EXPECT_EQ(aclrtSynchronizeStream(stream), ACL_SUCCESS) << optest::RecentErrorMessage();
        } else {
          EXPECT_EQ(aclrtSynchronizeDevice(), ACL_SUCCESS) << optest::RecentErrorMessage();
        }
        for (void* workspace : workspaces) {
          if (workspace != nullptr) {
            EXPECT_EQ(aclrtFree(workspace), ACL_SUCCESS);
          }
        }
      }
      for (size_t i = 0; i < w.cases.size(); ++i) {
        ExpectSameAsSerial(w, i, "thread " + std::to_string(t) + ", round " + std::to_string(round));
      }
    }
    EXPECT_EQ(aclrtDestroyStream(own_stream), ACL_SUCCESS) << optest::RecentErrorMessage();
    EXPECT_EQ(aclrtDestroyContext(context), ACL_SUCCESS) << optest::RecentErrorMessage();
  });
}

// Repeatable executors on several streams (and several threads at once, each with its own executors), runs queued
// back to back, and executors destroyed while their runs are still queued. Every operator and dtype is run by at
// least one of the threads.
TEST_F(Concurrency, RepeatableExecutorsOnSeveralStreams) {
  std::vector<ThreadWork>& work = *work_;
  RunOnThreads(kThreads, [&](int t) {
    ThreadWork& w = work[t];
    ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS) << optest::RecentErrorMessage();
    aclrtStream first = nullptr, second = nullptr;
    EXPECT_EQ(aclrtCreateStream(&first), ACL_SUCCESS) << optest::RecentErrorMessage();
    EXPECT_EQ(aclrtCreateStream(&second), ACL_SUCCESS) << optest::RecentErrorMessage();
    std::mt19937_64 rng(static_cast<uint64_t>(t) + 17);
    for (size_t i : ShuffledOrder(w.cases.size(), rng)) {
      // Without the sanitizers, a quarter of the cases on each thread: every one once in all.
      if (!systest::kSanitized && i % kThreads != static_cast<size_t>(t)) continue;
      OpCase& c = *w.cases[i];
      const std::string where = "thread " + std::to_string(t);
      uint64_t workspace_size = 0;
      aclOpExecutor* executor = nullptr;
      c.ResetOutputs();
      ASSERT_EQ(c.GetWorkspaceSize(&workspace_size, &executor), ACLNN_SUCCESS) << optest::RecentErrorMessage();
      ASSERT_EQ(aclSetAclOpExecutorRepeatable(executor), ACLNN_SUCCESS) << optest::RecentErrorMessage();
      optest::DeviceWorkspace workspace(workspace_size);
      ASSERT_TRUE(workspace.ok());
      // One run on each stream in turn: the created ones and the default stream.
      for (aclrtStream stream : {first, second, static_cast<aclrtStream>(nullptr)}) {
        EXPECT_EQ(c.phase2()(workspace.get(), workspace_size, executor, stream), ACLNN_SUCCESS)
            << c.name() << ": " << optest::RecentErrorMessage();
        EXPECT_EQ(aclrtSynchronizeStream(stream), ACL_SUCCESS) << optest::RecentErrorMessage();
        ExpectSameAsSerial(w, i, where + ", repeatable run");
        c.ResetOutputs();
      }
      // Two runs queued back to back on one stream, and the executor destroyed before they ran.
      EXPECT_EQ(c.phase2()(workspace.get(), workspace_size, executor, first), ACLNN_SUCCESS);
      EXPECT_EQ(c.phase2()(workspace.get(), workspace_size, executor, first), ACLNN_SUCCESS);
      EXPECT_EQ(aclDestroyAclOpExecutor(executor), ACLNN_SUCCESS) << optest::RecentErrorMessage();
      EXPECT_EQ(aclrtSynchronizeStream(first), ACL_SUCCESS) << optest::RecentErrorMessage();
      ExpectSameAsSerial(w, i, where + ", runs queued before aclDestroyAclOpExecutor");
      // A destroyed executor is refused.
      EXPECT_EQ(c.phase2()(workspace.get(), workspace_size, executor, second), ACLNN_ERR_PARAM_INVALID);
      optest::RecentErrorMessage();
      // A one-shot executor destroyed (after its run, as CANN programs often do) while the run is still queued.
      c.ResetOutputs();
      ASSERT_EQ(c.GetWorkspaceSize(&workspace_size, &executor), ACLNN_SUCCESS) << optest::RecentErrorMessage();
      EXPECT_EQ(c.phase2()(workspace.get(), workspace_size, executor, second), ACLNN_SUCCESS);
      EXPECT_EQ(aclDestroyAclOpExecutor(executor), ACLNN_SUCCESS) << optest::RecentErrorMessage();
      EXPECT_EQ(aclrtSynchronizeStream(second), ACL_SUCCESS) << optest::RecentErrorMessage();
      ExpectSameAsSerial(w, i, where + ", one-shot run");
    }
    EXPECT_EQ(aclrtDestroyStream(first), ACL_SUCCESS);
    EXPECT_EQ(aclrtDestroyStream(second), ACL_SUCCESS);
    EXPECT_EQ(aclrtResetDevice(0), ACL_SUCCESS);
  });
}

// Phase 1 on one thread, phase 2 on another: planner threads create the executors and hand them over; runner
// threads (other ones) run them on their own streams.
TEST_F(Concurrency, ExecutorsCreatedOnOneThreadRunOnAnother) {
  std::vector<ThreadWork>& work = *work_;
  struct Planned {
    uint64_t workspace_size = 0;
    aclOpExecutor* executor = nullptr;
  };
  // planned[t][i]: the executor that planner thread t made for its case i, filled before runner (t + 1) % kThreads
  // reads it; the barrier orders the two.
  std::vector<std::vector<Planned>> planned(kThreads);
  Barrier barrier(kThreads);
  RunOnThreads(kThreads, [&](int t) {
    ThreadWork& own = work[t];
    for (const auto& c : own.cases) {
      c->ResetOutputs();
      Planned p;
      EXPECT_EQ(c->GetWorkspaceSize(&p.workspace_size, &p.executor), ACLNN_SUCCESS) << optest::RecentErrorMessage();
      planned[t].push_back(p);
    }
    EXPECT_TRUE(barrier.Wait());
    // Run the executors of the previous thread.
    const int from = (t + kThreads - 1) % kThreads;
    ThreadWork& theirs = work[from];
    EXPECT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
    aclrtStream stream = nullptr;
    EXPECT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS) << optest::RecentErrorMessage();
    std::vector<std::unique_ptr<optest::DeviceWorkspace>> workspaces;
    for (size_t i = 0; i < theirs.cases.size(); ++i) {
      const Planned& p = planned[from][i];
      workspaces.push_back(std::make_unique<optest::DeviceWorkspace>(p.workspace_size));
      EXPECT_EQ(theirs.cases[i]->phase2()(workspaces.back()->get(), p.workspace_size, p.executor, stream),
                ACLNN_SUCCESS)
          << theirs.cases[i]->name() << ": " << optest::RecentErrorMessage();
    }
    EXPECT_EQ(aclrtSynchronizeStream(stream), ACL_SUCCESS) << optest::RecentErrorMessage();
    EXPECT_TRUE(barrier.Wait());
    workspaces.clear();
    for (size_t i = 0; i < theirs.cases.size(); ++i) {
      ExpectSameAsSerial(theirs, i, "planned by thread " + std::to_string(from) + ", run by " + std::to_string(t));
    }
    EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
    EXPECT_EQ(aclrtResetDevice(0), ACL_SUCCESS);
  });
}

}  // namespace
