// The CPU device's caching allocator behind aclrtMalloc / aclrtFree.
//
// NOTE: programs written CANN's way allocate the workspace with aclrtMalloc before each operator call and free it
// after. Mapping fresh memory costs a page fault per 4 KiB page (on a VM, about a hundred times the cost of filling
// the page; bench/allocator measures it), so freed blocks are kept mapped and handed out again:
// - Size classes: a request is rounded up to a class of at most 25% more (four classes per power of two, whole
//   pages; from 8 MiB on, whole 2 MiB pages). A block is reused only for its own class.
// - Huge pages: ACL_MEM_MALLOC_HUGE_FIRST / HUGE_ONLY (and their P2P forms) map blocks of 2 MiB or more 2 MiB-aligned
//   with madvise(MADV_HUGEPAGE), so transparent huge pages back them where the kernel allows (one fault per 2 MiB);
//   NORMAL_ONLY asks for MADV_NOHUGEPAGE. The two kinds are cached apart.
// - Stream order: aclrtFree returns at once, as on an NPU, but work already queued on a stream may still use the
//   block; it carries a fence (each busy stream's enqueued count at the free) and is reused or unmapped only once
//   the fence has passed. So a queued kernel never writes into memory handed to a new owner or unmapped.
// - Bounds: idle (cached) bytes stay under a limit (ACLNN_MEMORY_CACHE_LIMIT, bytes; default a quarter of the
//   machine's memory; 0 turns caching off); beyond it the oldest idle blocks are unmapped. A failed mapping unmaps
//   the idle blocks and retries. ReleaseIdle (aclrtResetDevice, aclFinalize) unmaps every idle block.
// - AddressSanitizer: idle blocks are poisoned, and so is the tail of a live block past the requested size, so a
//   use after aclrtFree or an overrun inside the class rounding is reported as it would be for malloc'd memory.
#ifndef PACL_RUNTIME_CPU_BLOCK_CACHE_H_
#define PACL_RUNTIME_CPU_BLOCK_CACHE_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "../stream.h"

namespace pacl::rt::cpu {

class BlockCache {
 public:
  explicit BlockCache(size_t idle_limit_bytes) : idle_limit_(idle_limit_bytes) {}
  ~BlockCache() { ReleaseIdle(); }  // live blocks belong to their callers and stay mapped
  BlockCache(const BlockCache&) = delete;
  BlockCache& operator=(const BlockCache&) = delete;

  // A block of at least size bytes (> 0), 64-byte aligned (2 MiB for huge-page blocks); nullptr with *error set
  // when the memory cannot be mapped.
  void* Allocate(size_t size, bool huge_pages, std::string* error);
  // Takes back a block from Allocate; it is reused once fence has passed. False when p is not a live block.
  bool Release(void* p, StreamFence fence);
  // Unmaps every idle block, waiting for the fences of those still in use by queued work (except work queued on
  // the calling thread's own stream: those blocks stay cached).
  void ReleaseIdle();
  MemoryCacheStats Stats();
  // Whether p lies in an idle block (freed, not handed out again); its start and size then.
  bool FindIdle(const void* p, uintptr_t* block, size_t* bytes);

  // The class a request of size bytes is served from (exposed for the tests).
  static size_t ClassBytes(size_t size);

 private:
  struct Block {
    void* address = nullptr;  // mapped with mmap, exactly [address, address + bytes)
    size_t bytes = 0;         // the class size
    bool huge_pages = false;
    uint64_t release_order = 0;  // when it became idle: the oldest idle blocks are unmapped first
    StreamFence fence;           // work that may still use the idle block
    bool poisoned = false;
  };
  using ClassKey = std::pair<size_t, bool>;  // (bytes, huge_pages)

  static bool MapBlock(size_t bytes, bool huge_pages, Block* block, std::string* error);
  static void UnmapBlock(Block& block);
  // The newest idle block of key whose fence has passed, removed from the idle lists; false when there is none.
  bool TakeIdleLocked(const ClassKey& key, Block* block);
  // Removes (and returns) the idle blocks to unmap so that idle bytes fit under the limit: oldest first, fences
  // passed only.
  std::vector<Block> EvictLocked(size_t limit);
  std::vector<Block> TakeAllIdleLocked();
  void AddIdleLocked(Block block);

  std::mutex mutex_;
  const size_t idle_limit_;
  std::unordered_map<uintptr_t, Block> live_;
  std::map<ClassKey, std::vector<Block>> idle_;
  std::map<uintptr_t, size_t> idle_ranges_;  // the idle blocks by address: start -> bytes
  size_t live_bytes_ = 0;
  size_t idle_bytes_ = 0;
  size_t idle_blocks_ = 0;
  uint64_t release_counter_ = 0;
  uint64_t reused_ = 0;
  uint64_t mapped_ = 0;
};

// The cache behind aclrtMalloc, created on first use with the limit from ACLNN_MEMORY_CACHE_LIMIT and never
// destroyed (frees may come during static destruction).
BlockCache& DeviceBlockCache();
// The idle limit: ACLNN_MEMORY_CACHE_LIMIT (bytes, or with a K, M or G suffix: KiB, MiB, GiB) when set and well
// formed (otherwise a warning on stderr), else a quarter of machine_bytes.
size_t IdleLimitFromEnvironment(size_t machine_bytes);

}  // namespace pacl::rt::cpu

#endif  // PACL_RUNTIME_CPU_BLOCK_CACHE_H_
