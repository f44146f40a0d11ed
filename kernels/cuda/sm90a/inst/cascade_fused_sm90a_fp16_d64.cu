// One instantiation of the fused cascade kernel (sm_90a): fp16, head_dim 64.
#include "kernels/cuda/sm90a/cascade_fused_sm90a.cuh"

namespace prefixd::kernels::cuda::sm90a {
template void RunFusedCascade<__half, 64>(const FusedLaunch&, cudaStream_t);
template bool FusedCascadeLoads<__half, 64>();
}  // namespace prefixd::kernels::cuda::sm90a
