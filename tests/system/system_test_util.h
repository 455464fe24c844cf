// Small tools of the whole-library tests: a barrier and a watchdog for test threads, and process statistics
// (live heap bytes, thread count) to show that loops do not grow the process.
#ifndef PACL_TESTS_SYSTEM_SYSTEM_TEST_UTIL_H_
#define PACL_TESTS_SYSTEM_SYSTEM_TEST_UTIL_H_

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

namespace systest {

// Whether this build runs under a sanitizer: the tests then do fewer iterations (each is several times slower), and
// the heap statistics are not the sanitizer allocator's, so heap-growth checks are left to LeakSanitizer.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif
#else
inline constexpr bool kSanitized = false;
#endif

// A reusable barrier for a fixed number of threads (std::barrier is C++20). Wait gives up after timeout, so a
// thread that died or hung makes the others fail instead of hanging the test.
class Barrier {
 public:
  explicit Barrier(int count) : count_(count) {}
  // False on timeout.
  bool Wait(std::chrono::seconds timeout = std::chrono::seconds(300));

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  const int count_;
  int waiting_ = 0;
  uint64_t generation_ = 0;
};

// Ends the process with a message if it is not destroyed within the time limit: a test of "never hangs" then fails
// with a clear reason instead of running into ctest's timeout.
class Watchdog {
 public:
  Watchdog(std::string what, std::chrono::seconds limit);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

 private:
  std::mutex mutex_;
  std::condition_variable done_;
  bool finished_ = false;
  std::thread thread_;
};

// Bytes the C allocator has handed out and not taken back (glibc mallinfo2: arena chunks in use plus mmapped
// blocks). 0 when unavailable.
size_t LiveHeapBytes();
// The number of threads of this process (/proc/self/status), -1 if unreadable.
int ThreadCount();
// Waits up to a few seconds until ThreadCount() <= limit (threads that were joined or told to exit may take a moment
// to leave /proc); returns the last count seen.
int WaitForThreadCountAtMost(int limit);
// ThreadCount() once it has stopped falling (the same for 100 ms, at most a few seconds): threads that were joined,
// or helper threads told to exit by a thread that ended (an OpenMP team's), may take a moment to disappear.
int SettledThreadCount();
// CPU time (user + system) used by all threads of this process so far, in seconds.
double ProcessCpuSeconds();

}  // namespace systest

#endif  // PACL_TESTS_SYSTEM_SYSTEM_TEST_UTIL_H_
