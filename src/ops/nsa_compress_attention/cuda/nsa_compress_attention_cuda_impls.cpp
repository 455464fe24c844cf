// The CUDA entry in the implementation list of NsaCompressAttention (pacl/op_glue.h: phase 1 takes the first that fits
// the call). Compiled only in a build with the CUDA backend.
#include "nsa_compress_attention/cuda/nsa_compress_attention_cuda.h"
#include "nsa_compress_attention/nsa_compress_attention_params.h"
#include "pacl/op_glue.h"

namespace pacl::nsa_compress_attention {
namespace {

const Implementation<ForwardParams> kForward[] = {
    {"cuda", /*deterministic=*/true, SupportsCuda, PlanForwardCuda, RunForwardCuda},
};

const ImplementationFragment<ForwardParams> kForwardOnCuda("cuda", kForward);

}  // namespace
}  // namespace pacl::nsa_compress_attention
