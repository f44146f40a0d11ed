// The streaming decode kernel with its K/V tiles copied by the TMA (sm_90a; the kernel and why:
// kernels/cuda/sm90a/decode_stream_tma_sm90a.cuh). DecodeAttention takes it for a one-CTA-per-SM
// launch (DecodeAttentionParams::max_sms, stream_items) when DecodeAttentionParams::stream_tma asks
// for it and DecodeStreamTmaApplies; otherwise the cp.async streaming kernel.
#pragma once

#include <cuda_runtime.h>

#include "kernels/cuda/decode_attention.h"

namespace prefixd::kernels::cuda {

// An sm_90a build on a compute capability 9.0 GPU, and the tensor-core kernel's shapes: GQA group
// 4 or 8, head_dim 64 or 128, fp16/bf16, pool rows 16-byte aligned. Any page size and item
// boundaries (tiles that are not one page's 16 rows are copied by the lanes).
bool DecodeStreamTmaApplies(const DecodeAttentionParams& params);

// Asynchronous on `stream`; one CTA per SM on min(num_items, max_sms) SMs. Requires
// DecodeStreamTmaApplies(params) and max_sms > 0.
void DecodeStreamTma(const DecodeAttentionParams& params, cudaStream_t stream);

}  // namespace prefixd::kernels::cuda
