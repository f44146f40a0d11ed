// Decode kernel instantiation: fp16, head_dim 128, GQA group sizes 1/2/4/8.
#include "kernels/cuda/decode_attention.cuh"

PREFIXD_INSTANTIATE_DECODE_ATTENTION(__half, 128)
