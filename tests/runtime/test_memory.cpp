// aclrtMalloc / aclrtFree / aclrtMallocHost / aclrtFreeHost / aclrtMemcpy / aclrtMemset: the checks, the
// alignment, the contents, and the ordering after work queued on streams.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "acl/acl.h"
#include "pacl/runtime.h"
#include "runtime_test_util.h"

namespace {

using pacl::rt::EnqueueTask;
using pacl_test::Mentions;
using pacl_test::TakeErrors;

class MemoryTest : public pacl_test::DeviceTest {};

std::vector<unsigned char> RandomBytes(size_t count, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<unsigned char> bytes(count);
  for (auto& byte : bytes) byte = static_cast<unsigned char>(rng());
  return bytes;
}

bool IsAligned(const void* p) { return reinterpret_cast<uintptr_t>(p) % 64 == 0; }

// Device memory is written and read through the runtime, never directly: strict mode (ACLNN_STRICT=1, under which
// this suite runs too) makes it inaccessible to the host, as on an NPU. The runtime's memset and memcpy touch every
// byte, so AddressSanitizer still checks that the whole range is usable.
void FillDevice(void* device, int byte, size_t count) {
  ASSERT_EQ(aclrtMemset(device, count, byte, count), ACL_SUCCESS);
}

std::vector<unsigned char> ReadDevice(const void* device, size_t count) {
  std::vector<unsigned char> bytes(count);
  EXPECT_EQ(aclrtMemcpy(bytes.data(), count, device, count, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  return bytes;
}

// The tests of what strict mode changes by design (its allocator maps each allocation on its own and quarantines
// freed ones; it refuses memory that queued work still uses) skip there, saying why.
std::string StrictModeReason(const char* why) { return std::string("not in strict mode (ACLNN_STRICT=1): ") + why; }

TEST_F(MemoryTest, MallocAcceptsEveryPolicyAndAligns) {
  const int bases[] = {ACL_MEM_MALLOC_HUGE_FIRST,     ACL_MEM_MALLOC_HUGE_ONLY,     ACL_MEM_MALLOC_NORMAL_ONLY,
                       ACL_MEM_MALLOC_HUGE_FIRST_P2P, ACL_MEM_MALLOC_HUGE_ONLY_P2P, ACL_MEM_MALLOC_NORMAL_ONLY_P2P};
  const int type_bits[] = {0, ACL_MEM_TYPE_LOW_BAND_WIDTH, ACL_MEM_TYPE_HIGH_BAND_WIDTH};
  for (int base : bases) {
    for (int type : type_bits) {
      void* p = nullptr;
      ASSERT_EQ(aclrtMalloc(&p, 100, static_cast<aclrtMemMallocPolicy>(base | type)), ACL_SUCCESS) << (base | type);
      ASSERT_NE(p, nullptr);
      EXPECT_TRUE(IsAligned(p));
      FillDevice(p, 0x5A, 100);  // the whole requested size is usable (ASan checks)
      EXPECT_EQ(aclrtFree(p), ACL_SUCCESS);
    }
  }
  // Odd sizes, many live at once: all aligned, all distinct.
  std::mt19937 rng(7);
  std::vector<void*> blocks;
  for (int i = 0; i < 200; ++i) {
    const size_t size = 1 + rng() % 1000;
    void* p = nullptr;
    ASSERT_EQ(aclrtMalloc(&p, size, ACL_MEM_MALLOC_NORMAL_ONLY), ACL_SUCCESS);
    EXPECT_TRUE(IsAligned(p)) << p;
    FillDevice(p, i, size);
    blocks.push_back(p);
  }
  for (void* p : blocks) EXPECT_EQ(aclrtFree(p), ACL_SUCCESS);
}

TEST_F(MemoryTest, MallocRejectsBadArguments) {
  void* p = nullptr;
  EXPECT_EQ(aclrtMalloc(nullptr, 16, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(Mentions(TakeErrors(), {"aclrtMalloc", "devPtr", "null"}));
  EXPECT_EQ(aclrtMalloc(&p, 0, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(Mentions(TakeErrors(), {"aclrtMalloc", "size", "0"}));
  for (int policy : {6, -1, 0x200, 0x10000, 0x7FFFFFFF}) {
    EXPECT_EQ(aclrtMalloc(&p, 16, static_cast<aclrtMemMallocPolicy>(policy)), ACL_ERROR_INVALID_PARAM) << policy;
    EXPECT_TRUE(Mentions(TakeErrors(), {"aclrtMalloc", "policy", std::to_string(policy).c_str()}));
  }
  for (size_t size : {SIZE_MAX, SIZE_MAX / 2, SIZE_MAX - 63}) {
    EXPECT_EQ(aclrtMalloc(&p, size, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_BAD_ALLOC) << size;
    EXPECT_TRUE(Mentions(TakeErrors(), {"aclrtMalloc", "size", std::to_string(size).c_str()}));
  }
  EXPECT_EQ(p, nullptr);  // untouched by every failure
}

TEST_F(MemoryTest, FreeRejectsUnknownPointers) {
  EXPECT_EQ(aclrtFree(nullptr), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(Mentions(TakeErrors(), {"aclrtFree", "devPtr", "null"}));
  int on_stack = 0;
  EXPECT_EQ(aclrtFree(&on_stack), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(Mentions(TakeErrors(), {"aclrtFree", "not a live allocation"}));

  void* device = nullptr;
  ASSERT_EQ(aclrtMalloc(&device, 256, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  EXPECT_EQ(aclrtFree(static_cast<char*>(device) + 8), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(Mentions(TakeErrors(), {"aclrtFree", "inside the allocation"}));
  EXPECT_EQ(aclrtFreeHost(device), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(Mentions(TakeErrors(), {"aclrtFreeHost", "aclrtMalloc"}));
  EXPECT_EQ(aclrtFree(device), ACL_SUCCESS);
  EXPECT_EQ(aclrtFree(device), ACL_ERROR_INVALID_PARAM);  // double free
  EXPECT_TRUE(Mentions(TakeErrors(), {"aclrtFree", "already freed"}));

  void* host = nullptr;
  ASSERT_EQ(aclrtMallocHost(&host, 100), ACL_SUCCESS);
  EXPECT_TRUE(IsAligned(host));
  std::memset(host, 1, 100);
  EXPECT_EQ(aclrtFree(host), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(Mentions(TakeErrors(), {"aclrtFree", "aclrtMallocHost"}));
  EXPECT_EQ(aclrtFreeHost(host), ACL_SUCCESS);
  EXPECT_EQ(aclrtFreeHost(host), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtFreeHost(nullptr), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(Mentions(TakeErrors(), {"aclrtFreeHost", "hostPtr"}));

  EXPECT_EQ(aclrtMallocHost(nullptr, 10), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtMallocHost(&host, 0), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(Mentions(TakeErrors(), {"aclrtMallocHost", "size"}));
}

TEST_F(MemoryTest, MemcpyCopiesEveryKind) {
  constexpr size_t kSize = 1000;
  const std::vector<unsigned char> source = RandomBytes(kSize, 1);
  void* device = nullptr;
  void* device2 = nullptr;
  void* pinned = nullptr;
  ASSERT_EQ(aclrtMalloc(&device, kSize, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  ASSERT_EQ(aclrtMalloc(&device2, kSize, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  ASSERT_EQ(aclrtMallocHost(&pinned, kSize), ACL_SUCCESS);
  std::vector<unsigned char> back(kSize, 0);

  EXPECT_EQ(aclrtMemcpy(device, kSize, source.data(), kSize, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
  EXPECT_EQ(aclrtMemcpy(device2, kSize, device, kSize, ACL_MEMCPY_DEVICE_TO_DEVICE), ACL_SUCCESS);
  EXPECT_EQ(aclrtMemcpy(pinned, kSize, device2, kSize, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  EXPECT_EQ(aclrtMemcpy(back.data(), kSize, pinned, kSize, ACL_MEMCPY_HOST_TO_HOST), ACL_SUCCESS);
  EXPECT_EQ(back, source);
  std::fill(back.begin(), back.end(), 0);
  EXPECT_EQ(aclrtMemcpy(back.data(), kSize, device, kSize, ACL_MEMCPY_DEFAULT), ACL_SUCCESS);
  EXPECT_EQ(back, source);

  // Part of a buffer, exactly up to its end; the bytes around it are untouched. destMax may exceed count.
  std::vector<unsigned char> target(kSize + 64, 0xEE);
  EXPECT_EQ(aclrtMemcpy(target.data() + 32, kSize, static_cast<char*>(device) + 900, 100,
                        ACL_MEMCPY_DEVICE_TO_HOST),
            ACL_SUCCESS);
  for (size_t i = 0; i < target.size(); ++i) {
    const unsigned char expected = (i >= 32 && i < 132) ? source[900 + i - 32] : 0xEE;
    ASSERT_EQ(target[i], expected) << i;
  }
  // Overlapping ranges in one allocation: memmove semantics.
  EXPECT_EQ(aclrtMemcpy(static_cast<char*>(device) + 10, kSize - 10, device, 500, ACL_MEMCPY_DEVICE_TO_DEVICE),
            ACL_SUCCESS);
  EXPECT_EQ(aclrtMemcpy(back.data(), kSize, device, kSize, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  for (size_t i = 0; i < kSize; ++i) {
    const unsigned char expected = (i >= 10 && i < 510) ? source[i - 10] : source[i];
    ASSERT_EQ(back[i], expected) << i;
  }
  // Zero bytes is a no-op.
  EXPECT_EQ(aclrtMemcpy(device, 0, back.data(), 0, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
  EXPECT_EQ(aclGetRecentErrMsg(), nullptr);

  EXPECT_EQ(aclrtFree(device), ACL_SUCCESS);
  EXPECT_EQ(aclrtFree(device2), ACL_SUCCESS);
  EXPECT_EQ(aclrtFreeHost(pinned), ACL_SUCCESS);
}

TEST_F(MemoryTest, MemcpyRejectsBadArguments) {
  void* device = nullptr;
  ASSERT_EQ(aclrtMalloc(&device, 1024, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  std::vector<unsigned char> host(8192, 0x11);
  FillDevice(device, 0x22, 1024);

  EXPECT_EQ(aclrtMemcpy(nullptr, 10, host.data(), 10, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(Mentions(TakeErrors(), {"aclrtMemcpy", "dst", "null"}));
  EXPECT_EQ(aclrtMemcpy(device, 10, nullptr, 10, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(Mentions(TakeErrors(), {"aclrtMemcpy", "src", "null"}));
  EXPECT_EQ(aclrtMemcpy(nullptr, 0, nullptr, 0, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM);
  TakeErrors();

  EXPECT_EQ(aclrtMemcpy(device, 1024, host.data(), 4096, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(TakeErrors(), "aclrtMemcpy: count (4096) must not exceed destMax (1024)");

  for (int kind : {5, -1, 100}) {
    EXPECT_EQ(aclrtMemcpy(device, 16, host.data(), 16, static_cast<aclrtMemcpyKind>(kind)), ACL_ERROR_INVALID_PARAM);
    EXPECT_TRUE(Mentions(TakeErrors(), {"aclrtMemcpy", "kind", std::to_string(kind).c_str()}));
  }

  // destMax is the caller's claim; the registered allocation is the truth.
  char* inside = static_cast<char*>(device) + 1000;
  EXPECT_EQ(aclrtMemcpy(inside, 4096, host.data(), 100, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(Mentions(TakeErrors(), {"aclrtMemcpy", "dst", "count (100)", "1024 bytes", "only 24 bytes"}));
  EXPECT_EQ(aclrtMemcpy(host.data(), 4096, inside, 25, ACL_MEMCPY_DEVICE_TO_HOST), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(Mentions(TakeErrors(), {"aclrtMemcpy", "src", "count (25)"}));
  EXPECT_EQ(aclrtMemcpy(device, 8192, host.data(), 1025, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM);
  TakeErrors();
  // Nothing was written by the refused copies.
  const std::vector<unsigned char> device_bytes = ReadDevice(device, 1024);
  for (int i = 0; i < 1024; ++i) ASSERT_EQ(device_bytes[i], 0x22) << i;
  for (unsigned char byte : host) ASSERT_EQ(byte, 0x11);
  // Exactly up to the end is fine.
  EXPECT_EQ(aclrtMemcpy(inside, 24, host.data(), 24, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);

  // Host allocations are range-checked as well.
  void* pinned = nullptr;
  ASSERT_EQ(aclrtMallocHost(&pinned, 64), ACL_SUCCESS);
  EXPECT_EQ(aclrtMemcpy(pinned, 128, device, 65, ACL_MEMCPY_DEVICE_TO_HOST), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(Mentions(TakeErrors(), {"aclrtMemcpy", "dst", "host allocation"}));
  EXPECT_EQ(aclrtFreeHost(pinned), ACL_SUCCESS);
  EXPECT_EQ(aclrtFree(device), ACL_SUCCESS);
}

TEST_F(MemoryTest, MemsetChecksAndSetsOnlyTheRange) {
  void* device = nullptr;
  ASSERT_EQ(aclrtMalloc(&device, 256, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  auto* bytes = static_cast<unsigned char*>(device);
  FillDevice(device, 0x33, 256);

  EXPECT_EQ(aclrtMemset(bytes + 16, 200, 0x1AB, 100), ACL_SUCCESS);  // value is taken as unsigned char
  std::vector<unsigned char> contents = ReadDevice(device, 256);
  for (int i = 0; i < 256; ++i) ASSERT_EQ(contents[i], (i >= 16 && i < 116) ? 0xAB : 0x33) << i;

  EXPECT_EQ(aclrtMemset(nullptr, 10, 0, 10), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(Mentions(TakeErrors(), {"aclrtMemset", "devPtr", "null"}));
  EXPECT_EQ(aclrtMemset(device, 10, 0, 11), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(TakeErrors(), "aclrtMemset: count (11) must not exceed maxCount (10)");
  EXPECT_EQ(aclrtMemset(bytes + 200, 1000, 0, 57), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(Mentions(TakeErrors(), {"aclrtMemset", "devPtr", "count (57)", "only 56 bytes"}));
  EXPECT_EQ(aclrtMemset(bytes + 200, 1000, 0x7F, 56), ACL_SUCCESS);
  contents = ReadDevice(device, 256);
  EXPECT_EQ(contents[255], 0x7F);
  EXPECT_EQ(contents[199], 0x33);
  // Memory we did not allocate is the caller's responsibility, and is written.
  unsigned char local[8] = {};
  EXPECT_EQ(aclrtMemset(local, sizeof local, -1, sizeof local), ACL_SUCCESS);
  for (unsigned char byte : local) EXPECT_EQ(byte, 0xFF);
  EXPECT_EQ(aclrtFree(device), ACL_SUCCESS);
}

// A task writes a buffer; a memcpy issued right after enqueueing it must see what the task wrote.
TEST_F(MemoryTest, MemcpyAndMemsetAreOrderedAfterQueuedTasks) {
  if (pacl::rt::StrictMode()) {
    GTEST_SKIP() << StrictModeReason("a copy of memory that queued work has not finished writing is refused there");
  }
  aclrtStream stream = nullptr;
  ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
  int32_t* device = nullptr;
  ASSERT_EQ(aclrtMalloc(reinterpret_cast<void**>(&device), 64 * sizeof(int32_t), ACL_MEM_MALLOC_HUGE_FIRST),
            ACL_SUCCESS);
  for (int round = 0; round < 5; ++round) {
    ASSERT_EQ(EnqueueTask(stream, [device, round] {
                std::this_thread::sleep_for(std::chrono::milliseconds(5));
                for (int i = 0; i < 64; ++i) device[i] = round * 1000 + i;
                return ACL_SUCCESS;
              }),
              ACL_SUCCESS);
    std::vector<int32_t> host(64, -1);
    ASSERT_EQ(aclrtMemcpy(host.data(), 64 * sizeof(int32_t), device, 64 * sizeof(int32_t), ACL_MEMCPY_DEVICE_TO_HOST),
              ACL_SUCCESS);
    for (int i = 0; i < 64; ++i) ASSERT_EQ(host[i], round * 1000 + i);
  }
  // The default stream too, and memset: the task's write comes first, then the memset.
  ASSERT_EQ(EnqueueTask(nullptr, [device] {
              std::this_thread::sleep_for(std::chrono::milliseconds(5));
              device[0] = 12345;
              return ACL_SUCCESS;
            }),
            ACL_SUCCESS);
  ASSERT_EQ(aclrtMemset(device, sizeof(int32_t), 0, sizeof(int32_t)), ACL_SUCCESS);
  EXPECT_EQ(device[0], 0);
  EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
  EXPECT_EQ(aclrtFree(device), ACL_SUCCESS);
}

// A memcpy waits for the streams but leaves their failures for the next synchronisation.
TEST_F(MemoryTest, MemcpyDoesNotConsumeStreamFailures) {
  aclrtStream stream = nullptr;
  ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
  ASSERT_EQ(EnqueueTask(stream, [] { return 424242; }), ACL_SUCCESS);
  int a = 1, b = 2;
  EXPECT_EQ(aclrtMemcpy(&a, sizeof a, &b, sizeof b, ACL_MEMCPY_HOST_TO_HOST), ACL_SUCCESS);
  EXPECT_EQ(a, 2);
  EXPECT_EQ(aclGetRecentErrMsg(), nullptr);
  EXPECT_EQ(aclrtSynchronizeStream(stream), 424242);
  TakeErrors();
  EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
}

// aclrtFreeHost waits for queued work that still uses the memory (ASan would flag a use after free otherwise).
TEST_F(MemoryTest, FreeHostWaitsForQueuedTasks) {
  aclrtStream stream = nullptr;
  ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
  auto finished = std::make_shared<std::atomic<bool>>(false);
  void* memory = nullptr;
  ASSERT_EQ(aclrtMallocHost(&memory, 4096), ACL_SUCCESS);
  ASSERT_EQ(EnqueueTask(stream, [memory, finished] {
              std::this_thread::sleep_for(std::chrono::milliseconds(10));
              std::memset(memory, 0x42, 4096);
              *finished = true;
              return ACL_SUCCESS;
            }),
            ACL_SUCCESS);
  EXPECT_EQ(aclrtFreeHost(memory), ACL_SUCCESS);
  EXPECT_TRUE(finished->load());
  EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
}

// aclrtFree returns at once (CANN does not synchronise there), but a block that queued work may still use is not
// handed out again, nor unmapped, until that work has finished: the task below writes into it after the free.
TEST_F(MemoryTest, FreeReturnsAtOnceAndTheBlockWaitsForQueuedTasks) {
  if (pacl::rt::StrictMode()) {
    GTEST_SKIP() << StrictModeReason("freeing memory that queued work still uses is refused there");
  }
  aclrtStream stream = nullptr;
  ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
  constexpr size_t kBytes = size_t{3} << 20;
  void* memory = nullptr;
  ASSERT_EQ(aclrtMalloc(&memory, kBytes, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  auto gate = std::make_shared<pacl_test::Gate>();
  auto finished = std::make_shared<std::atomic<bool>>(false);
  ASSERT_EQ(EnqueueTask(stream, [memory, gate, finished] {
              if (!gate->Wait()) return ACL_ERROR_INTERNAL_ERROR;
              std::memset(memory, 0x42, kBytes);
              *finished = true;
              return ACL_SUCCESS;
            }),
            ACL_SUCCESS);
  EXPECT_EQ(aclrtFree(memory), ACL_SUCCESS);  // the task is still blocked on the gate
  EXPECT_FALSE(finished->load());
  void* other = nullptr;
  ASSERT_EQ(aclrtMalloc(&other, kBytes, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  EXPECT_NE(other, memory);  // the freed block is still in use by the queued task
  std::memset(other, 0x17, kBytes);
  gate->Open();
  ASSERT_EQ(aclrtSynchronizeStream(stream), ACL_SUCCESS);
  EXPECT_TRUE(finished->load());
  EXPECT_EQ(static_cast<unsigned char*>(other)[kBytes - 1], 0x17);  // the task wrote only its own block
  void* again = nullptr;
  ASSERT_EQ(aclrtMalloc(&again, kBytes, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  EXPECT_EQ(again, memory);  // its work done, the block is reused
  EXPECT_EQ(aclrtFree(again), ACL_SUCCESS);
  EXPECT_EQ(aclrtFree(other), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
}

// A freed block stays mapped and serves the next request of its size class: no new mapping, the same address.
TEST_F(MemoryTest, FreedBlocksAreReused) {
  if (pacl::rt::StrictMode()) GTEST_SKIP() << StrictModeReason("freed allocations are quarantined, not reused");
  for (aclrtMemMallocPolicy policy : {ACL_MEM_MALLOC_HUGE_FIRST, ACL_MEM_MALLOC_NORMAL_ONLY}) {
    for (size_t bytes : {size_t{100}, size_t{5000}, size_t{1} << 20, (size_t{64} << 20) + 12345}) {
      void* first = nullptr;
      ASSERT_EQ(aclrtMalloc(&first, bytes, policy), ACL_SUCCESS);
      std::memset(first, 0x33, bytes);
      ASSERT_EQ(aclrtFree(first), ACL_SUCCESS);
      const pacl::rt::MemoryCacheStats before = pacl::rt::DeviceMemoryCacheStats();
      EXPECT_GE(before.idle_bytes, bytes);
      void* second = nullptr;
      ASSERT_EQ(aclrtMalloc(&second, bytes - 1, policy), ACL_SUCCESS);  // the same class
      const pacl::rt::MemoryCacheStats after = pacl::rt::DeviceMemoryCacheStats();
      EXPECT_EQ(second, first) << bytes;
      EXPECT_EQ(after.mapped, before.mapped) << bytes;
      EXPECT_EQ(after.reused, before.reused + 1) << bytes;
      std::memset(second, 0x44, bytes - 1);  // the whole request is usable (ASan unpoisons exactly that)
      ASSERT_EQ(aclrtFree(second), ACL_SUCCESS);
    }
  }
}

// Size classes: never below the request, whole pages, at most 25% above the request beyond 16 KiB, and whole 2 MiB
// pages from 8 MiB on.
TEST_F(MemoryTest, SizeClassesBoundTheWaste) {
  EXPECT_EQ(pacl::rt::DeviceMemoryClassBytes(1), 4096u);
  EXPECT_EQ(pacl::rt::DeviceMemoryClassBytes(4097), 8192u);
  EXPECT_EQ(pacl::rt::DeviceMemoryClassBytes(size_t{64} << 20), size_t{64} << 20);
  EXPECT_EQ(pacl::rt::DeviceMemoryClassBytes((size_t{64} << 20) + 1), size_t{80} << 20);
  std::mt19937_64 rng(11);
  for (int i = 0; i < 20000; ++i) {
    const size_t size = 1 + rng() % (size_t{1} << (1 + i % 36));
    const size_t bytes = pacl::rt::DeviceMemoryClassBytes(size);
    ASSERT_GE(bytes, size);
    ASSERT_EQ(bytes % 4096, 0u) << size;
    if (size > 16384) {
      ASSERT_LE(bytes, size + size / 4) << size;
    }
    if (size >= (size_t{8} << 20)) {
      ASSERT_EQ(bytes % (size_t{2} << 20), 0u) << size;
    }
  }
}

// Huge-page blocks are 2 MiB-aligned (transparent huge pages back only aligned 2 MiB ranges).
TEST_F(MemoryTest, HugePageBlocksAreAligned) {
  if (pacl::rt::StrictMode()) {
    GTEST_SKIP() << StrictModeReason("each allocation is mapped on its own, ending at a guard page");
  }
  std::vector<void*> blocks;
  for (size_t megabytes : {2, 3, 8, 33}) {
    void* p = nullptr;
    ASSERT_EQ(aclrtMalloc(&p, megabytes << 20, ACL_MEM_MALLOC_HUGE_ONLY), ACL_SUCCESS);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % (size_t{2} << 20), 0u) << megabytes;
    blocks.push_back(p);
  }
  for (void* p : blocks) EXPECT_EQ(aclrtFree(p), ACL_SUCCESS);
}

// aclrtResetDevice gives the cached blocks back to the system; live allocations stay usable.
TEST_F(MemoryTest, ResetDeviceReleasesCachedBlocks) {
  if (pacl::rt::StrictMode()) GTEST_SKIP() << StrictModeReason("freed allocations are quarantined, not cached");
  void* kept = nullptr;
  ASSERT_EQ(aclrtMalloc(&kept, 1000, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  void* freed = nullptr;
  ASSERT_EQ(aclrtMalloc(&freed, size_t{4} << 20, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  ASSERT_EQ(aclrtFree(freed), ACL_SUCCESS);
  EXPECT_GE(pacl::rt::DeviceMemoryCacheStats().idle_bytes, size_t{4} << 20);
  ASSERT_EQ(aclrtResetDevice(0), ACL_SUCCESS);
  const pacl::rt::MemoryCacheStats stats = pacl::rt::DeviceMemoryCacheStats();
  EXPECT_EQ(stats.idle_bytes, 0u);
  EXPECT_EQ(stats.idle_blocks, 0u);
  ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
  FillDevice(kept, 0x11, 1000);
  EXPECT_EQ(aclrtFree(kept), ACL_SUCCESS);
}

#if defined(__SANITIZE_ADDRESS__)
// Under AddressSanitizer a cached block is poisoned while idle, and so is the tail of a live block past the request:
// a use after aclrtFree, or an overrun inside the size class, is reported as for malloc'd memory.
TEST(MemoryDeathTest, CachedBlocksArePoisonedUnderAddressSanitizer) {
  if (pacl::rt::StrictMode()) {
    GTEST_SKIP() << StrictModeReason("it has no block cache; its own reports catch these accesses (strict_tests)");
  }
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  auto use_after_free = [] {
    aclrtSetDevice(0);
    void* p = nullptr;
    aclrtMalloc(&p, 100, ACL_MEM_MALLOC_HUGE_FIRST);
    aclrtFree(p);
    static_cast<volatile char*>(p)[0] = 1;
  };
  EXPECT_DEATH(use_after_free(), "use-after-poison");
  auto overrun = [] {
    aclrtSetDevice(0);
    void* p = nullptr;
    aclrtMalloc(&p, 100, ACL_MEM_MALLOC_HUGE_FIRST);
    static_cast<volatile char*>(p)[100] = 1;  // inside the 4 KiB class, past the 100 bytes asked for
  };
  EXPECT_DEATH(overrun(), "use-after-poison");
}
#endif

// Allocation, copies and frees from several threads at once keep the registries consistent.
TEST_F(MemoryTest, ConcurrentAllocationAndCopies) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t] {
      std::mt19937 rng(static_cast<unsigned>(t));
      for (int i = 0; i < 200; ++i) {
        const size_t size = 1 + rng() % 512;
        void* p = nullptr;
        ASSERT_EQ(aclrtMalloc(&p, size, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
        const std::vector<unsigned char> data = RandomBytes(size, static_cast<unsigned>(i));
        ASSERT_EQ(aclrtMemcpy(p, size, data.data(), size, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
        std::vector<unsigned char> back(size);
        ASSERT_EQ(aclrtMemcpy(back.data(), size, p, size, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
        ASSERT_EQ(back, data);
        // Overruns the allocation (refused before src is read).
        ASSERT_EQ(aclrtMemcpy(p, size + 1, data.data(), size + 1, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM);
        ASSERT_EQ(aclrtFree(p), ACL_SUCCESS);
      }
      TakeErrors();
    });
  }
  for (auto& thread : threads) thread.join();
}

}  // namespace

namespace {

// ACLNN_MEMORY_CACHE_LIMIT bounds the idle bytes (read once per process: each setting runs in a child). Returns 0
// when the cache keeps exactly the blocks that fit.
int CacheKeepsWhatFits(size_t limit) {
  if (aclrtSetDevice(0) != ACL_SUCCESS) return 1;
  void* large = nullptr;
  void* small = nullptr;
  if (aclrtMalloc(&large, size_t{4} << 20, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) return 2;
  if (aclrtMalloc(&small, size_t{256} << 10, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) return 3;
  if (aclrtFree(large) != ACL_SUCCESS || aclrtFree(small) != ACL_SUCCESS) return 4;
  const pacl::rt::MemoryCacheStats stats = pacl::rt::DeviceMemoryCacheStats();
  if (stats.idle_bytes > limit) return 5;
  const size_t expected = limit >= (size_t{4} << 20) + (size_t{256} << 10) ? 2 : limit >= (size_t{256} << 10) ? 1 : 0;
  return stats.idle_blocks == expected ? 0 : 6;
}

TEST(MemoryCacheLimit, IdleBytesStayUnderTheLimit) {
  if (pacl::rt::StrictMode()) GTEST_SKIP() << StrictModeReason("freed allocations are quarantined, not cached");
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT((setenv("ACLNN_MEMORY_CACHE_LIMIT", "0", 1), std::exit(CacheKeepsWhatFits(0))),
              ::testing::ExitedWithCode(0), "");
  EXPECT_EXIT((setenv("ACLNN_MEMORY_CACHE_LIMIT", "1M", 1), std::exit(CacheKeepsWhatFits(size_t{1} << 20))),
              ::testing::ExitedWithCode(0), "");
  EXPECT_EXIT((setenv("ACLNN_MEMORY_CACHE_LIMIT", "64M", 1), std::exit(CacheKeepsWhatFits(size_t{64} << 20))),
              ::testing::ExitedWithCode(0), "");
  // A malformed value is ignored with a warning (the default, a quarter of the memory, keeps both blocks).
  EXPECT_EXIT((setenv("ACLNN_MEMORY_CACHE_LIMIT", "lots", 1), std::exit(CacheKeepsWhatFits(size_t{64} << 20))),
              ::testing::ExitedWithCode(0), "ignoring ACLNN_MEMORY_CACHE_LIMIT=\"lots\"");
}

}  // namespace
