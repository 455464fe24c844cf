// The CPU's entry in the implementation list of NsaCompressAttentionInfer (pacl/op_glue.h: phase 1 takes the first
// that fits the call).
#include "nsa_compress_attention_infer/nsa_compress_attention_infer_params.h"
#include "pacl/op_glue.h"

namespace pacl::nsa_compress_attention_infer {
namespace {

const Implementation<Params> kInfer[] = {
    {"cpu", /*deterministic=*/true, /*supports=*/nullptr, /*plan=*/nullptr, RunWithWorkspace<Params, RunCpu>},
};

const ImplementationFragment<Params> kInferOnCpu("cpu", kInfer);

}  // namespace
}  // namespace pacl::nsa_compress_attention_infer
