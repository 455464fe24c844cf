#include "strict_memory.h"

#include <execinfo.h>
#include <signal.h>
#include <strings.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>

#include "pacl/error.h"

namespace pacl::rt::strict {
namespace {

constexpr size_t kAlignment = 64;  // as the block cache's blocks: enough for every SIMD load of the kernels
constexpr unsigned char kPoison = 0xFF;
// Quarantined ranges cost address space only (their pages are given back), so many can be kept.
constexpr size_t kQuarantineBytes = size_t{64} << 30;
constexpr int kStackFrames = 32;

struct Stack {
  void* frames[kStackFrames] = {};
  int count = 0;
};

struct Mapping {
  uintptr_t start = 0;     // the mapping: data pages, then one guard page
  size_t data_bytes = 0;   // whole pages before the guard page
  size_t page_bytes = 0;
  uintptr_t block = 0;     // what aclrtMalloc returned: the last rounded-up bytes before the guard page
  size_t size = 0;         // what was asked for
  bool freed = false;
  int open_count = 0;      // Access scopes using it: readable and writable while > 0
  Stack allocated;
  Stack released;
};

std::mutex g_mutex;
std::map<uintptr_t, Mapping> g_mappings;  // by start
std::deque<uintptr_t> g_quarantine;       // freed mappings, oldest first
size_t g_quarantine_bytes = 0;
std::atomic<bool> g_configured_on{false};
std::atomic<bool> g_fixed{false};  // memory has been allocated: the mode can no longer change
struct sigaction g_previous_segv;
struct sigaction g_previous_bus;

bool EnvironmentSaysStrict() {
  const char* text = std::getenv("ACLNN_STRICT");
  if (text == nullptr) return false;
  for (const char* on : {"1", "true", "yes", "on"}) {
    if (strcasecmp(text, on) == 0) return true;
  }
  return false;
}

void Capture(Stack* stack) { stack->count = ::backtrace(stack->frames, kStackFrames); }

// The mapping holding address a (data or guard page); nullptr if none. Expects g_mutex.
Mapping* FindLocked(uintptr_t a) {
  auto it = g_mappings.upper_bound(a);
  if (it == g_mappings.begin()) return nullptr;
  --it;
  Mapping& m = it->second;
  return a < m.start + m.data_bytes + m.page_bytes ? &m : nullptr;
}

void WriteText(const char* text) {
  size_t left = std::strlen(text);
  while (left > 0) {
    const ssize_t n = ::write(STDERR_FILENO, text, left);
    if (n <= 0) return;
    text += n;
    left -= static_cast<size_t>(n);
  }
}

void WriteStack(const char* title, const Stack& stack) {
  WriteText(title);
  ::backtrace_symbols_fd(stack.frames, stack.count, STDERR_FILENO);
}

// What an access at a means for mapping m (a lies in it), into text (for the fault handler: no allocation).
void DescribeAccess(const Mapping& m, uintptr_t a, char* text, size_t capacity) {
  const void* address = reinterpret_cast<const void*>(a);
  const void* block = reinterpret_cast<const void*>(m.block);
  const long long offset = static_cast<long long>(a) - static_cast<long long>(m.block);
  if (a < m.block + m.size && !m.freed) {
    std::snprintf(text, capacity,
                  "ACLNN_STRICT: the host read or wrote device memory directly: %p lies %lld bytes into a live "
                  "allocation of %zu bytes at %p (an NPU's memory is not addressable from the host: copy it with "
                  "aclrtMemcpy)\n",
                  address, offset, m.size, block);
  } else if (m.freed) {
    std::snprintf(text, capacity,
                  "ACLNN_STRICT: use of device memory after aclrtFree: %p lies %+lld bytes from the start of a freed "
                  "allocation of %zu bytes at %p\n",
                  address, offset, m.size, block);
  } else {
    std::snprintf(text, capacity,
                  "ACLNN_STRICT: access past the end of device memory: %p is %lld bytes past the end of the "
                  "allocation of %zu bytes at %p (its guard page)\n",
                  address, offset - static_cast<long long>(m.size), m.size, block);
  }
}

void WriteStacks(const Mapping& m) {
  WriteStack("  allocated (aclrtMalloc) at:\n", m.allocated);
  if (m.freed) WriteStack("  freed (aclrtFree) at:\n", m.released);
}

// A fault in one of our ranges: the report, then the default action (the process stops, as with a sanitizer).
// Faults elsewhere go to the handler that was installed before ours (AddressSanitizer's, or the default).
void OnFault(int signal_number, siginfo_t* info, void* context) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(info->si_addr);
  const bool locked = g_mutex.try_lock();  // a fault while the mutex is held is reported without the allocation
  const Mapping* m = locked ? FindLocked(a) : nullptr;
  if (m != nullptr) {
    static char text[512];  // static: the handler allocates nothing (the fault may come from inside malloc)
    DescribeAccess(*m, a, text, sizeof text);
    WriteText(text);
    WriteStacks(*m);
    Stack here;
    Capture(&here);
    WriteStack("  the access (this thread's stack) at:\n", here);
  }
  if (locked) g_mutex.unlock();
  const struct sigaction& previous = signal_number == SIGBUS ? g_previous_bus : g_previous_segv;
  if (m == nullptr && (previous.sa_flags & SA_SIGINFO) != 0 && previous.sa_sigaction != nullptr) {
    previous.sa_sigaction(signal_number, info, context);
    return;
  }
  if (m == nullptr && previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN &&
      previous.sa_handler != nullptr) {
    previous.sa_handler(signal_number);
    return;
  }
  // Returning re-runs the faulting access, which now meets the default action.
  ::signal(signal_number, SIG_DFL);
}

void InstallFaultHandler() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction action;
    std::memset(&action, 0, sizeof action);
    action.sa_sigaction = OnFault;
    action.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&action.sa_mask);
    ::sigaction(SIGSEGV, &action, &g_previous_segv);
    ::sigaction(SIGBUS, &action, &g_previous_bus);
  });
}

std::string Symbolized(const Stack& stack) {
  std::string text;
  char** names = ::backtrace_symbols(stack.frames, stack.count);
  for (int i = 0; i < stack.count; ++i) {
    text += "    ";
    text += names != nullptr ? names[i] : StrFormat("%p", stack.frames[i]);
    text += '\n';
  }
  std::free(names);
  return text;
}

}  // namespace

bool Enabled() {
  static const bool from_environment = EnvironmentSaysStrict();
  return from_environment || g_configured_on.load(std::memory_order_relaxed);
}

bool EnabledFromNowOn() {
  g_fixed.store(true);
  return Enabled();
}

bool Configure(bool on, std::string* error) {
  if (on == Enabled()) return true;
  if (!on) return true;  // ACLNN_STRICT=1 in the environment wins over "strict": false
  if (g_fixed.load()) {
    *error = "\"strict\": true comes too late: device memory has been allocated already (call aclInit first)";
    return false;
  }
  g_configured_on.store(true);
  return true;
}

void* Allocate(size_t size, std::string* error) {
  InstallFaultHandler();
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const size_t rounded = (size + kAlignment - 1) / kAlignment * kAlignment;
  const size_t data_bytes = (rounded + page - 1) / page * page;
  void* start = ::mmap(nullptr, data_bytes + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (start == MAP_FAILED) {
    *error = StrFormat("mmap of %zu bytes failed: %s", data_bytes + page, std::strerror(errno));
    return nullptr;
  }
  const uintptr_t base = reinterpret_cast<uintptr_t>(start);
  std::memset(start, kPoison, data_bytes);
  ::mprotect(start, data_bytes + page, PROT_NONE);  // opened by Access while the runtime uses it
  Mapping m;
  m.start = base;
  m.data_bytes = data_bytes;
  m.page_bytes = page;
  m.block = base + data_bytes - rounded;
  m.size = size;
  Capture(&m.allocated);
  std::lock_guard<std::mutex> lock(g_mutex);
  g_mappings[base] = m;
  return reinterpret_cast<void*>(m.block);
}

bool Release(void* p) {
  if (!Enabled()) return false;  // the mode is fixed before the first allocation: no block of ours exists
  std::lock_guard<std::mutex> lock(g_mutex);
  Mapping* m = FindLocked(reinterpret_cast<uintptr_t>(p));
  if (m == nullptr || m->freed || m->block != reinterpret_cast<uintptr_t>(p)) return false;
  void* start = reinterpret_cast<void*>(m->start);
  ::madvise(start, m->data_bytes, MADV_DONTNEED);  // the pages go back to the system; the range stays reserved
  ::mprotect(start, m->data_bytes, PROT_NONE);
  m->freed = true;
  Capture(&m->released);
  g_quarantine.push_back(m->start);
  g_quarantine_bytes += m->data_bytes + m->page_bytes;
  while (g_quarantine_bytes > kQuarantineBytes) {
    auto oldest = g_mappings.find(g_quarantine.front());
    g_quarantine.pop_front();
    g_quarantine_bytes -= oldest->second.data_bytes + oldest->second.page_bytes;
    ::munmap(reinterpret_cast<void*>(oldest->first), oldest->second.data_bytes + oldest->second.page_bytes);
    g_mappings.erase(oldest);
  }
  return true;
}

bool DescribeFreed(const void* p, std::string* what) {
  if (!Enabled()) return false;
  std::lock_guard<std::mutex> lock(g_mutex);
  const Mapping* m = FindLocked(reinterpret_cast<uintptr_t>(p));
  if (m == nullptr || !m->freed) return false;
  *what = StrFormat("memory freed by aclrtFree (an allocation of %zu bytes at %p, kept inaccessible by strict "
                    "mode)",
                    m->size, reinterpret_cast<const void*>(m->block));
  return true;
}

Access::Access(std::initializer_list<Range> ranges) {
  for (const Range& range : ranges) Open(range.data, range.bytes);
}

void Access::Open(const void* data, uint64_t bytes) {
  if (!Enabled() || data == nullptr || bytes == 0) return;
  std::lock_guard<std::mutex> lock(g_mutex);
  Mapping* m = FindLocked(reinterpret_cast<uintptr_t>(data));
  if (m == nullptr || m->freed) return;  // not a strict block, or freed (the access then faults, and is reported)
  if (m->open_count++ == 0) ::mprotect(reinterpret_cast<void*>(m->start), m->data_bytes, PROT_READ | PROT_WRITE);
  opened_.push_back(m->start);
}

Access::~Access() {
  if (opened_.empty()) return;
  std::lock_guard<std::mutex> lock(g_mutex);
  for (uintptr_t start : opened_) {
    auto it = g_mappings.find(start);
    // Release protected it already (and a range evicted from the quarantine and mapped again is another block).
    if (it == g_mappings.end() || it->second.freed || it->second.open_count <= 0) continue;
    if (--it->second.open_count == 0) ::mprotect(reinterpret_cast<void*>(start), it->second.data_bytes, PROT_NONE);
  }
}

namespace {

// The call stack here, one frame a line, less skip_frames callers' frames. Never inlined: it counts itself as one
// frame.
[[gnu::noinline]] std::string CallStack(int skip_frames) {
  Stack stack;
  Capture(&stack);
  const int skip = std::min(skip_frames + 1, stack.count);  // and CallStack itself
  Stack rest;
  rest.count = stack.count - skip;
  std::memcpy(rest.frames, stack.frames + skip, sizeof(void*) * static_cast<size_t>(rest.count));
  return Symbolized(rest);
}

}  // namespace

void Report(const std::string& what, const void* address) {
  std::string text = "ACLNN_STRICT: " + what + "\n";
  if (address != nullptr) {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (const Mapping* m = FindLocked(reinterpret_cast<uintptr_t>(address))) {
      text += "  allocated (aclrtMalloc) at:\n" + Symbolized(m->allocated);
      if (m->freed) text += "  freed (aclrtFree) at:\n" + Symbolized(m->released);
    }
  }
  text += "  at:\n" + CallStack(1);
  WriteText(text.c_str());
}

}  // namespace pacl::rt::strict
