// Planning: a pure CPU function from a DecodeBatch to a work list (FlashInfer's plan/run split).
//
// The plan cuts the step into independent work items whose results are partial attention states:
//  - PrefixWorkItem: the queries of one prefix group for one KV head (GQA: the g = H_qo / H_kv
//    query heads of that KV head stacked as rows, row = local_request · g + head_in_group), rows
//    [row_begin, row_end), against prefix tokens [kv_begin, kv_end). Long prefixes are split along
//    the KV axis ("chunk") so that there are enough items to fill the GPU.
//  - DecodeWorkItem: one request, one KV head (its g query heads), suffix tokens [kv_begin, kv_end).
// Every (request, qo head) gets a run of partial-state slots [state_indptr[r], state_indptr[r+1]):
// first one slot per prefix chunk of its group, then one per suffix chunk. The run step writes each
// item's states to its slots and merges each run with ⊕ into the final output.
//
// Where that final ⊕ happens is part of the plan (PlanOptions::fuse_merge): a request whose suffix
// is one chunk may be FINISHED by its decode items (DecodeWorkItem::finish = 1): prefix items run
// first, so each such decode item ⊕-merges its own suffix state with the request's prefix-chunk
// states and writes the final outputs of its g query heads; its suffix slot is then never written.
// Every other request (no suffix, or a suffix split into several chunks) is listed in
// merge_requests and merged by a separate step after all items. A backend may also merge every
// request in that step (the CPU backend does; the result is the same ⊕ to float rounding).
//
// The plan is data: the same plan runs on the CPU backend and on the GPU, and serialises to one
// int32 vector that the CUDA backend copies to a fixed-size device buffer in one async copy.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "prefixd/kernels/decode_batch.h"
#include "prefixd/kernels/kv_cache.h"

namespace prefixd::kernels {

struct CostModelParams;  // cost_model.h

struct PrefixWorkItem {
  int32_t group;
  int32_t kv_head;
  int32_t row_begin, row_end;  // group-local rows (local_request · g + head_in_group)
  int32_t kv_begin, kv_end;    // prefix tokens; empty (equal) only in a stream grid, writing the empty state
  int32_t chunk;               // slot = state_indptr[request] + chunk
  // In a balanced grid (CascadePlan::prefix_balanced_ctas > 0): the index of the next item the same
  // persistent CTA runs, −1 after its last. Unused (−1) otherwise. Only speed depends on it.
  int32_t cta_next = -1;
};

struct DecodeWorkItem {
  int32_t request;
  int32_t kv_head;
  int32_t kv_begin, kv_end;  // suffix tokens
  int32_t slot_offset;       // slot = state_indptr[request] + slot_offset
  // 1: the request's only suffix chunk, which finishes the request's g heads of this KV head:
  // its state ⊕ the prefix-chunk slots [state_indptr[request], + slot_offset) → the final outputs.
  // 0: writes its partial state to the slot; the merge step finishes the request.
  int32_t finish = 0;
};

struct PlanOptions {
  int target_items = 132 * 2;       // enough independent items to fill the device (SMs × CTAs/SM)
  int prefix_target_items = 0;      // the same for prefix items alone (0: target_items), e.g. SMs
                                    // for a persistent prefix kernel of one CTA per SM
  int prefix_tile_rows = 64;        // rows of one prefix item (the GPU kernel's M tile)
  int prefix_chunk_align = 64;      // prefix chunk boundaries are multiples of this (KV tile)
  int min_prefix_chunk = 512;       // never split a prefix finer than this many tokens
  // With choose_layout: also try prefix chunks down to this many tokens (0: no such candidate).
  // Short prefixes (a few thousand tokens) reach the item target only with chunks shorter than
  // min_prefix_chunk, and the persistent prefix kernel's time there is a fixed cost plus its
  // busiest CTA's tiles; whether more, shorter items win depends on what the decode loses (more
  // states to merge, fewer SMs free beside the prefix grid), which the cost model decides.
  int fine_prefix_chunk = 0;
  // ... and only where the batch's suffix tokens are at most this multiple of its prefix tokens.
  // Beside the narrow sm_90a prefix CTA (items of ≤ 64 rows) the decode streams from the prefix
  // grid's start, so a decode several times the prefix covers the prefix grid's fixed cost, and a
  // finer prefix grid then only takes bandwidth and SMs from it (bench/NOTES-planner.md, session
  // 22: fine chunks 2.5-6% slower at suffix/prefix 4 and 16, 12-15% faster at 0.5).
  double fine_max_suffix_ratio = 2.0;
  int decode_chunk_align = 16;      // suffix chunk boundaries are multiples of this
  int min_decode_chunk = 256;       // never split a suffix finer than this many tokens
  bool fuse_merge = true;           // finish single-chunk suffixes in their decode items (above)
  // Layout choice (off: every group with a prefix is planned as a cascade, as always). On: the
  // planner predicts the step's time with cost_model (null: CostModelParams::H200()) and plans a
  // group as PLAIN decode when that is predicted faster: its prefix pages are prepended to each of
  // its requests' suffix page tables and its prefix run is emptied (plan.groups[g].prefix.num_tokens
  // = 0, no prefix items), so the decode kernel reads the prefix once per request instead of the
  // prefix kernel reading it once per group. It also tries a few split sizes (prefix item target
  // ×½, ×1, ×2; suffixes split as the options say or not at all) and keeps the fastest predicted.
  // Only groups whose prefix fills whole pages can be plain (a partial page cannot sit in the
  // middle of a page table). Every candidate computes the same attention over the same tokens,
  // so the choice changes speed only, never the result beyond float rounding (the ⊕ order).
  bool choose_layout = false;
  // With choose_layout: a layout with plain groups is chosen only when it is predicted faster than
  // the best all-cascade candidate by more than this fraction. Where plain decode can win (prefixes
  // of a few hundred tokens) both layouts take 10-30 µs, mostly launch and per-wave fixed costs,
  // and the model's error there (~5-15%) is as large as the gaps it decides; within that band the
  // cascade is kept: it reads the prefix once instead of once per request, so it also degrades
  // less when other work shares the memory system.
  double plain_margin = 0.03;
  // With choose_layout: the other way round for groups whose prefix has at most tiny_prefix_tokens
  // (two K/V tiles of the prefix kernel) and whose requests' suffixes average at least half of it:
  // a layout whose plain groups are all such is chosen unless the all-cascade layout is predicted
  // faster by more than tiny_prefix_margin. There the prefix kernel's items are a tile or two each
  // (launch, query gather, epilogue: fixed costs) while plain decode re-reads at most twice the
  // suffix per request from L2, and the model's near-ties went to plain decode when measured (P =
  // 128, S ≥ 64, sessions 17-18; 32/8 B64 P256 S256, 9%, session 23; bench/NOTES-planner.md).
  // With shorter suffixes the re-read is most of a plain item's stream and the cascade measured
  // faster (5-16% at 32/32 B16 P128 S32), so the usual plain_margin holds. 0 tokens: off.
  int tiny_prefix_tokens = 256;
  double tiny_prefix_margin = 0.05;
  // ... and only at this head_dim (0: any): the one whose near-ties were measured. At head_dim 64
  // the cascade won them instead (H200, session 43, run 10: 32/8 B16 P256 S256 13.5 µs against plain
  // decode's 15.6, 32/32 21.0 against 22.8, 32/8 B256 P128 S256 49.3 against 51.6, all three given to
  // plain decode by the rule; bench/RESULTS.md).
  int tiny_prefix_head_dim = 128;
  // With choose_layout: also try the cascade with prefix items of at most this many rows (0: no
  // such candidate), where some group has more rows per KV head (requests × g) than that and fewer
  // than prefix_tile_rows would give. The CUDA backend sets it to its narrow sm_90a CTA's M tile
  // (64): one consumer warpgroup, half the SM's registers, so the decode kernel's CTAs stream beside
  // the prefix from its start. Each 64-row item streams its K/V range itself (twice the bytes per
  // CTA of 128-row items, at ~47 GB/s per CTA: CostModelParams::prefix_cta_gbs) with one warpgroup,
  // so it pays only where the prefix is short against the decode (bench/RESULTS.md,
  // session 24: 64/8 B48 P512 S128 21.3 µs against plain decode's 29.4; 32/8 B256 P8192 S32 109.2
  // against 82.2). Chosen for a predicted gain over the best other candidate of more than
  // plain_margin; never where the tiny-prefix rule (below) covers a group.
  int narrow_tile_rows = 0;
  // ... and only at this head_dim (0: any): the one the calibration timed it at. At head_dim 64 the
  // model's choices of it measured a wash in sum over 72 shapes, with losses of up to 20 µs where the
  // prefix is compute-bound (bench/RESULTS.md, session 24, run 12).
  int narrow_head_dim = 128;
  // Balanced prefix grid (prefix_balance.h): the persistent prefix kernel's CTAs (one per SM; 0:
  // off). Where a plan's prefix items are one wave that leaves some of them idle, each item gives
  // up a tail of its pair's K/V range to the idle CTAs, so that every CTA computes about as long.
  int balance_prefix_ctas = 0;
  // ... counting each item's fixed cost (queries, pipeline fill and drain, epilogue) as this many
  // K/V tiles of work (< 0: the head_dim's measured one, DefaultBalanceItemOverheadTiles in
  // prefix_balance.h), and only for a predicted gain of at least balance_min_gain of the busiest
  // CTA's work, and only where every item has more rows than balance_min_item_rows (the narrow
  // CTA's items run two per SM beside the decode: there no SM idles). The gain must pay for the
  // pair's extra state slot, which every finishing decode item then ⊕-merges: measured on the H200
  // (session 44) at B256 P32768, head_dim 64's 2.3% took 2.6-3.8 µs off the step, head_dim 128's
  // 1.5% and 256's 1.9% 0.3-1.4 µs at S = 32 but put 1.1-5.7 µs on at S = 256.
  double balance_item_overhead_tiles = -1;
  double balance_min_gain = 0.02;
  int balance_min_item_rows = 64;
  // ... and only where the plan's chunks have at least this many tiles: short items are bound by
  // their fixed costs, where the split rules above were calibrated, not by the idle SMs.
  int balance_min_chunk_tiles = 8;
  // ... and, as the other way to balance, the heads' ranges laid end to end and cut into equal
  // shares of slots of CTAs, one CTA per row tile (BalancePrefixGrid in prefix_balance.h): for
  // grids the chunks cannot fill, as the SMs a concurrent decode leaves (64 pairs on 112 CTAs).
  // Off by default: on the grid with all SMs it predicts ≤ 2.5% (session 45).
  bool balance_stream = false;
  // ... with the CTAs left over by whole slots (ctas mod row tiles) as narrow slots, each CTA
  // running several row tiles (PrefixStreamShape::narrow_slots), where that makes the busiest CTA
  // less busy. Measured on the H200 (bench/RESULTS.md, session 60): 32/8 B256 P32768 S256 with
  // the decode on 14 or 16 SMs (118 or 116 CTAs: 14 slots of 8 and 6 or 4 CTAs over) −2 to −9 µs
  // against its step on 20 SMs, where without them those k gave the prefix nothing.
  bool balance_stream_narrow = true;
  // Concurrent prefix/decode (the CUDA backend's mode, kernels/cuda/cuda_backend.h): the decode
  // kernel on k SMs beside a prefix grid of SMs − k CTAs, every request finished by the merge step.
  // concurrent_decode_sms = k > 0 plans the step for it (CascadePlan::concurrent_decode_sms; the
  // other options must then be the mode's: fuse_merge off, the prefix target and balance for
  // SMs − k CTAs, the stream balance). With choose_layout, concurrent_candidates are the k the
  // planner may choose instead for an all-cascade winner, scored by the cost model (its concurrent
  // step), for a predicted gain of more than plain_margin.
  int concurrent_decode_sms = 0;
  std::vector<int> concurrent_candidates;
  // ... and the concurrent decode's kernel: concurrent_decode_tma plans it as the persistent TMA
  // decode on exactly the k SMs (CascadePlan::concurrent_decode_tma; it never spreads to the SMs the
  // prefix CTAs free, so it pays where its bytes fit beside the prefix). With concurrent_tma_candidate
  // (the backend can run it: sm_90a) the planner, where it chooses the mode, takes it if the shape
  // has it (TmaDecodeModeled, decode_kernel_choice.h) and the cost model has it end clearly before
  // the prefix part (15%, plan.cc).
  bool concurrent_decode_tma = false;
  bool concurrent_tma_candidate = false;
  // ... and the k the planner may also choose for the mode with the TMA decode (with
  // concurrent_tma_candidate; scored by the model's rounds of its items, taken where that step
  // predicts less than the choice above, where both parts one after the other take ≥ 20 µs:
  // kTmaMinPartUs, plan.cc).
  std::vector<int> concurrent_tma_candidates;
  // ... and only from this head_dim up. At head_dim 64 the mode measured slower on every shape
  // tried (32/8 and 32/32 B256 P32768 S256: +7 and +4%, bench/RESULTS.md session 47), where the
  // model predicts 3-5% faster: it underestimates the sequential step's overlap (~15 µs measured,
  // 4 modelled) by more than the gain.
  int concurrent_min_head_dim = 128;
  // ... except the mode with the persistent TMA decode on its own candidates (concurrent_tma_
  // candidates), which is scored from this head_dim up: at head_dim 64 its step measured 2.6-17%
  // faster than one after the other at 32/8 B128-256 P8192-32768 S128-256 where a k is (10 of 12
  // shapes; 32/8 B256 P32768 S256 193.3 → 180.5 µs on 16 SMs; an H100, bench/RESULTS.md session
  // 89), with the TMA decode's head_dim-64 rate and bytes bound in the model (concurrent_tma_d64_*).
  int concurrent_tma_min_head_dim = 64;
  std::shared_ptr<const CostModelParams> cost_model;
};

// What the layout choice decided (PlanCascade with a report; filled also when choose_layout is off).
struct PlanReport {
  std::vector<uint8_t> group_plain;  // [groups]: 1 = planned as plain decode
  int concurrent_decode_sms = 0;     // the concurrent mode's k where chosen (PlanOptions)
  bool concurrent_decode_tma = false;  // ... with the persistent TMA decode on its k SMs
  int prefix_target_items = 0;       // the split options the plan was made with
  int min_prefix_chunk = 0;
  int min_decode_chunk = 0;
  int prefix_tile_rows = 0;
  double predicted_us = 0;           // the chosen plan (cost model; 0 with choose_layout off)
  double predicted_cascade_us = 0;   // every group cascade, the given split options
  double predicted_plain_us = 0;     // every eligible group plain, the given split options (+inf
                                     // where PlainStreamLowerBoundUs already loses: not planned)
  int candidates = 0;                // plans evaluated
  // Where the layout choice takes the concurrent mode: the same mode at the next lower and higher k
  // among the candidates of the chosen decode (concurrent_tma_candidates for the TMA decode, else
  // concurrent_candidates), as options for PlanCascade with choose_layout off; unset at the list's
  // ends and where the mode is not taken. The measured choice's neighbouring-k candidates
  // (measured_choice.h), which catch a model whose k went stale when a kernel got faster
  // (bench/RESULTS.md, session 87); filled by the choice itself, so that they cost no second one.
  std::optional<PlanOptions> concurrent_fewer_sms;
  std::optional<PlanOptions> concurrent_more_sms;
};

struct CascadePlan {
  // Shapes the plan was made for (run checks its arguments against them).
  int num_requests = 0;
  int num_qo_heads = 0;
  int num_kv_heads = 0;
  int head_dim = 0;
  int page_size = 0;
  int num_pages = 0;  // pool pages the page ids were checked against (run needs a pool this big)

  std::vector<PrefixWorkItem> prefix_items;
  std::vector<DecodeWorkItem> decode_items;
  std::vector<int32_t> state_indptr;       // [num_requests + 1]
  std::vector<int32_t> request_group;      // [num_requests]
  std::vector<PrefixGroup> groups;         // copied from the batch
  std::vector<int32_t> group_num_chunks;   // [groups]: prefix chunks of each group (0: no prefix)
  PageTable suffix;                        // copied from the batch: where decode items find tokens
  std::vector<int32_t> merge_requests;     // ascending: requests the merge step finishes (the
                                           // others are finished by their decode items)
  // 0: the persistent prefix kernel takes items round-robin (item = CTA + k · grid). G > 0: the plan
  // was balanced for exactly G CTAs (prefix_balance.h): CTA c runs item c, then the chain of
  // PrefixWorkItem::cta_next from it; the chains are disjoint and cover every prefix item. A kernel
  // launched with another grid takes the items round-robin (same results).
  int32_t prefix_balanced_ctas = 0;
  // 0: the prefix and decode kernels run one after the other. k > 0: planned for the concurrent
  // mode with the decode on k SMs (PlanOptions::concurrent_decode_sms); a backend without that mode
  // runs it one after the other (same results: no decode item finishes a request then).
  int32_t concurrent_decode_sms = 0;
  // With k > 0: 1 runs the decode as the persistent TMA decode on exactly the k SMs (PlanOptions::
  // concurrent_decode_tma), 0 as one CTA per item, which takes every SM the prefix CTAs free. A
  // backend without that kernel runs the other (same results).
  int32_t concurrent_decode_tma = 0;
  // With concurrent_decode_tma: the TMA decode's warps per CTA for this plan, 8 or 12 (as
  // TmaDecodeWarps runs them: 12 needs the heads as the mma's N), or 0 for the backend's own
  // (PREFIXD_DECODE_TMA_WARPS). Fewer warps stream the suffix slower but take less of the memory
  // system from the prefix beside them, which pays where the decode ends well before the prefix;
  // the measured choice times it (PlanCandidate::kFewerTmaWarps, measured_choice.h).
  int32_t concurrent_tma_warps = 0;

  int num_slots() const { return state_indptr.empty() ? 0 : state_indptr.back(); }
  // n where every request's run has the same n > 0 slots (state_indptr[r] = r · n: one group with
  // equal suffixes), else 0. The CUDA merge then takes the run bounds by arithmetic.
  int UniformRunStates() const;
  // Where every request's run starts with the same C > 0 prefix chunks (every group has C): bit
  // c · num_kv_heads + kv_head is set when state c of every request is empty for that KV head's
  // query heads (its items of chunk c are all empty: a stream grid's padding, prefix_balance.h),
  // for c · num_kv_heads + kv_head < 64; else 0. The CUDA merge then skips those states' v loads.
  uint64_t EmptyPrefixStates() const;
  // Whether some request of merge_requests has decode items (a suffix split into chunks, or no
  // fused merge): then the merge must follow the decode (Backend::RunCascadeParts).
  bool MergeNeedsDecode() const;
  // Whether a decode item finishes its request (DecodeWorkItem::finish), reading the request's
  // prefix states: then the decode part must follow the prefix part; otherwise they are
  // independent and may run at the same time.
  bool DecodeReadsPrefixStates() const;
  int gqa_group_size() const { return num_qo_heads / num_kv_heads; }

  // Flat int32 form: a header of counts, then the arrays above, in a fixed order.
  std::vector<int32_t> Serialize() const;
  // Ints in Serialize()'s header (the arrays follow it in order; the CUDA backend reads its items
  // on the device at their offsets).
  static constexpr int kSerializedHeaderInts = 17;
  // Throws kInvalidArgument on a malformed buffer: wrong magic/version, sizes that do not add up,
  // or contents that break the plan's invariants (see Validate).
  static CascadePlan Deserialize(const std::vector<int32_t>& data);
  static CascadePlan Deserialize(const int32_t* data, size_t size);
  // Structural checks a backend relies on before running a plan it did not build: items, slots and
  // page ids in range, state_indptr consistent with the groups. Throws kInvalidArgument.
  void Validate() const;
};

// Validates the batch against the pool (shapes, GQA divisibility, supported head_dim, page indices
// in range, groups covering requests in order, prefix runs inside the pool) and throws
// kInvalidArgument with a message naming the offending request/group; then builds the plan.
// Splitting: all groups' prefixes (and, separately, all requests' suffixes) share one chunk
// length, the smallest that keeps the item count ≤ target_items; a range is cut into at most
// min(ceil(len / align), len / min_chunk) near-equal chunks (≥ 1), interior boundaries aligned.
// With options.fuse_merge, every request whose suffix is one chunk is finished by its decode items;
// merge_requests lists the rest (all requests without fuse_merge).
CascadePlan PlanCascade(const DecodeBatch& batch, const KvPoolShape& pool, const PlanOptions& options);
// The same, reporting the layout choice (options.choose_layout) in *report (may be null).
CascadePlan PlanCascade(const DecodeBatch& batch, const KvPoolShape& pool, const PlanOptions& options,
                        PlanReport* report);

// The plan's Serialize() with a balanced grid whose chains are one item each (prefix_balanced_ctas
// = the prefix item count) written as no balance, for the two run alike: the persistent prefix
// grid has one CTA per item up to its cap and takes a balanced grid only within that cap, so
// either CTA c runs item c alone in both, or both run the items round-robin on the capped grid.
// Plans with equal keys run the same work the same way; the measured choice and the planner check
// tell candidates apart by it, so that one schedule is not timed against itself (bench/RESULTS.md,
// session 83: at B256 the half-target cascade is the cascade's 128 items balanced onto the same
// 128 CTAs, and a timing coin flip between the two looked like a 12% miss).
std::vector<int32_t> ScheduleKey(const CascadePlan& plan);

// Whether a group can be planned as plain decode: its prefix is empty or fills whole pages.
bool CanPlanPlain(const PrefixGroup& group, int page_size);
// A lower bound of the cost model's time for the batch with the groups where plain[g] != 0 as plain
// decode, without planning it (which costs O(requests × prefix pages): 14 ms of host time at 128
// requests × 262144 tokens): those groups' prefixes streamed once per request at the fastest rate
// the model knows.
double PlainStreamLowerBoundUs(const DecodeBatch& batch, const KvPoolShape& pool, const std::vector<uint8_t>& plain,
                               const CostModelParams& params);
// The batch with every group g where plain[g] != 0 rewritten as plain decode: its prefix pages
// prepended to each of its requests' suffix tables, its prefix run emptied (first_page kept, 0
// tokens). plain has one entry per group (or is empty: no change); a marked group whose prefix does
// not fill whole pages throws kInvalidArgument.
DecodeBatch PlainLayout(const DecodeBatch& batch, const std::vector<uint8_t>& plain, int page_size);

}  // namespace prefixd::kernels
