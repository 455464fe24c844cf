// The CPU's entry in the implementation list of NsaCompressWithCache (pacl/op_glue.h: phase 1 takes the first that
// fits the call).
#include "nsa_compress_with_cache/nsa_compress_with_cache_params.h"
#include "pacl/op_glue.h"

namespace pacl::nsa_compress_with_cache {
namespace {

const Implementation<Params> kCompressWithCache[] = {
    {"cpu", /*deterministic=*/true, /*supports=*/nullptr, /*plan=*/nullptr, RunWithWorkspace<Params, RunCpu>},
};

const ImplementationFragment<Params> kCompressWithCacheOnCpu("cpu", kCompressWithCache);

}  // namespace
}  // namespace pacl::nsa_compress_with_cache
