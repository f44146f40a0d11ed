// Launcher of the batch decode kernel over paged suffix KV (internal to kernels/; CUDA types allowed).
//
// Each work item (plan.h: DecodeWorkItem) is one CTA: one request, one KV head, suffix tokens
// [kv_begin, kv_end) of that request's pages. The CTA computes the partial states of the KV head's
// g = num_qo_heads / num_kv_heads query heads (the GQA group shares every K/V byte it loads) and
// writes them (fp32, base-2 LSE) to slot state_indptr[request] + item.slot_offset of partial_v /
// partial_s. An empty token range writes the empty state (0, −inf).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "prefixd/kernels/dtype.h"
#include "prefixd/kernels/plan.h"

namespace prefixd::kernels::cuda {

// Which decode kernel runs: kAuto takes the tensor-core kernel where it exists (GQA group 4 or 8,
// head_dim 64 or 128) and the CUDA-core kernel elsewhere; the others force one (kTensorCores
// falls back to CUDA cores where no tensor-core instantiation exists). For comparisons.
enum class DecodeKernel { kAuto, kCudaCores, kTensorCores };

struct DecodeAttentionParams {
  DecodeKernel kernel = DecodeKernel::kAuto;

  // K/V of ONE layer: element (slot, kv_head, d) at k[slot · token_stride + kv_head · head_dim + d].
  const void* k = nullptr;
  const void* v = nullptr;
  int64_t token_stride = 0;  // num_kv_heads · head_dim
  int page_size = 16;

  const void* q = nullptr;  // [num_requests][num_qo_heads][head_dim]
  int num_qo_heads = 0;
  int num_kv_heads = 0;
  int head_dim = 128;
  DType dtype = DType::kFloat16;
  float sm_scale_log2 = 0.f;  // sm_scale · log2(e): scores go straight to exp2

  // Suffix page table (CSR, device): request r's token t is in page
  // page_indices[page_indptr[r] + t / page_size], row t % page_size.
  const int32_t* page_indptr = nullptr;
  const int32_t* page_indices = nullptr;

  // Device arrays of the loaded plan.
  const DecodeWorkItem* items = nullptr;
  int num_items = 0;
  const int32_t* state_indptr = nullptr;

  float* partial_v = nullptr;  // [num_slots][num_qo_heads][head_dim]
  float* partial_s = nullptr;  // [num_slots][num_qo_heads]
};

// GQA group sizes (num_qo_heads / num_kv_heads) the kernel is compiled for.
bool DecodeAttentionSupportsGroupSize(int gqa_group_size);

// Asynchronous on `stream`; no allocation, no host synchronisation. Throws kUnsupported for a
// head_dim / dtype / GQA group size without an instantiation.
void DecodeAttention(const DecodeAttentionParams& params, cudaStream_t stream);

}  // namespace prefixd::kernels::cuda
