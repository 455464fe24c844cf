#include "nsa_compress_with_cache/test/nsa_compress_with_cache_calls.h"

#include "aclnnop/aclnn_nsa_compress_with_cache.h"

namespace opcall {

const OpInfo& NsaCompressWithCache::Info() {
  static const OpInfo info{"NsaCompressWithCache", aclnnNsaCompressWithCache};
  return info;
}

aclnnStatus NsaCompressWithCache::Phase1(uint64_t* workspace_size, aclOpExecutor** executor) const {
  return aclnnNsaCompressWithCacheGetWorkspaceSize(
      input, weight, slot_mapping, act_seq_len, block_table, layout != nullptr ? MutableString(layout) : nullptr,
      compress_block_size, compress_stride, act_seq_len_type, page_block_size, const_cast<aclTensor*>(output_cache),
      workspace_size, executor);
}

namespace {

const Registration kRegistration({&NsaCompressWithCache::Info()});

}  // namespace
}  // namespace opcall
