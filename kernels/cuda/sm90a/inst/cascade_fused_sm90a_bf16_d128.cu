// One instantiation of the fused cascade kernel (sm_90a): bf16, head_dim 128.
#include "kernels/cuda/sm90a/cascade_fused_sm90a.cuh"

namespace prefixd::kernels::cuda::sm90a {
template void RunFusedCascade<__nv_bfloat16, 128>(const FusedLaunch&, cudaStream_t);
template bool FusedCascadeLoads<__nv_bfloat16, 128>();
}  // namespace prefixd::kernels::cuda::sm90a
