// The fused cascade kernel's per-CTA work lists (fused_schedule.h): every item exactly once,
// balanced within one item's cost, each CTA's kinds in the requested order, bad options refused.
#include "prefixd/kernels/fused_schedule.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "prefixd/kernels/kv_cache.h"
#include "support/test_support.h"
#include "unit/kernels/expect_error.h"
#include "unit/kernels/random_batch.h"

namespace prefixd::kernels {
namespace {

using test::BuildBatch;
using test::GroupSpec;

CascadePlan RandomPlan(std::mt19937_64& rng, int target_items) {
  const std::vector<GroupSpec> groups = test::RandomGroups(rng, 4, 24, 3000, 600);
  const KvPoolShape shape{1, test::PagesNeeded(groups, 16) + 1, 16, 8, 128, DType::kFloat16};
  PageAllocator alloc(shape.num_pages);
  const DecodeBatch batch = BuildBatch(groups, 32, 16, alloc, rng);
  PlanOptions o;
  o.target_items = target_items;
  o.prefix_tile_rows = 128;
  return PlanCascade(batch, shape, o);
}

double Cost(const CascadePlan& plan, int32_t entry, const FusedScheduleOptions& o) {
  auto ceil_div = [](int64_t a, int64_t b) { return (a + b - 1) / b; };
  if (entry >= 0) {
    const PrefixWorkItem& it = plan.prefix_items[size_t(entry)];
    return double(ceil_div(it.row_end - it.row_begin, o.tile_rows) * ceil_div(it.kv_end - it.kv_begin, o.tile_tokens)) +
           o.item_cost;
  }
  const DecodeWorkItem& it = plan.decode_items[size_t(-entry - 1)];
  return double(ceil_div(it.kv_end - it.kv_begin, o.tile_tokens)) * o.decode_tile_cost + o.item_cost;
}

void ExpectValidSchedule(const CascadePlan& plan, const FusedScheduleOptions& o, const FusedSchedule& s) {
  const int64_t np = o.prefix_items ? int64_t(plan.prefix_items.size()) : 0;
  const int64_t nd = o.decode_items ? int64_t(plan.decode_items.size()) : 0;
  ASSERT_EQ(s.num_ctas(), int(std::min<int64_t>(o.num_ctas, np + nd)));
  ASSERT_EQ(s.cta_indptr.front(), 0);
  ASSERT_EQ(int64_t(s.cta_indptr.back()), np + nd);
  ASSERT_EQ(int64_t(s.entries.size()), np + nd);
  // Every item exactly once.
  std::vector<int> seen_prefix(size_t(plan.prefix_items.size()), 0), seen_decode(size_t(plan.decode_items.size()), 0);
  for (const int32_t e : s.entries) {
    if (e >= 0) {
      ASSERT_LT(e, int64_t(plan.prefix_items.size()));
      ++seen_prefix[size_t(e)];
    } else {
      ASSERT_LT(-int64_t(e) - 1, int64_t(plan.decode_items.size()));
      ++seen_decode[size_t(-e - 1)];
    }
  }
  for (const int n : seen_prefix) EXPECT_EQ(n, o.prefix_items ? 1 : 0);
  for (const int n : seen_decode) EXPECT_EQ(n, o.decode_items ? 1 : 0);
  // Balance (longest processing time first): a CTA's load exceeds the least load by at most the
  // cost of the largest item; each CTA's kinds are in the requested order.
  double max_load = 0, min_load = 1e300, max_item = 0;
  for (int b = 0; b < s.num_ctas(); ++b) {
    ASSERT_LE(s.cta_indptr[b], s.cta_indptr[b + 1]);
    EXPECT_LT(s.cta_indptr[b], s.cta_indptr[b + 1]) << "CTA " << b << " has no work";
    double load = 0;
    bool switched = false;
    const bool prefix_first = o.order == FusedOrder::kPrefixFirst || (o.order == FusedOrder::kAlternate && b % 2 == 0);
    for (int32_t i = s.cta_indptr[b]; i < s.cta_indptr[b + 1]; ++i) {
      const int32_t e = s.entries[size_t(i)];
      load += Cost(plan, e, o);
      max_item = std::max(max_item, Cost(plan, e, o));
      const bool first_kind = (e >= 0) == prefix_first;
      if (!first_kind) switched = true;
      EXPECT_FALSE(switched && first_kind) << "CTA " << b << ": kinds interleaved at entry " << i;
    }
    max_load = std::max(max_load, load);
    min_load = std::min(min_load, load);
  }
  EXPECT_LE(max_load - min_load, max_item + 1e-9);
}

TEST(FusedSchedule, EveryItemOnceBalancedAndOrdered) {
  const uint64_t seed = test::TestSeed();
  SCOPED_TRACE("PREFIXD_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  for (int trial = 0; trial < 20; ++trial) {
    const CascadePlan plan = RandomPlan(rng, 16 + 40 * (trial % 5));
    for (const int ctas : {1, 7, 132, 100000})
      for (const FusedOrder order : {FusedOrder::kAlternate, FusedOrder::kPrefixFirst, FusedOrder::kDecodeFirst})
        for (const int subset : {0, 1, 2}) {
          FusedScheduleOptions o;
          o.num_ctas = ctas;
          o.order = order;
          o.prefix_items = subset != 2;
          o.decode_items = subset != 1;
          SCOPED_TRACE("trial " + std::to_string(trial) + ", ctas " + std::to_string(ctas) + ", subset " +
                       std::to_string(subset));
          const FusedSchedule s = ScheduleFusedItems(plan, o);
          ExpectValidSchedule(plan, o, s);
          const FusedSchedule again = ScheduleFusedItems(plan, o);
          EXPECT_EQ(again.cta_indptr, s.cta_indptr);
          EXPECT_EQ(again.entries, s.entries);
        }
  }
}

// With one long prefix item per CTA and many short decode items, the alternate order has half
// the CTAs start on each kind (the overlap the fused kernel is for).
TEST(FusedSchedule, AlternateOrderStartsHalfTheCtasOnEachKind) {
  std::mt19937_64 rng(7);
  PageAllocator alloc(4096);
  const DecodeBatch batch = BuildBatch({{8192, std::vector<int>(64, 256)}}, 32, 16, alloc, rng);
  const KvPoolShape shape{1, 4096, 16, 8, 128, DType::kFloat16};
  PlanOptions po;
  po.prefix_target_items = 128;
  po.target_items = 264;
  po.prefix_tile_rows = 128;
  const CascadePlan plan = PlanCascade(batch, shape, po);
  ASSERT_EQ(plan.prefix_items.size(), 128u);
  FusedScheduleOptions o;
  o.num_ctas = 132;
  const FusedSchedule s = ScheduleFusedItems(plan, o);
  ExpectValidSchedule(plan, o, s);
  int starts_prefix = 0;
  for (int b = 0; b < s.num_ctas(); ++b) starts_prefix += s.entries[size_t(s.cta_indptr[b])] >= 0 ? 1 : 0;
  EXPECT_GE(starts_prefix, 60);
  EXPECT_LE(starts_prefix, 72);
}

TEST(FusedSchedule, BadOptionsAndOrdersAreRefused) {
  std::mt19937_64 rng(3);
  const CascadePlan plan = RandomPlan(rng, 64);
  FusedScheduleOptions o;
  o.num_ctas = 0;
  EXPECT_PREFIXD_ERROR(ScheduleFusedItems(plan, o), ErrorKind::kInvalidArgument, "num_ctas");
  o = FusedScheduleOptions{};
  o.decode_tile_cost = 0;
  EXPECT_PREFIXD_ERROR(ScheduleFusedItems(plan, o), ErrorKind::kInvalidArgument, "decode_tile_cost");
  o = FusedScheduleOptions{};
  o.tile_tokens = -1;
  EXPECT_PREFIXD_ERROR(ScheduleFusedItems(plan, o), ErrorKind::kInvalidArgument, "tile_tokens");
  EXPECT_EQ(ParseFusedOrder("alternate"), FusedOrder::kAlternate);
  EXPECT_EQ(ParseFusedOrder("prefix-first"), FusedOrder::kPrefixFirst);
  EXPECT_EQ(ParseFusedOrder("decode-first"), FusedOrder::kDecodeFirst);
  EXPECT_PREFIXD_ERROR(ParseFusedOrder("random"), ErrorKind::kInvalidArgument, "fused order");
  // An empty plan gives an empty schedule.
  const FusedSchedule empty = ScheduleFusedItems(CascadePlan{}, FusedScheduleOptions{});
  EXPECT_EQ(empty.num_ctas(), 0);
  EXPECT_TRUE(empty.entries.empty());
}

}  // namespace
}  // namespace prefixd::kernels
