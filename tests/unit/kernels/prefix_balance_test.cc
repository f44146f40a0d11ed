// ChoosePrefixBalance (prefix_balance.h): the tail that balances a one-wave prefix grid over idle
// CTAs; ChoosePrefixStream: the stream over the heads for grids the chunks cannot fill. The
// plan-level rewrite (BalancePrefixGrid) is tested with the planner (plan_test.cc, PlanBalance).
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

PrefixStreamShape StreamShape(int64_t heads, int row_tiles, int64_t tiles, int ctas, double item_overhead_tiles) {
  PrefixStreamShape s;
  s.heads = heads;
  s.row_tiles = row_tiles;
  s.tiles = tiles;
  s.ctas = ctas;
  s.item_overhead_tiles = item_overhead_tiles;
  return s;
}

// The stream over the heads on the 112 CTAs a decode on 20 SMs leaves: 8 KV heads × 8 row tiles,
// 256 tiles each, in 14 slots of 147 tiles (the last 137). A share crosses at most one head's end,
// so a slot has at most two pieces, and a head is cut into 2 or 3.
TEST(PrefixStream, TheConcurrentShapeSplitsTheHeadsEvenly) {
  const auto st = ChoosePrefixStream(StreamShape(8, 8, 256, 112, 2.5));
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(st->slots, 14);
  EXPECT_EQ(st->share_tiles, 147);
  EXPECT_EQ(st->chunks, 3);
  // The busiest slot: its share in two pieces, maybe an empty item on top; far below one CTA per
  // pair (256 + 2.5) and below the tails this grid would take (two per idle CTA: ~2/3 of 256).
  EXPECT_GE(st->busiest_after, 147 + 2 * 2.5);
  EXPECT_LE(st->busiest_after, 147 + 3 * 2.5);
  EXPECT_LT(st->busiest_after, 0.62 * (256 + 2.5));
}

TEST(PrefixStream, NothingWithoutTwoSlots) {
  EXPECT_FALSE(ChoosePrefixStream(StreamShape(8, 8, 256, 15, 2.5)).has_value());  // one slot of 8
  EXPECT_FALSE(ChoosePrefixStream(StreamShape(0, 8, 256, 112, 2.5)).has_value());
  EXPECT_FALSE(ChoosePrefixStream(StreamShape(8, 0, 256, 112, 2.5)).has_value());
  EXPECT_TRUE(ChoosePrefixStream(StreamShape(8, 8, 256, 16, 2.5)).has_value());
}

// On random shapes: the shares cover the heads' tiles laid end to end, no slot is busier than its
// share plus items, and a head is cut into at most ⌈tiles / share⌉ + 1 pieces.
TEST(PrefixStream, SharesAreEvenOnRandomShapes) {
  const uint64_t seed = test::TestSeed();
  SCOPED_TRACE("PREFIXD_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  for (int trial = 0; trial < 500; ++trial) {
    const int row_tiles = 1 + int(rng() % 8);
    const PrefixStreamShape s =
        StreamShape(1 + int64_t(rng() % 40), row_tiles, 1 + int64_t(rng() % 400), row_tiles * int(2 + rng() % 30),
                    double(rng() % 300) / 100.0);
    SCOPED_TRACE(testing::Message() << "heads " << s.heads << ", row tiles " << s.row_tiles << ", tiles " << s.tiles
                                    << ", ctas " << s.ctas << ", overhead " << s.item_overhead_tiles);
    const auto st = ChoosePrefixStream(s);
    ASSERT_TRUE(st.has_value());
    const int64_t total = s.heads * s.tiles;
    EXPECT_EQ(st->share_tiles, CeilDiv(total, s.ctas / s.row_tiles));
    EXPECT_EQ(st->slots, CeilDiv(total, st->share_tiles));
    EXPECT_LE(st->slots * s.row_tiles, s.ctas);
    EXPECT_GE(st->chunks, 1);
    EXPECT_LE(st->chunks, CeilDiv(s.tiles, st->share_tiles) + 1);
    EXPECT_GE(st->busiest_after, double(std::min(st->share_tiles, total)) + s.item_overhead_tiles - 1e-9);
  }
}

// Narrow slots: a decode on 16 SMs leaves 116 CTAs, 14 whole slots of 8 and 4 CTAs that the
// whole slots leave idle; as one narrow slot of 4 CTAs (two row tiles each) they take half a
// share, and the busiest CTA does 14/14.5 of the whole slots' work plus an item or two.
TEST(PrefixStream, LeftoverCtasFormANarrowSlot) {
  PrefixStreamShape s = StreamShape(8, 8, 256, 116, 2.5);
  const auto whole = ChoosePrefixStream(s);
  ASSERT_TRUE(whole.has_value());
  EXPECT_EQ(whole->slots, 14);
  EXPECT_EQ(whole->narrow_slots, 0);
  EXPECT_EQ(whole->ctas, 112);
  s.narrow_slots = true;
  const auto narrow = ChoosePrefixStream(s);
  ASSERT_TRUE(narrow.has_value());
  EXPECT_EQ(narrow->slots, 15);
  EXPECT_EQ(narrow->narrow_slots, 1);
  EXPECT_EQ(narrow->ctas, 116);
  // The narrow slot's ⌊2048 · 4 / 116⌋ = 70 tiles set aside, the 14 whole slots share the rest.
  EXPECT_EQ(narrow->share_tiles, CeilDiv(8 * 256 - 8 * 256 * 4 / 116, 14));  // 142
  EXPECT_LT(narrow->busiest_after, whole->busiest_after - 3);
  EXPECT_LE(narrow->busiest_after, 142 + 3 * 2.5);
  // On a grid of whole slots there is nothing to add.
  s.ctas = 112;
  EXPECT_EQ(ChoosePrefixStream(s)->ctas, 112);
  EXPECT_DOUBLE_EQ(ChoosePrefixStream(s)->busiest_after, ChoosePrefixStream(StreamShape(8, 8, 256, 112, 2.5))->busiest_after);
}

// A narrow slot's CTA pays every piece's overhead once per row tile it runs: one CTA for 8 row
// tiles at a high item cost loses to leaving it idle, and then the grid stays whole.
TEST(PrefixStream, NarrowSlotsOnlyWhereTheyHelp) {
  PrefixStreamShape s = StreamShape(8, 8, 64, 113, 20.0);
  s.narrow_slots = true;
  const auto st = ChoosePrefixStream(s);
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(st->narrow_slots, 0);
  EXPECT_EQ(st->ctas, 112);
}

// On random shapes with narrow slots: never more CTAs than given, never a busier CTA than with
// whole slots only, and the same coverage bounds.
TEST(PrefixStream, NarrowSlotsNeverMakeItBusierOnRandomShapes) {
  const uint64_t seed = test::TestSeed();
  SCOPED_TRACE("PREFIXD_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  int taken = 0;
  for (int trial = 0; trial < 500; ++trial) {
    const int row_tiles = 1 + int(rng() % 8);
    PrefixStreamShape s = StreamShape(1 + int64_t(rng() % 40), row_tiles, 1 + int64_t(rng() % 400),
                                      row_tiles * int(2 + rng() % 30) + int(rng() % row_tiles), double(rng() % 300) / 100.0);
    SCOPED_TRACE(testing::Message() << "heads " << s.heads << ", row tiles " << s.row_tiles << ", tiles " << s.tiles
                                    << ", ctas " << s.ctas << ", overhead " << s.item_overhead_tiles);
    const auto whole = ChoosePrefixStream(s);
    s.narrow_slots = true;
    const auto st = ChoosePrefixStream(s);
    ASSERT_TRUE(whole.has_value() && st.has_value());
    EXPECT_LE(st->ctas, s.ctas);
    EXPECT_LE(st->busiest_after, whole->busiest_after);
    EXPECT_GE(st->chunks, 1);
    EXPECT_LE(st->narrow_slots, st->slots);
    const int64_t total = s.heads * s.tiles;
    // The busiest CTA runs at least its even share of the CTA-tiles (every head's tiles once per
    // row tile) and one item.
    EXPECT_GE(st->busiest_after, double(total * s.row_tiles) / st->ctas + s.item_overhead_tiles - 1e-9);
    taken += st->narrow_slots > 0;
  }
  EXPECT_GT(taken, 50) << "narrow slots were almost never taken: the test would not see them";
}

}  // namespace
}  // namespace prefixd::kernels
