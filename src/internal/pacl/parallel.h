// The parallel-for of the operators (libnnopbase).
#ifndef PACL_PARALLEL_H_
#define PACL_PARALLEL_H_

#include <cstdint>
#include <functional>

#include "pacl/export.h"

namespace pacl {

// Worker threads used by ParallelFor: the count paclSetNumThreads set (include/portable_aclnn/threads.h), else
// ACLNN_NUM_THREADS when it is set to an integer in [1, 1024], else the number of CPUs this process may run on (its
// affinity mask); the last two read once per process.
PACL_INTERNAL_API int NumThreads();

// Calls body(begin, end) for every chunk [k*chunk_size, min((k+1)*chunk_size, total)) of [0, total).
// The chunks depend only on total and chunk_size, never on the thread count; they run concurrently, in any order,
// each exactly once. So a kernel whose chunks write disjoint outputs, and reduce inside a chunk in a fixed order,
// gives bit-identical results for any number of threads. Returns when every chunk is done. total <= 0 does
// nothing; chunk_size < 1 counts as 1. A call from inside a chunk body runs serially on the calling thread.
PACL_INTERNAL_API void ParallelFor(int64_t total, int64_t chunk_size,
                                   const std::function<void(int64_t begin, int64_t end)>& body);

}  // namespace pacl

#endif  // PACL_PARALLEL_H_
