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
// Measured (H200, bench/RESULTS.md session 59): 15% of the tokens took 32/32 B256 P32768 S32 1.9 /
// 2.4 µs lower (fp16 / bf16); more is slower, the GQA-1 decode streaming ~22 GB/s per SM on the 4
// idle SMs, and so is every share at P8192 (44 µs of prefix). Off by default.
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

}  // namespace prefixd::kernels
