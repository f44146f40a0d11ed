// Host side of the TMA streaming decode kernel (kernels/cuda/decode_stream_tma.h): the shape and
// device check, the K/V tensor maps (boxes of one 16-token tile), the (dtype, head_dim, GQA)
// dispatch to the instantiations in inst/.
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernels/cuda/decode_stream_tma.h"
#include "kernels/cuda/sm90a/prefix_attention_sm90a.h"
#include "prefixd/common/error.h"
#include "prefixd/kernels/decode_kernel_choice.h"

namespace prefixd::kernels::cuda {
namespace sm90a {
template <typename T, int HEAD_DIM, int GQA>
void LaunchDecodeStreamTma(const DecodeAttentionParams&, const CUtensorMap&, const CUtensorMap&, cudaStream_t);
}  // namespace sm90a

namespace {
constexpr int kBoxRows = 16;  // tma_decode::kTileRows

template <typename T, int HEAD_DIM>
void DispatchGroup(const DecodeAttentionParams& p, const CUtensorMap& k, const CUtensorMap& v, cudaStream_t stream) {
  switch (p.num_qo_heads / p.num_kv_heads) {
    case 1: return sm90a::LaunchDecodeStreamTma<T, HEAD_DIM, 1>(p, k, v, stream);
    case 2: return sm90a::LaunchDecodeStreamTma<T, HEAD_DIM, 2>(p, k, v, stream);
    case 4: return sm90a::LaunchDecodeStreamTma<T, HEAD_DIM, 4>(p, k, v, stream);
    default: return sm90a::LaunchDecodeStreamTma<T, HEAD_DIM, 8>(p, k, v, stream);
  }
}
}  // namespace

bool DecodeStreamTmaApplies(const DecodeAttentionParams& p) {
  if (p.num_kv_heads <= 0 || p.num_qo_heads % p.num_kv_heads != 0) return false;
  // The compiled shapes, unless the CUDA-core kernel is forced (the TMA decode's tiles are
  // tensor-core tiles at every group size).
  return TmaDecodeBuilt(p.num_qo_heads / p.num_kv_heads, p.head_dim) && p.kernel != DecodeKernel::kCudaCores &&
         (p.dtype == DType::kFloat16 || p.dtype == DType::kBFloat16) && p.token_stride % 8 == 0 &&
         int64_t(p.num_kv_heads) * p.head_dim <= p.token_stride &&
         reinterpret_cast<uintptr_t>(p.k) % 16 == 0 && reinterpret_cast<uintptr_t>(p.v) % 16 == 0 &&
         sm90a::DeviceReady();
}

void DecodeStreamTma(const DecodeAttentionParams& p, cudaStream_t stream) {
  PREFIXD_CHECK_ARG(p.max_sms > 0 && DecodeStreamTmaApplies(p),
                    "DecodeStreamTma: unsupported launch (GQA " << p.num_qo_heads << "/" << p.num_kv_heads << ", head_dim "
                                                                << p.head_dim << ", max_sms " << p.max_sms << ")");
  if (p.num_items == 0) return;
  const int64_t row_elems = int64_t(p.num_kv_heads) * p.head_dim;
  const CUtensorMap k = sm90a::CachedKvMap(p.k, row_elems, p.token_stride, p.dtype, kBoxRows);
  const CUtensorMap v = sm90a::CachedKvMap(p.v, row_elems, p.token_stride, p.dtype, kBoxRows);
  const bool fp16 = p.dtype == DType::kFloat16;
  if (p.head_dim == 64) return fp16 ? DispatchGroup<__half, 64>(p, k, v, stream) : DispatchGroup<__nv_bfloat16, 64>(p, k, v, stream);
  fp16 ? DispatchGroup<__half, 128>(p, k, v, stream) : DispatchGroup<__nv_bfloat16, 128>(p, k, v, stream);
}

}  // namespace prefixd::kernels::cuda
