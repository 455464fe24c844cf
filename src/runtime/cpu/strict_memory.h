// Strict mode (ACLNN_STRICT=1, or "strict": true in aclInit's configuration): the CPU device made as unforgiving as
// an NPU, so that mistakes which corrupt memory or hang there are caught on a laptop (docs/strict_mode.md).
//
// NOTE: device memory in strict mode is not served by the block cache. Each aclrtMalloc gets a mapping of its own:
// the block, rounded up to 64 bytes, ends where a PROT_NONE guard page begins, and its bytes start as 0xFF (NaN in
// every float dtype, -1 in every integer one), so a program or kernel that relies on zeroed memory fails visibly.
// The whole mapping is PROT_NONE while nothing of the runtime uses it: the host reading or writing device memory
// directly faults, as on an NPU it cannot address it. A task (on its stream's worker, with the memory uses recorded
// for it) and a synchronous copy or fill open the blocks they touch for their duration (Access; counted, so that
// overlapping users keep them open).
// aclrtFree gives the pages back (MADV_DONTNEED) and leaves the range PROT_NONE in a quarantine, oldest released
// first past kQuarantineBytes of address space, so a use after free faults instead of reading a new owner's data.
// The call stacks of each allocation and free are kept. A fault inside one of these ranges is reported
// ("ACLNN_STRICT: ...", the allocation, both stacks) and the process stops, as a sanitizer's would.
#ifndef PACL_RUNTIME_CPU_STRICT_MEMORY_H_
#define PACL_RUNTIME_CPU_STRICT_MEMORY_H_

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

namespace pacl::rt::strict {

// Whether strict mode is on: ACLNN_STRICT set to 1 (or true/yes/on), or turned on by aclInit's configuration before
// the first device allocation. Fixed once the device has allocated memory.
bool Enabled();
// Enabled(), fixing the mode from now on: called by each device allocation.
bool EnabledFromNowOn();
// aclInit's "strict" key. False (with *error) when the mode can no longer change: memory was allocated already.
bool Configure(bool on, std::string* error);

// A new block of size bytes (> 0), poisoned; nullptr with *error set when it cannot be mapped.
void* Allocate(size_t size, std::string* error);
// Quarantines a block from Allocate; false when p is not one.
bool Release(void* p);
// Whether p lies in a quarantined (freed) block; *what then describes it in one line.
bool DescribeFreed(const void* p, std::string* what);

// Opens the strict blocks that hold the given ranges for reading and writing while it lives (no-op outside strict
// mode, and for memory that is not a strict block).
class Access {
 public:
  struct Range {
    const void* data;
    uint64_t bytes;
  };
  explicit Access(std::initializer_list<Range> ranges);
  template <class Uses>  // a container of items with .data and .bytes (pacl::rt::MemoryUse)
  static Access Of(const Uses& uses) {
    Access access({});
    for (const auto& use : uses) access.Open(use.data, use.bytes);
    return access;
  }
  ~Access();
  Access(Access&& other) noexcept : opened_(std::move(other.opened_)) { other.opened_.clear(); }
  Access(const Access&) = delete;
  Access& operator=(const Access&) = delete;
  Access& operator=(Access&&) = delete;

 private:
  void Open(const void* data, uint64_t bytes);
  std::vector<uintptr_t> opened_;  // mapping starts, one per Open that found a block
};

// Writes one report to stderr: "ACLNN_STRICT: ", what, the allocation and free stacks of the block that holds
// address (if any), then the caller's stack.
void Report(const std::string& what, const void* address);

}  // namespace pacl::rt::strict

#endif  // PACL_RUNTIME_CPU_STRICT_MEMORY_H_
