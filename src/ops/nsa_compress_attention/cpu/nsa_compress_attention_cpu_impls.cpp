// The CPU's entry in the implementation list of NsaCompressAttention (pacl/op_glue.h: phase 1 takes the first entry
// that fits the call).
#include "nsa_compress_attention/nsa_compress_attention_params.h"
#include "pacl/op_glue.h"

namespace pacl::nsa_compress_attention {
namespace {

const Implementation<ForwardParams> kForward[] = {
    {"cpu", /*deterministic=*/true, /*supports=*/nullptr, /*plan=*/nullptr,
     RunWithWorkspace<ForwardParams, RunForwardCpu>},
};

const ImplementationFragment<ForwardParams> kForwardOnCpu("cpu", kForward);

}  // namespace
}  // namespace pacl::nsa_compress_attention
