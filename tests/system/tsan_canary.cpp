// A check of the ThreadSanitizer setup itself, built only with -DPACL_SANITIZE_THREAD=ON and run by scripts/tsan.sh.
// pacl::ParallelFor runs its chunks on OpenMP threads, whose runtime is not instrumented: TSan then sees neither the
// start of a parallel region nor its end as synchronisation, unless the OpenMP runtime tells it (LLVM's libomp with
// the Archer tool, OMP_TOOL_LIBRARIES=libarcher.so). Without that, correct code gets false reports; with a wrong
// setup, real races could go unseen. So:
//   tsan_canary clean   correct code in the shapes the kernels use (chunks writing disjoint elements that the next
//                       region's chunks, on other threads, read and rewrite; the caller reading after the region;
//                       two threads calling ParallelFor at once, as two streams do): must give no report.
//   tsan_canary racy    every chunk increments one shared counter without synchronisation: must be reported.
// Run with ACLNN_NUM_THREADS >= 2, so that ParallelFor uses OpenMP threads.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "pacl/parallel.h"

namespace {

constexpr int64_t kElements = int64_t{1} << 14;

// Several regions over the same data, each chunk reading what a chunk of the previous region (in general another
// thread) wrote; the caller reads everything in between. Returns a checksum.
int64_t DisjointChunks() {
  std::vector<int64_t> data(static_cast<size_t>(kElements), 1);
  int64_t checksum = 0;
  for (int region = 0; region < 4; ++region) {
    // A different chunk size each time, so a chunk's elements were written by other chunks of the previous region.
    const int64_t chunk = int64_t{16} << region;
    pacl::ParallelFor(kElements, chunk, [&data](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) data[static_cast<size_t>(i)] = data[static_cast<size_t>(i)] * 3 + i;
    });
    for (int64_t value : data) checksum += value;
  }
  return checksum;
}

int RunClean() {
  const int64_t expected = DisjointChunks();
  // Two threads at once, each with its own OpenMP team (as two stream workers).
  int64_t results[2] = {0, 0};
  std::thread first([&results] { results[0] = DisjointChunks(); });
  std::thread second([&results] { results[1] = DisjointChunks(); });
  first.join();
  second.join();
  if (results[0] != expected || results[1] != expected) {
    std::fprintf(stderr, "tsan_canary clean: checksums differ (%lld, %lld, %lld)\n", static_cast<long long>(expected),
                 static_cast<long long>(results[0]), static_cast<long long>(results[1]));
    return 1;
  }
  std::printf("tsan_canary clean: %d threads, checksum %lld\n", pacl::NumThreads(), static_cast<long long>(expected));
  return 0;
}

int RunRacy() {
  int64_t shared = 0;
  pacl::ParallelFor(kElements, 1, [&shared](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) ++shared;  // the deliberate data race
  });
  std::printf("tsan_canary racy: %d threads, counter %lld\n", pacl::NumThreads(), static_cast<long long>(shared));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "clean") == 0) return RunClean();
  if (argc == 2 && std::strcmp(argv[1], "racy") == 0) return RunRacy();
  std::fprintf(stderr, "usage: %s clean|racy\n", argv[0]);
  return 2;
}
