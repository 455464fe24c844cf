// Events (record, query, synchronise, cross-stream waits, elapsed time), the asynchronous copy and set, and
// aclrtGetMemInfo: their ordering on streams, and the checks on every argument.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "acl/acl.h"
#include "pacl/runtime.h"
#include "runtime_test_util.h"

namespace {

using pacl::rt::EnqueueTask;
using pacl_test::Gate;
using pacl_test::Mentions;
using pacl_test::TakeErrors;

class EventTest : public pacl_test::DeviceTest {
 protected:
  void SetUp() override {
    DeviceTest::SetUp();
    ASSERT_EQ(aclrtCreateStream(&stream_), ACL_SUCCESS);
    ASSERT_EQ(aclrtCreateEvent(&event_), ACL_SUCCESS);
  }
  void TearDown() override {
    if (event_ != nullptr) {
      EXPECT_EQ(aclrtDestroyEvent(event_), ACL_SUCCESS);
    }
    if (stream_ != nullptr) {
      EXPECT_EQ(aclrtDestroyStream(stream_), ACL_SUCCESS);
    }
    DeviceTest::TearDown();
  }
  // Blocks stream until the returned gate opens.
  std::shared_ptr<Gate> Block(aclrtStream stream) {
    auto gate = std::make_shared<Gate>();
    EXPECT_EQ(EnqueueTask(stream, [gate] { return gate->Wait() ? ACL_SUCCESS : ACL_ERROR_INTERNAL_ERROR; }),
              ACL_SUCCESS);
    return gate;
  }
  aclrtEventStatus Status(aclrtEvent event) {
    aclrtEventStatus status = ACL_EVENT_STATUS_RESERVED;
    EXPECT_EQ(aclrtQueryEvent(event, &status), ACL_SUCCESS);
    aclrtEventRecordedStatus recorded = ACL_EVENT_RECORDED_STATUS_NOT_READY;
    EXPECT_EQ(aclrtQueryEventStatus(event, &recorded), ACL_SUCCESS);
    EXPECT_EQ(status == ACL_EVENT_STATUS_COMPLETE, recorded == ACL_EVENT_RECORDED_STATUS_COMPLETE);
    return status;
  }
  aclrtStream stream_ = nullptr;
  aclrtEvent event_ = nullptr;
};

TEST_F(EventTest, CompletesWhenTheWorkBeforeItHasRun) {
  std::shared_ptr<Gate> gate = Block(stream_);
  ASSERT_EQ(aclrtRecordEvent(event_, stream_), ACL_SUCCESS);
  EXPECT_EQ(Status(event_), ACL_EVENT_STATUS_NOT_READY);
  gate->Open();
  ASSERT_EQ(aclrtSynchronizeEvent(event_), ACL_SUCCESS);
  EXPECT_EQ(Status(event_), ACL_EVENT_STATUS_COMPLETE);
  // Recorded again behind new work: not ready again until that work is done.
  gate = Block(stream_);
  ASSERT_EQ(aclrtRecordEvent(event_, stream_), ACL_SUCCESS);
  EXPECT_EQ(Status(event_), ACL_EVENT_STATUS_NOT_READY);
  gate->Open();
  ASSERT_EQ(aclrtSynchronizeStream(stream_), ACL_SUCCESS);
  EXPECT_EQ(Status(event_), ACL_EVENT_STATUS_COMPLETE);
}

TEST_F(EventTest, DefaultStreamAndNeverRecordedEvents) {
  EXPECT_EQ(Status(event_), ACL_EVENT_STATUS_COMPLETE);  // never recorded: nothing to wait for
  EXPECT_EQ(aclrtSynchronizeEvent(event_), ACL_SUCCESS);
  std::shared_ptr<Gate> gate = Block(nullptr);
  ASSERT_EQ(aclrtRecordEvent(event_, nullptr), ACL_SUCCESS);
  EXPECT_EQ(Status(event_), ACL_EVENT_STATUS_NOT_READY);
  gate->Open();
  EXPECT_EQ(aclrtSynchronizeEvent(event_), ACL_SUCCESS);
  EXPECT_EQ(Status(event_), ACL_EVENT_STATUS_COMPLETE);
}

// aclrtStreamWaitEvent: work enqueued on one stream after the wait runs only once the other stream has reached
// the event.
TEST_F(EventTest, StreamWaitEventOrdersTwoStreams) {
  aclrtStream other = nullptr;
  ASSERT_EQ(aclrtCreateStream(&other), ACL_SUCCESS);
  auto value = std::make_shared<std::atomic<int>>(0);
  auto seen = std::make_shared<std::atomic<int>>(-1);
  std::shared_ptr<Gate> gate = Block(stream_);
  ASSERT_EQ(EnqueueTask(stream_, [value] {
              std::this_thread::sleep_for(std::chrono::milliseconds(5));
              *value = 42;
              return ACL_SUCCESS;
            }),
            ACL_SUCCESS);
  ASSERT_EQ(aclrtRecordEvent(event_, stream_), ACL_SUCCESS);
  ASSERT_EQ(aclrtStreamWaitEvent(other, event_), ACL_SUCCESS);
  ASSERT_EQ(EnqueueTask(other, [value, seen] {
              *seen = value->load();
              return ACL_SUCCESS;
            }),
            ACL_SUCCESS);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(seen->load(), -1);  // still waiting for the event
  gate->Open();
  ASSERT_EQ(aclrtSynchronizeStream(other), ACL_SUCCESS);
  EXPECT_EQ(seen->load(), 42);
  // Waiting for a complete or never-recorded event does not block.
  aclrtEvent fresh = nullptr;
  ASSERT_EQ(aclrtCreateEvent(&fresh), ACL_SUCCESS);
  ASSERT_EQ(aclrtStreamWaitEvent(other, fresh), ACL_SUCCESS);
  ASSERT_EQ(aclrtStreamWaitEvent(other, event_), ACL_SUCCESS);
  ASSERT_EQ(aclrtSynchronizeStream(other), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyEvent(fresh), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyStream(other), ACL_SUCCESS);
}

TEST_F(EventTest, ElapsedTimeBetweenTwoEvents) {
  aclrtEvent end = nullptr;
  ASSERT_EQ(aclrtCreateEvent(&end), ACL_SUCCESS);
  float ms = -1;
  EXPECT_EQ(aclrtEventElapsedTime(&ms, event_, end), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(Mentions(TakeErrors(), {"aclrtEventElapsedTime", "startEvent", "never recorded"}));
  ASSERT_EQ(aclrtRecordEvent(event_, stream_), ACL_SUCCESS);
  ASSERT_EQ(aclrtSynchronizeEvent(event_), ACL_SUCCESS);
  std::shared_ptr<Gate> gate = Block(stream_);
  ASSERT_EQ(EnqueueTask(stream_, [] {
              std::this_thread::sleep_for(std::chrono::milliseconds(30));
              return ACL_SUCCESS;
            }),
            ACL_SUCCESS);
  ASSERT_EQ(aclrtRecordEvent(end, stream_), ACL_SUCCESS);
  EXPECT_EQ(aclrtEventElapsedTime(&ms, event_, end), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(Mentions(TakeErrors(), {"endEvent", "not completed"}));
  EXPECT_EQ(ms, -1.0f);
  gate->Open();
  ASSERT_EQ(aclrtSynchronizeEvent(end), ACL_SUCCESS);
  ASSERT_EQ(aclrtEventElapsedTime(&ms, event_, end), ACL_SUCCESS);
  EXPECT_GE(ms, 29.0f);
  EXPECT_LT(ms, 10000.0f);
  EXPECT_EQ(aclrtEventElapsedTime(nullptr, event_, end), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(Mentions(TakeErrors(), {"aclrtEventElapsedTime", "ms", "null"}));
  EXPECT_EQ(aclrtDestroyEvent(end), ACL_SUCCESS);
}

TEST_F(EventTest, BadHandlesAreRefused) {
  EXPECT_EQ(aclrtCreateEvent(nullptr), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(Mentions(TakeErrors(), {"aclrtCreateEvent", "event", "null"}));
  int not_an_event = 0;
  aclrtEventStatus status;
  EXPECT_EQ(aclrtQueryEvent(&not_an_event, &status), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(Mentions(TakeErrors(), {"aclrtQueryEvent", "not a live event"}));
  EXPECT_EQ(aclrtQueryEvent(event_, nullptr), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(Mentions(TakeErrors(), {"aclrtQueryEvent", "status", "null"}));
  EXPECT_EQ(aclrtRecordEvent(nullptr, stream_), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(Mentions(TakeErrors(), {"aclrtRecordEvent", "event", "null"}));
  EXPECT_EQ(aclrtRecordEvent(event_, &not_an_event), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(Mentions(TakeErrors(), {"aclrtRecordEvent", "not a live stream"}));
  EXPECT_EQ(Status(event_), ACL_EVENT_STATUS_COMPLETE);  // the refused record left it as it was
  EXPECT_EQ(aclrtStreamWaitEvent(&not_an_event, event_), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(Mentions(TakeErrors(), {"aclrtStreamWaitEvent", "not a live stream"}));
  EXPECT_EQ(aclrtSynchronizeEvent(&not_an_event), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(Mentions(TakeErrors(), {"aclrtSynchronizeEvent", "not a live event"}));

  aclrtEvent destroyed = nullptr;
  ASSERT_EQ(aclrtCreateEvent(&destroyed), ACL_SUCCESS);
  ASSERT_EQ(aclrtDestroyEvent(destroyed), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyEvent(destroyed), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(Mentions(TakeErrors(), {"aclrtDestroyEvent", "already destroyed"}));
  EXPECT_EQ(aclrtRecordEvent(destroyed, stream_), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtDestroyEvent(nullptr), ACL_ERROR_INVALID_PARAM);
  TakeErrors();

  // No current context on a new thread.
  std::thread([] {
    aclrtEvent event = nullptr;
    EXPECT_EQ(aclrtCreateEvent(&event), ACL_ERROR_RT_CONTEXT_NULL);
    EXPECT_TRUE(Mentions(TakeErrors(), {"aclrtCreateEvent", "context"}));
  }).join();
}

// An event destroyed while its record is still queued: the record still runs, nothing is touched after free.
TEST_F(EventTest, DestroyWhileRecordIsQueued) {
  std::shared_ptr<Gate> gate = Block(stream_);
  ASSERT_EQ(aclrtRecordEvent(event_, stream_), ACL_SUCCESS);
  aclrtStream waiter = nullptr;
  ASSERT_EQ(aclrtCreateStream(&waiter), ACL_SUCCESS);
  ASSERT_EQ(aclrtStreamWaitEvent(waiter, event_), ACL_SUCCESS);
  ASSERT_EQ(aclrtDestroyEvent(event_), ACL_SUCCESS);
  event_ = nullptr;
  gate->Open();
  EXPECT_EQ(aclrtSynchronizeStream(waiter), ACL_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeStream(stream_), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyStream(waiter), ACL_SUCCESS);
}

// A task cannot wait for an event recorded after it on its own stream.
TEST_F(EventTest, TaskCannotSynchronizeOnAnEventBehindIt) {
  auto gate = std::make_shared<Gate>();
  auto result = std::make_shared<std::atomic<int>>(-1);
  aclrtEvent event = event_;
  ASSERT_EQ(EnqueueTask(stream_, [gate, result, event] {
              if (!gate->Wait()) return ACL_ERROR_INTERNAL_ERROR;
              *result = aclrtSynchronizeEvent(event);
              return ACL_SUCCESS;
            }),
            ACL_SUCCESS);
  ASSERT_EQ(aclrtRecordEvent(event_, stream_), ACL_SUCCESS);
  gate->Open();
  ASSERT_EQ(aclrtSynchronizeStream(stream_), ACL_SUCCESS);
  EXPECT_EQ(result->load(), ACL_ERROR_INVALID_PARAM);
}

// aclrtMemcpyAsync / aclrtMemsetAsync return at once and run in stream order.
TEST_F(EventTest, AsyncCopyAndSetRunInStreamOrder) {
  constexpr size_t kBytes = 1 << 16;
  std::vector<unsigned char> host(kBytes), back(kBytes, 0);
  for (size_t i = 0; i < kBytes; ++i) host[i] = static_cast<unsigned char>(i * 7 + 3);
  void* device = nullptr;
  ASSERT_EQ(aclrtMalloc(&device, kBytes, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  ASSERT_EQ(aclrtMemset(device, kBytes, 0, kBytes), ACL_SUCCESS);
  std::shared_ptr<Gate> gate = Block(stream_);
  ASSERT_EQ(aclrtMemcpyAsync(device, kBytes, host.data(), kBytes, ACL_MEMCPY_HOST_TO_DEVICE, stream_), ACL_SUCCESS);
  ASSERT_EQ(aclrtMemsetAsync(static_cast<char*>(device) + 100, kBytes - 100, 0xEE, 50, stream_), ACL_SUCCESS);
  ASSERT_EQ(aclrtMemcpyAsync(back.data(), kBytes, device, kBytes, ACL_MEMCPY_DEVICE_TO_HOST, stream_), ACL_SUCCESS);
  ASSERT_EQ(aclrtRecordEvent(event_, stream_), ACL_SUCCESS);
  EXPECT_EQ(back[5], 0);  // nothing ran yet (host[5] is not 0)
  gate->Open();
  ASSERT_EQ(aclrtSynchronizeEvent(event_), ACL_SUCCESS);
  for (size_t i = 0; i < kBytes; ++i) {
    const unsigned char expected = i >= 100 && i < 150 ? 0xEE : host[i];
    ASSERT_EQ(back[i], expected) << i;
  }
  EXPECT_EQ(aclrtFree(device), ACL_SUCCESS);
}

TEST_F(EventTest, AsyncCopyAndSetCheckTheirArguments) {
  void* device = nullptr;
  ASSERT_EQ(aclrtMalloc(&device, 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  char host[128] = {};
  EXPECT_EQ(aclrtMemcpyAsync(nullptr, 8, host, 8, ACL_MEMCPY_HOST_TO_DEVICE, stream_), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(Mentions(TakeErrors(), {"aclrtMemcpyAsync", "dst", "null"}));
  EXPECT_EQ(aclrtMemcpyAsync(device, 8, host, 16, ACL_MEMCPY_HOST_TO_DEVICE, stream_), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(Mentions(TakeErrors(), {"aclrtMemcpyAsync", "count (16)", "destMax (8)"}));
  EXPECT_EQ(aclrtMemcpyAsync(device, 128, host, 128, ACL_MEMCPY_HOST_TO_DEVICE, stream_), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(Mentions(TakeErrors(), {"aclrtMemcpyAsync", "overruns", "64 bytes"}));
  EXPECT_EQ(aclrtMemcpyAsync(device, 8, host, 8, static_cast<aclrtMemcpyKind>(9), stream_), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(Mentions(TakeErrors(), {"aclrtMemcpyAsync", "kind (9)"}));
  int not_a_stream = 0;
  EXPECT_EQ(aclrtMemcpyAsync(device, 8, host, 8, ACL_MEMCPY_HOST_TO_DEVICE, &not_a_stream), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(Mentions(TakeErrors(), {"aclrtMemcpyAsync", "not a live stream"}));
  EXPECT_EQ(aclrtMemsetAsync(nullptr, 8, 0, 8, stream_), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(Mentions(TakeErrors(), {"aclrtMemsetAsync", "devPtr", "null"}));
  EXPECT_EQ(aclrtMemsetAsync(device, 8, 0, 9, stream_), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(Mentions(TakeErrors(), {"aclrtMemsetAsync", "count (9)", "maxCount (8)"}));
  EXPECT_EQ(aclrtMemsetAsync(static_cast<char*>(device) + 60, 100, 0, 5, stream_), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(Mentions(TakeErrors(), {"aclrtMemsetAsync", "overruns"}));
  EXPECT_EQ(aclrtMemsetAsync(device, 8, 0, 8, &not_a_stream), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(Mentions(TakeErrors(), {"aclrtMemsetAsync", "not a live stream"}));
  EXPECT_EQ(aclrtFree(device), ACL_SUCCESS);
}

TEST_F(EventTest, GetMemInfoReportsTheMachinesMemory) {
  size_t free = 0, total = 0;
  ASSERT_EQ(aclrtGetMemInfo(ACL_DDR_MEM, &free, &total), ACL_SUCCESS);
  EXPECT_GT(total, size_t{64} << 20);
  EXPECT_GT(free, 0u);
  EXPECT_LE(free, total);
  for (aclrtMemAttr attr : {ACL_HBM_MEM, ACL_DDR_MEM_NORMAL, ACL_HBM_MEM_NORMAL}) {
    size_t attr_free = 0, attr_total = 0;
    ASSERT_EQ(aclrtGetMemInfo(attr, &attr_free, &attr_total), ACL_SUCCESS);
    EXPECT_EQ(attr_total, total) << attr;  // no HBM: the DDR figures, as CANN reports on such hardware
  }
  for (aclrtMemAttr attr : {ACL_DDR_MEM_P2P_HUGE, ACL_DDR_MEM_P2P_NORMAL, ACL_HBM_MEM_P2P_HUGE,
                            ACL_HBM_MEM_P2P_NORMAL}) {
    size_t attr_free = 1, attr_total = 1;
    ASSERT_EQ(aclrtGetMemInfo(attr, &attr_free, &attr_total), ACL_SUCCESS);
    EXPECT_EQ(attr_free, 0u) << attr;  // no peer devices
    EXPECT_EQ(attr_total, 0u) << attr;
  }
  EXPECT_EQ(aclrtGetMemInfo(static_cast<aclrtMemAttr>(10), &free, &total), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(Mentions(TakeErrors(), {"aclrtGetMemInfo", "attr (10)"}));
  EXPECT_EQ(aclrtGetMemInfo(ACL_DDR_MEM, nullptr, &total), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(Mentions(TakeErrors(), {"aclrtGetMemInfo", "free", "null"}));
  EXPECT_EQ(aclrtGetMemInfo(ACL_DDR_MEM, &free, nullptr), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(Mentions(TakeErrors(), {"aclrtGetMemInfo", "total", "null"}));
  std::thread([] {
    size_t f = 0, t = 0;
    EXPECT_EQ(aclrtGetMemInfo(ACL_DDR_MEM, &f, &t), ACL_ERROR_RT_CONTEXT_NULL);
    EXPECT_TRUE(Mentions(TakeErrors(), {"aclrtGetMemInfo", "context"}));
  }).join();
}

}  // namespace
