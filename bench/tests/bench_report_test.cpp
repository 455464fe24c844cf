// bench_report.cpp on made-up runs: the collector's join of Google Benchmark's runs with the timed loop's
// measurements, and the exact JSON and CSV it writes (escaping, failed cases).
#include "bench_report.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

namespace bench {
namespace {

// A display reporter that counts what reaches it.
class CountingReporter : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override {
    ++contexts;
    return true;
  }
  void ReportRuns(const std::vector<Run>& runs) override { runs_seen += runs.size(); }
  void Finalize() override { ++finalized; }
  int contexts = 0;
  size_t runs_seen = 0;
  int finalized = 0;
};

using BenchmarkRun = benchmark::BenchmarkReporter::Run;

BenchmarkRun IterationRun(const std::string& name, int64_t iterations, double seconds) {
  BenchmarkRun run;
  run.run_name.function_name = name;
  run.run_type = BenchmarkRun::RT_Iteration;
  run.iterations = iterations;
  run.real_accumulated_time = seconds;
  return run;
}

BenchmarkRun AggregateRun(const std::string& name, const char* aggregate, int64_t repetitions, int64_t iterations,
                          double seconds) {
  BenchmarkRun run = IterationRun(name, iterations, seconds);
  run.run_type = BenchmarkRun::RT_Aggregate;
  run.aggregate_name = aggregate;
  run.repetitions = repetitions;
  return run;
}

// Registers a case (never run here) so that the collector finds its description.
CaseInfo RegisterTestCase(const std::string& name) {
  CaseInfo info;
  info.name = name;
  info.op = "TestOperator";
  info.function = "aclnnTestOperatorGrad";
  info.backward = true;
  info.dtype = ACL_FLOAT16;
  info.shape = "x 2x3";
  RegisterOperatorBenchmark(info, [](PreparedCall*) { return std::string("not meant to run"); });
  return info;
}

TEST(ResultCollector, ForwardsEverythingAndAveragesTheRepetitions) {
  const CaseInfo info = RegisterTestCase("ReportTest/FLOAT16/repetitions");
  CountingReporter display;
  ResultCollector collector(&display);
  benchmark::BenchmarkReporter::Context context;
  EXPECT_TRUE(collector.ReportContext(context));
  // Two repetitions of 10 calls (2 ms and 4 ms per call), then the aggregates: the iteration runs win.
  collector.ReportRuns({IterationRun(info.name, 10, 0.020), IterationRun(info.name, 10, 0.040),
                        AggregateRun(info.name, "mean", 2, 10, 0.5), AggregateRun(info.name, "median", 2, 10, 0.7)});
  collector.Finalize();
  EXPECT_EQ(display.contexts, 1);
  EXPECT_EQ(display.runs_seen, 4u);
  EXPECT_EQ(display.finalized, 1);

  const std::vector<CaseResult> results = collector.Results();
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].measurement.info.op, "TestOperator");
  EXPECT_EQ(results[0].measurement.info.shape, "x 2x3");
  EXPECT_EQ(results[0].repetitions, 2);
  EXPECT_EQ(results[0].iterations, 20);
  EXPECT_DOUBLE_EQ(results[0].mean_seconds, 0.003);
  EXPECT_EQ(results[0].error, "");
}

TEST(ResultCollector, UsesTheMeanAggregateWhenOnlyAggregatesAreReported) {
  const CaseInfo info = RegisterTestCase("ReportTest/FLOAT16/aggregates");
  CountingReporter display;
  ResultCollector collector(&display);
  collector.ReportRuns({AggregateRun(info.name, "mean", 3, 5, 0.010), AggregateRun(info.name, "median", 3, 5, 0.5),
                        AggregateRun(info.name, "stddev", 3, 5, 0.001)});
  const std::vector<CaseResult> results = collector.Results();
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].repetitions, 3);
  EXPECT_EQ(results[0].iterations, 15);
  EXPECT_DOUBLE_EQ(results[0].mean_seconds, 0.002);
}

TEST(ResultCollector, KeepsTheErrorOfAFailedCaseInReportOrder) {
  const CaseInfo first = RegisterTestCase("ReportTest/FLOAT16/first");
  CountingReporter display;
  ResultCollector collector(&display);
  BenchmarkRun failed = IterationRun("ReportTest/FLOAT16/unregistered", 0, 0);
  failed.error_occurred = true;
  failed.error_message = "phase 1 failed with 161002: bad shape";
  collector.ReportRuns({IterationRun(first.name, 4, 0.004)});
  collector.ReportRuns({failed});
  const std::vector<CaseResult> results = collector.Results();
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].measurement.info.name, first.name);
  EXPECT_EQ(results[0].error, "");
  EXPECT_EQ(results[1].measurement.info.name, "ReportTest/FLOAT16/unregistered");
  EXPECT_EQ(results[1].error, "phase 1 failed with 161002: bad shape");
  EXPECT_EQ(results[1].mean_seconds, 0);
}

// A context and two records: one that ran (2 GB in 0.5 s: 4 GB/s, half of an 8 GB/s triad) and one that failed
// with a message needing every kind of escape.
struct Sample {
  RunContext context;
  std::vector<CaseResult> results;
};

Sample MakeSample() {
  Sample sample;
  sample.context.date = "2025-01-31T12:00:00Z";
  sample.context.cpu_model = "Some CPU, 2 cores";
  sample.context.cpus = 2;
  sample.context.threads = 2;
  sample.context.triad_mib = 8;
  sample.context.triad_start_gbps = 10;
  CaseResult ok;
  ok.measurement.info = {"Op/FLOAT/big", "Op", "aclnnOp", false, ACL_FLOAT, "x 4x4"};
  ok.measurement.bytes = 2e9;
  ok.measurement.triad_gbps = 8;
  ok.measurement.best_seconds = 0.25;
  ok.repetitions = 1;
  ok.iterations = 3;
  ok.mean_seconds = 0.5;
  CaseResult failed;
  failed.measurement.info = {"OpGrad/BFLOAT16/big", "Op", "aclnnOpGrad", true, ACL_BF16, "x 4x4, y \"2\""};
  failed.error = "aclnnOpGrad: gradOutput \"g\" must be 4-D,\ngot C:\\x\t\x01";
  sample.results = {ok, failed};
  return sample;
}

TEST(FormatResults, JsonHasEveryFieldNullsForMissingFiguresAndEscapedText) {
  const Sample sample = MakeSample();
  std::ostringstream out;
  FormatResultsJson(sample.context, sample.results, &out);
  const std::string expected = R"({
  "program": "aclnn_bench",
  "context": {
    "date": "2025-01-31T12:00:00Z",
    "cpu": "Some CPU, 2 cores",
    "cpus": 2,
    "threads": 2,
    "simd_target": "",
    "triad_mib": 8,
    "triad_start_GBps": 10
  },
  "cases": [
    {
      "operator": "Op",
      "function": "aclnnOp",
      "direction": "forward",
      "dtype": "FLOAT",
      "case": "Op/FLOAT/big",
      "shape": "x 4x4",
      "calls": "reused",
      "status": "ok",
      "error": "",
      "threads": 2,
      "repetitions": 1,
      "iterations": 3,
      "best_ms": 250,
      "mean_ms": 500,
      "bytes": 2000000000,
      "GBps": 4,
      "triad_GBps": 8,
      "pct_of_triad": 50
    }, {
      "operator": "Op",
      "function": "aclnnOpGrad",
      "direction": "backward",
      "dtype": "BFLOAT16",
      "case": "OpGrad/BFLOAT16/big",
      "shape": "x 4x4, y \"2\"",
      "calls": "reused",
      "status": "error",
      "error": "aclnnOpGrad: gradOutput \"g\" must be 4-D,\ngot C:\\x\t\u0001",
      "threads": 2,
      "repetitions": 0,
      "iterations": 0,
      "best_ms": null,
      "mean_ms": null,
      "bytes": null,
      "GBps": null,
      "triad_GBps": null,
      "pct_of_triad": null
    }
  ]
}
)";
  EXPECT_EQ(out.str(), expected);
}

TEST(FormatResults, JsonOfNoCasesIsAnEmptyList) {
  const Sample sample = MakeSample();
  std::ostringstream out;
  FormatResultsJson(sample.context, {}, &out);
  EXPECT_NE(out.str().find("\"cases\": []\n}\n"), std::string::npos) << out.str();
}

TEST(FormatResults, CsvQuotesWhatNeedsQuotingAndLeavesMissingFiguresEmpty) {
  const Sample sample = MakeSample();
  std::ostringstream out;
  FormatResultsCsv(sample.context, sample.results, &out);
  const std::string expected =
      "operator,function,direction,dtype,case,shape,calls,status,error,threads,repetitions,iterations,best_ms,mean_ms,"
      "bytes,GBps,triad_GBps,pct_of_triad,run_date,run_cpu,run_cpus,run_threads,run_simd_target,run_triad_mib,"
      "run_triad_start_GBps\n"
      "Op,aclnnOp,forward,FLOAT,Op/FLOAT/big,x 4x4,reused,ok,,2,1,3,250,500,2000000000,4,8,50,2025-01-31T12:00:00Z,"
      "\"Some CPU, 2 cores\",2,2,,8,10\n"
      "Op,aclnnOpGrad,backward,BFLOAT16,OpGrad/BFLOAT16/big,\"x 4x4, y \"\"2\"\"\",reused,error,"
      "\"aclnnOpGrad: gradOutput \"\"g\"\" must be 4-D,\ngot C:\\x\t\x01\",2,0,0,,,,,,,2025-01-31T12:00:00Z,"
      "\"Some CPU, 2 cores\",2,2,,8,10\n";
  EXPECT_EQ(out.str(), expected);
}

}  // namespace
}  // namespace bench
