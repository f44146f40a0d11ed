// One instantiation of the sm_90a (wgmma + TMA) prefix attention kernel: fp16, head_dim 256.
#include "kernels/cuda/sm90a/prefix_attention_sm90a.cuh"

namespace prefixd::kernels::cuda::sm90a {
template void RunWgmmaPrefixAttention<__half, 256>(const WgmmaLaunch&, cudaStream_t);
template bool WgmmaPrefixAttentionLoads<__half, 256>();
}  // namespace prefixd::kernels::cuda::sm90a
