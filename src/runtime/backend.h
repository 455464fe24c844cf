// The device seam of the runtime: what each kind of device (cpu/, cuda/) provides, the registry of those kinds
// (backend_registry.cpp), and the table that numbers the devices an application sees (devices.cpp).
//
// NOTE: the runtime's own machinery - contexts, aclrtStreams (a FIFO with a worker thread each), events, the
// registries that make bad pointers and handles clear errors - is shared by every device. A backend adds memory,
// copies, memory info and, where the device has one, a native stream per aclrtStream: its worker enqueues the
// device work of a task on that native stream and waits for it before the task counts as complete, so events,
// synchronisation and the freeing of memory behave on a GPU as they do on the CPU (a first version: one host
// round trip per task; issue 14's kernels can keep the worker ahead with native events).
//
// Devices (aclrtGetDeviceCount, aclrtSetDevice), numbered once per process: ACLNN_DEVICE, else the
// "portable_aclnn"."device" key of aclInit's configuration file, chooses, by the registry's keys. Unset or "auto":
// the devices of the first accelerator kind in the registry that has any (CUDA GPUs when this build has the CUDA
// backend and the driver reports one), otherwise the CPU alone; "cpu" forces the CPU, "<key>" (e.g. "cuda") that
// kind's devices only (none visible: no device, every aclrtSetDevice fails with the reason), "<key>,cpu" that kind's
// devices as 0..n-1 and the CPU as device n.
#ifndef PACL_RUNTIME_BACKEND_H_
#define PACL_RUNTIME_BACKEND_H_

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "acl/acl_base.h"
#include "acl/acl_rt.h"
#include "pacl/runtime.h"
#include "stream.h"

namespace pacl::rt {

class Backend {
 public:
  virtual ~Backend() = default;
  // Whether this is the CPU's backend: host memory, kernels run on the stream's worker thread.
  virtual bool is_cpu() const { return false; }

  // Memory of device `ordinal` (the backend's own numbering). Failures return an aclError and say why in *error
  // (a CUDA failure carries CUDA's error name and text). fence: the work queued when the application freed the
  // memory; the backend does not reuse or release it before that work has finished.
  virtual aclError Malloc(int ordinal, size_t size, bool huge_pages, void** ptr, std::string* error) = 0;
  virtual aclError Free(int ordinal, void* ptr, StreamFence fence, std::string* error) = 0;
  // Page-locked host memory where the device has it (the CPU: ordinary memory).
  virtual aclError MallocHost(size_t size, void** ptr, std::string* error) = 0;
  virtual aclError FreeHost(void* ptr, std::string* error) = 0;
  // count bytes; native_stream nullptr: now (synchronously), else enqueued on it.
  virtual aclError Copy(void* dst, const void* src, size_t count, void* native_stream, std::string* error) = 0;
  virtual aclError Fill(void* dst, int value, size_t count, void* native_stream, std::string* error) = 0;
  virtual aclError MemInfo(int ordinal, aclrtMemAttr attr, size_t* free, size_t* total, std::string* error) = 0;
  // Gives cached memory back to the system (aclrtResetDevice, aclFinalize).
  virtual void ReleaseCachedMemory(int ordinal) = 0;

  // Native streams (nullptr where the device has none: the CPU runs a task on the worker thread itself).
  virtual aclError CreateNativeStream(int ordinal, void** native, std::string* error) = 0;
  virtual void DestroyNativeStream(int ordinal, void* native) = 0;
  // A native stream the application made (paclrtCreateStreamFromNative): *native is the handle tasks use (CUDA:
  // cudaStreamLegacy for the null stream); an error where the device has no native streams.
  virtual aclError AdoptNativeStream(int ordinal, void* external, void** native, std::string* error) = 0;
  // Waits until the device work enqueued on native has finished.
  virtual aclError SynchronizeNativeStream(int ordinal, void* native, std::string* error) = 0;
  // Whether the device work enqueued on native has finished (or failed: SynchronizeNativeStream then says how),
  // without waiting.
  virtual bool NativeStreamIdle(int ordinal, void* native) = 0;
  // Makes device `ordinal` current on the calling thread (CUDA: cudaSetDevice) before device work is issued.
  virtual aclError Activate(int ordinal, std::string* error) = 0;
  // Whether a kernel of device `ordinal` can read and write memory at p; false with *why saying what p is (host
  // memory, another GPU's memory).
  virtual bool CanAccess(int ordinal, const void* p, std::string* why) = 0;
  // Whether p is memory of one of this backend's devices that the host cannot use (CUDA device memory), with *what
  // saying whose; a CPU device beside GPUs refuses it.
  virtual bool IsDeviceOnlyMemory(const void* p, std::string* what) = 0;
};

// One device as applications number it.
struct DeviceEntry {
  DeviceKind kind = DeviceKind::kCpu;
  int ordinal = 0;   // the backend's own number (CUDA's device ordinal)
  std::string name;  // "CPU (x86_64, 2 threads)", "CUDA device 0: NVIDIA H100 80GB HBM3 (sm_90)"
  Backend* backend = nullptr;
};

// The devices, built on first use from ACLNN_DEVICE and what the backends find (see the NOTE). When the table is
// empty, *why says why (e.g. ACLNN_DEVICE=cuda but no GPU or driver).
const std::vector<DeviceEntry>& Devices(std::string* why = nullptr);
// The "portable_aclnn"."device" choice of aclInit's configuration file ("cpu", "cuda", "cuda,cpu", "auto"), which
// ACLNN_DEVICE overrides. False (with *error) when the devices were already numbered for another choice.
bool ConfigureDeviceChoice(const std::string& choice, std::string* error);

// One kind of device, as the registry lists it. Each backend folder defines one (cpu/cpu_backend.cpp,
// cuda/cuda_backend.cu; cuda/cuda_absent.cpp in a build without the CUDA backend, so that a choice of "cuda" says why
// there is no such device instead of being unknown).
struct BackendKind {
  const char* key;   // "cpu", "cuda": the word in ACLNN_DEVICE and in the operators' implementation lists
  const char* name;  // "CPU", "CUDA": in messages
  // The devices of this kind this process can use; 0 when none, and then *why says why (a build without the backend,
  // no driver, no device).
  int (*device_count)(std::string* why);
  std::string (*device_name)(int ordinal);  // "CUDA device 0: NVIDIA H100 80GB HBM3 (sm_90, 79.1 GiB)"
  Backend* (*backend)();                    // the backend of its devices (device_count > 0 only)
};

// The registry: every kind of device, the CPU first (DeviceKind::kCpu is index 0, the others follow in order).
const std::vector<const BackendKind*>& BackendKinds();
const BackendKind& KindOf(DeviceKind kind);

// The device choices the registry allows ("cpu", "cuda", "cuda,cpu", "auto" with the CPU and CUDA kinds), and
// whether `choice` is one of them.
std::vector<std::string> DeviceChoices();
bool IsDeviceChoice(const std::string& choice);
// The choices for a message: `cpu, cuda, cuda,cpu or auto`, each between `quote`s.
std::string DeviceChoicesText(const char* quote);

}  // namespace pacl::rt

#endif  // PACL_RUNTIME_BACKEND_H_
