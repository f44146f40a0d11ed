// One instantiation of the prefix attention kernel: fp16, head_dim 128.
#include "kernels/cuda/prefix_attention.cuh"

namespace prefixd::kernels::cuda {
template void RunPrefixAttention<__half, 128>(const PrefixAttentionParams&, cudaStream_t);
template int RunPrefixAttentionCtasPerSm<__half, 128>(int);
}  // namespace prefixd::kernels::cuda
