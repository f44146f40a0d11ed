// PrefixCtaPairsShareKv (prefix_cta_pairs.h) on hand-made item lists: which grids let CTAs 2j and
// 2j + 1 share every K/V tile. The planner's own plans are checked in plan_test.cc (PlanCtaPairs).
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "prefixd/kernels/prefix_cta_pairs.h"

namespace prefixd::kernels {
namespace {

// chunks × heads × row tiles items in the planner's order (chunk, KV head, row tile), one group,
// each chunk `chunk_tokens` long, `rows` rows per KV head in tiles of 128.
std::vector<PrefixWorkItem> Items(int chunks, int heads, int rows, int chunk_tokens) {
  std::vector<PrefixWorkItem> items;
  for (int c = 0; c < chunks; ++c)
    for (int h = 0; h < heads; ++h)
      for (int r0 = 0; r0 < rows; r0 += 128)
        items.push_back(PrefixWorkItem{0, h, r0, std::min(rows, r0 + 128), c * chunk_tokens, (c + 1) * chunk_tokens, c});
  return items;
}

TEST(PrefixCtaPairs, EvenRowTilesPairOnEvenGrids) {
  const std::vector<PrefixWorkItem> items = Items(2, 8, 1024, 16384);  // 32/8 B256: 128 items
  EXPECT_TRUE(PrefixCtaPairsShareKv(items, 128, 0, 128));
  EXPECT_TRUE(PrefixCtaPairsShareKv(items, 64, 0, 128));   // round-robin: items c and c + 64
  EXPECT_TRUE(PrefixCtaPairsShareKv(items, 2, 0, 128));
  EXPECT_FALSE(PrefixCtaPairsShareKv(items, 127, 0, 128));  // odd
  EXPECT_FALSE(PrefixCtaPairsShareKv(items, 1, 0, 128));
  // 96 CTAs: CTA 94 runs items 94 and 190 (out of range: one item), CTA 95 items 95 only: fine;
  // but with 126 CTAs, CTA 0 runs 0 and 126 while CTA 1 runs 1 and 127: still the same heads.
  EXPECT_TRUE(PrefixCtaPairsShareKv(items, 96, 0, 128));
  EXPECT_TRUE(PrefixCtaPairsShareKv(items, 126, 0, 128));
}

TEST(PrefixCtaPairs, PairsAcrossHeadsOrChunksDoNot) {
  // One row tile per KV head (32/32 B64): neighbouring CTAs run different heads.
  EXPECT_FALSE(PrefixCtaPairsShareKv(Items(2, 32, 64, 4096), 64, 0, 128));
  // Three row tiles per head: the second pair straddles heads 0 and 1.
  EXPECT_FALSE(PrefixCtaPairsShareKv(Items(1, 4, 384, 4096), 12, 0, 128));
  // 6 items of 2 row tiles, grid 4: CTA 0 runs items 0, 4; CTA 1 runs 1, 5: pairs; CTA 2 runs 2
  // only, CTA 3 runs 3 only: pairs.
  EXPECT_TRUE(PrefixCtaPairsShareKv(Items(3, 1, 256, 1024), 4, 0, 128));
  // Grid 2 over 6 items: CTA 0 runs 0, 2, 4; CTA 1 runs 1, 3, 5: each step the same chunk.
  EXPECT_TRUE(PrefixCtaPairsShareKv(Items(3, 1, 256, 1024), 2, 0, 128));
}

TEST(PrefixCtaPairs, RowTileCountsAndTokenRangesMustMatch) {
  std::vector<PrefixWorkItem> items = Items(1, 2, 256, 4096);
  ASSERT_TRUE(PrefixCtaPairsShareKv(items, 4, 0, 128));
  // Item 1 with two row tiles' rows (the kernel would walk its tokens twice).
  items[1].row_end = items[1].row_begin + 200;
  EXPECT_FALSE(PrefixCtaPairsShareKv(items, 4, 0, 128));
  EXPECT_TRUE(PrefixCtaPairsShareKv(items, 4, 0, 256));  // in tiles of 256 rows both are one tile
  items = Items(1, 2, 256, 4096);
  items[3].kv_end -= 64;
  EXPECT_FALSE(PrefixCtaPairsShareKv(items, 4, 0, 128));
  items = Items(1, 2, 256, 4096);
  items[2].group = 1;
  EXPECT_FALSE(PrefixCtaPairsShareKv(items, 4, 0, 128));
  EXPECT_FALSE(PrefixCtaPairsShareKv({}, 2, 0, 128));
  EXPECT_FALSE(PrefixCtaPairsShareKv(Items(1, 1, 256, 64), 2, 0, 0));
}

TEST(PrefixCtaPairs, BalancedChainsAreFollowed) {
  // A balanced grid of 4 CTAs over 8 items: CTAs 0-3 run items 0-3, then their chains.
  std::vector<PrefixWorkItem> items = Items(2, 2, 256, 4096);  // items 0-3 chunk 0, 4-7 chunk 1
  items[0].cta_next = 4;
  items[1].cta_next = 5;
  items[2].cta_next = 6;
  items[3].cta_next = 7;
  EXPECT_TRUE(PrefixCtaPairsShareKv(items, 4, 4, 128));
  // CTA 1's chain skips to item 7 (the other head): no longer the same tiles as CTA 0's.
  items[1].cta_next = 7;
  items[3].cta_next = 5;
  EXPECT_FALSE(PrefixCtaPairsShareKv(items, 4, 4, 128));
  // A chain of different length.
  items = Items(2, 2, 256, 4096);
  items[0].cta_next = 4;
  EXPECT_FALSE(PrefixCtaPairsShareKv(items, 4, 4, 128));
  // The chains are ignored where the grid is not the balanced one (round-robin instead).
  EXPECT_TRUE(PrefixCtaPairsShareKv(items, 4, 6, 128));
  // Broken chains: past the list, or a loop.
  items[0].cta_next = 9;
  items[1].cta_next = 9;
  EXPECT_FALSE(PrefixCtaPairsShareKv(items, 4, 4, 128));
  items[0].cta_next = 0;
  items[1].cta_next = 1;
  EXPECT_FALSE(PrefixCtaPairsShareKv(items, 4, 4, 128));
}

}  // namespace
}  // namespace prefixd::kernels
