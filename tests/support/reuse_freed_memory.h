// Keeps the memory a program frees for its next allocations (glibc's malloc; elsewhere nothing changes).
//
// The tests and the demo allocate and free buffers of tens to hundreds of MiB over and over: inputs, their float64
// copies, references, outputs read back, workspaces. By default glibc serves every allocation above its mmap
// threshold (at most 32 MiB) with a fresh mmap and unmaps it on free, so each such buffer is page-faulted in and
// zeroed by the kernel again: the op_tests big-tensor suite spent 40% of its time (52 -> 30 s) and aclnn_demo 55%
// (65 -> 30 s) in page faults. With mmap off and a high trim threshold, freed memory stays in the heap and is reused;
// the peak resident size hardly changes (the buffers are freed before the next ones of the same sizes). Not for the
// tensors of over 2^31 elements (tests/large), whose 9-14 GiB should go back to the system between tests. A
// sanitizer's allocator ignores these settings.
#ifndef PACL_TESTS_REUSE_FREED_MEMORY_H_
#define PACL_TESTS_REUSE_FREED_MEMORY_H_

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace pacl_test {

inline void ReuseFreedMemory() {
#if defined(__GLIBC__)
  mallopt(M_MMAP_MAX, 0);                  // large blocks from the heap too, not from mmap
  mallopt(M_TRIM_THRESHOLD, 1 << 30);      // return memory at the heap's top only past 1 GiB free
#endif
}

}  // namespace pacl_test

#endif  // PACL_TESTS_REUSE_FREED_MEMORY_H_
