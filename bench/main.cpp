// aclnn_bench: times the aclnn operators through their public two-phase API and compares the memory traffic
// they achieve with the machine's STREAM triad bandwidth, measured with the same thread count at startup and again
// just before each case (a shared host's bandwidth can drift during a run).
//
//   aclnn_bench [--triad_mib=N] [Google Benchmark flags, e.g. --benchmark_filter=Backward/FLOAT/]
//
// --triad_mib: size of each of the three triad arrays in MiB (default 256: far larger than any cache).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <benchmark/benchmark.h>

#include "acl/acl.h"
#include "bench_common.h"

namespace {

const int kTriadRepetitions = 5;

bool Check(aclError status, const char* call) {
  if (status == ACL_SUCCESS) return true;
  std::fprintf(stderr, "%s failed with %d: %s\n", call, status, bench::RecentErrorMessage().c_str());
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  size_t triad_mib = 256;
  for (int i = 1; i < argc; ++i) {
    const char* prefix = "--triad_mib=";
    if (std::strncmp(argv[i], prefix, std::strlen(prefix)) == 0) {
      const long value = std::strtol(argv[i] + std::strlen(prefix), nullptr, 10);
      if (value < 1 || value > 512) {
        std::fprintf(stderr, "--triad_mib must be in [1, 512]\n");
        return 2;
      }
      triad_mib = static_cast<size_t>(value);
    } else {
      std::fprintf(stderr, "unknown argument: %s\n", argv[i]);
      return 2;
    }
  }

  const int threads = bench::LibraryThreadCount();
  bench::SetUpTriad(threads, triad_mib);
  const double triad = bench::MeasureTriadGBps(kTriadRepetitions);
  if (triad <= 0) return 1;
  std::printf("STREAM triad: %.2f GB/s (%d threads, 3 x %zu MiB, best of %d; 24 bytes per element)\n", triad,
              threads, triad_mib, kTriadRepetitions);
  std::fflush(stdout);
  benchmark::AddCustomContext("triad_GBps", std::to_string(triad));
  benchmark::AddCustomContext("threads", std::to_string(threads));

  const int32_t device = 0;
  aclrtStream stream = nullptr;
  if (!Check(aclInit(nullptr), "aclInit")) return 1;
  if (!Check(aclrtSetDevice(device), "aclrtSetDevice") || !Check(aclrtCreateStream(&stream), "aclrtCreateStream")) {
    bench::ReleaseBenchmarkResources();
    aclFinalize();
    return 1;
  }
  bench::SetStream(stream);

  bench::RegisterScaledMaskedSoftmaxBenchmarks();
  bench::RegisterGridSampler2DBenchmarks();
  bench::RegisterMultiScaleDeformableAttentionBenchmarks();
  bench::RegisterNsaCompressBenchmarks();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();

  bench::ReleaseBenchmarkResources();
  aclrtDestroyStream(stream);
  aclrtResetDevice(device);
  aclFinalize();
  if (bench::AnyBenchmarkFailed()) {
    std::fprintf(stderr, "aclnn_bench: some benchmarks failed (see ERROR OCCURRED above)\n");
    return 1;
  }
  return 0;
}
