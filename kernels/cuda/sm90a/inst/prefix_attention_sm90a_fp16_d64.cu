// One instantiation of the sm_90a (wgmma + TMA) prefix attention kernel: fp16, head_dim 64.
#include "kernels/cuda/sm90a/prefix_attention_sm90a.cuh"

namespace prefixd::kernels::cuda::sm90a {
template void RunWgmmaPrefixAttention<__half, 64>(const WgmmaLaunch&, cudaStream_t);
template bool WgmmaPrefixAttentionLoads<__half, 64>();
}  // namespace prefixd::kernels::cuda::sm90a
