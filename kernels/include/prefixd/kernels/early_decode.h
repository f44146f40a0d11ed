// Early decode: a plan's decode items rearranged so that part of the suffix work runs on the SMs
// the prefix grid leaves idle, beside it, instead of after it (the CUDA backend's
// PREFIXD_EARLY_DECODE_PERCENT; bench/NOTES-fused.md, session 59). A pure CPU function of a loaded plan.
//
// Why: a compute-bound prefix part of 128 items runs on 128 of the H200's 132 SMs for its whole
// length (~220 µs at B256 P32768), and the decode after it streams its K/V alone (~34 µs at 32/32
// B256 S32). Run beside the prefix, the decode's finishing items would need prefix states that do
// not exist yet; so a request of the early set A is split into
//  - one EARLY item per KV head: its whole suffix, finish = 0, written to the request's suffix slot
//    (slot_offset = c, the group's prefix chunks, as the finishing item had), and
//  - one MERGE-ONLY item per KV head in the late decode: an empty token range, finish = 1,
//    slot_offset = c + 1, so that its epilogue ⊕-merges the c prefix states and the early state
//    into the final outputs (its own state is empty and its own slot, past the run, never written).
// Only requests finished by their decode items (one finishing item per KV head) can be early; the
// rest keep their items. The merge-only items cost their epilogue's state reads: (c + 1) states of
// g heads, against the suffix's K/V bytes an early item moves.
// Measured (H200, bench/RESULTS.md sessions 59, 61): with the one-item-at-a-time decode as the early
// grid, 15% of the tokens took 32/32 B256 P32768 S32 1.9 / 2.4 µs lower (fp16 / bf16); more is
// slower (it streams ~22 GB/s per SM on the 4 idle SMs), and so is every share at P8192 (44 µs of
// prefix). With the persistent TMA decode as the early grid (~55 GB/s per SM) 30-35% took it 1.6
// to 3.6 µs lower; 40% +18 µs and 50% +72 µs: an early grid that outlasts the prefix grid holds
// the late decode back, so the share the backend takes by itself (EarlyDecodeAutoShare) stays
// clear of that edge.
#pragma once

#include <cstdint>
#include <vector>

#include "prefixd/kernels/plan.h"

namespace prefixd::kernels {

struct EarlyDecodeSplit {
  // The late items first (the plan's items of requests not in A, in order, then A's merge-only
  // items), then the early items: [0, num_late) and [num_late, num_late + num_early).
  std::vector<DecodeWorkItem> items;
  int num_late = 0;
  int num_early = 0;
  int num_early_requests = 0;  // |A|
};

// A = the first requests, in request order, finished by their decode items, until their suffix
// tokens reach early_share (0-1) of all such requests' suffix tokens (at least one request when
// early_share > 0 and there is one). early_share = 0, or no such request: the plan's items
// unchanged (num_early = 0).
EarlyDecodeSplit SplitEarlyDecode(const CascadePlan& plan, double early_share);

// The share the CUDA backend takes where none is asked for (PREFIXD_EARLY_DECODE_PERCENT=auto, its
// default; with the TMA decode as the early grid): what `idle_sms` SMs stream at sm_gbs while the
// prefix grid runs its predicted time, as a share of the K/V bytes of the suffixes that decode
// items finish, times `safety`, at most max_share; 0 where the predicted prefix part is shorter
// than min_prefix_us, the share under min_share (there the merge-only items' state reads
// outweigh what moves beside the prefix) or the plan's GQA group over max_gqa.
// Measured (H200, bench/RESULTS.md session 61, run 4, each against the share 0 in one process):
// 32/32 B256 P32768 S32 (model's prefix 232 µs, share 32%) −3.5 to −4.6 µs; 32/32 B64 P32768 S32
// (152 µs, 85%) +35 µs, the early grid outlasting the prefix grid; 32/32 B64 P32768 S256 (11%)
// +2 to +2.7 µs; 32/8 B256 P32768 S32 (100%) +0.4 to +0.8 µs. Hence the longer shortest prefix
// part and the cap of 40% (35% measured clear of the edge beside a 215 µs prefix, 40% over it).
// Run 5, with those: 32/32 B256 P32768 S32 −3.2 to −4.1 µs, the B64 rows left alone, but 32/8
// B256 P32768 S32 (40%) +4.0 to +4.8 µs: groups of one head only.
struct EarlyDecodeRule {
  int max_gqa = 1;               // H_qo / H_kv
  double sm_gbs = 55.0;          // s61: 35% of 32/32 B256 S32's 134 MB beside a ~215 µs prefix on 4 SMs
  double safety = 0.85;
  double min_prefix_us = 180.0;  // of the cost model's prefix part
  double min_share = 0.10;
  double max_share = 0.40;
};
// Whether EarlyDecodeAutoShare can give `plan` a share at all, before its prefix time is
// predicted: idle SMs, a group of at most max_gqa heads, some finishing decode item.
bool EarlyDecodeAutoEligible(const CascadePlan& plan, int idle_sms, const EarlyDecodeRule& rule = {});
// kv_token_bytes: one token's K and V bytes of one KV head (2 · head_dim · dtype bytes).
double EarlyDecodeAutoShare(const CascadePlan& plan, int idle_sms, double predicted_prefix_us, int64_t kv_token_bytes,
                            const EarlyDecodeRule& rule = {});

}  // namespace prefixd::kernels
