// NOTE: the parallel-for of the operators.
// Work is cut into fixed chunks [k * chunk_size, min((k + 1) * chunk_size, total)) that depend only on total and
// chunk_size, so a kernel that reduces inside a chunk in a fixed order gives the same bits for any thread count.
// The chunks are handed out one at a time (OpenMP dynamic schedule with block 1) so uneven chunks balance out.
// Threads: OpenMP (libgomp, or LLVM's libomp in clang builds). Each thread that calls ParallelFor gets its own team,
// so several streams may call it at once; the runtime keeps the team's threads between calls, so a call costs a
// wake-up, not thread creation. Idle team threads must not hold on to cores that the program wants for its own
// work: libgomp's spin before sleeping is short by default (about 300,000 iterations); libomp's is 200 ms
// (KMP_BLOCKTIME), so with libomp each calling thread sets its teams' block time to 1 ms.
// A call made from inside a chunk body runs its chunks serially on the calling thread (no nested teams: the
// outer call already uses every worker). One chunk, or one thread, runs serially without entering OpenMP.
// Exceptions: chunk bodies are expected not to throw (the kernels are noexcept in practice). If one does, the
// exception is caught inside the parallel region (letting it escape an OpenMP region would terminate the
// process), the chunks not yet started are skipped, and the first exception is rethrown to the caller once every
// running chunk has finished: the same outcome as a serial loop that stops at the first throw, except that chunks
// already running on other threads complete.
#include "pacl/parallel.h"

#include "pacl/error.h"
#include "pacl/runtime.h"
#include "portable_aclnn/threads.h"

#include <omp.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <thread>

namespace pacl {
namespace {

constexpr int kMaxThreadsFromEnvironment = 1024;

// ACLNN_NUM_THREADS when it is an integer in [1, 1024] (surrounding blanks allowed), else 0.
int ThreadsFromEnvironment() {
  const char* text = std::getenv("ACLNN_NUM_THREADS");
  if (text == nullptr) return 0;
  errno = 0;
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (end == text || errno != 0) return 0;
  while (*end == ' ' || *end == '\t') ++end;
  if (*end != '\0') return 0;
  if (value < 1 || value > kMaxThreadsFromEnvironment) return 0;
  return static_cast<int>(value);
}

// Number of CPUs in this process's affinity mask (0 if it cannot be read).
int CpusInAffinityMask() {
  // The fixed cpu_set_t covers 1024 CPUs; larger machines need a bigger, dynamically sized mask.
  for (int cpus = CPU_SETSIZE; cpus <= (1 << 20); cpus *= 2) {
    cpu_set_t* mask = CPU_ALLOC(cpus);
    if (mask == nullptr) return 0;
    const size_t bytes = CPU_ALLOC_SIZE(cpus);
    CPU_ZERO_S(bytes, mask);
    const int rc = sched_getaffinity(0, bytes, mask);
    const int count = rc == 0 ? CPU_COUNT_S(bytes, mask) : 0;
    const bool mask_too_small = rc != 0 && errno == EINVAL;
    CPU_FREE(mask);
    if (!mask_too_small) return count;
  }
  return 0;
}

// CPUs this process may run on: its affinity mask, else the hardware's count; at least 1.
int CpusForThisProcess() {
  const int from_affinity = CpusInAffinityMask();
  if (from_affinity > 0) return from_affinity;
  const unsigned hardware = std::thread::hardware_concurrency();
  return hardware > 0 ? static_cast<int>(std::min<unsigned>(hardware, kMaxThreadsFromEnvironment)) : 1;
}

int ComputeNumThreads() {
  const int from_environment = ThreadsFromEnvironment();
  return from_environment > 0 ? from_environment : CpusForThisProcess();
}

// True while the current thread runs a chunk body: a ParallelFor called then runs serially.
thread_local bool t_inside_chunk_body = false;

class ChunkBodyScope {
 public:
  ChunkBodyScope() : previous_(t_inside_chunk_body) { t_inside_chunk_body = true; }
  ~ChunkBodyScope() { t_inside_chunk_body = previous_; }
  ChunkBodyScope(const ChunkBodyScope&) = delete;
  ChunkBodyScope& operator=(const ChunkBodyScope&) = delete;

 private:
  bool previous_;
};

void RunChunksSerially(int64_t total, int64_t chunk_size, int64_t num_chunks,
                       const std::function<void(int64_t, int64_t)>& body) {
  ChunkBodyScope scope;
  for (int64_t k = 0; k < num_chunks; ++k) {
    const int64_t begin = k * chunk_size;
    body(begin, std::min(total - begin, chunk_size) + begin);
  }
}

}  // namespace

namespace {
std::atomic<int> g_set_num_threads{0};  // paclSetNumThreads' count; 0: the default
}  // namespace

int NumThreads() {
  const int set = g_set_num_threads.load(std::memory_order_relaxed);
  if (set > 0) return set;
  static const int default_num_threads = ComputeNumThreads();
  return default_num_threads;
}

void ParallelFor(int64_t total, int64_t chunk_size, const std::function<void(int64_t begin, int64_t end)>& body) {
  if (total <= 0) return;
  if (chunk_size < 1) chunk_size = 1;
  // Written so that it cannot overflow for any positive total and chunk_size.
  const int64_t num_chunks = (total - 1) / chunk_size + 1;
  const int threads = static_cast<int>(std::min<int64_t>(NumThreads(), num_chunks));
  if (threads <= 1 || t_inside_chunk_body) {
    RunChunksSerially(total, chunk_size, num_chunks, body);
    return;
  }

#if defined(KMP_VERSION_MAJOR)  // LLVM's libomp
  static thread_local bool block_time_set = false;
  if (!block_time_set) {
    kmp_set_blocktime(1);  // milliseconds of spinning before an idle team thread sleeps
    block_time_set = true;
  }
#endif
  static const int cpus = CpusForThisProcess();
  struct RegionScope {  // for the runtime's polling threads (pacl::rt::EnterParallelRegion)
    explicit RegionScope(bool team_uses_every_cpu) { rt::EnterParallelRegion(team_uses_every_cpu); }
    ~RegionScope() { rt::LeaveParallelRegion(); }
    RegionScope(const RegionScope&) = delete;
    RegionScope& operator=(const RegionScope&) = delete;
  } region(threads >= cpus);
  std::atomic<bool> failed{false};
  std::exception_ptr first_exception;
  std::mutex exception_mutex;
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
  for (int64_t k = 0; k < num_chunks; ++k) {
    if (failed.load(std::memory_order_relaxed)) continue;
    const int64_t begin = k * chunk_size;
    const int64_t end = std::min(total - begin, chunk_size) + begin;
    ChunkBodyScope scope;
    try {
      body(begin, end);
    } catch (...) {
      std::lock_guard<std::mutex> lock(exception_mutex);
      if (!first_exception) first_exception = std::current_exception();
      failed.store(true, std::memory_order_relaxed);
    }
  }
  if (first_exception) std::rethrow_exception(first_exception);
}

}  // namespace pacl

extern "C" {

aclError paclSetNumThreads(int32_t numThreads) {
  if (numThreads < 0 || numThreads > pacl::kMaxThreadsFromEnvironment) {
    pacl::SetRecentErrorMessage(pacl::StrFormat(
        "paclSetNumThreads: numThreads %d must be in [1, %d], or 0 for the default", static_cast<int>(numThreads),
        pacl::kMaxThreadsFromEnvironment));
    return ACL_ERROR_INVALID_PARAM;
  }
  pacl::g_set_num_threads.store(numThreads, std::memory_order_relaxed);
  return ACL_SUCCESS;
}

aclError paclGetNumThreads(int32_t* numThreads) {
  if (numThreads == nullptr) {
    pacl::SetRecentErrorMessage("paclGetNumThreads: numThreads must not be null");
    return ACL_ERROR_INVALID_PARAM;
  }
  *numThreads = pacl::NumThreads();
  return ACL_SUCCESS;
}

}  // extern "C"
