// Decode kernel instantiations: fp16, head_dim 256; CUDA-core kernel for GQA group sizes 1/2/4/8,
// tensor-core kernel for 4 (decode_attention_mma.cuh says why not 8).
#include "kernels/cuda/decode_attention.cuh"
#include "kernels/cuda/decode_attention_mma.cuh"

PREFIXD_INSTANTIATE_DECODE_ATTENTION(__half, 256)
namespace prefixd::kernels::cuda::decode {
template void LaunchDecodeAttentionMma<__half, 256, 4>(const DecodeAttentionParams&, cudaStream_t);
}
