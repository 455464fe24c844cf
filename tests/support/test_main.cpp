// The main() of the GoogleTest binaries (instead of GoogleTest's gtest_main), for two reasons:
// - freed memory is kept for reuse (reuse_freed_memory.h: the tests allocate big buffers over and over);
// - in a cross build whose tests run under an emulator (qemu-aarch64: CMAKE_CROSSCOMPILING_EMULATOR), GoogleTest's
//   thread-safe death tests run the test binary again with execv of argv[0], which the host kernel cannot execute
//   (no binfmt_misc registration here). So argv becomes the emulator, the binary, then the real arguments: every
//   re-execution starts "qemu-aarch64 <binary> ...", a host program the kernel runs, and the death test's child is
//   the same aarch64 binary under the same emulator (QEMU_CPU is inherited).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "reuse_freed_memory.h"
#include "self_command.h"

int main(int argc, char** argv) {
  pacl_test::ReuseFreedMemory();
  std::vector<char*> arguments;
#ifdef PACL_TEST_EMULATOR
  std::vector<std::string> command = pacl_test::SelfCommand();  // emulator, binary
  if (command.size() == 2) {
    for (std::string& part : command) arguments.push_back(part.data());
  } else {
    arguments.push_back(argv[0]);  // cannot tell the binary's path: death tests will say so when they fail
  }
#else
  arguments.push_back(argv[0]);
#endif
  for (int i = 1; i < argc; ++i) arguments.push_back(argv[i]);
  int count = static_cast<int>(arguments.size());
  arguments.push_back(nullptr);
  testing::InitGoogleTest(&count, arguments.data());
  return RUN_ALL_TESTS();
}
