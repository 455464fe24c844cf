// Streams: asynchronous FIFOs with a worker thread each, the default stream, failure reporting through
// aclrtSynchronizeStream / aclrtSynchronizeDevice, unknown handles, and process exit with work still queued.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "acl/acl.h"
#include "pacl/error.h"
#include "pacl/runtime.h"
#include "runtime_test_util.h"

namespace {

using pacl::rt::EnqueueTask;
using pacl_test::Gate;
using pacl_test::Mentions;
using pacl_test::TakeErrors;

class StreamTest : public pacl_test::DeviceTest {
 protected:
  void SetUp() override {
    DeviceTest::SetUp();
    ASSERT_EQ(aclrtCreateStream(&stream_), ACL_SUCCESS);
    ASSERT_NE(stream_, nullptr);
  }
  void TearDown() override {
    if (stream_ != nullptr) {
      EXPECT_EQ(aclrtDestroyStream(stream_), ACL_SUCCESS);
    }
    DeviceTest::TearDown();
  }
  aclrtStream stream_ = nullptr;
};

aclError FailWith(aclError code, const std::string& message) {
  pacl::SetRecentErrorMessage(message);
  return code;
}

TEST_F(StreamTest, EnqueueDoesNotWaitForTheTask) {
  auto gate = std::make_shared<Gate>();
  auto finished = std::make_shared<std::atomic<bool>>(false);
  const auto start = std::chrono::steady_clock::now();
  ASSERT_EQ(EnqueueTask(stream_, [gate, finished] {
              if (!gate->Wait()) return FailWith(ACL_ERROR_FAILURE, "gate never opened");
              *finished = true;
              return ACL_SUCCESS;
            }),
            ACL_SUCCESS);
  // The task is blocked on the gate, yet we are back, and more work can be queued behind it.
  EXPECT_FALSE(finished->load());
  ASSERT_EQ(EnqueueTask(stream_, [] { return ACL_SUCCESS; }), ACL_SUCCESS);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_FALSE(finished->load());
  gate->Open();
  EXPECT_EQ(aclrtSynchronizeStream(stream_), ACL_SUCCESS);
  EXPECT_TRUE(finished->load());
}

TEST_F(StreamTest, TasksRunInOrder) {
  constexpr int kTasks = 2000;
  auto order = std::make_shared<std::vector<int>>();
  for (int i = 0; i < kTasks; ++i) {
    ASSERT_EQ(EnqueueTask(stream_, [order, i] {
                order->push_back(i);
                return ACL_SUCCESS;
              }),
              ACL_SUCCESS);
  }
  ASSERT_EQ(aclrtSynchronizeStream(stream_), ACL_SUCCESS);
  ASSERT_EQ(order->size(), static_cast<size_t>(kTasks));
  for (int i = 0; i < kTasks; ++i) ASSERT_EQ((*order)[i], i);
}

TEST_F(StreamTest, SynchronizeWaitsForEverythingEnqueuedBefore) {
  auto count = std::make_shared<std::atomic<int>>(0);
  for (int i = 0; i < 10; ++i) {
    ASSERT_EQ(EnqueueTask(stream_, [count] {
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
                ++*count;
                return ACL_SUCCESS;
              }),
              ACL_SUCCESS);
  }
  EXPECT_EQ(aclrtSynchronizeStream(stream_), ACL_SUCCESS);
  EXPECT_EQ(count->load(), 10);
}

// Several host threads enqueue on one stream: every task runs once, each thread's tasks in its own order.
TEST_F(StreamTest, ConcurrentEnqueuersKeepTheirOrder) {
  constexpr int kThreads = 4;
  constexpr int kPerThread = 500;
  auto seen = std::make_shared<std::vector<std::vector<int>>>(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([this, seen, t] {
      for (int i = 0; i < kPerThread; ++i) {
        EXPECT_EQ(EnqueueTask(stream_, [seen, t, i] {
                    (*seen)[t].push_back(i);
                    return ACL_SUCCESS;
                  }),
                  ACL_SUCCESS);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  ASSERT_EQ(aclrtSynchronizeStream(stream_), ACL_SUCCESS);
  for (int t = 0; t < kThreads; ++t) {
    ASSERT_EQ((*seen)[t].size(), static_cast<size_t>(kPerThread));
    for (int i = 0; i < kPerThread; ++i) ASSERT_EQ((*seen)[t][i], i);
  }
}

TEST_F(StreamTest, DefaultStreamOfTheCurrentContext) {
  auto value = std::make_shared<std::atomic<int>>(0);
  ASSERT_EQ(EnqueueTask(nullptr, [value] {
              std::this_thread::sleep_for(std::chrono::milliseconds(5));
              *value = 7;
              return ACL_SUCCESS;
            }),
            ACL_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS);
  EXPECT_EQ(value->load(), 7);
  EXPECT_EQ(aclrtDestroyStream(nullptr), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(Mentions(TakeErrors(), {"aclrtDestroyStream", "null"}));
}

// Each context has its own default stream: one blocked does not block the other.
TEST_F(StreamTest, DefaultStreamsOfDifferentContextsAreIndependent) {
  aclrtContext default_context = nullptr;
  ASSERT_EQ(aclrtGetCurrentContext(&default_context), ACL_SUCCESS);
  auto gate = std::make_shared<Gate>();
  ASSERT_EQ(EnqueueTask(nullptr, [gate] { return gate->Wait() ? ACL_SUCCESS : FailWith(1, "gate never opened"); }),
            ACL_SUCCESS);
  aclrtContext other = nullptr;
  ASSERT_EQ(aclrtCreateContext(&other, 0), ACL_SUCCESS);
  auto ran = std::make_shared<std::atomic<bool>>(false);
  ASSERT_EQ(EnqueueTask(nullptr, [ran] {
              *ran = true;
              return ACL_SUCCESS;
            }),
            ACL_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS);  // the other context's default stream
  EXPECT_TRUE(ran->load());
  EXPECT_FALSE(gate->IsOpen());
  gate->Open();
  ASSERT_EQ(aclrtSetCurrentContext(default_context), ACL_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyContext(other), ACL_SUCCESS);
}

// Two tasks on two streams that each wait for the other can only both finish if the streams run in parallel.
TEST_F(StreamTest, StreamsRunInParallel) {
  aclrtStream second = nullptr;
  ASSERT_EQ(aclrtCreateStream(&second), ACL_SUCCESS);
  auto a_started = std::make_shared<Gate>();
  auto b_started = std::make_shared<Gate>();
  ASSERT_EQ(EnqueueTask(stream_, [a_started, b_started] {
              a_started->Open();
              return b_started->Wait() ? ACL_SUCCESS : FailWith(ACL_ERROR_FAILURE, "stream B never started");
            }),
            ACL_SUCCESS);
  ASSERT_EQ(EnqueueTask(second, [a_started, b_started] {
              b_started->Open();
              return a_started->Wait() ? ACL_SUCCESS : FailWith(ACL_ERROR_FAILURE, "stream A never started");
            }),
            ACL_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeStream(stream_), ACL_SUCCESS) << TakeErrors();
  EXPECT_EQ(aclrtSynchronizeStream(second), ACL_SUCCESS) << TakeErrors();
  EXPECT_EQ(aclrtDestroyStream(second), ACL_SUCCESS);
}

TEST_F(StreamTest, SynchronizeStreamReportsTheFirstFailureOnceAndLaterTasksStillRun) {
  auto ran = std::make_shared<std::atomic<int>>(0);
  auto ok = [ran] {
    ++*ran;
    return ACL_SUCCESS;
  };
  ASSERT_EQ(EnqueueTask(stream_, ok), ACL_SUCCESS);
  ASSERT_EQ(EnqueueTask(stream_, [] { return FailWith(161002, "aclnnFoo: x must be 4-D, got shape [2, 3]"); }),
            ACL_SUCCESS);
  ASSERT_EQ(EnqueueTask(stream_, ok), ACL_SUCCESS);
  ASSERT_EQ(EnqueueTask(stream_, [] { return FailWith(361001, "aclnnBar: second failure"); }), ACL_SUCCESS);
  ASSERT_EQ(EnqueueTask(stream_, ok), ACL_SUCCESS);

  EXPECT_EQ(aclrtSynchronizeStream(stream_), 161002);
  EXPECT_EQ(TakeErrors(), "aclnnFoo: x must be 4-D, got shape [2, 3]");
  EXPECT_EQ(ran->load(), 3);
  // Cleared by the synchronisation.
  EXPECT_EQ(aclrtSynchronizeStream(stream_), ACL_SUCCESS);
  EXPECT_EQ(aclGetRecentErrMsg(), nullptr);
}

TEST_F(StreamTest, FailureWithoutMessageOrWithExceptionStillReported) {
  ASSERT_EQ(EnqueueTask(stream_, [] { return 777; }), ACL_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeStream(stream_), 777);
  EXPECT_TRUE(Mentions(TakeErrors(), {"error code 777"}));

  ASSERT_EQ(EnqueueTask(stream_, []() -> aclError { throw std::runtime_error("kernel exploded"); }), ACL_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeStream(stream_), ACL_ERROR_INTERNAL_ERROR);
  EXPECT_TRUE(Mentions(TakeErrors(), {"kernel exploded"}));
}

// Messages a task leaves behind on the worker thread do not leak into a later failure's report.
TEST_F(StreamTest, OnlyTheFailingTasksMessageIsReported) {
  ASSERT_EQ(EnqueueTask(stream_, [] {
              pacl::SetRecentErrorMessage("stale message of a task that succeeded");
              return ACL_SUCCESS;
            }),
            ACL_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeStream(stream_), ACL_SUCCESS);
  EXPECT_EQ(aclGetRecentErrMsg(), nullptr);
  ASSERT_EQ(EnqueueTask(stream_, [] { return FailWith(500001, "fresh failure"); }), ACL_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeStream(stream_), 500001);
  EXPECT_EQ(TakeErrors(), "fresh failure");
  // A failure without a message of its own is not blamed on an earlier task's leftover message.
  ASSERT_EQ(EnqueueTask(stream_, [] {
              pacl::SetRecentErrorMessage("stale message again");
              return ACL_SUCCESS;
            }),
            ACL_SUCCESS);
  ASSERT_EQ(EnqueueTask(stream_, [] { return 888; }), ACL_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeStream(stream_), 888);
  const std::string message = TakeErrors();
  EXPECT_TRUE(Mentions(message, {"error code 888"}));
  EXPECT_EQ(message.find("stale"), std::string::npos) << message;
}

TEST_F(StreamTest, SynchronizeDeviceReportsEveryStreamsFailure) {
  aclrtStream second = nullptr;
  ASSERT_EQ(aclrtCreateStream(&second), ACL_SUCCESS);
  auto gate = std::make_shared<Gate>();
  ASSERT_EQ(EnqueueTask(stream_, [gate] {
              gate->Wait();
              return FailWith(111, "failure on the first stream");
            }),
            ACL_SUCCESS);
  ASSERT_EQ(EnqueueTask(second, [] { return ACL_SUCCESS; }), ACL_SUCCESS);
  ASSERT_EQ(EnqueueTask(nullptr, [] { return FailWith(222, "failure on the default stream"); }), ACL_SUCCESS);
  gate->Open();
  // The first failure in stream creation order is returned; every failure's message is recorded.
  EXPECT_EQ(aclrtSynchronizeDevice(), 111);
  const std::string messages = TakeErrors();
  EXPECT_TRUE(Mentions(messages, {"failure on the first stream", "failure on the default stream"}));
  // Cleared everywhere.
  EXPECT_EQ(aclrtSynchronizeDevice(), ACL_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeStream(stream_), ACL_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS);
  EXPECT_EQ(aclGetRecentErrMsg(), nullptr);
  EXPECT_EQ(aclrtDestroyStream(second), ACL_SUCCESS);
}

// A failure is reported on the thread that synchronises, not on the one that enqueued.
TEST_F(StreamTest, FailureIsReportedToTheSynchronisingThread) {
  ASSERT_EQ(EnqueueTask(stream_, [] { return FailWith(333, "reported to the synchroniser"); }), ACL_SUCCESS);
  std::string seen;
  aclError code = ACL_SUCCESS;
  std::thread synchroniser([&] {
    code = aclrtSynchronizeStream(stream_);
    seen = TakeErrors();
  });
  synchroniser.join();
  EXPECT_EQ(code, 333);
  EXPECT_EQ(seen, "reported to the synchroniser");
  EXPECT_EQ(aclGetRecentErrMsg(), nullptr);
}

TEST_F(StreamTest, DestroyDrainsTheQueue) {
  aclrtStream doomed = nullptr;
  ASSERT_EQ(aclrtCreateStream(&doomed), ACL_SUCCESS);
  auto ran = std::make_shared<std::atomic<int>>(0);
  for (int i = 0; i < 20; ++i) {
    ASSERT_EQ(EnqueueTask(doomed, [ran] {
                std::this_thread::sleep_for(std::chrono::microseconds(500));
                ++*ran;
                return ACL_SUCCESS;
              }),
              ACL_SUCCESS);
  }
  EXPECT_EQ(aclrtDestroyStream(doomed), ACL_SUCCESS);
  EXPECT_EQ(ran->load(), 20);
}

TEST_F(StreamTest, UnknownAndDestroyedStreamsAreRejected) {
  int not_a_stream = 0;
  EXPECT_EQ(aclrtSynchronizeStream(&not_a_stream), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(Mentions(TakeErrors(), {"aclrtSynchronizeStream", "not a live stream"}));
  EXPECT_EQ(aclrtDestroyStream(&not_a_stream), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(Mentions(TakeErrors(), {"aclrtDestroyStream", "not a live stream"}));
  EXPECT_EQ(EnqueueTask(&not_a_stream, [] { return ACL_SUCCESS; }), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(Mentions(TakeErrors(), {"EnqueueTask", "not a live stream"}));

  aclrtStream destroyed = nullptr;
  ASSERT_EQ(aclrtCreateStream(&destroyed), ACL_SUCCESS);
  ASSERT_EQ(aclrtDestroyStream(destroyed), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyStream(destroyed), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtSynchronizeStream(destroyed), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(EnqueueTask(destroyed, [] { return ACL_SUCCESS; }), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(Mentions(TakeErrors(), {"not a live stream"}));

  EXPECT_EQ(EnqueueTask(stream_, pacl::rt::Task()), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(Mentions(TakeErrors(), {"EnqueueTask", "task"}));
  EXPECT_EQ(aclrtCreateStream(nullptr), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(Mentions(TakeErrors(), {"aclrtCreateStream", "stream must not be null"}));
}

// A stream stays usable from a thread whose current context is another one.
TEST_F(StreamTest, StreamUsableFromAnotherContext) {
  aclrtContext other = nullptr;
  ASSERT_EQ(aclrtCreateContext(&other, 0), ACL_SUCCESS);
  auto ran = std::make_shared<std::atomic<bool>>(false);
  ASSERT_EQ(EnqueueTask(stream_, [ran] {
              *ran = true;
              return ACL_SUCCESS;
            }),
            ACL_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeStream(stream_), ACL_SUCCESS);
  EXPECT_TRUE(ran->load());
  EXPECT_EQ(aclrtDestroyContext(other), ACL_SUCCESS);
}

// Waiting for the stream a task runs on would deadlock: the runtime refuses instead.
TEST_F(StreamTest, TaskCannotWaitForItsOwnStream) {
  aclrtStream stream = stream_;
  ASSERT_EQ(EnqueueTask(stream, [stream] {
              const aclError sync = aclrtSynchronizeStream(stream);
              const aclError device = aclrtSynchronizeDevice();
              const aclError destroy = aclrtDestroyStream(stream);
              const bool all_refused = sync == ACL_ERROR_INVALID_PARAM && device == ACL_ERROR_INVALID_PARAM &&
                                       destroy == ACL_ERROR_INVALID_PARAM;
              return all_refused ? ACL_SUCCESS : FailWith(ACL_ERROR_FAILURE, "a self-wait was not refused");
            }),
            ACL_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeStream(stream_), ACL_SUCCESS) << TakeErrors();
}

// Tasks run with the stream's context current, so they see that context's options.
TEST_F(StreamTest, TasksSeeTheirContextsOptions) {
  ASSERT_EQ(aclrtCtxSetSysParamOpt(ACL_OPT_DETERMINISTIC, 1), ACL_SUCCESS);
  auto seen = std::make_shared<std::atomic<int>>(-1);
  auto context_seen = std::make_shared<aclrtContext>(nullptr);
  ASSERT_EQ(EnqueueTask(stream_, [seen, context_seen] {
              *seen = pacl::rt::DeterministicEnabled() ? 1 : 0;
              return aclrtGetCurrentContext(context_seen.get());
            }),
            ACL_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeStream(stream_), ACL_SUCCESS);
  EXPECT_EQ(seen->load(), 1);
  aclrtContext current = nullptr;
  ASSERT_EQ(aclrtGetCurrentContext(&current), ACL_SUCCESS);
  EXPECT_EQ(*context_seen, current);
  ASSERT_EQ(aclrtCtxSetSysParamOpt(ACL_OPT_DETERMINISTIC, 0), ACL_SUCCESS);
}

// Process exit with streams still holding queued work, in a child process: the workers are stopped cleanly (no
// hang, no crash, no leak under LSan), and before the static objects that existed when the first stream was
// created are destroyed, so no task runs while they are torn down (the witness checks that).
struct ExitWitness {
  std::atomic<int>* tasks_run = nullptr;
  ~ExitWitness() {
    if (tasks_run == nullptr) return;
    const int before = tasks_run->load();
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    if (tasks_run->load() != before) std::_Exit(5);  // a worker still ran tasks during static destruction
  }
};

TEST(StreamExit, ExitWithLiveStreamsAndQueuedWork) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        static std::atomic<int> tasks_run{0};
        static ExitWitness witness;  // constructed before any stream exists
        witness.tasks_run = &tasks_run;
        if (aclrtSetDevice(0) != ACL_SUCCESS) std::_Exit(2);
        aclrtStream stream = nullptr;
        if (aclrtCreateStream(&stream) != ACL_SUCCESS) std::_Exit(3);
        for (int i = 0; i < 1000; ++i) {
          auto task = [] {
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
            ++tasks_run;
            return ACL_SUCCESS;
          };
          EnqueueTask(stream, task);
          EnqueueTask(nullptr, task);
        }
        aclrtContext context = nullptr;
        aclrtCreateContext(&context, 0);
        aclrtStream other = nullptr;
        aclrtCreateStream(&other);
        EnqueueTask(other, [] { return ACL_SUCCESS; });
        std::this_thread::sleep_for(std::chrono::milliseconds(5));  // let some tasks start
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
