// Lifecycle: creating and destroying tensors, scalars, arrays, lists, executors, streams, contexts, allocations and
// whole aclInit / aclFinalize cycles in loops, with operators running in between. LeakSanitizer (the ASan build)
// reports memory that became unreachable; the tests also show that nothing grows while it stays reachable (a
// registry that is never pruned, threads that are never joined): after a warm-up, the live heap (glibc's
// mallinfo2, skipped under the sanitizers, whose allocator it does not see) and the thread count must not grow
// over many more iterations. The measured loops create enough objects for a leaked one per iteration to exceed the
// allowed slack (5000 tensor loops of ten objects, 1920 executors, 1000 allocations), and a leaked stream or context
// would keep its worker thread, which the thread count catches.
//
// aclFinalize with work still queued on several streams (queued from this thread and from another one) must run
// that work and then return success (docs/runtime.md); calls made afterwards with the destroyed streams and
// contexts fail with the documented codes, and a second aclFinalize reports ACL_ERROR_REPEAT_FINALIZE.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "acl/acl.h"
#include "aclnn/acl_meta.h"
#include "aclnn/opdev/op_errno.h"
#include "op_test_util.h"
#include "system/op_cases.h"
#include "system/system_test_util.h"

namespace {

using systest::OpCase;

// How much the live heap may grow over a measured loop: allocator bookkeeping, not a leak.
constexpr size_t kHeapSlackBytes = 32 * 1024;

// Iterations of a measured loop: fewer under the sanitizers (slower, and their heap is not measured).
int Scaled(int iterations) { return systest::kSanitized ? iterations / 4 + 1 : iterations; }

// Takes (and clears) the calling thread's recent error message.
std::string TakeMessage() { return optest::RecentErrorMessage(); }

// The state the process-wide test environment (tests/ops/op_test_util.cpp) keeps between tests: initialised,
// device 0 set on the main thread. Restored after a test that called aclFinalize.
void Reinitialise() {
  EXPECT_EQ(aclInit(nullptr), ACL_SUCCESS) << TakeMessage();
  EXPECT_EQ(aclrtSetDevice(0), ACL_SUCCESS) << TakeMessage();
}

// The executor registry remembers the last 1024 released executors (to refuse stale handles): until that many were
// released in this process, every release grows the heap a little. Releasing that many first (phase 1, then
// aclDestroyAclOpExecutor) keeps this bounded, intended memory out of the measurements.
void FillExecutorRegistry() {
  const std::unique_ptr<OpCase> c =
      systest::MakeCase("ScaledMaskedSoftmax", ACL_FLOAT, 1, 0, systest::CaseSize::kSmall);
  for (int k = 0; k < 1100; ++k) {
    uint64_t size = 0;
    aclOpExecutor* executor = nullptr;
    ASSERT_EQ(c->GetWorkspaceSize(&size, &executor), ACLNN_SUCCESS) << TakeMessage();
    ASSERT_EQ(aclDestroyAclOpExecutor(executor), ACLNN_SUCCESS) << TakeMessage();
  }
}

// The heap and thread count after a warm-up; ExpectNoGrowth compares them with the values after more iterations.
// The thread count can be given instead, when it must be taken at a particular point of a loop.
class GrowthCheck {
 public:
  GrowthCheck() : heap_(Measure()), threads_(systest::ThreadCount()) {}
  explicit GrowthCheck(int threads) : heap_(Measure()), threads_(threads) {}
  void ExpectNoGrowth(const std::string& what) const {
    const int threads = systest::WaitForThreadCountAtMost(threads_);
    EXPECT_LE(threads, threads_) << what << ": the process has more threads than after the warm-up";
    if (systest::kSanitized) return;
    const size_t heap = systest::LiveHeapBytes();
    EXPECT_LE(heap, heap_ + kHeapSlackBytes)
        << what << ": the live heap grew by " << (heap - heap_) << " bytes over the measured iterations";
  }

 private:
  static size_t Measure() {
    FillExecutorRegistry();
    return systest::LiveHeapBytes();
  }

  size_t heap_;
  int threads_;
};

// Runs every case once on stream, checks it against the float64 reference and returns each case's output bytes.
std::vector<std::vector<uint8_t>> SerialResults(const std::vector<std::unique_ptr<OpCase>>& cases, aclrtStream stream) {
  std::vector<std::vector<uint8_t>> results;
  for (const auto& c : cases) {
    EXPECT_TRUE(c->RunAndWait(stream));
    EXPECT_EQ(c->CheckAgainstReference(), "");
    results.push_back(c->OutputBytes());
  }
  return results;
}

void ExpectResults(const std::vector<std::unique_ptr<OpCase>>& cases, const std::vector<std::vector<uint8_t>>& expected,
                   const std::string& when) {
  for (size_t i = 0; i < cases.size(); ++i) {
    EXPECT_TRUE(cases[i]->OutputBytes() == expected[i]) << cases[i]->name() << " (" << when << ")";
    EXPECT_EQ(cases[i]->CheckGuards(), "") << when;
  }
}

// ---------------------------------------------------------------------------------------------------------------

TEST(Lifecycle, TensorsScalarsArraysAndListsCreatedAndDestroyed) {
  std::vector<float> storage(2 * 3 * 4 * 5 + 7, 0.5f);
  const int64_t shape[4] = {2, 3, 4, 5};
  const int64_t strides[4] = {60, 20, 5, 1};
  const int64_t storage_dims[1] = {static_cast<int64_t>(storage.size())};
  const int64_t ints[6] = {1, -2, 3, 4, 5, 6};
  const float floats[5] = {0.5f, 1.5f, -2.0f, 3.0f, 4.0f};
  const bool bools[3] = {true, false, true};
  auto once = [&] {
    aclTensor* tensor =
        aclCreateTensor(shape, 4, ACL_FLOAT, strides, 7, ACL_FORMAT_ND, storage_dims, 1, storage.data());
    ASSERT_NE(tensor, nullptr) << TakeMessage();
    int64_t* dims = nullptr;
    uint64_t count = 0;
    EXPECT_EQ(aclGetViewShape(tensor, &dims, &count), ACLNN_SUCCESS);
    delete[] dims;
    EXPECT_EQ(aclGetViewStrides(tensor, &dims, &count), ACLNN_SUCCESS);
    delete[] dims;
    EXPECT_EQ(aclGetStorageShape(tensor, &dims, &count), ACLNN_SUCCESS);
    delete[] dims;
    float f = 2.5f;
    int64_t i = -7;
    aclScalar* float_scalar = aclCreateScalar(&f, ACL_FLOAT);
    aclScalar* int_scalar = aclCreateScalar(&i, ACL_INT64);
    aclIntArray* int_array = aclCreateIntArray(ints, 6);
    aclIntArray* empty_array = aclCreateIntArray(nullptr, 0);
    aclFloatArray* float_array = aclCreateFloatArray(floats, 5);
    aclBoolArray* bool_array = aclCreateBoolArray(bools, 3);
    const aclTensor* tensors[3] = {tensor, tensor, tensor};
    aclTensorList* tensor_list = aclCreateTensorList(tensors, 3);
    const aclScalar* scalars[2] = {float_scalar, int_scalar};
    aclScalarList* scalar_list = aclCreateScalarList(scalars, 2);
    EXPECT_TRUE(float_scalar && int_scalar && int_array && empty_array && float_array && bool_array && tensor_list &&
                scalar_list)
        << TakeMessage();
    // A refused creation records a message; the thread keeps only the newest few, so these do not pile up.
    EXPECT_EQ(aclCreateTensor(nullptr, 4, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, storage_dims, 1, storage.data()),
              nullptr);
    // Lists do not own their elements: destroyed first, then the elements.
    EXPECT_EQ(aclDestroyTensorList(tensor_list), ACLNN_SUCCESS);
    EXPECT_EQ(aclDestroyScalarList(scalar_list), ACLNN_SUCCESS);
    EXPECT_EQ(aclDestroyTensor(tensor), ACLNN_SUCCESS);
    EXPECT_EQ(aclDestroyScalar(float_scalar), ACLNN_SUCCESS);
    EXPECT_EQ(aclDestroyScalar(int_scalar), ACLNN_SUCCESS);
    EXPECT_EQ(aclDestroyIntArray(int_array), ACLNN_SUCCESS);
    EXPECT_EQ(aclDestroyIntArray(empty_array), ACLNN_SUCCESS);
    EXPECT_EQ(aclDestroyFloatArray(float_array), ACLNN_SUCCESS);
    EXPECT_EQ(aclDestroyBoolArray(bool_array), ACLNN_SUCCESS);
  };
  for (int k = 0; k < 200; ++k) once();
  const GrowthCheck growth;
  for (int k = 0; k < Scaled(5000); ++k) once();
  growth.ExpectNoGrowth("tensor / scalar / array / list loop");
  TakeMessage();
}

// Executors in every way a program may end them: destroyed without running (with and without being made
// repeatable), released by their run, destroyed after a run that is still queued, repeatable ones run twice and
// destroyed. The 16 measured iterations release 1920 executors.
TEST(Lifecycle, ExecutorsOfEveryOperatorCreatedRunAndDestroyed) {
  if (optest::StrictMode()) {
    GTEST_SKIP() << optest::StrictModeReason("its quarantine keeps every freed allocation's range and stacks");
  }
  std::vector<std::unique_ptr<OpCase>> cases = systest::MakeAllCases(100, systest::CaseSize::kSmall);
  optest::TestStream stream;
  const std::vector<std::vector<uint8_t>> expected = SerialResults(cases, stream.get());
  std::vector<std::unique_ptr<optest::DeviceWorkspace>> workspaces;
  std::vector<uint64_t> workspace_sizes;
  for (const auto& c : cases) {
    uint64_t size = 0;
    aclOpExecutor* executor = nullptr;
    ASSERT_EQ(c->GetWorkspaceSize(&size, &executor), ACLNN_SUCCESS) << TakeMessage();
    EXPECT_EQ(aclDestroyAclOpExecutor(executor), ACLNN_SUCCESS);
    workspace_sizes.push_back(size);
    workspaces.push_back(std::make_unique<optest::DeviceWorkspace>(size));
  }
  auto iteration = [&] {
    for (size_t i = 0; i < cases.size(); ++i) {
      const OpCase& c = *cases[i];
      void* workspace = workspaces[i]->get();
      const uint64_t size = workspace_sizes[i];
      uint64_t unused = 0;
      aclOpExecutor* executor = nullptr;
      // Phase 1 only, then destroyed.
      ASSERT_EQ(c.GetWorkspaceSize(&unused, &executor), ACLNN_SUCCESS) << TakeMessage();
      EXPECT_EQ(aclDestroyAclOpExecutor(executor), ACLNN_SUCCESS);
      // Made repeatable, never run, destroyed.
      ASSERT_EQ(c.GetWorkspaceSize(&unused, &executor), ACLNN_SUCCESS) << TakeMessage();
      EXPECT_EQ(aclSetAclOpExecutorRepeatable(executor), ACLNN_SUCCESS);
      EXPECT_EQ(aclDestroyAclOpExecutor(executor), ACLNN_SUCCESS);
      // Released by its run.
      ASSERT_EQ(c.GetWorkspaceSize(&unused, &executor), ACLNN_SUCCESS) << TakeMessage();
      EXPECT_EQ(c.phase2()(workspace, size, executor, stream.get()), ACLNN_SUCCESS) << TakeMessage();
      // Destroyed after a run that may still be queued.
      ASSERT_EQ(c.GetWorkspaceSize(&unused, &executor), ACLNN_SUCCESS) << TakeMessage();
      EXPECT_EQ(c.phase2()(workspace, size, executor, stream.get()), ACLNN_SUCCESS) << TakeMessage();
      EXPECT_EQ(aclDestroyAclOpExecutor(executor), ACLNN_SUCCESS);
      // Repeatable: two runs, destroyed while they may still be queued.
      ASSERT_EQ(c.GetWorkspaceSize(&unused, &executor), ACLNN_SUCCESS) << TakeMessage();
      EXPECT_EQ(aclSetAclOpExecutorRepeatable(executor), ACLNN_SUCCESS);
      EXPECT_EQ(c.phase2()(workspace, size, executor, stream.get()), ACLNN_SUCCESS) << TakeMessage();
      EXPECT_EQ(c.phase2()(workspace, size, executor, stream.get()), ACLNN_SUCCESS) << TakeMessage();
      EXPECT_EQ(aclDestroyAclOpExecutor(executor), ACLNN_SUCCESS);
    }
    EXPECT_EQ(aclrtSynchronizeStream(stream.get()), ACL_SUCCESS) << TakeMessage();
  };
  for (int k = 0; k < 3; ++k) iteration();
  const GrowthCheck growth;
  for (int k = 0; k < Scaled(16); ++k) iteration();
  growth.ExpectNoGrowth("executor loop");
  ExpectResults(cases, expected, "after the executor loop");
}

// Idle workers do not spin: after the operators of every kind have run (with the CPU's worker threads), the
// process uses next to no CPU while the program does nothing, so a program that calls us and then computes on its
// own threads keeps its cores. (libgomp's workers spin briefly after a parallel region, then sleep; the streams'
// workers wait on a condition variable.)
TEST(Lifecycle, IdleWorkersUseNoCpu) {
  std::vector<std::unique_ptr<OpCase>> cases = systest::MakeAllCases(300, systest::CaseSize::kConcurrency);
  optest::TestStream stream;
  for (const auto& c : cases) ASSERT_TRUE(c->RunAndWait(stream.get()));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the spin-then-sleep of the last region ends
  const double before = systest::ProcessCpuSeconds();
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  const double used = systest::ProcessCpuSeconds() - before;
  // 400 ms idle: a single spinning worker would use about 400 ms of CPU.
  EXPECT_LT(used, 0.04) << "the process used " << used * 1e3 << " ms of CPU in 400 ms of idleness";
}

// Streams created, given an operator, and destroyed (synchronised first, or destroyed with the run still queued:
// destruction runs it). Each stream's worker thread runs a kernel, so it also starts a team of OpenMP threads,
// which must go when the stream goes.
TEST(Lifecycle, StreamsCreatedUsedAndDestroyed) {
  if (optest::StrictMode()) {
    GTEST_SKIP() << optest::StrictModeReason("its quarantine keeps every freed allocation's range and stacks");
  }
  std::vector<std::unique_ptr<OpCase>> cases = systest::MakeAllCases(200, systest::CaseSize::kSmall);
  std::vector<std::vector<uint8_t>> expected;
  {
    optest::TestStream stream;
    expected = SerialResults(cases, stream.get());
  }
  size_t next = 0;
  auto iteration = [&](int k) {
    OpCase& c = *cases[next++ % cases.size()];
    aclrtStream stream = nullptr;
    ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS) << TakeMessage();
    void* workspace = nullptr;
    c.Enqueue(stream, &workspace);
    if (k % 2 == 0) {
      EXPECT_EQ(aclrtSynchronizeStream(stream), ACL_SUCCESS) << TakeMessage();
    }
    EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS) << TakeMessage();
    if (workspace != nullptr) aclrtFree(workspace);
  };
  for (int k = 0; k < 24; ++k) iteration(k);
  const GrowthCheck growth;
  for (int k = 0; k < Scaled(96); ++k) iteration(k);
  growth.ExpectNoGrowth("stream loop");
  ExpectResults(cases, expected, "after the stream loop");
}

// The same from several threads at once, each creating and destroying its own streams.
TEST(Lifecycle, StreamsCreatedAndDestroyedBySeveralThreadsAtOnce) {
  if (optest::StrictMode()) {
    GTEST_SKIP() << optest::StrictModeReason("its quarantine keeps every freed allocation's range and stacks");
  }
  constexpr int kThreads = 4;
  std::vector<std::vector<std::unique_ptr<OpCase>>> cases(kThreads);
  std::vector<std::vector<std::vector<uint8_t>>> expected(kThreads);
  {
    optest::TestStream stream;
    for (int t = 0; t < kThreads; ++t) {
      cases[t] = systest::MakeAllCases(300 + static_cast<uint64_t>(t), systest::CaseSize::kSmall);
      expected[t] = SerialResults(cases[t], stream.get());
    }
  }
  auto run = [&](int rounds) {
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        EXPECT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
        for (int k = 0; k < rounds; ++k) {
          aclrtStream stream = nullptr;
          EXPECT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS) << TakeMessage();
          std::vector<void*> workspaces;
          for (size_t i = static_cast<size_t>(k) % 3; i < cases[t].size(); i += 3) {
            void* workspace = nullptr;
            cases[t][i]->Enqueue(stream, &workspace);
            workspaces.push_back(workspace);
          }
          EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS) << TakeMessage();  // runs what is queued
          for (void* workspace : workspaces) {
            if (workspace != nullptr) aclrtFree(workspace);
          }
        }
        EXPECT_EQ(aclrtResetDevice(0), ACL_SUCCESS);
      });
    }
    for (std::thread& thread : threads) thread.join();
  };
  run(3);
  const GrowthCheck growth;
  run(Scaled(12));
  growth.ExpectNoGrowth("streams of several threads");
  for (int t = 0; t < kThreads; ++t) ExpectResults(cases[t], expected[t], "thread " + std::to_string(t));
}

// Contexts created, used through a stream of their own and their default stream, and destroyed with that work
// still queued (destruction runs it, and takes the context's streams with it).
TEST(Lifecycle, ContextsCreatedUsedAndDestroyed) {
  if (optest::StrictMode()) {
    GTEST_SKIP() << optest::StrictModeReason("its quarantine keeps every freed allocation's range and stacks");
  }
  std::vector<std::unique_ptr<OpCase>> cases = systest::MakeAllCases(400, systest::CaseSize::kSmall);
  std::vector<std::vector<uint8_t>> expected;
  {
    optest::TestStream stream;
    expected = SerialResults(cases, stream.get());
  }
  aclrtContext original = nullptr;
  ASSERT_EQ(aclrtGetCurrentContext(&original), ACL_SUCCESS) << TakeMessage();
  size_t next = 0;
  auto iteration = [&] {
    aclrtContext context = nullptr;
    ASSERT_EQ(aclrtCreateContext(&context, 0), ACL_SUCCESS) << TakeMessage();
    aclrtStream stream = nullptr;
    ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS) << TakeMessage();
    void* workspaces[2] = {nullptr, nullptr};
    cases[next++ % cases.size()]->Enqueue(stream, &workspaces[0]);
    cases[next++ % cases.size()]->Enqueue(nullptr, &workspaces[1]);
    EXPECT_EQ(aclrtDestroyContext(context), ACL_SUCCESS) << TakeMessage();
    EXPECT_EQ(aclrtSynchronizeStream(stream), ACL_ERROR_INVALID_PARAM) << "the stream went with its context";
    TakeMessage();
    EXPECT_EQ(aclrtSetCurrentContext(original), ACL_SUCCESS) << TakeMessage();
    for (void* workspace : workspaces) {
      if (workspace != nullptr) aclrtFree(workspace);
    }
  };
  for (int k = 0; k < 12; ++k) iteration();
  const GrowthCheck growth;
  for (int k = 0; k < Scaled(48); ++k) iteration();
  growth.ExpectNoGrowth("context loop");
  ExpectResults(cases, expected, "after the context loop");
}

// Whole aclInit / aclFinalize cycles, each leaving a stream, the default stream and queued work for aclFinalize.
TEST(Lifecycle, InitFinalizeCyclesWithWorkLeftForFinalize) {
  if (optest::StrictMode()) {
    GTEST_SKIP() << optest::StrictModeReason("its quarantine keeps every freed allocation's range and stacks");
  }
  std::vector<std::unique_ptr<OpCase>> cases = systest::MakeAllCases(500, systest::CaseSize::kSmall);
  std::vector<std::vector<uint8_t>> expected;
  {
    optest::TestStream stream;
    expected = SerialResults(cases, stream.get());
  }
  std::vector<void*> workspaces;
  size_t next = 0;
  auto finalize = [&] {
    ASSERT_EQ(aclFinalize(), ACL_SUCCESS) << TakeMessage();
    for (void* workspace : workspaces) {
      if (workspace != nullptr) {
        EXPECT_EQ(aclrtFree(workspace), ACL_SUCCESS) << TakeMessage();
      }
    }
    workspaces.clear();
  };
  auto initialise_and_enqueue = [&] {
    ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS) << TakeMessage();
    ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS) << TakeMessage();
    aclrtStream stream = nullptr;
    ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS) << TakeMessage();
    for (aclrtStream target : {stream, static_cast<aclrtStream>(nullptr)}) {
      void* workspace = nullptr;
      cases[next++ % cases.size()]->Enqueue(target, &workspace);
      workspaces.push_back(workspace);
    }
  };
  for (int k = 0; k < 12; ++k) {
    finalize();
    initialise_and_enqueue();
  }
  // Threads are counted only right after aclFinalize: while work is queued, the count depends on whether a stream's
  // worker has reached an operator that starts a thread team yet.
  finalize();
  const int threads_when_finalized = systest::SettledThreadCount();
  initialise_and_enqueue();
  const GrowthCheck growth(threads_when_finalized);
  for (int k = 0; k < Scaled(48); ++k) {
    finalize();
    initialise_and_enqueue();
  }
  finalize();
  growth.ExpectNoGrowth("aclInit / aclFinalize cycles");
  ExpectResults(cases, expected, "after the aclInit / aclFinalize cycles");
  Reinitialise();
}

// aclrtMalloc / aclrtFree, aclrtMallocHost / aclrtFreeHost, with copies and sets in between; from one thread (with
// refused frees among them), then from several at once.
TEST(Lifecycle, DeviceAndHostMemoryAllocatedAndFreed) {
  if (optest::StrictMode()) {
    GTEST_SKIP() << optest::StrictModeReason("its quarantine keeps every freed allocation's range and stacks");
  }
  const size_t sizes[] = {1, 63, 4096, 100000, size_t{1} << 20};
  std::vector<uint8_t> host(sizes[4], 0x5A);
  // refusals: also free with the wrong function and free twice, which must be refused. Only on one thread: with
  // several, another thread may get the freed address from the allocator before the second free.
  auto iteration = [&](bool refusals) {
    for (size_t size : sizes) {
      void* device = nullptr;
      void* pinned = nullptr;
      ASSERT_EQ(aclrtMalloc(&device, size, ACL_MEM_MALLOC_NORMAL_ONLY), ACL_SUCCESS) << TakeMessage();
      ASSERT_EQ(aclrtMallocHost(&pinned, size), ACL_SUCCESS) << TakeMessage();
      EXPECT_EQ(aclrtMemset(device, size, 0x11, size), ACL_SUCCESS);
      EXPECT_EQ(aclrtMemcpy(device, size, host.data(), size, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
      EXPECT_EQ(aclrtMemcpy(pinned, size, device, size, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
      EXPECT_EQ(static_cast<uint8_t*>(pinned)[size - 1], 0x5A);
      if (refusals) {
        EXPECT_EQ(aclrtFree(pinned), ACL_ERROR_INVALID_PARAM);  // the wrong function: refused, nothing freed
      }
      EXPECT_EQ(aclrtFree(device), ACL_SUCCESS);
      if (refusals) {
        EXPECT_EQ(aclrtFree(device), ACL_ERROR_INVALID_PARAM);  // twice: refused
      }
      EXPECT_EQ(aclrtFreeHost(pinned), ACL_SUCCESS);
    }
  };
  for (int k = 0; k < 20; ++k) iteration(true);
  TakeMessage();
  const GrowthCheck growth;
  for (int k = 0; k < Scaled(200); ++k) iteration(true);
  TakeMessage();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int k = 0; k < Scaled(40); ++k) iteration(false);
    });
  }
  for (std::thread& thread : threads) thread.join();
  growth.ExpectNoGrowth("memory loop");
}

// ---------------------------------------------------------------------------------------------------------------
// aclFinalize with busy streams

// Enqueues c on stream without recording failures: the status of phase 2 (or of phase 1 / the allocation).
aclnnStatus TryEnqueue(const OpCase& c, aclrtStream stream, std::vector<void*>* workspaces) {
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  aclnnStatus status = c.GetWorkspaceSize(&size, &executor);
  if (status != ACLNN_SUCCESS) return status;
  void* workspace = nullptr;
  if (size > 0 && aclrtMalloc(&workspace, size, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) {
    aclDestroyAclOpExecutor(executor);
    return ACLNN_ERR_INNER;
  }
  workspaces->push_back(workspace);
  status = c.phase2()(workspace, size, executor, stream);
  if (status != ACLNN_SUCCESS) aclDestroyAclOpExecutor(executor);  // a refused run leaves it alive
  return status;
}

// This thread queues every operator several times over on three streams and the default stream; another thread,
// with a context of its own, keeps queueing work on its stream and its default stream. aclFinalize must run all of
// it, then return. The other thread's next phase 2 fails cleanly (361001), and calls with the old handles fail with
// their documented codes.
TEST(Lifecycle, FinalizeRunsWorkQueuedByThisAndAnotherThread) {
  const systest::Watchdog watchdog("aclFinalize with busy streams", std::chrono::seconds(300));
  std::vector<std::unique_ptr<OpCase>> mine = systest::MakeAllCases(600, systest::CaseSize::kConcurrency);
  std::vector<std::unique_ptr<OpCase>> theirs = systest::MakeAllCases(700, systest::CaseSize::kSmall);
  std::vector<std::vector<uint8_t>> mine_expected, theirs_expected;
  {
    optest::TestStream stream;
    mine_expected = SerialResults(mine, stream.get());
    theirs_expected = SerialResults(theirs, stream.get());
  }
  for (const auto& c : mine) c->ResetOutputs();
  for (const auto& c : theirs) c->ResetOutputs();

  aclrtStream streams[4] = {nullptr, nullptr, nullptr, nullptr};  // the last one stays the default stream
  for (int s = 0; s < 3; ++s) ASSERT_EQ(aclrtCreateStream(&streams[s]), ACL_SUCCESS) << TakeMessage();
  std::vector<void*> my_workspaces;
  constexpr int kRepeats = 3;  // each case queued several times on its stream: long queues
  for (int r = 0; r < kRepeats; ++r) {
    for (size_t i = 0; i < mine.size(); ++i) {
      EXPECT_EQ(TryEnqueue(*mine[i], streams[i % 4], &my_workspaces), ACLNN_SUCCESS) << TakeMessage();
    }
  }

  std::atomic<int> their_runs{0};
  std::atomic<bool> finalized{false};
  aclnnStatus their_failure = ACLNN_SUCCESS;
  std::string their_message;
  std::vector<void*> their_workspaces;
  std::thread other([&] {
    aclrtContext context = nullptr;
    ASSERT_EQ(aclrtCreateContext(&context, 0), ACL_SUCCESS) << TakeMessage();
    aclrtStream stream = nullptr;
    ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS) << TakeMessage();
    // Keeps going until phase 2 is refused (its stream or context is gone).
    for (int k = 0;; ++k) {
      const bool after_finalize = finalized;
      const aclnnStatus status =
          TryEnqueue(*theirs[static_cast<size_t>(k) % theirs.size()], k % 2 == 0 ? stream : nullptr, &their_workspaces);
      if (status != ACLNN_SUCCESS) {
        their_failure = status;
        their_message = TakeMessage();
        break;
      }
      if (after_finalize) {
        ADD_FAILURE() << "phase 2 was accepted on a stream of a context that aclFinalize destroyed";
        break;
      }
      ++their_runs;
    }
    EXPECT_EQ(aclrtSynchronizeStream(stream), ACL_ERROR_INVALID_PARAM);
    EXPECT_EQ(aclrtDestroyStream(stream), ACL_ERROR_INVALID_PARAM);
    EXPECT_EQ(aclrtDestroyContext(context), ACL_ERROR_INVALID_PARAM);
    TakeMessage();
  });
  // Let the other thread get work queued (every case at least once) before finalising.
  for (int wait = 0; wait < 30000 && their_runs < static_cast<int>(theirs.size()); ++wait) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_GE(their_runs.load(), static_cast<int>(theirs.size()));
  EXPECT_EQ(aclFinalize(), ACL_SUCCESS) << TakeMessage();
  finalized = true;
  // Everything queued before aclFinalize returned has run: this thread's work is complete now.
  ExpectResults(mine, mine_expected, "queued before aclFinalize on this thread");
  other.join();
  EXPECT_EQ(their_failure, ACLNN_ERR_RUNTIME_ERROR) << their_message;
  EXPECT_NE(their_message.find("cannot run on stream"), std::string::npos) << their_message;
  ExpectResults(theirs, theirs_expected, "queued before aclFinalize on another thread");

  // After aclFinalize: the old handles are refused with the documented codes, nothing crashes.
  EXPECT_EQ(aclrtSynchronizeStream(streams[0]), ACL_ERROR_INVALID_PARAM);
  EXPECT_NE(TakeMessage().find("not a live stream"), std::string::npos);
  EXPECT_EQ(aclrtDestroyStream(streams[1]), ACL_ERROR_INVALID_PARAM);
  TakeMessage();
  std::vector<void*> late_workspaces;
  EXPECT_EQ(TryEnqueue(*mine[0], streams[2], &late_workspaces), ACLNN_ERR_RUNTIME_ERROR);
  EXPECT_NE(TakeMessage().find("cannot run on stream"), std::string::npos);
  EXPECT_EQ(TryEnqueue(*mine[1], nullptr, &late_workspaces), ACLNN_ERR_RUNTIME_ERROR);  // no current context
  EXPECT_NE(TakeMessage().find("no current context"), std::string::npos);
  aclrtStream refused = nullptr;
  EXPECT_EQ(aclrtCreateStream(&refused), ACL_ERROR_RT_CONTEXT_NULL);
  EXPECT_EQ(aclrtSynchronizeDevice(), ACL_SUCCESS);  // no streams left
  EXPECT_EQ(aclFinalize(), ACL_ERROR_REPEAT_FINALIZE);
  TakeMessage();
  // Memory outlives aclFinalize: the workspaces are freed normally.
  for (auto* list : {&my_workspaces, &their_workspaces, &late_workspaces}) {
    for (void* workspace : *list) {
      if (workspace != nullptr) {
        EXPECT_EQ(aclrtFree(workspace), ACL_SUCCESS) << TakeMessage();
      }
    }
  }

  // The runtime works again after a new aclInit.
  Reinitialise();
  optest::TestStream stream;
  mine[0]->ResetOutputs();
  EXPECT_TRUE(mine[0]->RunAndWait(stream.get()));
  EXPECT_TRUE(mine[0]->OutputBytes() == mine_expected[0]);
}

// Two threads call aclFinalize at the same moment while streams are busy and a third waits on one of them: one
// aclFinalize succeeds (after running the work), the other reports ACL_ERROR_REPEAT_FINALIZE, the waiting thread
// gets success (the work ran) or ACL_ERROR_INVALID_PARAM (the stream was already gone), and no call crashes or hangs.
TEST(Lifecycle, ConcurrentFinalizeCallsWhileStreamsAreBusy) {
  const systest::Watchdog watchdog("concurrent aclFinalize", std::chrono::seconds(300));
  std::vector<std::unique_ptr<OpCase>> cases = systest::MakeAllCases(800, systest::CaseSize::kConcurrency);
  std::vector<std::vector<uint8_t>> expected;
  {
    optest::TestStream stream;
    expected = SerialResults(cases, stream.get());
  }
  for (const auto& c : cases) c->ResetOutputs();
  aclrtStream streams[2] = {nullptr, nullptr};
  for (aclrtStream& stream : streams) ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS) << TakeMessage();
  std::vector<void*> workspaces;
  for (int r = 0; r < 2; ++r) {
    for (size_t i = 0; i < cases.size(); ++i) {
      EXPECT_EQ(TryEnqueue(*cases[i], streams[i % 2], &workspaces), ACLNN_SUCCESS) << TakeMessage();
    }
  }
  systest::Barrier start(3);
  aclError results[2] = {-1, -1};
  aclError wait_result = -1;
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      EXPECT_TRUE(start.Wait());
      results[t] = aclFinalize();
      TakeMessage();
    });
  }
  threads.emplace_back([&] {
    EXPECT_TRUE(start.Wait());
    wait_result = aclrtSynchronizeStream(streams[1]);
    TakeMessage();
  });
  for (std::thread& thread : threads) thread.join();
  EXPECT_TRUE((results[0] == ACL_SUCCESS && results[1] == ACL_ERROR_REPEAT_FINALIZE) ||
              (results[1] == ACL_SUCCESS && results[0] == ACL_ERROR_REPEAT_FINALIZE))
      << "aclFinalize returned " << results[0] << " and " << results[1];
  EXPECT_TRUE(wait_result == ACL_SUCCESS || wait_result == ACL_ERROR_INVALID_PARAM) << wait_result;
  // A REPEAT_FINALIZE caller may return before the draining one is done; once both threads have returned, the
  // successful aclFinalize has run everything.
  ExpectResults(cases, expected, "queued before the concurrent aclFinalize calls");
  for (void* workspace : workspaces) {
    if (workspace != nullptr) {
      EXPECT_EQ(aclrtFree(workspace), ACL_SUCCESS);
    }
  }
  Reinitialise();
}

}  // namespace
