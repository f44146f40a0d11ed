// Launcher of the one-launch fused cascade kernel (internal to kernels/; CUDA types allowed).
//
// One persistent grid runs a whole cascade step: the prefix items (plan.h: PrefixWorkItem, the
// tensor-core tiles of kernels/cuda/sm90a/prefix_attention_sm90a.cuh) on each CTA's two consumer
// warpgroups, and the decode items (DecodeWorkItem: a request's suffix pages for one KV head) at
// the same time on three warps of the producer warpgroup of the same CTA
// (kernels/cuda/sm90a/suffix_warps_sm90a.cuh), so that compute-bound prefix tiles and
// memory-bound suffix tiles share every SM. The ⊕ is inside for the requests the plan finishes in
// their decode items (DecodeWorkItem::finish; every other request is in plan.merge_requests and is
// merged by the merge kernel after this launch, as in the two-kernel cascade): every item writes
// its partial state to its slot (state_indptr[request] + chunk / slot_offset); a consumer
// warpgroup that wrote a prefix chunk's states counts one arrival per finished request of its rows
// on counters[request][kv_head]; the finishing decode item waits (after all of its CTA's decode
// items) until its counter reaches its prefix chunk count (slot_offset), merges the request's
// slots for its g heads into o / v_out / s_out, and resets the counter to 0 (no memset between
// steps, so a step stays capturable in a CUDA graph). The launch is cooperative (all CTAs
// resident), and prefix items never wait, so every wait ends.
//
// Shapes: sm_90a, head_dim 64 or 128, fp16/bf16, non-causal, GQA group size ≤ 8 (the N = 8 of the
// suffix warps' mma), page_size 8, 16, 32, 64 or 128, every decode item starting at a multiple of
// 16 tokens. The CUDA backend checks this per plan (CudaBackend::LoadPlan) and runs the two-kernel
// cascade otherwise.
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
  // [num_requests][num_kv_heads] int32, all 0 before the launch (and after it, when it merges).
  // Null: no ⊕; the items only write their partial states (to time the prefix or the suffix
  // items alone with this kernel).
  int32_t* counters = nullptr;
  // [num_requests]: 1 for a request finished here (its decode items have finish = 1), else 0.
  const int32_t* request_finished = nullptr;
  // Final outputs of the ⊕, each optional: o [B][H_qo][D] in dtype, v_out (fp32), s_out [B][H_qo].
  void* o = nullptr;
  float* v_out = nullptr;
  float* s_out = nullptr;
  // Decode items a CTA's loader warp prefetches into L2 ahead of the one it loads into its ring.
  int l2_ahead_items = 0;
  // Diagnostics of the suffix half's rate (wrong results; benchmark only): 1 = the compute warps
  // only wait for and release the stages (the loads alone), 2 = the loader releases each stage
  // without loading it (the arithmetic alone, on stale shared memory).
  int diag = 0;
};

// Whether the kernel exists for these shapes (independent of the device).
bool FusedCascadeSupportsShape(int head_dim, DType dtype, int page_size, int gqa_group_size);
// Whether this build has the kernel and the current device runs it (compute capability 9.0).
bool FusedCascadeReady();
// Asynchronous on `stream`; no allocation, no host synchronisation.
void FusedCascade(const FusedCascadeParams& params, cudaStream_t stream);

}  // namespace prefixd::kernels::cuda
