// Per-CTA work lists of the one-launch fused cascade kernel (a pure CPU function of a plan).
//
// The fused kernel (kernels/cuda/cascade_fused.h) runs a plan's prefix items (compute bound:
// tensor-core tiles over a shared prefix) and decode items (memory bound: one request's suffix
// pages) in one persistent grid. Each CTA walks its own list, built here:
//  1. balance: items in descending order of estimated cost, each to the CTA with the least work so
//     far (longest processing time first), cost in prefix tile steps (128 rows × 128 tokens);
//  2. order within a CTA: so that at any moment some SMs compute prefix tiles while others stream
//     suffix tiles (the two halves then overlap in time instead of running one after the other),
//     even CTAs run their prefix items first and odd CTAs their decode items first (kAlternate).
// Entries: e ≥ 0 is prefix item e of the plan, e < 0 decode item −e − 1.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "prefixd/kernels/plan.h"

namespace prefixd::kernels {

enum class FusedOrder { kAlternate, kPrefixFirst, kDecodeFirst };
// "alternate" / "prefix-first" / "decode-first"; throws kInvalidArgument on anything else.
FusedOrder ParseFusedOrder(const std::string& name);

struct FusedScheduleOptions {
  int num_ctas = 132;        // the persistent grid (at most one CTA per item is used)
  int tile_rows = 128;       // rows of one prefix tile step (the kernel's M tile)
  int tile_tokens = 128;     // tokens of one K/V tile (prefix or suffix)
  // Estimated cost of one suffix tile (tile_tokens of one request and KV head, memory bound) and the
  // fixed cost of an item (query load, epilogue), both in prefix tile steps.
  double decode_tile_cost = 1.5;
  double item_cost = 0.5;
  bool prefix_items = true;  // false: leave the prefix items out (to time the decode items alone)
  bool decode_items = true;  // false: leave the decode items out
  FusedOrder order = FusedOrder::kAlternate;
};

struct FusedSchedule {
  std::vector<int32_t> cta_indptr;  // [num_ctas + 1]
  std::vector<int32_t> entries;     // CTA b: entries [cta_indptr[b], cta_indptr[b + 1])
  int num_ctas() const { return cta_indptr.empty() ? 0 : int(cta_indptr.size()) - 1; }
  // Encoding of an entry.
  static int32_t PrefixEntry(int64_t i) { return int32_t(i); }
  static int32_t DecodeEntry(int64_t i) { return int32_t(-i - 1); }
};

// Throws kInvalidArgument for num_ctas < 1 or non-positive tile sizes or costs.
FusedSchedule ScheduleFusedItems(const CascadePlan& plan, const FusedScheduleOptions& options);

}  // namespace prefixd::kernels
