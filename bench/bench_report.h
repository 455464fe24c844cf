// aclnn_bench's result files (--json=FILE, --csv=FILE): one record per case, gathered by a Google Benchmark
// reporter that passes everything on to the usual display reporter, so the console output stays as it is.
#ifndef PACL_BENCH_BENCH_REPORT_H_
#define PACL_BENCH_BENCH_REPORT_H_

#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "bench_common.h"

namespace bench {

// The run's context: the "context" object of the JSON file, the run_* columns of every CSV row.
struct RunContext {
  std::string date;         // when the run started, UTC, ISO 8601 ("2025-01-31T12:00:00Z")
  std::string cpu_model;    // /proc/cpuinfo's "model name", "" if unknown
  int cpus = 0;             // CPUs this process may run on
  int threads = 0;          // the library's thread count (ACLNN_NUM_THREADS), also the triad's
  std::string simd_target;  // ACLNN_SIMD_TARGET as set, "" when unset
  size_t triad_mib = 0;     // MiB per triad array
  double triad_start_gbps = 0;
};

// Fills date, cpu_model and cpus; the caller sets the rest.
RunContext CurrentRunContext();

// One case's record.
struct CaseResult {
  CaseMeasurement measurement;  // what the case is, bytes per call, its triad, its fastest call
  int64_t repetitions = 0;      // runs Google Benchmark reported (--benchmark_repetitions)
  int64_t iterations = 0;       // timed calls in those runs
  double mean_seconds = 0;      // mean time per call over those runs; 0 when none completed
  std::string error;            // what failed, "" when the case ran to the end
};

// A display reporter that hands every call on to `display` (which prints as usual) and keeps, per case, the
// runs Google Benchmark reports: its iteration runs, or with --benchmark_report_aggregates_only its "mean".
class ResultCollector : public benchmark::BenchmarkReporter {
 public:
  // display: not owned; it must outlive the collector.
  explicit ResultCollector(benchmark::BenchmarkReporter* display) : display_(display) {}

  bool ReportContext(const Context& context) override;
  void ReportRuns(const std::vector<Run>& runs) override;
  void Finalize() override;

  // The cases in the order they were reported, joined with what the timed loop measured.
  std::vector<CaseResult> Results() const;

 private:
  struct Collected {
    std::string name;
    std::vector<double> run_seconds_per_call;  // per iteration run
    int64_t iterations = 0;
    double aggregate_mean_seconds = 0;  // from a "mean" aggregate, used when there are no iteration runs
    int64_t aggregate_repetitions = 0;
    int64_t aggregate_iterations = 0;
    std::string error;
  };
  Collected& Find(const std::string& name);

  benchmark::BenchmarkReporter* display_;
  std::vector<Collected> collected_;
};

// The files' contents. Missing figures (a failed case) are null in JSON and empty in CSV.
// The two call patterns side by side (stdout): for every case timed both ways, the mean time with the reused
// executor and workspace, with CANN's fresh calls, and their ratio.
void FormatCallPatterns(const std::vector<CaseResult>& results, std::ostream* out);

void FormatResultsJson(const RunContext& context, const std::vector<CaseResult>& results, std::ostream* out);
void FormatResultsCsv(const RunContext& context, const std::vector<CaseResult>& results, std::ostream* out);

// Writes the formatted results to `path`; returns "" or what failed.
std::string WriteResultsJson(const std::string& path, const RunContext& context,
                             const std::vector<CaseResult>& results);
std::string WriteResultsCsv(const std::string& path, const RunContext& context, const std::vector<CaseResult>& results);

}  // namespace bench

#endif  // PACL_BENCH_BENCH_REPORT_H_
