// The CPU device: host memory from the block cache (aclrtMalloc) or the C library (aclrtMallocHost), copies and
// fills with memmove / memset, the machine's memory as its memory info, no native streams (a task runs on its
// aclrtStream's worker thread).
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <utility>

#include "../backend.h"
#include "../runtime_state.h"
#include "block_cache.h"
#include "strict_memory.h"
#include "pacl/error.h"

namespace pacl::rt {
namespace {

constexpr size_t kHostAlignment = 64;  // a cache line: enough for every SIMD load the kernels use

// MemAvailable from /proc/meminfo (what can be allocated without swapping), or the free pages when it is missing.
size_t AvailableMemoryBytes() {
  if (FILE* file = std::fopen("/proc/meminfo", "r")) {
    char line[256];
    unsigned long long kib = 0;
    bool found = false;
    while (!found && std::fgets(line, sizeof line, file) != nullptr) {
      found = std::sscanf(line, "MemAvailable: %llu kB", &kib) == 1;
    }
    std::fclose(file);
    if (found) return static_cast<size_t>(std::min<unsigned long long>(kib, SIZE_MAX >> 10) << 10);
  }
  const long pages = ::sysconf(_SC_AVPHYS_PAGES);
  const long page_size = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && page_size > 0 ? static_cast<size_t>(pages) * static_cast<size_t>(page_size) : 0;
}

// Whether the kernel may back madvise'd memory with transparent huge pages ("[always]" or "[madvise]").
bool TransparentHugePagesEnabled() {
  FILE* file = std::fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
  if (file == nullptr) return false;
  char text[128] = {};
  const bool read = std::fgets(text, sizeof text, file) != nullptr;
  std::fclose(file);
  return read && std::strstr(text, "[never]") == nullptr;
}

class CpuDevice final : public Backend {
 public:
  bool is_cpu() const override { return true; }

  aclError Malloc(int, size_t size, bool huge_pages, void** ptr, std::string* error) override {
    *ptr = strict::EnabledFromNowOn() ? strict::Allocate(size, error)
                                      : cpu::DeviceBlockCache().Allocate(size, huge_pages, error);
    return *ptr != nullptr ? ACL_SUCCESS : ACL_ERROR_BAD_ALLOC;
  }

  aclError Free(int, void* ptr, StreamFence fence, std::string* error) override {
    // No waiting: the block is not reused before the work queued until now has finished. In strict mode it is
    // quarantined at once, as an NPU frees at once: work still queued that uses it faults, and is reported.
    if (strict::Release(ptr)) return ACL_SUCCESS;
    if (cpu::DeviceBlockCache().Release(ptr, std::move(fence))) return ACL_SUCCESS;
    *error = StrFormat("%p is not a block of the CPU's block cache", ptr);
    return ACL_ERROR_INTERNAL_ERROR;
  }

  aclError MallocHost(size_t size, void** ptr, std::string* error) override {
    const size_t rounded = (size + kHostAlignment - 1) / kHostAlignment * kHostAlignment;  // size <= SIZE_MAX / 2
    *ptr = std::aligned_alloc(kHostAlignment, rounded);
    if (*ptr != nullptr) return ACL_SUCCESS;
    *error = "out of memory";
    return ACL_ERROR_BAD_ALLOC;
  }

  aclError FreeHost(void* ptr, std::string*) override {
    std::free(ptr);
    return ACL_SUCCESS;
  }

  aclError Copy(void* dst, const void* src, size_t count, void*, std::string*) override {
    if (count > 0) std::memmove(dst, src, count);
    return ACL_SUCCESS;
  }

  aclError Fill(void* dst, int value, size_t count, void*, std::string*) override {
    if (count > 0) std::memset(dst, static_cast<unsigned char>(value), count);
    return ACL_SUCCESS;
  }

  // The CPU has no HBM: as CANN does on such hardware, HBM queries read the DDR figures. It has no peer devices
  // (P2P: 0 and 0). Huge pages are transparent huge pages: the same memory, unless the kernel turned them off.
  aclError MemInfo(int, aclrtMemAttr attr, size_t* free, size_t* total, std::string*) override {
    *free = 0;
    *total = 0;
    const bool p2p = static_cast<int>(attr) >= ACL_DDR_MEM_P2P_HUGE;
    const bool huge = attr == ACL_DDR_MEM_HUGE || attr == ACL_HBM_MEM_HUGE;
    if (p2p || (huge && !TransparentHugePagesEnabled())) return ACL_SUCCESS;
    const size_t machine = MachineMemoryBytes();
    const size_t cached = cpu::DeviceBlockCache().Stats().idle_bytes;  // ours to hand out at once
    *total = machine;
    *free = std::min(machine, AvailableMemoryBytes() + cached);
    return ACL_SUCCESS;
  }

  void ReleaseCachedMemory(int) override { cpu::DeviceBlockCache().ReleaseIdle(); }

  aclError CreateNativeStream(int, void** native, std::string*) override {
    *native = nullptr;
    return ACL_SUCCESS;
  }
  void DestroyNativeStream(int, void*) override {}
  aclError AdoptNativeStream(int, void*, void**, std::string* error) override {
    *error = "the CPU device has no native streams: a task runs on its aclrtStream's own thread";
    return ACL_ERROR_FEATURE_UNSUPPORTED;
  }
  aclError SynchronizeNativeStream(int, void*, std::string*) override { return ACL_SUCCESS; }
  bool NativeStreamIdle(int, void*) override { return true; }
  aclError Activate(int, std::string*) override { return ACL_SUCCESS; }
  bool CanAccess(int, const void*, std::string*) override { return true; }  // every pointer is host memory
  bool IsDeviceOnlyMemory(const void*, std::string*) override { return false; }
};

Backend* CpuBackend() {
  static CpuDevice* const device = new CpuDevice;  // never destroyed: used until process exit
  return device;
}

// One CPU device: the whole machine (its threads: ACLNN_NUM_THREADS).
int CpuDeviceCount(std::string*) { return 1; }

std::string CpuDeviceName(int) {
#if defined(__x86_64__)
  const char* architecture = "x86_64";
#elif defined(__aarch64__)
  const char* architecture = "aarch64";
#else
  const char* architecture = "unknown architecture";
#endif
  return StrFormat("CPU (%s, %u hardware threads)", architecture, std::thread::hardware_concurrency());
}

}  // namespace

const BackendKind& CpuBackendKind() {
  static const BackendKind kind{"cpu", "CPU", CpuDeviceCount, CpuDeviceName, CpuBackend};
  return kind;
}

}  // namespace pacl::rt
