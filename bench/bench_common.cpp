#include "bench_common.h"

#include <benchmark/benchmark.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace bench {
namespace {

const int kTriadRepetitionsPerCase = 3;

aclrtStream g_stream = nullptr;
double g_fma_peak_gflops = 0;  // the best measured so far, before each case that counts its operations
bool g_any_failed = false;
// Every registered case, in registration order; a case's lambda refers to its entry by index.
std::vector<CaseMeasurement> g_cases;

// The triad's arrays, allocated once.
struct TriadArrays {
  int threads = 1;
  size_t n = 0;
  std::unique_ptr<double[]> a, b, c;
  // The best bandwidth measured so far in this run. On a shared host the bandwidth drifts with the neighbours'
  // load; dividing by the best figure seen (not the latest) keeps triad% conservative.
  double best_gbps = 0;
  double best_read_gbps = 0;  // the same for the read-only pass (MeasureReadGBps)
};
TriadArrays g_triad;

// Runs body(begin, end) on g_triad.threads threads over slices of [0, n) that start on cache-line boundaries.
template <class Body>
void ForEachTriadSlice(const Body& body) {
  const size_t n = g_triad.n;
  const size_t per_thread = (n / static_cast<size_t>(g_triad.threads) + 7) / 8 * 8;
  std::vector<std::thread> workers;
  for (int t = 0; t < g_triad.threads; ++t) {
    const size_t begin = std::min(n, per_thread * static_cast<size_t>(t));
    const size_t end = std::min(n, begin + per_thread);
    workers.emplace_back([&body, begin, end] { body(begin, end); });
  }
  for (std::thread& w : workers) w.join();
}

std::string Failure(const char* call, int status) {
  return std::string(call) + " failed with " + std::to_string(status) + ": " + RecentErrorMessage();
}

// Small, fast and reproducible; the quality of the numbers does not matter for timing.
struct Random {
  uint64_t state;
  explicit Random(uint32_t seed) : state(0x9E3779B97F4A7C15ull ^ seed) {}
  double Uniform01() {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<double>(state >> 40) / 16777216.0;
  }
};

uint16_t FloatToBFloat16Bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);
  bits += 0x7FFFu + ((bits >> 16) & 1u);  // round to nearest even
  return static_cast<uint16_t>(bits >> 16);
}

// Stores value as one element of dtype (ACL_FLOAT, ACL_FLOAT16 or ACL_BF16) at destination.
void EncodeElement(float value, aclDataType dtype, unsigned char* destination) {
  if (dtype == ACL_FLOAT) {
    std::memcpy(destination, &value, 4);
  } else {
    const uint16_t bits = dtype == ACL_FLOAT16 ? aclFloatToFloat16(value) : FloatToBFloat16Bits(value);
    std::memcpy(destination, &bits, 2);
  }
}

std::string CreateTensorStorage(const std::vector<int64_t>& shape, aclDataType dtype, DeviceTensor* result) {
  result->bytes = static_cast<size_t>(ElementCount(shape)) * aclDataTypeSize(dtype);
  aclError status = aclrtMalloc(&result->data, std::max<size_t>(result->bytes, 1), ACL_MEM_MALLOC_HUGE_FIRST);
  if (status != ACL_SUCCESS) return Failure("aclrtMalloc", status);
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t d = shape.size(); d > 1; --d) strides[d - 2] = strides[d - 1] * shape[d - 1];
  result->tensor = aclCreateTensor(shape.data(), shape.size(), dtype, strides.data(), 0, ACL_FORMAT_ND, shape.data(),
                                   shape.size(), result->data);
  if (result->tensor == nullptr) return std::string("aclCreateTensor returned NULL: ") + RecentErrorMessage();
  return "";
}

// The last prepared case, kept while Google Benchmark calls the same benchmark again with more iterations.
struct CachedCall {
  std::string name;
  std::string error;
  PreparedCall call;
  void* workspace = nullptr;
  double triad_now_gbps = 0;  // the triad measured just before the case's first timed run
};
CachedCall g_cached;

void ReleaseCached() {
  if (g_cached.call.executor != nullptr) aclDestroyAclOpExecutor(g_cached.call.executor);
  if (g_cached.workspace != nullptr) aclrtFree(g_cached.workspace);
  for (DeviceTensor& t : g_cached.call.tensors) ReleaseDeviceTensor(&t);
  for (aclBoolArray* array : g_cached.call.bool_arrays) aclDestroyBoolArray(array);
  for (aclIntArray* array : g_cached.call.int_arrays) aclDestroyIntArray(array);
  g_cached = CachedCall();
}

// Replaces the cached call by case `name`'s (RunCase calls it when the case changes).
void PrepareCached(const std::string& name, const Preparer& prepare) {
  ReleaseCached();
  g_cached.name = name;
  g_cached.error = prepare(&g_cached.call);
  if (!g_cached.error.empty()) return;
  aclnnStatus status = aclSetAclOpExecutorRepeatable(g_cached.call.executor);
  if (status != ACLNN_SUCCESS) {
    g_cached.error = Failure("aclSetAclOpExecutorRepeatable", status);
    return;
  }
  if (g_cached.call.workspace_size > 0) {
    aclError alloc = aclrtMalloc(&g_cached.workspace, g_cached.call.workspace_size, ACL_MEM_MALLOC_HUGE_FIRST);
    if (alloc != ACL_SUCCESS) {
      g_cached.error = Failure("aclrtMalloc(workspace)", alloc);
      return;
    }
  }
  if (g_cached.call.flops > 0) {
    // Again before every such case, keeping the best: on a shared host the neighbours' load drifts, and dividing by
    // the best figure seen keeps fma% conservative (as triad% is).
    g_fma_peak_gflops = std::max(g_fma_peak_gflops, MeasureFmaPeakGflops(LibraryThreadCount(), 0.1));
  }
  g_cached.triad_now_gbps = MeasureTriadGBps(kTriadRepetitionsPerCase);  // also a sample for the run's best
  MeasureReadGBps(kTriadRepetitionsPerCase);                              // a sample for the run's best read
}

// One call the way CANN's samples make it: phase 1 (a fresh executor), aclrtMalloc of the workspace, phase 2,
// aclrtSynchronizeStream, aclrtFree (the executor is released by its run). "" or the step that failed.
std::string FreshCall(const PreparedCall& call, int* status_out) {
  uint64_t workspace_size = 0;
  aclOpExecutor* executor = nullptr;
  aclnnStatus status = opcall::GetWorkspaceSize(*call.op_call, &workspace_size, &executor);
  if (status != ACLNN_SUCCESS) {
    *status_out = status;
    return "phase 1";
  }
  void* workspace = nullptr;
  if (workspace_size > 0) {
    const aclError alloc = aclrtMalloc(&workspace, workspace_size, ACL_MEM_MALLOC_HUGE_FIRST);
    if (alloc != ACL_SUCCESS) {
      aclDestroyAclOpExecutor(executor);
      *status_out = alloc;
      return "aclrtMalloc(workspace)";
    }
  }
  std::string failed;
  status = call.phase2(workspace, workspace_size, executor, g_stream);
  if (status != ACLNN_SUCCESS) {
    aclDestroyAclOpExecutor(executor);  // a refused run leaves the executor alive
    *status_out = status;
    failed = "phase 2";
  } else if (const aclError sync = aclrtSynchronizeStream(g_stream); sync != ACL_SUCCESS) {
    *status_out = sync;
    failed = "aclrtSynchronizeStream";
  }
  if (workspace != nullptr) aclrtFree(workspace);
  return failed;
}

void RunCase(benchmark::State& state, size_t case_index, const Preparer& prepare) {
  CaseMeasurement& measurement = g_cases[case_index];
  if (g_cached.name != measurement.info.name) {
    PrepareCached(measurement.info.name, prepare);
    measurement.bytes = g_cached.call.bytes;
    measurement.triad_gbps = g_cached.triad_now_gbps;
    measurement.error = g_cached.error;
  }
  if (!g_cached.error.empty()) {
    g_any_failed = true;
    state.SkipWithError(g_cached.error.c_str());
    return;
  }
  const PreparedCall& call = g_cached.call;
  const bool fresh = measurement.info.fresh_calls;
  double total_seconds = 0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    std::string failed;
    int failed_status = 0;
    if (fresh) {
      failed = FreshCall(call, &failed_status);
    } else {
      aclnnStatus status = call.phase2(g_cached.workspace, call.workspace_size, call.executor, g_stream);
      aclError sync = status == ACLNN_SUCCESS ? aclrtSynchronizeStream(g_stream) : ACL_SUCCESS;
      if (status != ACLNN_SUCCESS || sync != ACL_SUCCESS) {
        failed = status != ACLNN_SUCCESS ? "phase 2" : "aclrtSynchronizeStream";
        failed_status = status != ACLNN_SUCCESS ? status : sync;
      }
    }
    const auto stop = std::chrono::steady_clock::now();
    if (!failed.empty()) {
      g_cached.error = Failure(failed.c_str(), failed_status);
      g_any_failed = true;
      measurement.error = g_cached.error;
      state.SkipWithError(g_cached.error.c_str());
      break;
    }
    const double seconds = std::chrono::duration<double>(stop - start).count();
    state.SetIterationTime(seconds);
    total_seconds += seconds;
    if (measurement.best_seconds == 0 || seconds < measurement.best_seconds) measurement.best_seconds = seconds;
  }
  if (state.error_occurred() || total_seconds <= 0) return;
  const double gbps = call.bytes * static_cast<double>(state.iterations()) / total_seconds / 1e9;
  const double triad = g_triad.best_gbps;
  state.counters["GB/s"] = benchmark::Counter(gbps);
  state.counters["triad_GB/s"] = benchmark::Counter(triad);
  state.counters["triad_now_GB/s"] = benchmark::Counter(g_cached.triad_now_gbps);
  state.counters["triad%"] = benchmark::Counter(triad > 0 ? 100.0 * gbps / triad : 0.0);
  const double read = g_triad.best_read_gbps;
  state.counters["read_GB/s"] = benchmark::Counter(read);
  state.counters["read%"] = benchmark::Counter(read > 0 ? 100.0 * gbps / read : 0.0);
  if (call.flops > 0) {
    const double gflops = call.flops * static_cast<double>(state.iterations()) / total_seconds / 1e9;
    state.counters["GFLOP/s"] = benchmark::Counter(gflops);
    state.counters["fma_peak_GFLOP/s"] = benchmark::Counter(g_fma_peak_gflops);
    state.counters["fma%"] = benchmark::Counter(g_fma_peak_gflops > 0 ? 100.0 * gflops / g_fma_peak_gflops : 0.0);
  }
}

// Chains of fused multiply-adds in registers, the way a matrix product's inner loop runs them: kChains independent
// accumulators acc += x * y (enough to cover the FMA latency times the FMA units), their multiplicands from kFactors
// registers (reusing one or two registers for every multiply-add measured a third slower on a Zen 5 VM), `rounds`
// rounds; returns a value that depends on all of them (so nothing is optimised away). Each function is compiled for
// its instruction set and called only where the CPU has it.
constexpr int kFmaChains = 16;
#if defined(__x86_64__)
constexpr int kAvx512Factors = 8;
__attribute__((target("avx512f"))) float FmaChainsAvx512(int64_t rounds) {
  __m512 acc[kFmaChains], x[kAvx512Factors];
  for (int c = 0; c < kFmaChains; ++c) acc[c] = _mm512_set1_ps(static_cast<float>(c));
  for (int f = 0; f < kAvx512Factors; ++f) {
    x[f] = _mm512_set1_ps(1e-3f * static_cast<float>(f + 1));
    asm volatile("" : "+v"(x[f]));  // (not constants the compiler could fold)
  }
  for (int64_t r = 0; r < rounds; ++r) {
#pragma GCC unroll 16
    for (int c = 0; c < kFmaChains; ++c) {
      acc[c] = _mm512_fmadd_ps(x[c % kAvx512Factors], x[(c / kAvx512Factors + c) % kAvx512Factors], acc[c]);
    }
#pragma GCC unroll 16
    for (int c = 0; c < kFmaChains; ++c) asm volatile("" : "+v"(acc[c]));  // computed every round
  }
  alignas(64) float lanes[16];
  float sum = 0;
  for (int c = 0; c < kFmaChains; ++c) {
    _mm512_store_ps(lanes, acc[c]);
    for (float lane : lanes) sum += lane;
  }
  return sum;
}
constexpr int kAvx2Chains = 12;  // of the 16 registers, the rest hold the multiplicands
constexpr int kAvx2Factors = 4;
__attribute__((target("avx2,fma"))) float FmaChainsAvx2(int64_t rounds) {
  __m256 acc[kAvx2Chains], x[kAvx2Factors];
  for (int c = 0; c < kAvx2Chains; ++c) acc[c] = _mm256_set1_ps(static_cast<float>(c));
  for (int f = 0; f < kAvx2Factors; ++f) {
    x[f] = _mm256_set1_ps(1e-3f * static_cast<float>(f + 1));
    asm volatile("" : "+x"(x[f]));
  }
  for (int64_t r = 0; r < rounds; ++r) {
#pragma GCC unroll 16
    for (int c = 0; c < kAvx2Chains; ++c) {
      acc[c] = _mm256_fmadd_ps(x[c % kAvx2Factors], x[(c / kAvx2Factors + c) % kAvx2Factors], acc[c]);
    }
#pragma GCC unroll 16
    for (int c = 0; c < kAvx2Chains; ++c) asm volatile("" : "+x"(acc[c]));
  }
  alignas(32) float lanes[8];
  float sum = 0;
  for (int c = 0; c < kAvx2Chains; ++c) {
    _mm256_store_ps(lanes, acc[c]);
    for (float lane : lanes) sum += lane;
  }
  return sum;
}
#endif
float FmaChainsScalar(int64_t rounds) {
  float acc[kFmaChains];
  for (int c = 0; c < kFmaChains; ++c) acc[c] = static_cast<float>(c);
  for (int64_t r = 0; r < rounds; ++r) {
    for (int c = 0; c < kFmaChains; ++c) acc[c] = std::fma(1e-3f, static_cast<float>(c), acc[c]);
  }
  float sum = 0;
  for (float v : acc) sum += v;
  return sum;
}

// The widest chains this CPU runs, and the fp32 multiply-adds of one of their rounds.
float (*FmaChains(int* per_round))(int64_t) {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) {
    *per_round = 16 * kFmaChains;
    return FmaChainsAvx512;
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    *per_round = 8 * kAvx2Chains;
    return FmaChainsAvx2;
  }
#endif
  *per_round = kFmaChains;
  return FmaChainsScalar;
}

}  // namespace

int LibraryThreadCount() {
  if (const char* env = std::getenv("ACLNN_NUM_THREADS")) {
    char* end = nullptr;
    const long value = std::strtol(env, &end, 10);
    while (end != env && (*end == ' ' || *end == '\t')) ++end;
    if (end != env && *end == '\0' && value >= 1 && value <= 1024) return static_cast<int>(value);
  }
  cpu_set_t cpus;
  if (sched_getaffinity(0, sizeof cpus, &cpus) == 0 && CPU_COUNT(&cpus) > 0) return CPU_COUNT(&cpus);
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

void SetUpTriad(int threads, size_t mib_per_array) {
  g_triad.threads = std::max(1, threads);
  g_triad.n = mib_per_array * 1024 * 1024 / sizeof(double);
  g_triad.a.reset(new double[g_triad.n]);
  g_triad.b.reset(new double[g_triad.n]);
  g_triad.c.reset(new double[g_triad.n]);
  double* pa = g_triad.a.get();
  double* pb = g_triad.b.get();
  double* pc = g_triad.c.get();
  // Each thread touches its own slice first, so the pages are placed near the thread that later streams them.
  ForEachTriadSlice([=](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) {
      pa[i] = 0.0;
      pb[i] = 1.0;
      pc[i] = 2.0;
    }
  });
}

double MeasureFmaPeakGflops(int threads, double seconds) {
  int per_round = 1;
  float (*chains)(int64_t) = FmaChains(&per_round);
  threads = std::max(1, threads);
  // Calibrate the rounds for about `seconds` on one thread.
  int64_t rounds = 1 << 16;
  for (;;) {
    const auto start = std::chrono::steady_clock::now();
    volatile float sink = chains(rounds);
    (void)sink;
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (elapsed >= seconds / 4 || rounds >= (int64_t{1} << 40)) {
      rounds = static_cast<int64_t>(static_cast<double>(rounds) * seconds / std::max(elapsed, 1e-9));
      break;
    }
    rounds *= 4;
  }
  rounds = std::max<int64_t>(rounds, 1 << 16);
  double best = 0;
  for (int pass = 0; pass < 3; ++pass) {
    std::vector<float> results(static_cast<size_t>(threads));
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) {
      workers.emplace_back([&results, t, chains, rounds] { results[static_cast<size_t>(t)] = chains(rounds); });
    }
    for (std::thread& w : workers) w.join();
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double flops = 2.0 * per_round * static_cast<double>(rounds) * threads;
    if (std::isfinite(results[0])) best = std::max(best, flops / elapsed / 1e9);
  }
  return best;
}

double MeasureTriadGBps(int repetitions) {
  if (g_triad.n == 0) return 0;
  double* pa = g_triad.a.get();
  const double* pb = g_triad.b.get();
  const double* pc = g_triad.c.get();
  const double scalar = 3.0;
  double best = 0;
  for (int r = 0; r < repetitions; ++r) {
    const auto start = std::chrono::steady_clock::now();
    ForEachTriadSlice([=](size_t begin, size_t end) {
      for (size_t i = begin; i < end; ++i) pa[i] = pb[i] + scalar * pc[i];
    });
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    best = std::max(best, 24.0 * static_cast<double>(g_triad.n) / seconds / 1e9);
  }
  // Checks the arithmetic (and keeps the loops from being optimised away).
  if (pa[0] != 7.0 || pa[g_triad.n - 1] != 7.0) {
    std::fprintf(stderr, "triad check failed: a[0] = %g, a[n-1] = %g\n", pa[0], pa[g_triad.n - 1]);
    return 0;
  }
  g_triad.best_gbps = std::max(g_triad.best_gbps, best);
  return best;
}

double MeasureReadGBps(int repetitions) {
  if (g_triad.n == 0) return 0;
  const double* pb = g_triad.b.get();
  const double* pc = g_triad.c.get();
  constexpr int kChains = 8;  // independent sums, so that the adds' latency does not bound the loop
  double best = 0;
  double total = 0;  // of the last pass: every term is a small integer, so any order of addition is exact
  for (int r = 0; r < repetitions; ++r) {
    std::mutex total_mutex;
    total = 0;
    const auto start = std::chrono::steady_clock::now();
    ForEachTriadSlice([&, pb, pc](size_t begin, size_t end) {
      double chain[kChains] = {};
      size_t i = begin;
      for (; i + kChains <= end; i += kChains) {
        for (int k = 0; k < kChains; ++k) chain[k] += pb[i + k] + pc[i + k];
      }
      for (; i < end; ++i) chain[0] += pb[i] + pc[i];
      double slice_total = 0;
      for (double sum : chain) slice_total += sum;
      const std::lock_guard<std::mutex> lock(total_mutex);
      total += slice_total;
    });
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    best = std::max(best, 16.0 * static_cast<double>(g_triad.n) / seconds / 1e9);
  }
  // Checks the arithmetic (b holds 1 and c 2 everywhere: 3 per element).
  if (total != 3.0 * static_cast<double>(g_triad.n)) {
    std::fprintf(stderr, "read check failed: %g, expected %g\n", total, 3.0 * static_cast<double>(g_triad.n));
    return 0;
  }
  g_triad.best_read_gbps = std::max(g_triad.best_read_gbps, best);
  return best;
}

std::string CreateRandomTensor(const std::vector<int64_t>& shape, aclDataType dtype, double low, double high,
                               uint32_t seed, DeviceTensor* result) {
  if (dtype != ACL_FLOAT && dtype != ACL_FLOAT16 && dtype != ACL_BF16) return "CreateRandomTensor: unsupported dtype";
  std::string error = CreateTensorStorage(shape, dtype, result);
  if (!error.empty()) return error;
  // Filled through a host buffer of bounded size, chunk by chunk, as a program would copy to a device.
  const size_t element_size = aclDataTypeSize(dtype);
  const size_t total = static_cast<size_t>(ElementCount(shape));
  const size_t chunk = size_t{1} << 20;
  std::vector<unsigned char> host(std::min(total, chunk) * element_size);
  Random random(seed);
  for (size_t begin = 0; begin < total; begin += chunk) {
    const size_t count = std::min(chunk, total - begin);
    for (size_t i = 0; i < count; ++i) {
      const float value = static_cast<float>(low + (high - low) * random.Uniform01());
      EncodeElement(value, dtype, &host[i * element_size]);
    }
    char* destination = static_cast<char*>(result->data) + begin * element_size;
    const size_t bytes = count * element_size;
    aclError status =
        aclrtMemcpy(destination, result->bytes - begin * element_size, host.data(), bytes, ACL_MEMCPY_HOST_TO_DEVICE);
    if (status != ACL_SUCCESS) return Failure("aclrtMemcpy", status);
  }
  return "";
}

std::string CreateTensorFromValues(const std::vector<int64_t>& shape, aclDataType dtype,
                                   const std::vector<float>& values, DeviceTensor* result) {
  if (dtype != ACL_FLOAT && dtype != ACL_FLOAT16 && dtype != ACL_BF16) {
    return "CreateTensorFromValues: unsupported dtype";
  }
  if (values.size() != static_cast<size_t>(ElementCount(shape))) {
    return "CreateTensorFromValues: " + std::to_string(values.size()) + " values for shape " + ShapeLabel(shape);
  }
  std::string error = CreateTensorStorage(shape, dtype, result);
  if (!error.empty()) return error;
  const size_t element_size = aclDataTypeSize(dtype);
  std::vector<unsigned char> host(values.size() * element_size);
  for (size_t i = 0; i < values.size(); ++i) EncodeElement(values[i], dtype, &host[i * element_size]);
  if (host.empty()) return "";
  aclError status = aclrtMemcpy(result->data, result->bytes, host.data(), host.size(), ACL_MEMCPY_HOST_TO_DEVICE);
  return status == ACL_SUCCESS ? "" : Failure("aclrtMemcpy", status);
}

std::vector<unsigned char> Int32Bytes(const std::vector<int64_t>& values) {
  std::vector<unsigned char> bytes(values.size() * sizeof(int32_t));
  for (size_t i = 0; i < values.size(); ++i) {
    const auto v = static_cast<int32_t>(values[i]);
    std::memcpy(&bytes[i * sizeof(int32_t)], &v, sizeof(int32_t));
  }
  return bytes;
}

std::string CreateTensorFromBytes(const std::vector<int64_t>& shape, aclDataType dtype,
                                  const std::vector<unsigned char>& bytes, DeviceTensor* result) {
  std::string error = CreateTensorStorage(shape, dtype, result);
  if (!error.empty()) return error;
  if (bytes.size() != result->bytes) {
    return "CreateTensorFromBytes: " + std::to_string(bytes.size()) + " bytes for shape " + ShapeLabel(shape);
  }
  if (bytes.empty()) return "";
  aclError status = aclrtMemcpy(result->data, result->bytes, bytes.data(), bytes.size(), ACL_MEMCPY_HOST_TO_DEVICE);
  return status == ACL_SUCCESS ? "" : Failure("aclrtMemcpy", status);
}

std::string CreateCausalMask(const std::vector<int64_t>& shape, DeviceTensor* result) {
  const int64_t queries = shape[shape.size() - 2];
  const int64_t keys = shape.back();
  std::vector<unsigned char> host(static_cast<size_t>(ElementCount(shape)));
  for (size_t i = 0; i < host.size(); ++i) {
    const int64_t key = static_cast<int64_t>(i) % keys;
    const int64_t query = static_cast<int64_t>(i) / keys % queries;
    host[i] = key > query ? 1 : 0;
  }
  return CreateTensorFromBytes(shape, ACL_BOOL, host, result);
}

namespace {

struct CaseTable {
  const char* op;
  void (*register_cases)();
};

std::vector<CaseTable>& CaseTables() {
  static std::vector<CaseTable>* const tables = new std::vector<CaseTable>;  // filled during static initialisation
  return *tables;
}

}  // namespace

CaseTableRegistration::CaseTableRegistration(const char* op, void (*register_cases)()) {
  CaseTables().push_back({op, register_cases});
}

void RegisterAllCaseTables() {
  std::vector<CaseTable> tables = CaseTables();
  std::sort(tables.begin(), tables.end(),
            [](const CaseTable& a, const CaseTable& b) { return std::strcmp(a.op, b.op) < 0; });
  for (const CaseTable& table : tables) table.register_cases();
}

aclnnStatus PlanCall(const opcall::OpCall& op_call, PreparedCall* call) {
  call->op_call = op_call;
  call->phase2 = op_call.op().phase2;
  return opcall::GetWorkspaceSize(op_call, &call->workspace_size, &call->executor);
}

std::string AddRandomTensor(PreparedCall* call, const std::vector<int64_t>& shape, aclDataType dtype, double low,
                            double high, uint32_t seed, DeviceTensor* result) {
  const std::string error = CreateRandomTensor(shape, dtype, low, high, seed, result);
  call->tensors.push_back(*result);
  return error;
}

void ReleaseDeviceTensor(DeviceTensor* t) {
  if (t->tensor != nullptr) aclDestroyTensor(t->tensor);
  if (t->data != nullptr) aclrtFree(t->data);
  *t = DeviceTensor();
}

void RegisterOperatorBenchmark(const CaseInfo& info, Preparer prepare) {
  // Each case twice: the reused executor and workspace, then CANN's fresh calls.
  for (bool fresh : {false, true}) {
    const size_t case_index = g_cases.size();
    g_cases.push_back(CaseMeasurement());
    CaseInfo& registered = g_cases.back().info;
    registered = info;
    registered.fresh_calls = fresh;
    if (fresh) registered.name += "/fresh_calls";
    benchmark::RegisterBenchmark(registered.name.c_str(), [case_index, prepare](benchmark::State& state) {
      RunCase(state, case_index, prepare);
    })->UseManualTime()->Unit(benchmark::kMillisecond);
  }
}

const CaseMeasurement* FindCaseMeasurement(const std::string& name) {
  for (const CaseMeasurement& measurement : g_cases) {
    if (measurement.info.name == name) return &measurement;
  }
  return nullptr;
}

void SetStream(aclrtStream stream) { g_stream = stream; }
void ReleaseBenchmarkResources() {
  ReleaseCached();
  g_triad = TriadArrays();
}
bool AnyBenchmarkFailed() { return g_any_failed; }

std::string ShapeLabel(const std::vector<int64_t>& shape) {
  std::string label;
  for (size_t d = 0; d < shape.size(); ++d) label += (d > 0 ? "x" : "") + std::to_string(shape[d]);
  return label;
}

int64_t ElementCount(const std::vector<int64_t>& shape) {
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  return count;
}

std::string RecentErrorMessage() {
  const char* message = aclGetRecentErrMsg();
  return message != nullptr ? message : "";
}

}  // namespace bench
