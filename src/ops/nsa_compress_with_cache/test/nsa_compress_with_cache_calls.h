// nsa_compress_with_cache's entry in the operator-call table (tests/support/op_calls.h): its phase-1 arguments in the
// API's order under the API's names (snake case).
#ifndef PACL_OPS_NSA_COMPRESS_WITH_CACHE_TEST_NSA_COMPRESS_WITH_CACHE_CALLS_H_
#define PACL_OPS_NSA_COMPRESS_WITH_CACHE_TEST_NSA_COMPRESS_WITH_CACHE_CALLS_H_

#include <cstdint>

#include "op_calls.h"

namespace opcall {

struct NsaCompressWithCache {
  const aclTensor* input = nullptr;
  const aclTensor* weight = nullptr;
  const aclTensor* slot_mapping = nullptr;
  const aclIntArray* act_seq_len = nullptr;  // required (each entry's length)
  const aclTensor* block_table = nullptr;    // optional: paged input
  const char* layout = "TND";                // read only without block_table
  int64_t compress_block_size = 0;
  int64_t compress_stride = 0;
  int64_t act_seq_len_type = 1;
  int64_t page_block_size = 128;
  const aclTensor* output_cache = nullptr;  // updated in place

  static const OpInfo& Info();
  aclnnStatus Phase1(uint64_t* workspace_size, aclOpExecutor** executor) const;
};

}  // namespace opcall

#endif  // PACL_OPS_NSA_COMPRESS_WITH_CACHE_TEST_NSA_COMPRESS_WITH_CACHE_CALLS_H_
