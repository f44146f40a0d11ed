// ChoosePrefixKvTileTokens (prefix_kv_tile.h): the sm_90a prefix kernel's K/V tile for a plan.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "prefixd/kernels/page_table.h"
#include "prefixd/kernels/plan.h"
#include "prefixd/kernels/prefix_kv_tile.h"
#include "unit/kernels/random_batch.h"

namespace prefixd::kernels {
namespace {

// A plan with only what the rule reads: head_dim and prefix items of these token counts, each of
// `rows` query rows (128: the wide CTA's row tile).
CascadePlan ItemsPlan(int head_dim, const std::vector<int>& item_tokens, int rows = 128) {
  CascadePlan plan;
  plan.head_dim = head_dim;
  int begin = 0;
  for (int tokens : item_tokens) {
    PrefixWorkItem it{};
    it.kv_begin = begin;
    it.kv_end = begin + tokens;
    it.row_end = rows;
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
  EXPECT_DOUBLE_EQ(PrefixKvTileCost(plan, 128), 4.0 * (128 + PrefixKvTileTurnTokens(64)));
  EXPECT_DOUBLE_EQ(PrefixKvTileCost(plan, 192), 3.0 * (192 + PrefixKvTileTurnTokens(64)));
  // The turn is the head_dim's: at 128 a tile's fixed cost is half as many tokens of its work.
  const CascadePlan plan128 = ItemsPlan(128, {1, 160, 161});
  EXPECT_DOUBLE_EQ(PrefixKvTileCost(plan128, 160), 4.0 * (160 + PrefixKvTileTurnTokens(128)));
  EXPECT_LT(PrefixKvTileTurnTokens(128), PrefixKvTileTurnTokens(64));
}

TEST(PrefixKvTile, HeadDim128ChoosesByTheItemsInWideCtas) {
  EXPECT_EQ(AlternatePrefixKvTileTokens(128), 160);
  struct Case {
    std::vector<int> items;
    int rows;
    int expected;
  };
  const Case cases[] = {
      {{16384, 16384}, 128, 160},  // 103 · 180 against 128 · 148 per item
      {{10923, 10923}, 128, 160},  // 69 · 180 against 86 · 148 (32/8 B256 P32768's items)
      // 26 · 180 = 4680 against 32 · 148 = 4736, but items averaging under kLongTileItemTokens
      // (measured 2.7-4.0% slower with 160 since the speculative softmax, session 88)
      {{4096, 4096}, 128, 128},
      {{1024, 1024}, 128, 128},    // 7 · 180 = 1260 against 8 · 148 = 1184 (measured 4% slower with 160)
      {{128}, 128, 128},           // one tile either way, a fifth of the 160-token one masked
      {{160}, 128, 128},           // one tile against two, but a short item
      {{16384, 16384}, 64, 128},   // the narrow CTA: 160 measured slower at every length
      {{16384}, 1, 128},
      {{16384, 16384}, 65, 160},   // 65 rows: the wide CTA
      {{}, 128, 128},              // no prefix items: the default
  };
  for (const Case& c : cases) {
    const CascadePlan plan = ItemsPlan(128, c.items, c.rows);
    SCOPED_TRACE(testing::Message() << "items " << c.items.size() << ", first "
                                    << (c.items.empty() ? 0 : c.items[0]) << ", rows " << c.rows);
    EXPECT_EQ(ChoosePrefixKvTileTokens(plan), c.expected);
  }
}

TEST(PrefixKvTile, HeadDim128TakesTheLongTileForLongItemsOnly) {
  // Items of 4096 tokens, where the cost comparison alone would take 160: the longer tile measured
  // slower there in the concurrent step (session 58) and one after the other (session 88).
  for (int concurrent_sms : {0, 36}) {
    CascadePlan plan = ItemsPlan(128, std::vector<int>(128, 4096));
    plan.concurrent_decode_sms = concurrent_sms;
    EXPECT_LT(PrefixKvTileCost(plan, 160), PrefixKvTileCost(plan, 128));
    EXPECT_EQ(ChoosePrefixKvTileTokens(plan), 128) << "concurrent SMs " << concurrent_sms;
  }
  // Items averaging at least kLongTileItemTokens (32/8 B256 P32768's ~10900): the long tile.
  for (int concurrent_sms : {0, 20}) {
    CascadePlan long_items = ItemsPlan(128, {10922, 10923, 10923, 0});  // the empty item not counted
    long_items.concurrent_decode_sms = concurrent_sms;
    EXPECT_EQ(ChoosePrefixKvTileTokens(long_items), 160);
    CascadePlan edge = ItemsPlan(128, {kLongTileItemTokens - 1});
    edge.concurrent_decode_sms = concurrent_sms;
    EXPECT_EQ(ChoosePrefixKvTileTokens(edge), 128);
    CascadePlan mean = ItemsPlan(128, {kLongTileItemTokens - 1000, kLongTileItemTokens + 1000});
    mean.concurrent_decode_sms = concurrent_sms;
    EXPECT_EQ(ChoosePrefixKvTileTokens(mean), 160) << "the mean over the items decides";
  }
}

// The planner's items for the GPU cascade test of the long tile (tests/gpu/cascade_gpu_test.cc,
// HeadDim128LongTilePlansMatchTheOracle): its plan options give items in wide CTAs, of the
// prefix's 4001 or 6150 tokens or a third of them, short of kLongTileItemTokens: the 128-token
// tile, the GPU test forcing 160 beside it.
TEST(PrefixKvTile, PlannedItemsInWideCtasShortOfTheLongTile) {
  std::mt19937_64 rng(7);
  for (int prefix : {4001, 6150}) {
    const std::vector<test::GroupSpec> groups = {{prefix, std::vector<int>(64, 9)}};
    const KvPoolShape shape{1, test::PagesNeeded(groups, 16) + 3, 16, 2, 128, DType::kFloat16};
    PageAllocator alloc(shape.num_pages);
    const DecodeBatch batch = test::BuildBatch(groups, 8, 16, alloc, rng);
    for (int target_items : {2, 12}) {
      SCOPED_TRACE(testing::Message() << "prefix " << prefix << ", " << target_items << " items wanted");
      PlanOptions o;
      o.choose_layout = false;
      o.prefix_tile_rows = 128;
      o.prefix_target_items = target_items;
      o.min_prefix_chunk = 64;
      o.balance_prefix_ctas = 0;
      const CascadePlan plan = PlanCascade(batch, shape, o);
      ASSERT_FALSE(plan.prefix_items.empty());
      for (const PrefixWorkItem& it : plan.prefix_items) EXPECT_GT(it.row_end - it.row_begin, kPrefixNarrowItemRows);
      EXPECT_LT(PrefixKvTileCost(plan, 160), PrefixKvTileCost(plan, 128)) << "the cost alone would take 160";
      EXPECT_EQ(ChoosePrefixKvTileTokens(plan), 128);
    }
  }
}

TEST(PrefixKvTile, HeadDim256KeepsItsOneTile) {
  EXPECT_EQ(AlternatePrefixKvTileTokens(256), 0);
  for (const std::vector<int>& items : {std::vector<int>{128}, std::vector<int>{16384}})
    EXPECT_EQ(ChoosePrefixKvTileTokens(ItemsPlan(256, items)), DefaultPrefixKvTileTokens(256));
}

}  // namespace
}  // namespace prefixd::kernels
