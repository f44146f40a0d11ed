// One instantiation of the prefix attention kernel: bf16, head_dim 128.
#include "kernels/cuda/prefix_attention.cuh"

namespace prefixd::kernels::cuda {
template void RunPrefixAttention<__nv_bfloat16, 128>(const PrefixAttentionParams&, cudaStream_t);
template int RunPrefixAttentionCtasPerSm<__nv_bfloat16, 128>(int);
}  // namespace prefixd::kernels::cuda
