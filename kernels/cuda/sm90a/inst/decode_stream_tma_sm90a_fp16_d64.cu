// One instantiation of the TMA streaming decode kernel (sm_90a): fp16, head_dim 64, GQA 1, 2, 4 and 8.
#include "kernels/cuda/sm90a/decode_stream_tma_sm90a.cuh"

PREFIXD_INSTANTIATE_DECODE_STREAM_TMA(__half, 64)
