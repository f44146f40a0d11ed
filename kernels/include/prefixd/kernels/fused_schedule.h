// Per-CTA work lists of the one-launch fused cascade kernel (a pure CPU function of a plan).
//
// The fused kernel (kernels/cuda/cascade_fused.h) runs a plan's prefix items (compute bound:
// tensor-core tiles over a shared prefix, on a CTA's two consumer warpgroups) and its decode items
// (memory bound: one request's suffix pages, on three other warps of the same CTA) side by side on
// every SM. Each CTA walks its own list, built here:
//  - prefix items round-robin, item i to CTA i mod num_ctas, in plan order: the persistent prefix
//    kernel's own distribution, so that the prefix half runs as it does alone;
//  - decode items by tokens, longest first, each to the CTA with the fewest suffix tokens so far
//    (longest processing time first; the two halves run concurrently, so each is balanced on its
//    own).
// A CTA's list holds its prefix entries first, then its decode entries. Entries: e ≥ 0 is prefix
// item e of the plan, e < 0 decode item −e − 1.
#pragma once

#include <cstdint>
#include <vector>

#include "prefixd/kernels/plan.h"

namespace prefixd::kernels {

struct FusedScheduleOptions {
  int num_ctas = 132;        // the persistent grid (at most one CTA per item is used)
  bool prefix_items = true;  // false: leave the prefix items out (to time the decode items alone)
  bool decode_items = true;  // false: leave the decode items out
};

struct FusedSchedule {
  std::vector<int32_t> cta_indptr;  // [num_ctas + 1]
  std::vector<int32_t> entries;     // CTA b: entries [cta_indptr[b], cta_indptr[b + 1])
  int num_ctas() const { return cta_indptr.empty() ? 0 : int(cta_indptr.size()) - 1; }
  // Encoding of an entry.
  static int32_t PrefixEntry(int64_t i) { return int32_t(i); }
  static int32_t DecodeEntry(int64_t i) { return int32_t(-i - 1); }
};

// Throws kInvalidArgument for num_ctas < 1.
FusedSchedule ScheduleFusedItems(const CascadePlan& plan, const FusedScheduleOptions& options);

}  // namespace prefixd::kernels
