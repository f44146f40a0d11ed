// One instantiation of the prefix attention kernel: fp16, head_dim 64.
#include "kernels/cuda/prefix_attention.cuh"

namespace prefixd::kernels::cuda {
template void RunPrefixAttention<__half, 64>(const PrefixAttentionParams&, cudaStream_t);
template int RunPrefixAttentionCtasPerSm<__half, 64>(int);
}  // namespace prefixd::kernels::cuda
