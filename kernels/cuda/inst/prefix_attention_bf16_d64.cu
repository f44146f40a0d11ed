// One instantiation of the prefix attention kernel: bf16, head_dim 64.
#include "kernels/cuda/prefix_attention.cuh"

namespace prefixd::kernels::cuda {
template void RunPrefixAttention<__nv_bfloat16, 64>(const PrefixAttentionParams&, cudaStream_t);
template int RunPrefixAttentionCtasPerSm<__nv_bfloat16, 64>(int);
}  // namespace prefixd::kernels::cuda
