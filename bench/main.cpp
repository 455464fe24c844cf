// aclnn_bench: times the aclnn operators through their public two-phase API and compares the memory traffic
// they achieve with the machine's STREAM triad bandwidth, measured with the same thread count at startup and again
// just before each case (a shared host's bandwidth can drift during a run).
//
//   aclnn_bench [--triad_mib=N] [--json=FILE] [--csv=FILE] [Google Benchmark flags, e.g.
//               --benchmark_filter=Backward/FLOAT/]
//
// --triad_mib: size of each of the three triad arrays in MiB (default 256: far larger than any cache).
// --json, --csv: also write one record per case (bench_report.h); both may be given. The console output is the
// same with or without them.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "bench_common.h"
#include "bench_report.h"

namespace {

const int kTriadRepetitions = 5;

bool Check(aclError status, const char* call) {
  if (status == ACL_SUCCESS) return true;
  std::fprintf(stderr, "%s failed with %d: %s\n", call, status, bench::RecentErrorMessage().c_str());
  return false;
}

// The value of "--<name>=VALUE" in argument, or nullptr when argument is another option.
const char* OptionValue(const char* argument, const char* name) {
  const size_t length = std::strlen(name);
  if (std::strncmp(argument, "--", 2) != 0 || std::strncmp(argument + 2, name, length) != 0) return nullptr;
  return argument[2 + length] == '=' ? argument + 3 + length : nullptr;
}

// Opens path for writing now (creating or emptying it), so that a bad path fails before a long run.
bool CheckWritable(const std::string& path, const char* option) {
  if (path.empty()) {
    std::fprintf(stderr, "%s needs a file name: %s=FILE\n", option, option);
    return false;
  }
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (file) return true;
  std::fprintf(stderr, "%s: cannot open '%s' for writing\n", option, path.c_str());
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  bench::RunContext context = bench::CurrentRunContext();  // the date: when the run started
  context.triad_mib = 256;
  std::string json_path, csv_path;
  for (int i = 1; i < argc; ++i) {
    if (const char* value = OptionValue(argv[i], "triad_mib")) {
      char* end = nullptr;
      const long mib = std::strtol(value, &end, 10);
      if (end == value || *end != '\0' || mib < 1 || mib > 512) {
        std::fprintf(stderr, "--triad_mib must be an integer in [1, 512], got '%s'\n", value);
        return 2;
      }
      context.triad_mib = static_cast<size_t>(mib);
    } else if (const char* json = OptionValue(argv[i], "json")) {
      json_path = json;
      if (!CheckWritable(json_path, "--json")) return 2;
    } else if (const char* csv = OptionValue(argv[i], "csv")) {
      csv_path = csv;
      if (!CheckWritable(csv_path, "--csv")) return 2;
    } else {
      std::fprintf(stderr, "unknown argument: %s\n", argv[i]);
      return 2;
    }
  }

  context.threads = bench::LibraryThreadCount();
  if (const char* simd = std::getenv("ACLNN_SIMD_TARGET")) context.simd_target = simd;
  bench::SetUpTriad(context.threads, context.triad_mib);
  context.triad_start_gbps = bench::MeasureTriadGBps(kTriadRepetitions);
  if (context.triad_start_gbps <= 0) return 1;
  std::printf("STREAM triad: %.2f GB/s (%d threads, 3 x %zu MiB, best of %d; 24 bytes per element)\n",
              context.triad_start_gbps, context.threads, context.triad_mib, kTriadRepetitions);
  const double read_gbps = bench::MeasureReadGBps(kTriadRepetitions);
  if (read_gbps <= 0) return 1;
  std::printf("read-only: %.2f GB/s (the triad's b and c summed, best of %d; 16 bytes per element)\n", read_gbps,
              kTriadRepetitions);
  std::fflush(stdout);
  benchmark::AddCustomContext("triad_GBps", std::to_string(context.triad_start_gbps));
  benchmark::AddCustomContext("read_GBps", std::to_string(read_gbps));
  benchmark::AddCustomContext("threads", std::to_string(context.threads));

  const int32_t device = 0;
  aclrtStream stream = nullptr;
  if (!Check(aclInit(nullptr), "aclInit")) return 1;
  if (!Check(aclrtSetDevice(device), "aclrtSetDevice") || !Check(aclrtCreateStream(&stream), "aclrtCreateStream")) {
    bench::ReleaseBenchmarkResources();
    aclFinalize();
    return 1;
  }
  bench::SetStream(stream);

  bench::RegisterAllCaseTables();
  // The display reporter --benchmark_format asks for (the library keeps it), behind one that collects the runs.
  bench::ResultCollector collector(benchmark::CreateDefaultDisplayReporter());
  benchmark::RunSpecifiedBenchmarks(&collector);
  benchmark::Shutdown();

  // Written also when cases failed: their records say what failed.
  const std::vector<bench::CaseResult> results = collector.Results();
  bench::FormatCallPatterns(results, &std::cout);
  std::vector<std::string> file_errors;
  if (!json_path.empty()) file_errors.push_back(bench::WriteResultsJson(json_path, context, results));
  if (!csv_path.empty()) file_errors.push_back(bench::WriteResultsCsv(csv_path, context, results));
  bool files_ok = true;
  for (const std::string& error : file_errors) {
    if (error.empty()) continue;
    std::fprintf(stderr, "aclnn_bench: %s\n", error.c_str());
    files_ok = false;
  }

  bench::ReleaseBenchmarkResources();
  aclrtDestroyStream(stream);
  aclrtResetDevice(device);
  aclFinalize();
  if (bench::AnyBenchmarkFailed()) {
    std::fprintf(stderr, "aclnn_bench: some benchmarks failed (see ERROR OCCURRED above)\n");
    return 1;
  }
  return files_ok ? 0 : 1;
}
