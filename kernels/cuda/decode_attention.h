// Launcher of the batch decode kernel over paged suffix KV (internal to kernels/; CUDA types allowed).
//
// Each work item (plan.h: DecodeWorkItem) is one CTA: one request, one KV head, suffix tokens
// [kv_begin, kv_end) of that request's pages. The CTA computes the partial states of the KV head's
// g = num_qo_heads / num_kv_heads query heads (the GQA group shares every K/V byte it loads) and
// writes them (fp32, base-2 LSE) to slot state_indptr[request] + item.slot_offset of partial_v /
// partial_s. An empty token range writes the empty state (0, −inf). Any g ≥ 1 is served: on the
// kernel compiled for the next group size, a group larger than the largest (16 on the tensor-core
// kernel, 8 on the CUDA-core one) by several CTAs per item (prefixd/kernels/decode_kernel_choice.h,
// DecodeSlicingFor).
//
// A finishing item (item.finish = 1, plan.h) instead ⊕-merges its state with the request's prefix-
// chunk states, slots [state_indptr[request], + slot_offset), which the prefix kernel wrote earlier
// on the stream, and writes the final o / v_out / s_out rows of its g query heads (the fused merge:
// no separate merge launch, and the suffix state never goes through device memory).
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

// How deep the decode kernel's K/V pipeline is. kByItemLength: shallow where every item
// (DecodeAttentionParams::max_item_tokens) fits in what the shallow pipeline keeps in flight at
// once, deep otherwise; the others force one (for comparisons). Shallow = fewer shared-memory
// stages, so more CTAs per SM: short items (e.g. 32-token suffixes) are bound by each CTA's serial
// start (item → page table → K/V, DRAM round trips), not by bytes in flight, and more CTAs overlap
// more of those starts. Compiled for the CUDA-core kernel at GQA 1 and the 2-warp tensor-core
// kernel; elsewhere the deep pipeline runs. kNarrow: the CUDA-core kernel at GQA 1 as a CTA of
// 64 threads with the shallow stages (16 CTAs per SM at head_dim 128, each item's K/V in two
// rounds; decode_attention.cuh, kNarrowThreads), and at GQA 2; elsewhere it means kByItemLength,
// which also takes it at GQA 1 where items of at most 64 tokens are more than one wave of the
// CTAs the length rule would run, and at GQA 2 for items of at most 64 tokens (head_dim ≤ 128
// for both but GQA 1's shallow case). kWarp: the CUDA-core kernel at GQA 1 and 2, head_dim ≤ 128, as
// a CTA of one warp, so that each item's chain and ⊕ epilogue stall only its own warp, its ring
// taking a 32-token item in DecodeAttentionParams::warp_rounds rounds (decode_attention.cuh,
// kWarpThreads); elsewhere it means kByItemLength. The length rule takes it (4 rounds) at GQA 1
// for large batches of short items (DecodeAttentionParams::warp_min_items). kSingle: where the
// length rule takes the tensor-core kernel's shallow 2-warp CTA (every item one 32-token step) at
// head_dim ≤ 128, its one-stage form with registers capped for 8 CTAs per SM; the length rule itself
// takes that form at GQA 4, head_dim 128, for items of at most 24 tokens (decode_attention_mma.cuh,
// kMmaSingleStepMaxTokens); elsewhere kSingle means kByItemLength.
enum class DecodePipeline { kByItemLength, kDeep, kShallow, kNarrow, kWarp, kSingle };

// The one-warp CTA's ring depth that the length rule takes, and kWarp's default: 4 rounds per
// 32-token item, 32 CTAs per SM (1 and 2 rounds measured slower: bench/RESULTS.md, session 69).
inline constexpr int kWarpRuleRounds = 4;

// Warps per CTA of the tensor-core kernel (1, 2, 4 or 8; 0 = the launcher's choice; 8 for one
// CTA per SM, DecodeAttentionParams::max_sms). Each warp streams
// its own 16-token tiles through 3 stages of shared memory (8 KiB per stage at head_dim 128), so
// fewer warps per CTA means more, smaller CTAs per SM: a CTA's serial start (work item → page
// table → first K/V tile) and end (cross-warp ⊕, state write) then overlap other CTAs' streaming.
int DecodeMmaWarps(int requested);

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
  // Optional, derived from the plan by the backend: per item, {page_indptr[request],
  // state_indptr[request]}. Read in parallel with the item itself, it takes one dependent load
  // off each CTA's start (page table) and end (state slots). Null: looked up through the item.
  const int2* item_bases = nullptr;
  // Optional, derived from the plan by the backend (WriteDecodeItemPages, PREFIXD_DECODE_ITEM_PAGES):
  // per item, the pages of its first two page slots, read beside the item, so that its first K/V
  // copies need no page-table load (decode_pages.cuh). Null: every token through the page table.
  const int2* item_pages = nullptr;

  float* partial_v = nullptr;  // [num_slots][num_qo_heads][head_dim]
  float* partial_s = nullptr;  // [num_slots][num_qo_heads]
  // The TMA decode only (decode_stream_tma.h; every other kernel's launcher rejects it), and only
  // for items that write their state (no finishing item: it would read prefix states as fp32): each
  // state's v written in dtype (rounded to nearest), the layout in elements unchanged; s stays fp32.
  // As PrefixAttentionParams::states_16bit, for the concurrent step's merge.
  bool states_16bit = false;

  // Final outputs of finishing items, each optional (null: not written): o [num_requests]
  // [num_qo_heads][head_dim] in dtype, v_out (same, fp32), s_out [num_requests][num_qo_heads] fp32.
  void* o = nullptr;
  float* v_out = nullptr;
  float* s_out = nullptr;

  // The launch directly follows the prefix kernel of the same step on the stream (which itself was
  // launched normally): launch with programmatic dependent launch, so the decode grid can start
  // while the prefix grid drains. Every CTA waits for the prefix grid (griddepcontrol.wait) before
  // its epilogue reads prefix states, and before it exits, so the decode grid's completion still
  // implies the prefix grid's: later work on the stream sees both. Nothing before the epilogue
  // reads what the prefix kernel writes (q, page tables, K/V are inputs). Off (a normal launch,
  // where griddepcontrol.wait returns at once) for the backend's concurrent prefix/decode, whose
  // decode kernel runs beside the prefix grid on another stream and has no finishing items.
  bool overlap_prefix = false;
  // Early decode (cuda_backend.h, PREFIXD_EARLY_DECODE_PERCENT): this launch runs a step's early items
  // (none finishing; they read no prefix state) beside the prefix grid, launched as its
  // programmatic dependent (overlap_prefix) on the SMs that grid leaves idle. Each CTA signals
  // griddepcontrol.launch_dependents at its start (so the late decode, this grid's dependent, is
  // launched only once every early CTA is resident: no late CTA can take an early one's SM and
  // wait on it), skips the per-item wait and waits for the prefix grid only before it exits (so
  // this grid completes after the prefix grid and the late decode's wait covers both): every CTA of
  // a grid looping over items, only the last CTA of one CTA per item (one wait is enough, and CTAs
  // done early then leave their SMs to the items after them). The CUDA backend's concurrent step
  // chained with the one-item decode (PREFIXD_CONCURRENT_CHAIN=all) is launched the same way.
  // early_sms > 0 caps the grid at early_sms SMs' worth of resident CTAs, each looping over items.
  bool early_chain = false;
  int early_sms = 0;
  int mma_warps = 0;  // tensor-core kernel: warps per CTA (DecodeMmaWarps)
  // L2 policy of the streamed K/V: evict-first (read once; other data, such as the prefix states
  // a finishing item reads at its end, stays in L2) or normal.
  bool evict_first = true;
  // Finishing items prefetch their prefix-chunk states into L2 at the start (evict-last), so that
  // the epilogue's staging copies hit L2 instead of waiting on HBM.
  bool prefetch_prefix_states = true;
  // 0: one CTA per item. > 0: at most max_sms CTAs, each looping over items blockIdx.x,
  // + gridDim.x, ..., with more than half of an SM's shared memory reserved per CTA, so that no
  // two share an SM: the kernel runs on max_sms SMs and leaves the others free for a kernel that
  // runs beside it (a collective's: NCCL's 640-thread blocks do not fit an SM that holds a decode
  // CTA, whose registers they would need).
  int max_sms = 0;
  // With max_sms, the tensor-core kernel's streaming variant (decode_attention_mma_stream.cuh:
  // every warp's copies stay in flight across the CTA's items); false: the one-item-at-a-time loop.
  bool stream_items = false;
  // With max_sms and stream_items: the streaming kernel with its K/V tiles copied by the TMA
  // (decode_stream_tma.h), where it applies (sm_90a). It pulls more bytes per SM than the cp.async
  // one: for a decode confined to a few SMs beside a concurrent prefix grid.
  bool stream_tma = false;
  // Diagnostics of the TMA kernel (PREFIXD_DECODE_TMA_DIAG; WRONG results on purpose): 1 copies
  // only (no arithmetic), 2 arithmetic only (no copies: the stages' stale contents).
  int tma_diag = 0;
  // The TMA kernel's tile arithmetic with the query heads as the N of the mma (SwapAbDecodeTile:
  // half the mma per token, decode_stream_tma_sm90a.cuh) or, false, as the M (MmaDecodeTile).
  bool tma_swap_ab = true;
  // ... and its warps per CTA as asked: 12 (2 ring stages each at head_dim 128, 168 registers)
  // or 8 (3 stages); TmaDecodeWarps (below) says which run.
  int tma_warps = 12;
  // ... and its CTA count: 0, as many as give each warp one item (a CTA's WARPS items); n > 0, as
  // many as give each CTA n (≤ WARPS) items, so that fewer, longer items spread over more SMs
  // (both at most max_sms; one SM's streaming rate bounds what its CTA's warps move).
  int tma_items_per_cta = 0;
  // The longest item's token count (kv_end − kv_begin), for the pipeline depth (DecodePipeline);
  // 0: unknown, the deep pipeline.
  int max_item_tokens = 0;
  DecodePipeline pipeline = DecodePipeline::kByItemLength;
  // kWarp: the rounds in which the one-warp CTA's ring takes an item of 32 tokens (1, 2 or 4;
  // decode_attention.cuh, kWarpThreads); by default the length rule's depth.
  int warp_rounds = kWarpRuleRounds;
  // The length rule (kByItemLength) takes the one-warp CTA in 4 rounds at GQA 1, head_dim ≤ 128,
  // for items of at most 32 tokens, one CTA per item, from this many items on (0: never): where
  // the 32 CTAs an SM holds beat the narrow CTA's 16 (bench/RESULTS.md, session 69).
  int warp_min_items = 0;
  // Set by DecodeAttention (callers leave them): g = num_qo_heads / num_kv_heads, and the CTAs per
  // item that serve it (DecodeSlicingFor(g, ...).slices, the grid's y extent; each takes at most
  // its rows of the group's heads).
  int group_size = 0;
  int group_slices = 1;
  // One CTA per item over several waves: each CTA pulls the page-table line and query rows of the
  // item one wave of resident CTAs later into L2 (NextWaveItem, decode_attention_epilogue.cuh), so
  // that the CTA which runs it finds its dependent start (item → page table → K/V, each a DRAM
  // round trip when cold) half warm. The launcher sets next_wave_items (resident CTAs of the
  // kernel, 0 for a single wave); prefetch_next_wave turns it off.
  bool prefetch_next_wave = true;
  int next_wave_items = 0;
  // With item_pages and next_wave_items: each CTA also pulls the next-wave item's first K/V rows
  // (up to kNextWaveKvTokens, in its first two page slots) into L2, so that its first copies are
  // L2 hits (PrefetchNextWaveKv; in the CUDA-core kernel and the 2-warp tensor-core CTA, the
  // launcher's choice for decodes of many items).
  bool prefetch_next_wave_kv = false;
};

// The TMA decode kernel's warps per CTA that run (decode_stream_tma_sm90a.cuh), the one rule for
// its launcher and for the planner's model of its rounds: 4 where the tensor-core warps are forced
// to 4 (mma_warps), 12 only with the heads as the mma's N (tma_swap_ab; the only 12-warp
// instantiation: the heads-as-M tiles take 197 registers at 8 warps, 12 warps allow 168), 8
// otherwise.
constexpr int TmaDecodeWarps(bool tma_swap_ab, int mma_warps, int tma_warps) {
  if (mma_warps == 4) return 4;
  return tma_swap_ab && tma_warps == 12 ? 12 : 8;
}
static_assert(TmaDecodeWarps(true, 0, 12) == 12 && TmaDecodeWarps(true, 8, 8) == 8 && TmaDecodeWarps(false, 0, 12) == 8 &&
              TmaDecodeWarps(true, 4, 12) == 4 && TmaDecodeWarps(false, 4, 8) == 4);

// Whether a kernel whose CTA step covers step_tokens tokens runs its shallow pipeline of `stages`
// stages (stages − 1 steps in flight) for `params` (DecodePipeline).
bool DecodeShallowPipeline(const DecodeAttentionParams& params, int step_tokens, int stages);

// Whether `params` run the tensor-core kernel (prefixd/kernels/decode_kernel_choice.h; not forced to
// CUDA cores), the one with a streaming variant up to head_dim 128.
bool DecodeUsesTensorCores(const DecodeAttentionParams& params);

// Throws kInvalidArgument where params ask for 16-bit states (states_16bit), which only the TMA
// decode writes; `kernel` names the launcher's kernel in the message.
void RequireFp32States(const DecodeAttentionParams& params, const char* kernel);

// Asynchronous on `stream`; no allocation, no host synchronisation. Throws kUnsupported for a
// head_dim / dtype without an instantiation.
void DecodeAttention(const DecodeAttentionParams& params, cudaStream_t stream);

}  // namespace prefixd::kernels::cuda
