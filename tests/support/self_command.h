// The command line that runs this test binary again, for the tests that compare child processes (thread counts,
// SIMD targets, environment variables): /proc/self/exe, or, in a cross build whose tests run under an emulator
// (CMAKE_CROSSCOMPILING_EMULATOR, e.g. qemu-aarch64: the host kernel cannot execute the binary itself), the emulator
// followed by the binary's path. The child inherits the environment given to posix_spawn, so an emulator setting
// such as QEMU_CPU applies to it too.
#ifndef PACL_TESTS_SELF_COMMAND_H_
#define PACL_TESTS_SELF_COMMAND_H_

#include <unistd.h>

#include <string>
#include <vector>

namespace pacl_test {

// Empty when the path of the running binary cannot be read.
inline std::vector<std::string> SelfCommand() {
  std::vector<char> path(4096);
  const ssize_t length = readlink("/proc/self/exe", path.data(), path.size() - 1);  // the binary, even under qemu
  if (length <= 0) return {};
  std::vector<std::string> command;
#ifdef PACL_TEST_EMULATOR
  command.push_back(PACL_TEST_EMULATOR);
#endif
  command.emplace_back(path.data(), static_cast<size_t>(length));
  return command;
}

}  // namespace pacl_test

#endif  // PACL_TESTS_SELF_COMMAND_H_
