# Cross-building for 64-bit Arm Linux on a Debian x86-64 host (docs/arm.md):
#   apt-get install g++-aarch64-linux-gnu qemu-user
#   dpkg --add-architecture arm64 && apt-get update
#   apt-get install libc6:arm64 libstdc++6:arm64 libgomp1:arm64 libhwy-dev:arm64 libgtest-dev:arm64 libgmock-dev:arm64
#   cmake -S . -B build-arm64 -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake
# The arm64 libraries come from Debian's multiarch packages (/usr/lib/aarch64-linux-gnu, headers shared in
# /usr/include). ctest runs the test programs through qemu-aarch64 (CMAKE_CROSSCOMPILING_EMULATOR); they find the
# arm64 C library through the multiarch loader path (/lib/ld-linux-aarch64.so.1), so no -L prefix is given.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
find_program(PACL_QEMU_AARCH64 qemu-aarch64 REQUIRED)
set(CMAKE_CROSSCOMPILING_EMULATOR ${PACL_QEMU_AARCH64})
