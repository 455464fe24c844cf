#include "bench_report.h"

#include <sched.h>

#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <sstream>

namespace bench {
namespace {

// One named value of a record: text, or a number (its text, "" when missing).
struct Field {
  std::string key;
  std::string text;
  bool is_number;
};

Field Text(const std::string& key, const std::string& text) { return {key, text, false}; }

// Ten significant digits: enough for any timing, without the noise of a full double.
Field Number(const std::string& key, double value) {
  if (!std::isfinite(value)) return {key, "", true};
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.10g", value);
  return {key, buffer, true};
}

// A figure that exists only when positive (a time, a bandwidth of a case that ran).
Field PositiveNumber(const std::string& key, double value) { return Number(key, value > 0 ? value : NAN); }

std::vector<Field> ContextFields(const RunContext& c) {
  return {Text("date", c.date),
          Text("cpu", c.cpu_model),
          Number("cpus", c.cpus),
          Number("threads", c.threads),
          Text("simd_target", c.simd_target),
          Number("triad_mib", static_cast<double>(c.triad_mib)),
          PositiveNumber("triad_start_GBps", c.triad_start_gbps)};
}

std::vector<Field> CaseFields(const RunContext& context, const CaseResult& r) {
  const CaseMeasurement& m = r.measurement;
  const bool ok = r.error.empty() && r.mean_seconds > 0;
  const double mean_seconds = ok ? r.mean_seconds : NAN;
  const double gbps = m.bytes / mean_seconds / 1e9;
  return {Text("operator", m.info.op),
          Text("function", m.info.function),
          Text("direction", m.info.backward ? "backward" : "forward"),
          Text("dtype", DTypeName(m.info.dtype)),
          Text("case", m.info.name),
          Text("shape", m.info.shape),
          Text("calls", m.info.fresh_calls ? "fresh" : "reused"),
          Text("status", ok ? "ok" : "error"),
          Text("error", ok ? "" : (r.error.empty() ? "no completed run" : r.error)),
          Number("threads", context.threads),
          Number("repetitions", static_cast<double>(r.repetitions)),
          Number("iterations", static_cast<double>(r.iterations)),
          PositiveNumber("best_ms", ok ? m.best_seconds * 1e3 : NAN),
          PositiveNumber("mean_ms", mean_seconds * 1e3),
          PositiveNumber("bytes", m.bytes),
          PositiveNumber("GBps", gbps),
          PositiveNumber("triad_GBps", m.triad_gbps),
          PositiveNumber("pct_of_triad", m.triad_gbps > 0 ? 100.0 * gbps / m.triad_gbps : NAN)};
}

std::string JsonString(const std::string& text) {
  std::string quoted = "\"";
  for (char ch : text) {
    const unsigned char byte = static_cast<unsigned char>(ch);
    switch (ch) {
      case '"':
        quoted += "\\\"";
        break;
      case '\\':
        quoted += "\\\\";
        break;
      case '\n':
        quoted += "\\n";
        break;
      case '\r':
        quoted += "\\r";
        break;
      case '\t':
        quoted += "\\t";
        break;
      default:
        if (byte < 0x20) {
          char escape[8];
          std::snprintf(escape, sizeof escape, "\\u%04x", byte);
          quoted += escape;
        } else {
          quoted += ch;
        }
    }
  }
  return quoted + "\"";
}

void WriteJsonObject(const std::vector<Field>& fields, const char* indent, std::ostream* out) {
  *out << "{";
  for (size_t i = 0; i < fields.size(); ++i) {
    const Field& f = fields[i];
    *out << (i > 0 ? "," : "") << "\n"
         << indent << "  " << JsonString(f.key) << ": "
         << (f.is_number ? (f.text.empty() ? "null" : f.text) : JsonString(f.text));
  }
  *out << "\n" << indent << "}";
}

// RFC 4180 (lines end in \n): a field holding a comma, a quote or a line break is quoted, its quotes doubled.
std::string CsvField(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char ch : text) quoted += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return quoted + "\"";
}

void WriteCsvRow(const std::vector<std::string>& cells, std::ostream* out) {
  for (size_t i = 0; i < cells.size(); ++i) *out << (i > 0 ? "," : "") << CsvField(cells[i]);
  *out << "\n";
}

std::string WriteFile(const std::string& path, const std::string& contents) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file) return "cannot open " + path + " for writing";
  file << contents;
  file.close();
  if (!file) return "cannot write " + path;
  return "";
}

std::string CpuModel() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.compare(0, 10, "model name") != 0) continue;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const size_t begin = line.find_first_not_of(" \t", colon + 1);
    return begin == std::string::npos ? "" : line.substr(begin);
  }
  return "";
}

}  // namespace

RunContext CurrentRunContext() {
  RunContext context;
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  char date[32] = "";
  if (gmtime_r(&now, &utc) != nullptr) std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &utc);
  context.date = date;
  context.cpu_model = CpuModel();
  cpu_set_t cpus;
  if (sched_getaffinity(0, sizeof cpus, &cpus) == 0) context.cpus = CPU_COUNT(&cpus);
  return context;
}

bool ResultCollector::ReportContext(const Context& context) { return display_->ReportContext(context); }

void ResultCollector::Finalize() { display_->Finalize(); }

ResultCollector::Collected& ResultCollector::Find(const std::string& name) {
  for (Collected& c : collected_) {
    if (c.name == name) return c;
  }
  collected_.push_back(Collected());
  collected_.back().name = name;
  return collected_.back();
}

void ResultCollector::ReportRuns(const std::vector<Run>& runs) {
  display_->ReportRuns(runs);
  for (const Run& run : runs) {
    Collected& c = Find(run.run_name.function_name);
    if (run.error_occurred) {
      c.error = run.error_message.empty() ? "error without a message" : run.error_message;
      continue;
    }
    // real_accumulated_time is in seconds: the manual time of the run's iterations (for an aggregate, that
    // statistic of the repetitions' accumulated times, each over `iterations` calls).
    if (run.iterations <= 0) continue;
    const double seconds_per_call = run.real_accumulated_time / static_cast<double>(run.iterations);
    if (run.run_type == Run::RT_Iteration) {
      c.run_seconds_per_call.push_back(seconds_per_call);
      c.iterations += run.iterations;
    } else if (run.aggregate_name == "mean") {
      c.aggregate_mean_seconds = seconds_per_call;
      c.aggregate_repetitions = run.repetitions;
      c.aggregate_iterations = run.iterations * run.repetitions;
    }
  }
}

std::vector<CaseResult> ResultCollector::Results() const {
  std::vector<CaseResult> results;
  for (const Collected& c : collected_) {
    CaseResult r;
    const CaseMeasurement* measurement = FindCaseMeasurement(c.name);
    if (measurement != nullptr) {
      r.measurement = *measurement;
    } else {
      r.measurement.info.name = c.name;
    }
    r.error = c.error;
    if (!c.run_seconds_per_call.empty()) {
      double sum = 0;
      for (double s : c.run_seconds_per_call) sum += s;
      r.repetitions = static_cast<int64_t>(c.run_seconds_per_call.size());
      r.iterations = c.iterations;
      r.mean_seconds = sum / static_cast<double>(c.run_seconds_per_call.size());
    } else if (c.aggregate_mean_seconds > 0) {
      r.repetitions = c.aggregate_repetitions;
      r.iterations = c.aggregate_iterations;
      r.mean_seconds = c.aggregate_mean_seconds;
    }
    // A case that failed in a later repetition keeps the error; so does one whose timed loop saw a failure.
    if (r.error.empty()) r.error = r.measurement.error;
    results.push_back(r);
  }
  return results;
}

void FormatCallPatterns(const std::vector<CaseResult>& results, std::ostream* out) {
  const std::string suffix = "/fresh_calls";
  bool header = false;
  for (const CaseResult& fresh : results) {
    const CaseInfo& info = fresh.measurement.info;
    if (!info.fresh_calls || fresh.mean_seconds <= 0) continue;
    const std::string reused_name = info.name.substr(0, info.name.size() - suffix.size());
    for (const CaseResult& reused : results) {
      if (reused.measurement.info.name != reused_name || reused.mean_seconds <= 0) continue;
      if (!header) {
        *out << "\nCall patterns (mean ms): reused executor and workspace | CANN's fresh calls (phase 1, aclrtMalloc, "
                "phase 2, synchronise, aclrtFree) | ratio\n";
        header = true;
      }
      char line[512];
      std::snprintf(line, sizeof line, "%-72s %10.3f %10.3f %6.2fx\n", reused_name.c_str(), reused.mean_seconds * 1e3,
                    fresh.mean_seconds * 1e3, fresh.mean_seconds / reused.mean_seconds);
      *out << line;
    }
  }
}

void FormatResultsJson(const RunContext& context, const std::vector<CaseResult>& results, std::ostream* out) {
  *out << "{\n  \"program\": \"aclnn_bench\",\n  \"context\": ";
  WriteJsonObject(ContextFields(context), "  ", out);
  *out << ",\n  \"cases\": [";
  for (size_t i = 0; i < results.size(); ++i) {
    *out << (i > 0 ? ", " : "\n    ");
    WriteJsonObject(CaseFields(context, results[i]), "    ", out);
  }
  *out << (results.empty() ? "]\n}\n" : "\n  ]\n}\n");
}

void FormatResultsCsv(const RunContext& context, const std::vector<CaseResult>& results, std::ostream* out) {
  const std::vector<Field> context_fields = ContextFields(context);
  std::vector<std::string> header;
  for (const Field& f : CaseFields(context, CaseResult())) header.push_back(f.key);
  for (const Field& f : context_fields) header.push_back("run_" + f.key);
  WriteCsvRow(header, out);
  for (const CaseResult& r : results) {
    std::vector<std::string> cells;
    for (const Field& f : CaseFields(context, r)) cells.push_back(f.text);
    for (const Field& f : context_fields) cells.push_back(f.text);
    WriteCsvRow(cells, out);
  }
}

std::string WriteResultsJson(const std::string& path, const RunContext& context,
                             const std::vector<CaseResult>& results) {
  std::ostringstream text;
  FormatResultsJson(context, results, &text);
  return WriteFile(path, text.str());
}

std::string WriteResultsCsv(const std::string& path, const RunContext& context,
                            const std::vector<CaseResult>& results) {
  std::ostringstream text;
  FormatResultsCsv(context, results, &text);
  return WriteFile(path, text.str());
}

}  // namespace bench
