// Host side of the fused cascade kernel (kernels/cuda/cascade_fused.h): tensor maps, the device
// check, the (dtype, head_dim) dispatch to the instantiations in inst/.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>

#include "kernels/cuda/cascade_fused.h"
#include "kernels/cuda/sm90a/cascade_fused_sm90a.cuh"
#include "kernels/cuda/sm90a/prefix_attention_sm90a.h"
#include "prefixd/common/cuda_check.h"
#include "prefixd/common/error.h"

namespace prefixd::kernels::cuda {
namespace sm90a {
extern template void RunFusedCascade<__half, 64>(const FusedLaunch&, cudaStream_t);
extern template void RunFusedCascade<__half, 128>(const FusedLaunch&, cudaStream_t);
extern template void RunFusedCascade<__nv_bfloat16, 64>(const FusedLaunch&, cudaStream_t);
extern template void RunFusedCascade<__nv_bfloat16, 128>(const FusedLaunch&, cudaStream_t);
extern template bool FusedCascadeLoads<__half, 64>();
extern template bool FusedCascadeLoads<__half, 128>();
extern template bool FusedCascadeLoads<__nv_bfloat16, 64>();
extern template bool FusedCascadeLoads<__nv_bfloat16, 128>();
}  // namespace sm90a

bool FusedCascadeSupportsShape(int head_dim, DType dtype, int page_size, int gqa_group_size) {
  // A suffix subtile is 16 tokens in boxes of min(page_size, 16) rows, each starting a 1024-byte
  // swizzle period of its panel (8 rows of 128 bytes); the g heads are the N = 8 of an mma.
  const bool page_ok = page_size == 8 || page_size == 16 || page_size == 32 || page_size == 64 || page_size == 128;
  // The prefix half counts arrivals per request of a warpgroup's rows (CountArrivals): g must
  // divide its 64 rows, or a request straddling two warpgroups is counted before both wrote it (or
  // the item's last request never), so g ∈ {1, 2, 4, 8}.
  return (head_dim == 64 || head_dim == 128) && (dtype == DType::kFloat16 || dtype == DType::kBFloat16) && page_ok &&
         gqa_group_size >= 1 && gqa_group_size <= 8 && sm90a::kWarpgroupRows % gqa_group_size == 0;
}

bool FusedCascadeReady() {
  if (!sm90a::DeviceReady()) return false;
  static const bool loads = sm90a::FusedCascadeLoads<__half, 64>() && sm90a::FusedCascadeLoads<__half, 128>() &&
                            sm90a::FusedCascadeLoads<__nv_bfloat16, 64>() &&
                            sm90a::FusedCascadeLoads<__nv_bfloat16, 128>();
  return loads;
}

void FusedCascade(const FusedCascadeParams& params, cudaStream_t stream) {
  const PrefixAttentionParams& a = params.attn;
  PREFIXD_CHECK_ARG(FusedCascadeSupportsShape(a.head_dim, a.dtype, a.page_size, a.num_qo_heads / a.num_kv_heads) &&
                        !a.causal && sm90a::Supports(a),
                    "fused cascade: unsupported shape (head_dim " << a.head_dim << ", page_size " << a.page_size << ")");
  if (params.num_ctas == 0) return;
  sm90a::FusedLaunch l;
  l.params = params;
  const int64_t row_elems = int64_t(a.num_kv_heads) * a.head_dim;
  constexpr int kTileRows = sm90a::FusedConfig<__half, 128>::BLOCK_N;
  static_assert(sm90a::FusedConfig<__half, 64>::BLOCK_N == kTileRows, "one K/V box for every head_dim (FusedConfig)");
  l.tmap_k = sm90a::CachedKvMap(a.k, row_elems, a.token_stride, a.dtype, kTileRows);
  l.tmap_v = sm90a::CachedKvMap(a.v, row_elems, a.token_stride, a.dtype, kTileRows);
  const int box_rows = std::min(a.page_size, 16);
  l.page_k = sm90a::CachedKvMap(a.k, row_elems, a.token_stride, a.dtype, box_rows);
  l.page_v = sm90a::CachedKvMap(a.v, row_elems, a.token_stride, a.dtype, box_rows);
  const bool fp16 = a.dtype == DType::kFloat16;
  if (a.head_dim == 64)
    return fp16 ? sm90a::RunFusedCascade<__half, 64>(l, stream) : sm90a::RunFusedCascade<__nv_bfloat16, 64>(l, stream);
  fp16 ? sm90a::RunFusedCascade<__half, 128>(l, stream) : sm90a::RunFusedCascade<__nv_bfloat16, 128>(l, stream);
}

}  // namespace prefixd::kernels::cuda
