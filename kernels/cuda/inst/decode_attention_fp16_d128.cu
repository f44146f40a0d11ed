// Decode kernel instantiations: fp16, head_dim 128; CUDA-core kernel for GQA group sizes 1/2/4/8,
// tensor-core kernel for 4/8/16 (its streaming variant for 4/8).
#include "kernels/cuda/decode_attention.cuh"
#include "kernels/cuda/decode_attention_mma.cuh"
#include "kernels/cuda/decode_attention_mma_stream.cuh"

PREFIXD_INSTANTIATE_DECODE_ATTENTION(__half, 128)
PREFIXD_INSTANTIATE_DECODE_ATTENTION_MMA(__half, 128)
PREFIXD_INSTANTIATE_DECODE_ATTENTION_MMA_STREAM(__half, 128)
