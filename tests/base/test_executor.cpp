// The executor's life through the glue (pacl::CreateExecutor / pacl::RunExecutor) with small test kernels:
// run once, repeatable runs, destruction, stale handles, workspace checks, kernel failures reported by the stream,
// and executors released while their run is still queued.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <future>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "acl/acl.h"
#include "aclnn/acl_meta.h"
#include "aclnn/opdev/op_errno.h"
#include "pacl/error.h"
#include "pacl/op_glue.h"
#include "pacl/runtime.h"

namespace {

constexpr const char* kOp = "aclnnTestOp";

std::string TakeMessages() {
  const char* text = aclGetRecentErrMsg();
  return text != nullptr ? std::string(text) : std::string();
}

// Expects the thread's messages to contain every one of parts (and takes them).
void ExpectMessage(std::initializer_list<const char*> parts) {
  const std::string message = TakeMessages();
  for (const char* part : parts) {
    EXPECT_NE(message.find(part), std::string::npos) << "expected \"" << part << "\" in: " << message;
  }
}

class ExecutorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS) << TakeMessages();
    ASSERT_EQ(aclrtCreateStream(&stream_), ACL_SUCCESS) << TakeMessages();
    TakeMessages();
  }
  void TearDown() override {
    aclrtSynchronizeStream(stream_);
    EXPECT_EQ(aclrtDestroyStream(stream_), ACL_SUCCESS) << TakeMessages();
    EXPECT_EQ(aclrtResetDevice(0), ACL_SUCCESS) << TakeMessages();
    TakeMessages();
  }

  static aclOpExecutor* Create(pacl::Kernel kernel, uint64_t workspace_size = 0, const char* op = kOp) {
    uint64_t size = 12345;
    aclOpExecutor* executor = nullptr;
    EXPECT_EQ(pacl::CreateExecutor(op, workspace_size, std::move(kernel), &size, &executor), ACLNN_SUCCESS)
        << TakeMessages();
    EXPECT_EQ(size, workspace_size);
    EXPECT_NE(executor, nullptr);
    return executor;
  }

  aclnnStatus Run(aclOpExecutor* executor, void* workspace = nullptr, uint64_t workspace_size = 0,
                  const char* op = kOp) {
    return pacl::RunExecutor(op, workspace, workspace_size, executor, stream_);
  }

  aclError Sync() { return aclrtSynchronizeStream(stream_); }

  aclrtStream stream_ = nullptr;
};

TEST_F(ExecutorTest, RunsOnceThenRefusesASecondRun) {
  std::vector<int> out(4, -1);
  aclOpExecutor* executor = Create([&out](const pacl::KernelContext& context) {
    EXPECT_EQ(context.workspace, nullptr);  // no workspace was asked for
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<int>(10 * i + 3);
    return ACLNN_SUCCESS;
  });
  EXPECT_EQ(Run(executor), ACLNN_SUCCESS) << TakeMessages();
  ASSERT_EQ(Sync(), ACL_SUCCESS) << TakeMessages();
  EXPECT_EQ(out, std::vector<int>({3, 13, 23, 33}));

  out.assign(4, -1);
  EXPECT_EQ(Run(executor), ACLNN_ERR_PARAM_INVALID);
  ExpectMessage({"aclnnTestOp: executor", "already ran", "aclSetAclOpExecutorRepeatable"});
  ASSERT_EQ(Sync(), ACL_SUCCESS);
  EXPECT_EQ(out, std::vector<int>(4, -1));  // the refused run did nothing
  // Setting it repeatable now is too late.
  EXPECT_EQ(aclSetAclOpExecutorRepeatable(executor), ACLNN_ERR_PARAM_INVALID);
  ExpectMessage({"aclSetAclOpExecutorRepeatable: executor", "already ran"});
}

TEST_F(ExecutorTest, RunsOnTheDefaultStream) {
  std::atomic<int> runs{0};
  aclOpExecutor* executor = Create([&runs](const pacl::KernelContext&) {
    ++runs;
    return ACLNN_SUCCESS;
  });
  EXPECT_EQ(pacl::RunExecutor(kOp, nullptr, 0, executor, nullptr), ACLNN_SUCCESS) << TakeMessages();
  EXPECT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS) << TakeMessages();
  EXPECT_EQ(runs.load(), 1);
}

TEST_F(ExecutorTest, RepeatableRunsManyTimesUntilDestroyed) {
  std::atomic<int> runs{0};
  aclOpExecutor* executor = Create([&runs](const pacl::KernelContext&) {
    ++runs;
    return ACLNN_SUCCESS;
  });
  ASSERT_EQ(aclSetAclOpExecutorRepeatable(executor), ACLNN_SUCCESS) << TakeMessages();
  EXPECT_EQ(aclSetAclOpExecutorRepeatable(executor), ACLNN_SUCCESS);  // idempotent
  for (int i = 0; i < 25; ++i) ASSERT_EQ(Run(executor), ACLNN_SUCCESS) << TakeMessages();
  ASSERT_EQ(Sync(), ACL_SUCCESS);
  EXPECT_EQ(runs.load(), 25);
  EXPECT_EQ(Run(executor), ACLNN_SUCCESS);
  ASSERT_EQ(Sync(), ACL_SUCCESS);
  EXPECT_EQ(runs.load(), 26);

  EXPECT_EQ(aclDestroyAclOpExecutor(executor), ACLNN_SUCCESS) << TakeMessages();
  EXPECT_EQ(Run(executor), ACLNN_ERR_PARAM_INVALID);
  ExpectMessage({"aclnnTestOp: executor", "was destroyed by aclDestroyAclOpExecutor"});
  EXPECT_EQ(aclDestroyAclOpExecutor(executor), ACLNN_ERR_PARAM_INVALID);
  ExpectMessage({"aclDestroyAclOpExecutor: executor", "was destroyed"});
  EXPECT_EQ(aclSetAclOpExecutorRepeatable(executor), ACLNN_ERR_PARAM_INVALID);
  ExpectMessage({"aclSetAclOpExecutorRepeatable: executor", "was destroyed"});
  ASSERT_EQ(Sync(), ACL_SUCCESS);
  EXPECT_EQ(runs.load(), 26);
}

TEST_F(ExecutorTest, DestroyBeforeRunning) {
  bool ran = false;
  aclOpExecutor* executor = Create([&ran](const pacl::KernelContext&) {
    ran = true;
    return ACLNN_SUCCESS;
  });
  EXPECT_EQ(aclDestroyAclOpExecutor(executor), ACLNN_SUCCESS);
  EXPECT_EQ(Run(executor), ACLNN_ERR_PARAM_INVALID);
  ExpectMessage({"was destroyed"});
  ASSERT_EQ(Sync(), ACL_SUCCESS);
  EXPECT_FALSE(ran);
}

TEST_F(ExecutorTest, DestroyAfterASingleRunIsAccepted) {
  aclOpExecutor* executor = Create([](const pacl::KernelContext&) { return ACLNN_SUCCESS; });
  EXPECT_EQ(Run(executor), ACLNN_SUCCESS);
  EXPECT_EQ(aclDestroyAclOpExecutor(executor), ACLNN_SUCCESS) << TakeMessages();
  EXPECT_EQ(aclDestroyAclOpExecutor(executor), ACLNN_ERR_PARAM_INVALID);
  ExpectMessage({"aclDestroyAclOpExecutor: executor", "was destroyed"});
  EXPECT_EQ(Run(executor), ACLNN_ERR_PARAM_INVALID);
  ExpectMessage({"was destroyed"});
  EXPECT_EQ(Sync(), ACL_SUCCESS);
}

TEST_F(ExecutorTest, NullAndUnknownHandles) {
  EXPECT_EQ(Run(nullptr), ACLNN_ERR_PARAM_NULLPTR);
  ExpectMessage({"aclnnTestOp: executor must not be null"});
  // CANN documents 561103 for these two (and 161001 for phase 2).
  EXPECT_EQ(aclSetAclOpExecutorRepeatable(nullptr), ACLNN_ERR_INNER_NULLPTR);
  ExpectMessage({"aclSetAclOpExecutorRepeatable: executor must not be null"});
  EXPECT_EQ(aclDestroyAclOpExecutor(nullptr), ACLNN_ERR_INNER_NULLPTR);
  ExpectMessage({"aclDestroyAclOpExecutor: executor must not be null"});

  // An address that was never an executor: it must be refused without being read.
  alignas(64) unsigned char bogus[64];
  std::memset(bogus, 0xAB, sizeof bogus);
  aclOpExecutor* unknown = reinterpret_cast<aclOpExecutor*>(bogus);
  EXPECT_EQ(Run(unknown), ACLNN_ERR_PARAM_INVALID);
  ExpectMessage({"aclnnTestOp: executor", "is not a live executor", "never created"});
  EXPECT_EQ(aclSetAclOpExecutorRepeatable(unknown), ACLNN_ERR_PARAM_INVALID);
  ExpectMessage({"aclSetAclOpExecutorRepeatable: executor", "is not a live executor"});
  EXPECT_EQ(aclDestroyAclOpExecutor(unknown), ACLNN_ERR_PARAM_INVALID);
  ExpectMessage({"aclDestroyAclOpExecutor: executor", "is not a live executor"});
}

TEST_F(ExecutorTest, RefusesARunByAnotherOperator) {
  bool ran = false;
  aclOpExecutor* executor = Create(
      [&ran](const pacl::KernelContext&) {
        ran = true;
        return ACLNN_SUCCESS;
      },
      0, "aclnnFirstOp");
  EXPECT_EQ(Run(executor, nullptr, 0, "aclnnSecondOp"), ACLNN_ERR_PARAM_INVALID);
  ExpectMessage(
      {"aclnnSecondOp: executor was created by aclnnFirstOpGetWorkspaceSize, not by "
       "aclnnSecondOpGetWorkspaceSize"});
  ASSERT_EQ(Sync(), ACL_SUCCESS);
  EXPECT_FALSE(ran);
  // The refusal did not consume it.
  EXPECT_EQ(Run(executor, nullptr, 0, "aclnnFirstOp"), ACLNN_SUCCESS) << TakeMessages();
  ASSERT_EQ(Sync(), ACL_SUCCESS);
  EXPECT_TRUE(ran);
}

TEST_F(ExecutorTest, WorkspaceChecks) {
  constexpr uint64_t kBytes = 256;
  std::vector<unsigned char> seen;
  aclOpExecutor* executor = Create(
      [&seen](const pacl::KernelContext& context) {
        // The kernel may use all of its workspace.
        EXPECT_EQ(context.workspace_size, 256u);
        unsigned char* bytes = static_cast<unsigned char*>(context.workspace);
        for (uint64_t i = 0; i < kBytes; ++i) bytes[i] = static_cast<unsigned char>(i * 7 + 1);
        seen.assign(bytes, bytes + kBytes);
        return ACLNN_SUCCESS;
      },
      kBytes);

  EXPECT_EQ(Run(executor, nullptr, kBytes), ACLNN_ERR_PARAM_NULLPTR);
  ExpectMessage({"aclnnTestOp: workspace must not be null", "256 bytes"});
  std::vector<unsigned char> workspace(kBytes);
  EXPECT_EQ(Run(executor, workspace.data(), kBytes - 1), ACLNN_ERR_PARAM_INVALID);
  ExpectMessage({"aclnnTestOp: workspaceSize 255 is smaller than the 256 bytes"});
  EXPECT_EQ(Run(executor, workspace.data(), 0), ACLNN_ERR_PARAM_INVALID);
  ExpectMessage({"workspaceSize 0 is smaller than the 256 bytes"});
  ASSERT_EQ(Sync(), ACL_SUCCESS);
  EXPECT_TRUE(seen.empty());

  // The refusals did not consume it; a large enough workspace runs.
  EXPECT_EQ(Run(executor, workspace.data(), kBytes + 100), ACLNN_SUCCESS) << TakeMessages();
  ASSERT_EQ(Sync(), ACL_SUCCESS);
  ASSERT_EQ(seen.size(), kBytes);
  EXPECT_EQ(seen[5], 36);
  EXPECT_EQ(workspace[255], static_cast<unsigned char>(255 * 7 + 1));
}

TEST_F(ExecutorTest, NoWorkspaceAskedMeansTheKernelGetsNull) {
  void* seen = reinterpret_cast<void*>(0x1);
  aclOpExecutor* executor = Create([&seen](const pacl::KernelContext& context) {
    seen = context.workspace;
    EXPECT_EQ(context.device.kind, pacl::rt::DeviceKind::kCpu);
    EXPECT_EQ(context.native_stream, nullptr);
    return ACLNN_SUCCESS;
  });
  int unused = 0;
  EXPECT_EQ(Run(executor, &unused, sizeof unused), ACLNN_SUCCESS) << TakeMessages();
  ASSERT_EQ(Sync(), ACL_SUCCESS);
  EXPECT_EQ(seen, nullptr);
}

TEST_F(ExecutorTest, KernelFailureIsReportedBySynchronize) {
  aclOpExecutor* executor = Create([](const pacl::KernelContext&) {
    pacl::SetRecentErrorMessage("aclnnTestOp: the test kernel failed on purpose");
    return ACLNN_ERR_PARAM_INVALID;
  });
  EXPECT_EQ(Run(executor), ACLNN_SUCCESS);  // phase 2 only enqueues
  EXPECT_EQ(Sync(), ACLNN_ERR_PARAM_INVALID);
  ExpectMessage({"aclnnTestOp: the test kernel failed on purpose"});
  // The failure was handed over once.
  EXPECT_EQ(Sync(), ACL_SUCCESS);
}

TEST_F(ExecutorTest, KernelFailureWithoutAMessageGetsOne) {
  aclOpExecutor* executor = Create([](const pacl::KernelContext&) { return ACLNN_ERR_INNER; });
  EXPECT_EQ(Run(executor), ACLNN_SUCCESS);
  EXPECT_EQ(Sync(), ACLNN_ERR_INNER);
  ExpectMessage({"aclnnTestOp: the kernel failed with status 561000"});
}

TEST_F(ExecutorTest, KernelExceptionIsAnInternalError) {
  aclOpExecutor* executor = Create([](const pacl::KernelContext&) -> aclnnStatus { throw std::runtime_error("boom"); });
  EXPECT_EQ(Run(executor), ACLNN_SUCCESS);
  EXPECT_EQ(Sync(), ACLNN_ERR_INNER);
  ExpectMessage({"aclnnTestOp: the kernel failed: boom"});
}

TEST_F(ExecutorTest, RunQueuedBehindOtherWorkSurvivesDestroy) {
  // Hold the stream until the executor has been destroyed.
  std::promise<void> gate;
  std::shared_future<void> opened = gate.get_future().share();
  ASSERT_EQ(pacl::rt::EnqueueTask(stream_,
                                  [opened]() {
                                    opened.wait();
                                    return ACL_SUCCESS;
                                  }),
            ACL_SUCCESS);

  // The kernel's captured parameters are the only owner of this data once the test drops its pointer.
  auto params = std::make_shared<std::vector<int64_t>>(1000);
  std::iota(params->begin(), params->end(), 1);
  std::atomic<int64_t> sum{-1};
  aclOpExecutor* repeatable = Create([params, &sum](const pacl::KernelContext&) {
    sum = std::accumulate(params->begin(), params->end(), int64_t{0});
    return ACLNN_SUCCESS;
  });
  std::atomic<int64_t> once_sum{-1};
  aclOpExecutor* once = Create([params, &once_sum](const pacl::KernelContext&) {
    once_sum = std::accumulate(params->begin(), params->end(), int64_t{0});
    return ACLNN_SUCCESS;
  });
  params.reset();

  ASSERT_EQ(aclSetAclOpExecutorRepeatable(repeatable), ACLNN_SUCCESS);
  ASSERT_EQ(Run(repeatable), ACLNN_SUCCESS) << TakeMessages();
  ASSERT_EQ(aclDestroyAclOpExecutor(repeatable), ACLNN_SUCCESS) << TakeMessages();
  ASSERT_EQ(Run(once), ACLNN_SUCCESS) << TakeMessages();  // released at once, its run still queued
  ASSERT_EQ(aclDestroyAclOpExecutor(once), ACLNN_SUCCESS) << TakeMessages();
  EXPECT_EQ(sum.load(), -1);
  EXPECT_EQ(once_sum.load(), -1);

  gate.set_value();
  ASSERT_EQ(Sync(), ACL_SUCCESS) << TakeMessages();
  EXPECT_EQ(sum.load(), 500500);
  EXPECT_EQ(once_sum.load(), 500500);
}

TEST_F(ExecutorTest, EnqueueFailureIsARuntimeErrorAndKeepsTheExecutor) {
  std::atomic<int> runs{0};
  aclOpExecutor* executor = Create([&runs](const pacl::KernelContext&) {
    ++runs;
    return ACLNN_SUCCESS;
  });
  int not_a_stream = 0;
  EXPECT_EQ(pacl::RunExecutor(kOp, nullptr, 0, executor, &not_a_stream), ACLNN_ERR_RUNTIME_ERROR);
  ExpectMessage({"aclnnTestOp: cannot run on stream"});
  // The executor did not run, so it may still run once.
  EXPECT_EQ(Run(executor), ACLNN_SUCCESS) << TakeMessages();
  ASSERT_EQ(Sync(), ACL_SUCCESS);
  EXPECT_EQ(runs.load(), 1);
}

TEST_F(ExecutorTest, EnqueueFailsWithoutACurrentContext) {
  std::atomic<int> runs{0};
  aclOpExecutor* executor = Create([&runs](const pacl::KernelContext&) {
    ++runs;
    return ACLNN_SUCCESS;
  });
  aclnnStatus status = ACLNN_SUCCESS;
  std::string message;
  std::thread no_context([&]() {  // a fresh thread has no current context
    status = pacl::RunExecutor(kOp, nullptr, 0, executor, nullptr);
    message = TakeMessages();
  });
  no_context.join();
  EXPECT_EQ(status, ACLNN_ERR_RUNTIME_ERROR);
  EXPECT_NE(message.find("aclnnTestOp: cannot run on stream"), std::string::npos) << message;
  EXPECT_EQ(aclDestroyAclOpExecutor(executor), ACLNN_SUCCESS);
  EXPECT_EQ(runs.load(), 0);
}

TEST_F(ExecutorTest, CreateRefusesNullOutPointersAndAnEmptyKernel) {
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  auto kernel = [](const pacl::KernelContext&) { return ACLNN_SUCCESS; };
  EXPECT_EQ(pacl::CreateExecutor(kOp, 0, kernel, nullptr, &executor), ACLNN_ERR_PARAM_NULLPTR);
  ExpectMessage({"aclnnTestOp: workspaceSize must not be null"});
  EXPECT_EQ(pacl::CreateExecutor(kOp, 0, kernel, &size, nullptr), ACLNN_ERR_PARAM_NULLPTR);
  ExpectMessage({"aclnnTestOp: executor must not be null"});
  EXPECT_EQ(pacl::CreateExecutor(kOp, 0, pacl::Kernel(), &size, &executor), ACLNN_ERR_INNER);
  ExpectMessage({"aclnnTestOp: internal error"});
  EXPECT_EQ(executor, nullptr);
}

TEST_F(ExecutorTest, StaleHandlesStayRefusedAfterManyRuns) {
  std::atomic<int> runs{0};
  std::vector<aclOpExecutor*> executors;
  for (int i = 0; i < 1500; ++i) {  // more than the registry remembers
    executors.push_back(Create([&runs](const pacl::KernelContext&) {
      ++runs;
      return ACLNN_SUCCESS;
    }));
    ASSERT_EQ(Run(executors.back()), ACLNN_SUCCESS);
  }
  ASSERT_EQ(Sync(), ACL_SUCCESS);
  EXPECT_EQ(runs.load(), 1500);
  // The most recent ones are remembered precisely.
  EXPECT_EQ(Run(executors.back()), ACLNN_ERR_PARAM_INVALID);
  ExpectMessage({"already ran"});
  // The oldest were forgotten; whatever their addresses are now, a run is refused and reads no freed memory.
  for (int i = 0; i < 20; ++i) EXPECT_EQ(Run(executors[i]), ACLNN_ERR_PARAM_INVALID);
  TakeMessages();
  ASSERT_EQ(Sync(), ACL_SUCCESS);
  EXPECT_EQ(runs.load(), 1500);
}

TEST_F(ExecutorTest, ConcurrentRunsOfOneExecutorRunItOnce) {
  aclrtContext context = nullptr;
  ASSERT_EQ(aclrtGetCurrentContext(&context), ACL_SUCCESS);
  std::atomic<int> runs{0};
  aclOpExecutor* executor = Create([&runs](const pacl::KernelContext&) {
    ++runs;
    return ACLNN_SUCCESS;
  });
  constexpr int kThreads = 8;
  std::atomic<int> successes{0};
  std::atomic<int> refusals{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&]() {
      ASSERT_EQ(aclrtSetCurrentContext(context), ACL_SUCCESS);
      const aclnnStatus status = pacl::RunExecutor(kOp, nullptr, 0, executor, stream_);
      if (status == ACLNN_SUCCESS) ++successes;
      if (status == ACLNN_ERR_PARAM_INVALID) ++refusals;
      TakeMessages();
    });
  }
  for (std::thread& thread : threads) thread.join();
  ASSERT_EQ(Sync(), ACL_SUCCESS);
  EXPECT_EQ(successes.load(), 1);
  EXPECT_EQ(refusals.load(), kThreads - 1);
  EXPECT_EQ(runs.load(), 1);
}

TEST_F(ExecutorTest, ConcurrentLifecyclesOnSeveralThreads) {
  aclrtContext context = nullptr;
  ASSERT_EQ(aclrtGetCurrentContext(&context), ACL_SUCCESS);
  constexpr int kThreads = 4;
  constexpr int kIterations = 150;
  std::atomic<int> runs{0};
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t]() {
      if (aclrtSetCurrentContext(context) != ACL_SUCCESS) {
        ++failures;
        return;
      }
      for (int i = 0; i < kIterations; ++i) {
        uint64_t size = 0;
        aclOpExecutor* executor = nullptr;
        auto kernel = [&runs](const pacl::KernelContext&) {
          ++runs;
          return ACLNN_SUCCESS;
        };
        if (pacl::CreateExecutor(kOp, 0, kernel, &size, &executor) != ACLNN_SUCCESS) ++failures;
        if ((i + t) % 2 == 0) {
          if (aclSetAclOpExecutorRepeatable(executor) != ACLNN_SUCCESS) ++failures;
          if (pacl::RunExecutor(kOp, nullptr, 0, executor, stream_) != ACLNN_SUCCESS) ++failures;
          if (pacl::RunExecutor(kOp, nullptr, 0, executor, stream_) != ACLNN_SUCCESS) ++failures;
          if (aclDestroyAclOpExecutor(executor) != ACLNN_SUCCESS) ++failures;
        } else {
          if (pacl::RunExecutor(kOp, nullptr, 0, executor, stream_) != ACLNN_SUCCESS) ++failures;
          if (pacl::RunExecutor(kOp, nullptr, 0, executor, stream_) != ACLNN_ERR_PARAM_INVALID) ++failures;
        }
      }
      TakeMessages();
    });
  }
  for (std::thread& thread : threads) thread.join();
  ASSERT_EQ(Sync(), ACL_SUCCESS);
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(runs.load(), kThreads * kIterations / 2 * 3);
}

}  // namespace
