// Phase-1 workspace planning shared by the operators: byte counts that saturate at UINT64_MAX instead of wrapping
// (such a size then fails to allocate, it never under-allocates) and 64-byte aligned arrays inside one workspace.
#ifndef PACL_WORKSPACE_PLAN_H_
#define PACL_WORKSPACE_PLAN_H_

#include <cstdint>

namespace pacl {

inline uint64_t SaturatingMul(uint64_t a, uint64_t b) {
  uint64_t product = 0;
  return __builtin_mul_overflow(a, b, &product) ? UINT64_MAX : product;
}
inline uint64_t SaturatingAdd(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

// Lays out arrays one after another in a workspace, each starting on a 64-byte boundary.
class WorkspaceLayout {
 public:
  // Byte offset of a new array of `bytes` bytes.
  int64_t Reserve(uint64_t bytes) {
    const uint64_t start = NextOffset();
    used_ = SaturatingAdd(start, bytes);
    return static_cast<int64_t>(start);
  }
  // Byte offset the next Reserve would return.
  uint64_t NextOffset() const { return SaturatingAdd(used_, 63) / 64 * 64; }
  // Bytes the caller must provide: what was reserved plus 64 bytes of slack, so that the kernels can align a
  // caller's pointer that is not 64-byte aligned (0 when nothing was reserved).
  uint64_t TotalBytes() const { return used_ == 0 ? 0 : SaturatingAdd(used_, 64); }

 private:
  uint64_t used_ = 0;
};

// Whether a plan asks the device for the sizes only the device knows (a library's scratch, such as CUB's radix sort's,
// which depends on the GPU's architecture): phase 1 asks, to size the workspace; phase 2, which computes the plan again
// to find its arrays, skips the question. Such scratch is the plan's last array, so its size moves no other array, and
// phase 2 gives it everything up to the end of the workspace phase 1 asked for.
enum class DeviceQuery { kAsk, kSkip };

// The kernels' view of the workspace: the caller's pointer rounded up to 64 bytes, and the arrays in it.
inline char* AlignedWorkspace(void* workspace) {
  const uintptr_t address = reinterpret_cast<uintptr_t>(workspace);
  return reinterpret_cast<char*>((address + 63) / 64 * 64);
}

}  // namespace pacl

#endif  // PACL_WORKSPACE_PLAN_H_
