#include "nsa_compress/test/nsa_compress_calls.h"

#include "aclnnop/aclnn_nsa_compress.h"
#include "aclnnop/aclnn_nsa_compress_grad.h"

namespace opcall {

const OpInfo& NsaCompress::Info() {
  static const OpInfo info{"NsaCompress", aclnnNsaCompress};
  return info;
}

aclnnStatus NsaCompress::Phase1(uint64_t* workspace_size, aclOpExecutor** executor) const {
  return aclnnNsaCompressGetWorkspaceSize(input, weight, act_seq_len, MutableString(layout), compress_block_size,
                                          compress_stride, act_seq_len_type, output, workspace_size, executor);
}

const OpInfo& NsaCompressGrad::Info() {
  static const OpInfo info{"NsaCompressGrad", aclnnNsaCompressGrad};
  return info;
}

aclnnStatus NsaCompressGrad::Phase1(uint64_t* workspace_size, aclOpExecutor** executor) const {
  return aclnnNsaCompressGradGetWorkspaceSize(output_grad, input, weight, act_seq_len, compress_block_size,
                                              compress_stride, act_seq_len_type, MutableString(layout), input_grad,
                                              weight_grad, workspace_size, executor);
}

namespace {

const Registration kRegistration({&NsaCompress::Info(), &NsaCompressGrad::Info()});

}  // namespace
}  // namespace opcall
