// Launcher of the one-launch fused cascade kernel (internal to kernels/; CUDA types allowed).
//
// One persistent grid runs a whole cascade step: the prefix items (plan.h: PrefixWorkItem, the
// tensor-core tiles of kernels/cuda/sm90a/prefix_attention_sm90a.cuh) and the decode items
// (DecodeWorkItem: a request's suffix pages for one KV head) from one per-CTA work list, so that
// compute-bound prefix tiles and memory-bound suffix tiles run on the SMs at the same time, and
// the ⊕ of each (request, query head) is done inside: every item writes its partial state to its
// slot (state_indptr[request] + chunk / slot_offset, as in the two-kernel cascade) and counts
// itself in an arrival counter per (request, query head); the item that brings the counter to the
// request's slot count merges all slots and writes o / v_out / s_out, then resets the counter to 0
// (so no memset is needed between steps and a step stays capturable in a CUDA graph). No item
// ever waits for another, so the persistent grid cannot deadlock. DecodeWorkItem::finish is
// ignored: every decode item writes its slot.
//
// Decode items run on the prefix kernel's machinery: the producer loads a suffix tile (128
// tokens) page by page with one TMA box per page (page_size rows) into the same swizzled ring
// stage a prefix tile uses, and one consumer warpgroup computes it as a 64-row wgmma tile whose
// first g rows are the request's query heads (the other rows are zeros and never written; the
// suffix part is memory bound), while the other warpgroup only walks the ring and loads the
// queries of the next decode item, which is its own (decode items alternate between the two).
//
// Shapes: sm_90a, head_dim 64 or 128, fp16/bf16, non-causal, page_size 8, 16, 32, 64 or 128, every
// decode item starting on a page boundary, every request with at least one slot. The CUDA backend
// checks this per plan (CudaBackend::LoadPlan) and runs the two-kernel cascade otherwise.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/prefix_attention.h"
#include "prefixd/kernels/plan.h"

namespace prefixd::kernels::cuda {

struct FusedCascadeParams {
  // K/V, queries, heads, dtype, scale, the prefix items, groups, state_indptr and the partial-state
  // arrays, as for the prefix kernel (attn.items / attn.num_items are the prefix items).
  PrefixAttentionParams attn;
  const DecodeWorkItem* decode_items = nullptr;
  int num_decode_items = 0;
  // The suffix page table (CSR, device), as for the decode kernel.
  const int32_t* page_indptr = nullptr;
  const int32_t* page_indices = nullptr;
  // The work of each CTA (fused_schedule.h): CTA b runs entries [cta_indptr[b], cta_indptr[b + 1])
  // of cta_items in order; an entry e ≥ 0 is prefix item e, e < 0 decode item −e − 1.
  const int32_t* cta_indptr = nullptr;
  const int32_t* cta_items = nullptr;
  int num_ctas = 0;
  // [num_requests][num_qo_heads] int32, all 0 before the launch (and after it, when it merges).
  // Null: no ⊕; the items only write their partial states (to time the prefix or the suffix
  // tiles alone with this kernel).
  int32_t* counters = nullptr;
  // Final outputs of the ⊕, each optional: o [B][H_qo][D] in dtype, v_out (fp32), s_out [B][H_qo].
  void* o = nullptr;
  float* v_out = nullptr;
  float* s_out = nullptr;
  int stages = 2;  // K/V ring depth: 2, or more for the deeper ring (as PREFIXD_SM90A_STAGES)
};

// Whether the kernel exists for these shapes (independent of the device).
bool FusedCascadeSupportsShape(int head_dim, DType dtype, int page_size, int gqa_group_size);
// Whether this build has the kernel and the current device runs it (compute capability 9.0).
bool FusedCascadeReady();
// Asynchronous on `stream`; no allocation, no host synchronisation.
void FusedCascade(const FusedCascadeParams& params, cudaStream_t stream);

}  // namespace prefixd::kernels::cuda
