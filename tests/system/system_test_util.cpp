#include "system/system_test_util.h"

#include <malloc.h>
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <utility>

namespace systest {

bool Barrier::Wait(std::chrono::seconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  const uint64_t generation = generation_;
  if (++waiting_ == count_) {
    waiting_ = 0;
    ++generation_;
    changed_.notify_all();
    return true;
  }
  if (changed_.wait_for(lock, timeout, [&] { return generation_ != generation; })) return true;
  --waiting_;
  return false;
}

Watchdog::Watchdog(std::string what, std::chrono::seconds limit) {
  thread_ = std::thread([this, what = std::move(what), limit] {
    std::unique_lock<std::mutex> lock(mutex_);
    if (done_.wait_for(lock, limit, [this] { return finished_; })) return;
    std::fprintf(stderr, "watchdog: %s did not finish within %lld s: a hang\n", what.c_str(),
                 static_cast<long long>(limit.count()));
    std::fflush(stderr);
    std::_Exit(3);
  });
}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    finished_ = true;
  }
  done_.notify_all();
  thread_.join();
}

size_t LiveHeapBytes() {
  const struct mallinfo2 info = mallinfo2();
  return info.uordblks + info.hblkhd;
}

int ThreadCount() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("Threads:", 0) == 0) return std::atoi(line.c_str() + 8);
  }
  return -1;
}

int WaitForThreadCountAtMost(int limit) {
  int count = ThreadCount();
  for (int attempt = 0; attempt < 300 && count > limit; ++attempt) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    count = ThreadCount();
  }
  return count;
}

int SettledThreadCount() {
  int count = ThreadCount();
  for (int attempt = 0, unchanged = 0; attempt < 300 && unchanged < 10; ++attempt) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    const int now = ThreadCount();
    unchanged = now == count ? unchanged + 1 : 0;
    count = now;
  }
  return count;
}

double ProcessCpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec * 1e-6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

}  // namespace systest
