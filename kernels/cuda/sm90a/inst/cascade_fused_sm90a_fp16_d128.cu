// One instantiation of the fused cascade kernel (sm_90a): fp16, head_dim 128.
#include "kernels/cuda/sm90a/cascade_fused_sm90a.cuh"

namespace prefixd::kernels::cuda::sm90a {
template void RunFusedCascade<__half, 128>(const FusedLaunch&, cudaStream_t);
template bool FusedCascadeLoads<__half, 128>();
}  // namespace prefixd::kernels::cuda::sm90a
