// Launcher of the multi-query prefix attention kernel (internal to kernels/; CUDA types allowed).
//
// Each work item (plan.h: PrefixWorkItem) is one CTA-sized tile: the rows [row_begin, row_end) of
// one prefix group for one KV head, against prefix tokens [kv_begin, kv_end) of the group's
// contiguous page run. Row r of a group maps to request first_request + r / g and query head
// kv_head · g + r % g (g = num_qo_heads / num_kv_heads): GQA heads are stacked into the M dimension.
// The kernel writes the tile's partial states (fp32, base-2 LSE) to the slot
// state_indptr[request] + item.chunk of partial_v / partial_s.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "prefixd/kernels/dtype.h"
#include "prefixd/kernels/plan.h"

namespace prefixd::kernels::cuda {

// The start of the decode kernel that follows the prefix kernel on the stream, pulled into L2 by
// the sm_90a prefix kernel at its end (PrefixAttentionParams::decode_warmup): for each of the
// first num_items decode items (the ones whose CTAs start first), its work item, its first
// page-table entries and its request's query rows, and optionally the K/V rows of its first
// `tokens` suffix tokens. Why: a decode CTA starts with a chain of dependent loads (item → page
// table → first K/V tiles) that finds L2 cold after the prefix kernel. Issued by the V producer's
// warp once it has issued the CTA's own last K/V tile, so that no tile of the prefix waits behind it;
// the CTA cannot exit before its prefetches are taken, which is why the K/V rows are few
// (bench/RESULTS.md, session 12). A hint only: results never depend on it. The mma.sync
// kernel ignores it.
struct DecodeL2Warmup {
  const DecodeWorkItem* items = nullptr;  // the plan's decode items (the same layer view as k / v)
  const int2* item_bases = nullptr;       // optional {page_indptr[request], ...} per item (decode_attention.h)
  const int2* item_pages = nullptr;       // optional: the pages of each item's first two slots (decode_pages.cuh)
  const int32_t* page_indptr = nullptr;   // the suffix page table (CSR)
  const int32_t* page_indices = nullptr;
  int num_items = 0;  // items [0, num_items) are warmed (0: off)
  int tokens = 0;     // K/V rows from each item's kv_begin (clipped to its range; 0: none)
};

// Which prefix kernel runs and how the sm_90a one is launched: knobs for tests and benchmarks
// (kernels/cuda/sm90a/prefix_attention_sm90a.h says what each does). The owner of the launches
// reads them from the environment once (the CUDA backend at construction; a test or probe after
// it sets the variables) and hands them in with every launch: no launch reads the environment.
enum class PrefixKernelChoice : int32_t { kAuto, kMma, kWgmma };
// L2 eviction priority of the sm_90a kernel's streamed K/V tiles. kPlan: the plan's
// (PrefixAttentionParams::kv_evict_first, from PrefixKvEvictFirst in prefix_l2_hint.h).
enum class PrefixKvL2Hint : int32_t { kPlan, kNone, kEvictFirst, kEvictLast };
struct PrefixKernelSettings {
  PrefixKernelChoice kernel = PrefixKernelChoice::kAuto;  // PREFIXD_PREFIX_KERNEL=auto|mma|wgmma
  bool q_tma = true;                // PREFIXD_SM90A_Q_TMA=0|1: query rows by TMA where g divides 64
  // PREFIXD_SM90A_Q_TMA_PARTIAL=0|1: with q_tma and PrefixAttentionParams::num_requests known, also
  // the rows of warpgroups with fewer than 64 (0: those gathered by cp.async).
  bool q_tma_partial = true;
  bool trigger_dependents = true;   // PREFIXD_PREFIX_PDL_TRIGGER=0|1
  bool overlap = true;              // PREFIXD_SM90A_SCHEDULE=overlap|plain
  int32_t max_ctas = 0;             // PREFIXD_SM90A_MAX_CTAS (0: one CTA per SM)
  int32_t stages = 2;               // PREFIXD_SM90A_STAGES: K/V ring depth (> 2: the deeper ring)
  PrefixKvL2Hint kv_l2_hint = PrefixKvL2Hint::kPlan;  // PREFIXD_SM90A_KV_POLICY=plan|normal|first|last
  // PREFIXD_SM90A_CONSUMERS=auto|1|2: consumer warpgroups per CTA (0 = auto: the narrow CTA of one
  // where every item has at most 64 rows, PrefixAttentionParams::max_item_rows; otherwise two).
  int32_t consumer_wgs = 0;
  // PREFIXD_SM90A_KV_TILE=auto|128|160|192: tokens per K/V tile (0 = auto: the plan's,
  // PrefixAttentionParams::kv_tile_tokens): 128 or 192 at head_dim 64, 128 or 160 at head_dim 128;
  // a tile the head_dim has no kernel for is ignored there (head_dim 256 has one).
  int32_t kv_tile = 0;
  // The variables above; an unset one keeps its default, a malformed one throws kInvalidArgument.
  static PrefixKernelSettings FromEnvironment();
};

struct PrefixAttentionParams {
  // K/V of ONE layer: element (slot, kv_head, d) at k[slot · token_stride + kv_head · head_dim + d].
  const void* k = nullptr;
  const void* v = nullptr;
  int64_t token_stride = 0;  // num_kv_heads · head_dim
  int page_size = 16;

  const void* q = nullptr;  // [num_requests][num_qo_heads][head_dim] (requests of the whole batch)
  // Requests in q (0: unknown). Where known, the sm_90a kernel's TMA map over q has exactly this
  // extent, so that a box reaching past the last request is zero-filled instead of read out of
  // bounds, and a warpgroup with fewer than 64 rows also takes its queries by TMA.
  int num_requests = 0;
  int num_qo_heads = 0;
  int num_kv_heads = 0;
  int head_dim = 128;
  DType dtype = DType::kFloat16;
  float sm_scale_log2 = 0.f;  // sm_scale · log2(e): scores go straight to exp2

  // Causal (prefill / append): query of group-local request i sits at prefix position
  // q_offset + i and sees tokens [0, q_offset + i]; rows that see no token of the item get the
  // empty state (0, −inf). Non-causal (decode): every row sees all of [kv_begin, kv_end).
  bool causal = false;
  int q_offset = 0;

  // Device arrays of the loaded plan.
  const PrefixWorkItem* items = nullptr;
  int num_items = 0;
  const PrefixGroup* groups = nullptr;
  const int32_t* state_indptr = nullptr;
  // Host-side hint: the largest row_end − row_begin among the items (0: unknown). When it is at
  // most PrefixAttentionSmallTileRows(), a kernel with a smaller M tile runs, so that small groups
  // (e.g. 64 requests without GQA) keep all its warps busy. Only speed depends on it: items with
  // more rows than the hint are still computed correctly.
  int max_item_rows = 0;
  // Host-side: tokens per K/V tile of the sm_90a kernel, the plan's (ChoosePrefixKvTileTokens in
  // prefixd/kernels/prefix_kv_tile.h: 128 or 192 at head_dim 64, 128 or 160 at 128); 0: the head_dim's default
  // (DefaultPrefixKvTileTokens). Only speed depends on it. settings.kv_tile, where set, wins.
  int kv_tile_tokens = 0;

  float* partial_v = nullptr;  // [num_slots][num_qo_heads][head_dim]
  float* partial_s = nullptr;  // [num_slots][num_qo_heads]
  // The sm_90a kernel at head_dim 64 and 128 only (the launchers reject it for the mma.sync kernel
  // and for head_dim 256): each state's v written in dtype (rounded to nearest) instead of fp32,
  // the same layout in elements, so partial_v's buffer holds [num_slots][num_qo_heads][head_dim]
  // dtype values; s stays fp32. For a merge that reads them as such (MergeStatesParams::
  // v_in_16bit): the concurrent step's, PREFIXD_CONCURRENT_STATES16.
  bool states_16bit = false;

  // How the kernel is chosen and launched (defaults unless the caller read the environment).
  PrefixKernelSettings settings;
  // The plan's L2 hint for the streamed K/V (PrefixKvEvictFirst), taken where settings.kv_l2_hint
  // is kPlan: evict-first, so that a memory-bound prefix's stream leaves L2's other lines alone.
  bool kv_evict_first = false;

  // Upper bound on the grid of the persistent sm_90a kernel (0: none, one CTA per SM); the launcher
  // takes the minimum with settings.max_ctas. The mma.sync kernel (one CTA per item) ignores
  // it. The CUDA backend sets it to SMs − k when it runs the decode kernel concurrently on the other
  // k SMs (PREFIXD_CONCURRENT_DECODE_SMS, cuda_backend.h).
  int max_ctas = 0;
  // The sm_90a kernel with settings.trigger_dependents: every CTA signals griddepcontrol.launch_
  // dependents at its entry instead of as it starts its last item. For a dependent that runs beside
  // the whole grid rather than after it: the CUDA backend's chained concurrent step
  // (PREFIXD_CONCURRENT_CHAIN, cuda_backend.h) launches its decode as this grid's programmatic
  // dependent on the SMs the capped grid leaves.
  bool trigger_at_start = false;
  // The plan's balanced grid (CascadePlan::prefix_balanced_ctas; 0: none). Where the persistent
  // sm_90a kernel's grid comes out at exactly this many CTAs, CTA c runs item c and then its
  // PrefixWorkItem::cta_next chain; otherwise (a capped grid) items round-robin. Same results.
  int balanced_ctas = 0;

  // Optional: the decode kernel's start to pull into L2 at this kernel's end (above).
  DecodeL2Warmup decode_warmup;

  // Diagnostics (prefix_probe --timeline; null otherwise): the sm_90a kernel writes globaltimer
  // stamps [CTA][kTimelineSlots] of its phases (prefix_attention_sm90a.cuh, TimelineSlot).
  unsigned long long* timeline = nullptr;
};

// The M tile (rows per item) the kernel is compiled for; the planner's prefix_tile_rows must
// equal it (items with fewer rows are fine; an item with more rows is still computed correctly,
// its row tiles one after the other in one CTA, but that wastes the parallelism of the launch).
int PrefixAttentionTileRows(int head_dim);
// The M tile of the kernel chosen when 0 < max_item_rows ≤ this (64; for head_dim 256 the default
// tile is already 64 rows).
int PrefixAttentionSmallTileRows();

// The rows of the narrow sm_90a CTA's items (PlanOptions::narrow_tile_rows), where the wgmma kernel
// runs on this device with `settings` and picks its CTA width by the items' rows; 0 otherwise.
int PrefixAttentionNarrowTileRows(const PrefixKernelSettings& settings);

// CTAs of the kernel for (head_dim, dtype) that fit on one SM of the current device at once, so
// that a planner can size target_items = SMs · CTAs per SM (a multiple of it avoids a partial
// last wave), when `kernel` is the settings' choice. Throws kUnsupported like PrefixAttention,
// kLibrary on a CUDA error.
int PrefixAttentionCtasPerSm(int head_dim, DType dtype, PrefixKernelChoice kernel, int max_item_rows = 0);

// Asynchronous on `stream`; no allocation, no host synchronisation. Throws kUnsupported for a
// head_dim/dtype without an instantiation.
void PrefixAttention(const PrefixAttentionParams& params, cudaStream_t stream);

}  // namespace prefixd::kernels::cuda
