// allocator_bench: the workspace pattern of CANN's samples (aclrtMalloc, use, aclrtFree around every operator call)
// against the same loop on the C library's allocator, in the same run.
//
//   allocator_bench [--mib=N] [--triad_mib=N] [Google Benchmark flags]
//
// Each iteration allocates N MiB (default 64), fills it with memset (aclrtMemset for the aclrt loop: what a program
// does to clear a workspace or an output) and frees it. The aclrt loop runs on device 0 (ACLNN_DEVICE chooses it:
// on a GPU it measures the CUDA pool), the C library's loop always on the host. Counters: GB/s of the fill, triad%
// (that rate as a percentage of the single-thread STREAM triad measured at startup). After both loops ran, the
// speedup of aclrtMalloc's block cache over aligned_alloc + memset + free is printed; a fresh mapping costs a page fault per 4 KiB, the cache none.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "acl/acl.h"
#include "bench_common.h"

namespace {

size_t g_bytes = size_t{64} << 20;
double g_triad_gbps = 0;
double g_seconds_per_iteration[2] = {0, 0};  // [0]: aclrt, [1]: aligned_alloc

void SetCounters(benchmark::State& state) {
  const double gigabytes = static_cast<double>(g_bytes) * static_cast<double>(state.iterations()) / 1e9;
  state.counters["GB/s"] = benchmark::Counter(gigabytes, benchmark::Counter::kIsRate);
  state.counters["triad%"] = benchmark::Counter(100.0 * gigabytes / g_triad_gbps, benchmark::Counter::kIsRate);
  state.counters["triad_GB/s"] = benchmark::Counter(g_triad_gbps);
}

void AclrtMallocMemsetFree(benchmark::State& state) {
  for (auto _ : state) {
    void* p = nullptr;
    if (aclrtMalloc(&p, g_bytes, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) {
      state.SkipWithError(("aclrtMalloc failed: " + bench::RecentErrorMessage()).c_str());
      return;
    }
    // (Not read back on the host: on a GPU the memory is the device's.)
    if (aclrtMemset(p, g_bytes, 0x5A, g_bytes) != ACL_SUCCESS) {
      state.SkipWithError(("aclrtMemset failed: " + bench::RecentErrorMessage()).c_str());
      return;
    }
    aclrtFree(p);
  }
  SetCounters(state);
}

void AlignedAllocMemsetFree(benchmark::State& state) {
  for (auto _ : state) {
    void* p = std::aligned_alloc(64, g_bytes);
    if (p == nullptr) {
      state.SkipWithError("aligned_alloc failed");
      return;
    }
    std::memset(p, 0x5A, g_bytes);
    benchmark::DoNotOptimize(static_cast<volatile unsigned char*>(p)[g_bytes - 1]);
    std::free(p);
  }
  SetCounters(state);
}

// Prints the runs as usual and keeps each variant's real time per iteration for the final comparison.
class SpeedupReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      if (run.error_occurred || run.iterations == 0 || run.run_type != Run::RT_Iteration) continue;
      const double seconds = run.real_accumulated_time / static_cast<double>(run.iterations);
      const std::string name = run.benchmark_name();
      const int variant = name.rfind("aclrtMalloc", 0) == 0 ? 0 : 1;
      g_seconds_per_iteration[variant] = seconds;
    }
    ConsoleReporter::ReportRuns(runs);
  }
};

long ParseOption(const char* argument, const char* name, long low, long high, bool* matched) {
  const size_t length = std::strlen(name);
  *matched = std::strncmp(argument, name, length) == 0 && argument[length] == '=';
  if (!*matched) return 0;
  char* end = nullptr;
  const long value = std::strtol(argument + length + 1, &end, 10);
  if (end == argument + length + 1 || *end != '\0' || value < low || value > high) {
    std::fprintf(stderr, "%s must be an integer in [%ld, %ld], got '%s'\n", name, low, high, argument + length + 1);
    std::exit(2);
  }
  return value;
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  size_t triad_mib = 128;
  for (int i = 1; i < argc; ++i) {
    bool matched = false;
    if (long mib = ParseOption(argv[i], "--mib", 1, 4096, &matched); matched) {
      g_bytes = static_cast<size_t>(mib) << 20;
    } else if (long triad = ParseOption(argv[i], "--triad_mib", 1, 512, &matched); matched) {
      triad_mib = static_cast<size_t>(triad);
    } else {
      std::fprintf(stderr, "unknown argument: %s\n", argv[i]);
      return 2;
    }
  }
  bench::SetUpTriad(1, triad_mib);
  g_triad_gbps = bench::MeasureTriadGBps(5);
  if (g_triad_gbps <= 0) return 1;
  std::printf("STREAM triad: %.2f GB/s (1 thread, 3 x %zu MiB, best of 5)\n", g_triad_gbps, triad_mib);

  if (aclInit(nullptr) != ACL_SUCCESS || aclrtSetDevice(0) != ACL_SUCCESS) {
    std::fprintf(stderr, "cannot set up device 0: %s\n", bench::RecentErrorMessage().c_str());
    return 1;
  }
  const std::string size = std::to_string(g_bytes >> 20) + "MiB";
  benchmark::RegisterBenchmark(("aclrtMalloc+aclrtMemset+aclrtFree/" + size).c_str(), AclrtMallocMemsetFree)
      ->UseRealTime();
  benchmark::RegisterBenchmark(("aligned_alloc+memset+free/" + size).c_str(), AlignedAllocMemsetFree)->UseRealTime();
  SpeedupReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();

  if (g_seconds_per_iteration[0] > 0 && g_seconds_per_iteration[1] > 0) {
    const double fill_gbps = static_cast<double>(g_bytes) / g_seconds_per_iteration[0] / 1e9;
    std::printf("aclrtMalloc + aclrtMemset + aclrtFree: %.3f ms per %zu MiB (%.1f GB/s, %.0f%% of triad); "
                "aligned_alloc + memset + free: %.3f ms; speedup %.1fx\n",
                g_seconds_per_iteration[0] * 1e3, g_bytes >> 20, fill_gbps, 100.0 * fill_gbps / g_triad_gbps,
                g_seconds_per_iteration[1] * 1e3, g_seconds_per_iteration[1] / g_seconds_per_iteration[0]);
  }
  bench::ReleaseBenchmarkResources();
  aclrtResetDevice(0);
  aclFinalize();
  return 0;
}
