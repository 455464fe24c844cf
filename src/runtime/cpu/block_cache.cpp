#include "block_cache.h"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "../runtime_state.h"
#include "pacl/error.h"

#if defined(__SANITIZE_ADDRESS__)
#define PACL_BLOCK_CACHE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PACL_BLOCK_CACHE_ASAN 1
#endif
#endif
#ifdef PACL_BLOCK_CACHE_ASAN
#include <sanitizer/asan_interface.h>
#endif

namespace pacl::rt::cpu {
namespace {

constexpr size_t kPageBytes = size_t{4} << 10;
constexpr size_t kHugePageBytes = size_t{2} << 20;

void Poison(void* p, size_t bytes) {
#ifdef PACL_BLOCK_CACHE_ASAN
  __asan_poison_memory_region(p, bytes);
#else
  (void)p;
  (void)bytes;
#endif
}

void Unpoison(void* p, size_t bytes) {
#ifdef PACL_BLOCK_CACHE_ASAN
  __asan_unpoison_memory_region(p, bytes);
#else
  (void)p;
  (void)bytes;
#endif
}

size_t RoundUp(size_t value, size_t step) { return (value + step - 1) / step * step; }

}  // namespace

size_t BlockCache::ClassBytes(size_t size) {
  size_t power = 1;
  while (power <= size / 2) power *= 2;  // the largest power of two <= size
  // From 8 MiB on the step is a multiple of 2 MiB, so large blocks are whole huge pages.
  return RoundUp(size, std::max(kPageBytes, power / 4));
}

bool BlockCache::MapBlock(size_t bytes, bool huge_pages, Block* block, std::string* error) {
  const bool aligned_huge = huge_pages && bytes >= kHugePageBytes;
  const size_t map_bytes = aligned_huge ? bytes + kHugePageBytes : bytes;
  void* mapping = ::mmap(nullptr, map_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapping == MAP_FAILED) {
    *error = StrFormat("cannot map %zu bytes: %s", map_bytes, std::strerror(errno));
    return false;
  }
  char* address = static_cast<char*>(mapping);
  if (aligned_huge) {
    // Keep the 2 MiB-aligned part: huge pages back only aligned 2 MiB ranges.
    char* aligned = reinterpret_cast<char*>(RoundUp(reinterpret_cast<uintptr_t>(address), kHugePageBytes));
    const size_t head = static_cast<size_t>(aligned - address);
    if (head > 0) ::munmap(address, head);
    const size_t tail = kHugePageBytes - head;
    if (tail > 0) ::munmap(aligned + bytes, tail);
    address = aligned;
  }
#ifdef MADV_HUGEPAGE
  // Advice only: a kernel without transparent huge pages refuses it, and the block is still good memory.
  ::madvise(address, bytes, huge_pages ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
#endif
  block->address = address;
  block->bytes = bytes;
  block->huge_pages = huge_pages;
  return true;
}

void BlockCache::UnmapBlock(Block& block) {
  Unpoison(block.address, block.bytes);
  ::munmap(block.address, block.bytes);
  block.address = nullptr;
}

void* BlockCache::Allocate(size_t size, bool huge_pages, std::string* error) {
  const size_t bytes = ClassBytes(size);
  const ClassKey key(bytes, huge_pages);
  Block block;
  bool found = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    found = TakeIdleLocked(key, &block);
    if (found) ++reused_;
  }
  if (!found && !MapBlock(bytes, huge_pages, &block, error)) {
    // Out of address space or memory: give the idle blocks back and try once more.
    ReleaseIdle();
    if (!MapBlock(bytes, huge_pages, &block, error)) return nullptr;
  }
  Unpoison(block.address, size);
  Poison(static_cast<char*>(block.address) + size, bytes - size);
  block.fence.clear();
  block.poisoned = false;
  void* address = block.address;
  std::lock_guard<std::mutex> lock(mutex_);
  if (!found) ++mapped_;
  live_bytes_ += bytes;
  live_.emplace(reinterpret_cast<uintptr_t>(address), std::move(block));
  return address;
}

bool BlockCache::Release(void* p, StreamFence fence) {
  std::vector<Block> evicted;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = live_.find(reinterpret_cast<uintptr_t>(p));
    if (it == live_.end()) return false;
    Block block = std::move(it->second);
    live_.erase(it);
    live_bytes_ -= block.bytes;
    block.release_order = ++release_counter_;
    block.fence = std::move(fence);
    if (FencePassed(block.fence)) {
      block.fence.clear();
      Poison(block.address, block.bytes);
      block.poisoned = true;
    }
    AddIdleLocked(std::move(block));
    if (idle_bytes_ > idle_limit_) evicted = EvictLocked(idle_limit_);
  }
  for (Block& block : evicted) UnmapBlock(block);
  return true;
}

void BlockCache::ReleaseIdle() {
  std::vector<Block> blocks;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    blocks = TakeAllIdleLocked();
  }
  std::vector<Block> still_in_use;
  for (Block& block : blocks) {
    if (WaitForFence(block.fence)) {
      UnmapBlock(block);
    } else {
      still_in_use.push_back(std::move(block));
    }
  }
  if (still_in_use.empty()) return;
  std::lock_guard<std::mutex> lock(mutex_);
  for (Block& block : still_in_use) AddIdleLocked(std::move(block));
}

void BlockCache::AddIdleLocked(Block block) {
  idle_bytes_ += block.bytes;
  ++idle_blocks_;
  idle_ranges_[reinterpret_cast<uintptr_t>(block.address)] = block.bytes;
  idle_[ClassKey(block.bytes, block.huge_pages)].push_back(std::move(block));
}

bool BlockCache::FindIdle(const void* p, uintptr_t* block, size_t* bytes) {
  const uintptr_t address = reinterpret_cast<uintptr_t>(p);
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = idle_ranges_.upper_bound(address);
  if (it == idle_ranges_.begin()) return false;
  --it;
  if (address - it->first >= it->second) return false;
  *block = it->first;
  *bytes = it->second;
  return true;
}

MemoryCacheStats BlockCache::Stats() {
  std::lock_guard<std::mutex> lock(mutex_);
  MemoryCacheStats stats;
  stats.live_blocks = live_.size();
  stats.live_bytes = live_bytes_;
  stats.idle_blocks = idle_blocks_;
  stats.idle_bytes = idle_bytes_;
  stats.reused = reused_;
  stats.mapped = mapped_;
  return stats;
}

bool BlockCache::TakeIdleLocked(const ClassKey& key, Block* block) {
  auto it = idle_.find(key);
  if (it == idle_.end()) return false;
  std::vector<Block>& blocks = it->second;
  for (size_t i = blocks.size(); i-- > 0;) {  // newest first: the likeliest to be still in the caches
    if (!FencePassed(blocks[i].fence)) continue;
    *block = std::move(blocks[i]);
    blocks.erase(blocks.begin() + static_cast<std::ptrdiff_t>(i));
    if (blocks.empty()) idle_.erase(it);
    idle_ranges_.erase(reinterpret_cast<uintptr_t>(block->address));
    idle_bytes_ -= block->bytes;
    --idle_blocks_;
    return true;
  }
  return false;
}

std::vector<BlockCache::Block> BlockCache::EvictLocked(size_t limit) {
  std::vector<Block> evicted;
  while (idle_bytes_ > limit) {
    // The oldest idle block whose fence has passed.
    std::map<ClassKey, std::vector<Block>>::iterator oldest_list = idle_.end();
    size_t oldest_index = 0;
    for (auto it = idle_.begin(); it != idle_.end(); ++it) {
      for (size_t i = 0; i < it->second.size(); ++i) {
        const Block& candidate = it->second[i];
        if (oldest_list != idle_.end() && candidate.release_order >= oldest_list->second[oldest_index].release_order) {
          continue;
        }
        if (!FencePassed(candidate.fence)) continue;
        oldest_list = it;
        oldest_index = i;
      }
    }
    if (oldest_list == idle_.end()) break;  // every idle block is still in use by queued work
    std::vector<Block>& blocks = oldest_list->second;
    evicted.push_back(std::move(blocks[oldest_index]));
    blocks.erase(blocks.begin() + static_cast<std::ptrdiff_t>(oldest_index));
    if (blocks.empty()) idle_.erase(oldest_list);
    idle_ranges_.erase(reinterpret_cast<uintptr_t>(evicted.back().address));
    idle_bytes_ -= evicted.back().bytes;
    --idle_blocks_;
  }
  return evicted;
}

std::vector<BlockCache::Block> BlockCache::TakeAllIdleLocked() {
  std::vector<Block> blocks;
  for (auto& entry : idle_) {
    for (Block& block : entry.second) blocks.push_back(std::move(block));
  }
  idle_.clear();
  idle_ranges_.clear();
  idle_bytes_ = 0;
  idle_blocks_ = 0;
  return blocks;
}

size_t IdleLimitFromEnvironment(size_t machine_bytes) {
  const size_t fallback = machine_bytes / 4;
  const char* text = std::getenv("ACLNN_MEMORY_CACHE_LIMIT");
  if (text == nullptr || text[0] == '\0') return fallback;
  char* end = nullptr;
  errno = 0;
  const unsigned long long value = std::strtoull(text, &end, 10);
  unsigned shift = 0;
  if (end != text && *end != '\0' && end[1] == '\0') {
    switch (*end) {
      case 'K': shift = 10; ++end; break;
      case 'M': shift = 20; ++end; break;
      case 'G': shift = 30; ++end; break;
      default: break;
    }
  }
  const bool well_formed = end != text && *end == '\0' && errno == 0 && text[0] != '-' &&
                           value <= (static_cast<unsigned long long>(SIZE_MAX) >> shift);
  if (!well_formed) {
    std::fprintf(stderr,
                 "portable-aclnn: ignoring ACLNN_MEMORY_CACHE_LIMIT=\"%s\": expected a number of bytes, optionally "
                 "followed by K, M or G; using %zu bytes\n",
                 text, fallback);
    return fallback;
  }
  return static_cast<size_t>(value << shift);
}

BlockCache& DeviceBlockCache() {
  static BlockCache* cache = new BlockCache(IdleLimitFromEnvironment(MachineMemoryBytes()));
  return *cache;
}

}  // namespace pacl::rt::cpu
