// Decode kernel instantiation: bf16, head_dim 256, GQA group sizes 1/2/4/8.
#include "kernels/cuda/decode_attention.cuh"

PREFIXD_INSTANTIATE_DECODE_ATTENTION(__nv_bfloat16, 256)
