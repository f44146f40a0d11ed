// ChoosePrefixBalance (prefix_balance.h): the tail that balances a one-wave prefix grid over idle
// CTAs. The plan-level rewrite (BalancePrefixGrid) is tested with the planner (plan_test.cc,
// PlanBalance).
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "prefixd/kernels/prefix_balance.h"
#include "support/test_support.h"

namespace prefixd::kernels {
namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

PrefixBalanceShape Shape(int64_t pairs, int chunks, int64_t tiles, int ctas, double item_overhead_tiles) {
  PrefixBalanceShape s;
  s.pairs = pairs;
  s.chunks = chunks;
  s.tiles = tiles;
  s.ctas = ctas;
  s.item_overhead_tiles = item_overhead_tiles;
  return s;
}

// The busiest CTA's work with tails of `tail` tiles, written out independently of the scan.
double Busiest(const PrefixBalanceShape& s, int64_t tail) {
  const int64_t spare = std::min<int64_t>(s.ctas - s.pairs * s.chunks, s.pairs);
  const double chunk = double(CeilDiv(s.tiles - tail, s.chunks)) + s.item_overhead_tiles;
  const double tails = double(CeilDiv(s.pairs, spare)) * (double(tail) + s.item_overhead_tiles);
  return std::max(chunk, tails);
}

// The H200's headline shape at head_dim 128: 64 (KV head, row tile) pairs × 2 chunks of a
// 32768-token prefix (256 tiles of 128) = 128 items on 132 SMs.
TEST(PrefixBalance, TheHeadlineShapeGivesItsFourIdleSmsTails) {
  PrefixBalanceShape s = Shape(64, 2, 256, 132, 0.6);
  const auto b = ChoosePrefixBalance(s);
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->spare_ctas, 4);
  // 16 tails per idle CTA: 6 tiles each (16 · 6.6 = 105.6) shorten the chunks to 125 tiles; 7
  // give the same chunk (⌈249 / 2⌉ = 125) and busier idle CTAs (121.6); 8 make those the busiest.
  EXPECT_EQ(b->tail_tiles, 6);
  EXPECT_DOUBLE_EQ(b->busiest_before, 128.6);
  EXPECT_DOUBLE_EQ(b->busiest_after, 125.6);
  // With head_dim 128's measured item cost the tails are shorter: 4 tiles (16 · 6.5 = 104), chunks
  // of 126 tiles.
  s.item_overhead_tiles = DefaultBalanceItemOverheadTiles(128);
  const auto measured = ChoosePrefixBalance(s);
  ASSERT_TRUE(measured.has_value());
  EXPECT_EQ(measured->tail_tiles, 4);
  EXPECT_DOUBLE_EQ(measured->busiest_after, 128.5);
}

TEST(PrefixBalance, NothingWithoutIdleCtasOrTilesToGive) {
  PrefixBalanceShape s = Shape(64, 2, 256, 128, 2.5);  // every CTA busy
  EXPECT_FALSE(ChoosePrefixBalance(s).has_value());
  s.ctas = 100;  // more than one wave: not this rule's case
  EXPECT_FALSE(ChoosePrefixBalance(s).has_value());
  s.ctas = 132;
  s.tiles = 2;  // one tile per chunk: none to give
  EXPECT_FALSE(ChoosePrefixBalance(s).has_value());
  s.tiles = 3;  // a tile to give, but the chunks stay at 1 tile + overhead while the tails cost 16
  EXPECT_FALSE(ChoosePrefixBalance(s).has_value());
  s.pairs = 0;
  EXPECT_FALSE(ChoosePrefixBalance(s).has_value());
}

TEST(PrefixBalance, MoreIdleCtasThanPairsUseOnePerPair) {
  const auto b = ChoosePrefixBalance(Shape(2, 1, 100, 132, 0));
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->spare_ctas, 2);
  EXPECT_EQ(b->tail_tiles, 50);  // each pair halved: 50 + 50
  EXPECT_DOUBLE_EQ(b->busiest_after, 50);
}

// On random shapes the scan's choice is the best tail of all (the busiest CTA's work, the first
// such tail), never worse than no tail, and absent exactly where no tail beats none.
TEST(PrefixBalance, ChoosesTheBestTailOnRandomShapes) {
  const uint64_t seed = test::TestSeed();
  SCOPED_TRACE("PREFIXD_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  for (int trial = 0; trial < 500; ++trial) {
    const int64_t pairs = 1 + int64_t(rng() % 80);
    const int chunks = 1 + int(rng() % 4);
    const int64_t tiles = 1 + int64_t(rng() % 400);
    const int ctas = int(pairs * chunks + rng() % 40);
    const PrefixBalanceShape s = Shape(pairs, chunks, tiles, ctas, double(rng() % 200) / 100.0);
    SCOPED_TRACE(testing::Message() << "pairs " << s.pairs << ", chunks " << s.chunks << ", tiles " << s.tiles
                                    << ", ctas " << s.ctas << ", overhead " << s.item_overhead_tiles);
    const double before = double(CeilDiv(s.tiles, s.chunks)) + s.item_overhead_tiles;
    double best = before;
    int64_t best_tail = 0;
    if (s.ctas > s.pairs * s.chunks)
      for (int64_t tail = 1; tail <= s.tiles - s.chunks; ++tail)
        if (Busiest(s, tail) < best) {
          best = Busiest(s, tail);
          best_tail = tail;
        }
    const auto b = ChoosePrefixBalance(s);
    ASSERT_EQ(b.has_value(), best_tail > 0);
    if (!b) continue;
    EXPECT_EQ(b->tail_tiles, best_tail);
    EXPECT_DOUBLE_EQ(b->busiest_before, before);
    EXPECT_DOUBLE_EQ(b->busiest_after, best);
    EXPECT_LT(b->busiest_after, b->busiest_before);
  }
}

}  // namespace
}  // namespace prefixd::kernels
