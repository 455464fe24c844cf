// aclnn_demo: runs every implemented operator through the public aclnn API on a realistic shape in each of its
// dtypes, checks the results against the float64 references of the test tree, and prints a table of errors,
// times and bandwidths. Exits non-zero if any check fails. The table goes to stdout; a progress line per operator
// and dtype (with the time elapsed) goes to stderr. The operators' steps are src/ops/<op>/test/<op>_demo.cpp; the
// checks are described in demo_support.h.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "demo_support.h"
#include "reuse_freed_memory.h"

namespace {

bool Ok(aclError status, const char* call) {
  if (status == ACL_SUCCESS) return true;
  std::fprintf(stderr, "%s failed with %d: %s\n", call, status, demo::RecentErrorMessage().c_str());
  return false;
}

}  // namespace

int main() {
  // The steps allocate and free buffers of hundreds of MiB (inputs, float64 copies, references): kept for reuse
  // rather than page-faulted in afresh each time, which took half the demo's run time (reuse_freed_memory.h).
  pacl_test::ReuseFreedMemory();
  const int32_t device = 0;
  aclrtStream stream = nullptr;
  if (!Ok(aclInit(nullptr), "aclInit")) return 1;
  if (!Ok(aclrtSetDevice(device), "aclrtSetDevice") || !Ok(aclrtCreateStream(&stream), "aclrtCreateStream")) {
    aclFinalize();
    return 1;
  }

  const char* threads = std::getenv("ACLNN_NUM_THREADS");
  std::printf("portable-aclnn demo (ACLNN_NUM_THREADS=%s; time = best of %d runs of phase 2 + synchronize, or of "
              "those in the first %.0f s)\n\n",
              threads != nullptr ? threads : "unset: all CPUs", demo::kTimedRuns, demo::kTimedMilliseconds / 1000);
  std::fflush(stdout);

  // One step per operator and dtype: its forward and backward, run, read back and checked (the operators' steps,
  // src/ops/<op>/test/<op>_demo.cpp).
  struct DTypeStep {
    const char* op;
    aclDataType dtype;
    demo::StepFunction run;
  };
  std::vector<DTypeStep> steps;
  for (const demo::Step& step : demo::AllSteps()) {
    for (aclDataType dtype : step.dtypes) steps.push_back({step.op, dtype, step.run});
  }

  // Progress on stderr, a line per step, so that stdout holds only the table.
  const auto start = std::chrono::steady_clock::now();
  auto elapsed_seconds = [&start] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  std::vector<demo::Row> rows;
  for (size_t i = 0; i < steps.size(); ++i) {
    std::fprintf(stderr, "[%zu/%zu] %s %s: forward and backward, checked against float64 (elapsed %.0f s)\n", i + 1,
                 steps.size(), steps[i].op, demo::DTypeName(steps[i].dtype), elapsed_seconds());
    steps[i].run(stream, steps[i].dtype, &rows);
  }
  std::fprintf(stderr, "all %zu steps done in %.0f s\n", steps.size(), elapsed_seconds());

  // A row that checks one of several outputs is labelled "operator:output".
  auto label = [](const demo::Row& row) { return row.output.empty() ? row.op : row.op + ":" + row.output; };
  int op_width = 8, shape_width = 5;
  for (const demo::Row& row : rows) {
    op_width = std::max(op_width, static_cast<int>(label(row).size()));
    shape_width = std::max(shape_width, static_cast<int>(row.shape.size()));
  }
  std::printf("%-*s %-9s %-*s %13s %11s %-6s %9s %8s\n", op_width, "operator", "dtype", shape_width, "shape",
              "max abs error", "tolerance", "check", "time ms", "GB/s");
  bool all_pass = true;
  for (const demo::Row& row : rows) {
    if (!row.error.empty()) {
      std::printf("%-*s %-9s %-*s FAILED: %s\n", op_width, label(row).c_str(), demo::DTypeName(row.dtype), shape_width,
                  row.shape.c_str(), row.error.c_str());
      all_pass = false;
      continue;
    }
    std::printf("%-*s %-9s %-*s %13.3e %11.3e %-6s %9.3f %8.2f\n", op_width, label(row).c_str(), demo::DTypeName(row.dtype),
                shape_width, row.shape.c_str(), row.max_abs_error, row.tolerance, row.pass ? "pass" : "FAIL",
                row.milliseconds, row.gbps);
    all_pass = all_pass && row.pass;
  }
  std::printf("\n%s\n", all_pass ? "all checks passed" : "SOME CHECKS FAILED");

  aclrtDestroyStream(stream);
  aclrtResetDevice(device);
  aclFinalize();
  return all_pass ? 0 : 1;
}
