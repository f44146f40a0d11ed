// When each unit of a plan's prefix items gets its last state, in the persistent prefix grid's own
// schedule: a pure CPU reading of a plan, for the benchmark (prefixd_plan_bench) and for any ⊕ that
// would start on the units already complete before the prefix grid ends.
//
// A unit is one (group, KV head, row tile): the rows one prefix item computes over one chunk of the
// head's prefix. Its requests' prefix states are all written once every chunk's item of it has run.
// The schedule is the kernel's (PrefixItemsByCta, prefix_balance.h): in a balanced grid of exactly
// that many CTAs, CTA c runs item c then its PrefixWorkItem::cta_next chain; otherwise item i runs
// on CTA i mod ctas, in order. Each item takes its K/V tiles plus a fixed cost in tiles (the
// balance's own model, prefix_balance.h), so the times are estimates in tiles, and the fractions
// are of the busiest CTA's total: 1.0 means the unit completes as the grid ends.
// Session 93 (bench/NOTES-fused.md): in the concurrent step's stream-balanced plans every unit
// completes in the grid's last 3%, so no merge can start before the prefix grid ends.
#pragma once

#include <cstdint>
#include <vector>

#include "prefixd/kernels/plan.h"

namespace prefixd::kernels {

struct PrefixUnitCompletion {
  int32_t group = 0, kv_head = 0, row_begin = 0;
  double fraction = 0;  // its last item's end / the busiest CTA's end, in (0, 1]
};

// One entry per unit of plan.prefix_items (in order of first appearance), on a grid of `ctas`
// persistent CTAs, with K/V tiles of tile_tokens tokens and item_overhead_tiles per item. Empty
// (no prefix items): an empty vector. Throws kInvalidArgument for ctas, tile_tokens < 1 or a
// negative overhead.
std::vector<PrefixUnitCompletion> PrefixUnitCompletions(const CascadePlan& plan, int ctas, int tile_tokens,
                                                        double item_overhead_tiles);

}  // namespace prefixd::kernels
