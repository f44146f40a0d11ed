// A balanced grid for the persistent prefix kernel: a pure CPU step of planning (PlanCascade takes it
// for every plan it builds when PlanOptions::balance_prefix_ctas is set).
//
// Why: the planner cuts prefixes into chunks until the items fill one wave of the persistent sm_90a
// kernel (one CTA per SM), but (KV head, row tile) pairs × chunks rarely equals the SM count: 64
// pairs × 2 chunks = 128 items on a 132-SM H200 leave 4 SMs idle for the whole of a compute-bound
// prefix part (3% of it; bench/NOTES-fused.md, sessions 34 and 43). Stream-K (each CTA a range of
// the items' tiles laid end to end, crossing item boundaries) would balance it exactly, but then
// the CTAs of one KV head's row tiles read the same K/V tile up to a whole item apart in time, far
// more bytes than L2 holds in between: up to 8× the DRAM traffic at 32/8 B256 (eight row tiles per
// head). So here each pair gives the idle CTAs the same tail of its K/V range instead: its chunks
// (the plan's items, shortened, one per CTA as before and aligned across the head's row tiles) plus
// one tail chunk. The idle CTAs run the tails one after another, spread so that at each step they
// run neighbouring (KV head, row tile) pairs, i.e. mostly the same head's tails side by side, which
// share their K/V in L2. Each pair's rows get one more state slot (the tail's chunk).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "prefixd/kernels/plan.h"

namespace prefixd::kernels {

// An item's fixed cost in K/V tiles of its head_dim's kernel (DefaultPrefixKvTileTokens), as the
// idle SMs' chains of tails measured it on an H200 (bench/NOTES-prefix.md, session 44; 32/8 B256
// P32768, 16 tails per chain): ~1.4 µs beside 1.74 µs per 192-token tile at head_dim 64, ~4 µs
// beside 1.68 µs per 128-token tile at 128; at 256, ~4 µs per 64-row walk of its 128-row items
// beside ~0.77 µs per 64-token tile walk (there the rule then finds no gain). The descriptor, the
// queries and the first tiles of each item come from DRAM one after another, and the epilogue
// writes its states; pulling the next item into L2 ahead by the producer's TMA made it slower
// (the prefetches queue in front of the SM's own loads).
constexpr double DefaultBalanceItemOverheadTiles(int head_dim) {
  return head_dim == 64 ? 0.8 : head_dim == 128 ? 2.5 : 5.2;
}

// The one-wave grid being balanced, in K/V tiles of the kernel (DefaultPrefixKvTileTokens).
struct PrefixBalanceShape {
  int64_t pairs = 0;                 // (group, KV head, row tile) pairs, every one of the same length
  int chunks = 0;                    // the plan's chunks per pair (items = pairs × chunks < ctas)
  int64_t tiles = 0;                 // K/V tiles of one pair's range
  int ctas = 0;                      // the persistent grid
  double item_overhead_tiles = 2.5;  // an item's fixed cost, in tiles
};

struct PrefixBalance {
  int64_t tail_tiles = 0;     // each pair's tail, in tiles (its range's last ones)
  int spare_ctas = 0;         // CTAs that run the tails (the grid then has pairs × chunks + spare_ctas)
  double busiest_before = 0;  // the busiest CTA's work, tiles + overheads: one chunk
  double busiest_after = 0;   // max(a shortened chunk, a spare CTA's tails)
};

// The tail length that minimises the busiest CTA's work; nullopt where no tail lowers it (no idle
// CTA, or chunks too short to give any tile).
std::optional<PrefixBalance> ChoosePrefixBalance(const PrefixBalanceShape& shape);

// The other balance (PlanOptions::balance_stream), for grids that chunks cannot fill evenly, e.g.
// the 112 CTAs a concurrent decode on 20 SMs leaves to 64 pairs (8 KV heads × 8 row tiles at 32/8
// B256): tails would put two on some idle CTAs (busiest 2/3 of a pair's range, against 64/112 =
// 4/7 for an even split). Stream-K over the heads instead of the pairs: a "slot" of R CTAs, one per
// row tile of a head, takes an equal share of the heads' K/V ranges laid end to end; a share that
// ends inside a head's range continues at the next head's start. The R CTAs of a slot so read the
// same head's tiles at the same time (sharing them in L2, as the plan's own chunks do), where
// stream-K over the pairs would read a head's tiles once per row tile, far apart in time. A head's
// range is cut into as many pieces (chunks) as shares cover it; every head gets the same number
// of chunks, the missing ones as empty items (which write the empty state) on the least busy slots.
//
// Narrow slots (narrow_slots): the ctas mod R CTAs a grid of whole slots leaves idle (116 CTAs =
// 14 slots of 8 and 4 idle, so a decode on 16 SMs gave the prefix nothing over one on 20) form
// slots of c CTAs, c a divisor of R (largest first), each CTA running R / c row tiles one after
// another over its slot's share: a narrow slot computes c / R as fast as a whole one, so its
// share is c / R of one. Its CTAs read their share's tiles R / c times (the first pass's tiles
// may have left L2 by the next: up to R / c − 1 more reads of a share of c / R, bytes the
// compute-bound prefix these grids serve has room for).
struct PrefixStreamShape {
  int64_t heads = 0;   // (group, KV head) pairs of row tiles
  int row_tiles = 0;   // per head, every head the same
  int64_t tiles = 0;   // K/V tiles of one head's range
  int ctas = 0;
  double item_overhead_tiles = 2.5;
  bool narrow_slots = false;
};

struct PrefixStream {
  int slots = 0;             // used, whole and narrow (the grid: `ctas` CTAs)
  int narrow_slots = 0;      // of them narrow (after the whole ones in the stream)
  int ctas = 0;              // the grid: row_tiles per whole slot, c per narrow slot of c CTAs
  int64_t share_tiles = 0;   // a whole slot's share of the heads' tiles (the last one's may be less)
  int chunks = 0;            // pieces of the most cut head: every head's chunk count
  double busiest_after = 0;  // the busiest CTA's tiles + its items (empty ones too) × the overhead
};

// The even split over ctas / row_tiles slots (and the narrow ones); nullopt where there are fewer
// than two whole slots.
std::optional<PrefixStream> ChoosePrefixStream(const PrefixStreamShape& shape);

// Rewrites a plan's prefix items, group_num_chunks and prefix_balanced_ctas to the balanced grid
// where it applies: options.balance_prefix_ctas > 0, every item more than
// options.balance_min_item_rows rows, every group with a prefix of the same length and chunk count,
// chunks of at least options.balance_min_chunk_tiles tiles, and a gain of at least
// options.balance_min_gain. The tails where the items are one wave with idle CTAs; with
// options.balance_stream also the stream over the heads (where every head has the same row
// tiles), the one that predicts the less busy CTA. Returns whether it did. The items must be
// PlanFixed's (one per pair and chunk, chunks covering each pair's range); call it before the
// state slots are laid out (they follow group_num_chunks).
bool BalancePrefixGrid(CascadePlan* plan, const PlanOptions& options);

// The items each CTA of a persistent prefix grid of `ctas` CTAs runs, in the kernel's order: with
// `chains` (a grid of the plan's prefix_balanced_ctas), CTA c runs item c and then its
// PrefixWorkItem::cta_next chain; otherwise item i runs on CTA i mod ctas, in order. The cost model
// and PrefixUnitCompletions read the schedule from here. Throws kInvalidArgument for ctas < 1 or a
// chain that loops.
std::vector<std::vector<int64_t>> PrefixItemsByCta(const CascadePlan& plan, int ctas, bool chains);

}  // namespace prefixd::kernels
