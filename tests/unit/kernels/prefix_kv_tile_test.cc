// ChoosePrefixKvTileTokens (prefix_kv_tile.h): the sm_90a prefix kernel's K/V tile for a plan.
#include <gtest/gtest.h>

#include <vector>

#include "prefixd/kernels/plan.h"
#include "prefixd/kernels/prefix_kv_tile.h"

namespace prefixd::kernels {
namespace {

// A plan with only what the rule reads: head_dim and prefix items of these token counts.
CascadePlan ItemsPlan(int head_dim, const std::vector<int>& item_tokens) {
  CascadePlan plan;
  plan.head_dim = head_dim;
  int begin = 0;
  for (int tokens : item_tokens) {
    PrefixWorkItem it{};
    it.kv_begin = begin;
    it.kv_end = begin + tokens;
    plan.prefix_items.push_back(it);
    begin += tokens;
  }
  return plan;
}

TEST(PrefixKvTile, DefaultsPerHeadDim) {
  EXPECT_EQ(DefaultPrefixKvTileTokens(64), 192);
  EXPECT_EQ(DefaultPrefixKvTileTokens(128), 128);
  EXPECT_EQ(DefaultPrefixKvTileTokens(256), 64);
}

TEST(PrefixKvTile, HeadDim64ChoosesByTheItems) {
  struct Case {
    std::vector<int> items;
    int expected;
  };
  const Case cases[] = {
      {{16384, 16384}, 192},    // long chunks: 86 tiles of 192 against 128 of 128
      {{128}, 128},             // one tile either way, a third of a 192-token one masked
      {{128, 128, 128}, 128},   // the planner's fine chunks
      {{256}, 128},             // two tiles either way
      {{160}, 192},             // one 192-token tile against two of 128
      {{192}, 192},
      {{384}, 192},             // 2 · 232 = 464 against 3 · 168 = 504
      {{1000}, 128},            // 6 · 232 = 1392 against 8 · 168 = 1344: the last 192-token tile mostly empty
      {{}, 192},                // no prefix items: the default
      {{0, 0}, 192},            // empty items count nothing
  };
  for (const Case& c : cases) {
    const CascadePlan plan = ItemsPlan(64, c.items);
    SCOPED_TRACE(testing::Message() << "items " << c.items.size() << ", first "
                                    << (c.items.empty() ? 0 : c.items[0]));
    const int want = PrefixKvTileCost(plan, 128) < PrefixKvTileCost(plan, 192) ? 128 : 192;
    EXPECT_EQ(ChoosePrefixKvTileTokens(plan), want) << "the rule is the cost comparison";
    EXPECT_EQ(ChoosePrefixKvTileTokens(plan), c.expected);
  }
}

TEST(PrefixKvTile, CostCountsWholeTilesAndTheTurn) {
  const CascadePlan plan = ItemsPlan(64, {1, 128, 129, 0});
  // 1 → 1 tile, 128 → 1, 129 → 2 (of 128); the empty item nothing.
  EXPECT_DOUBLE_EQ(PrefixKvTileCost(plan, 128), 4.0 * (128 + kPrefixKvTileTurnTokens));
  EXPECT_DOUBLE_EQ(PrefixKvTileCost(plan, 192), 3.0 * (192 + kPrefixKvTileTurnTokens));
}

TEST(PrefixKvTile, OtherHeadDimsKeepTheirOneTile) {
  for (int d : {128, 256}) {
    EXPECT_EQ(ChoosePrefixKvTileTokens(ItemsPlan(d, {128})), DefaultPrefixKvTileTokens(d));
    EXPECT_EQ(ChoosePrefixKvTileTokens(ItemsPlan(d, {16384})), DefaultPrefixKvTileTokens(d));
  }
}

}  // namespace
}  // namespace prefixd::kernels
