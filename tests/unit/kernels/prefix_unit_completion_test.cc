// PrefixItemsByCta (prefix_balance.h) and PrefixUnitCompletions (prefix_unit_completion.h):
// hand-computed schedules of both kinds, and the concurrent step's stream-balanced plan at the
// headline row, whose units all complete at the prefix grid's end (bench/NOTES-fused.md, session 93).
#include "prefixd/kernels/prefix_unit_completion.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "prefixd/common/error.h"
#include "prefixd/kernels/kv_cache.h"
#include "prefixd/kernels/prefix_balance.h"
#include "unit/kernels/expect_error.h"
#include "unit/kernels/random_batch.h"

namespace prefixd::kernels {
namespace {

// Four items of two KV heads, two chunks each (128-token tiles, 1 tile of overhead per item):
// costs 3, 2, 2 and 4 tiles.
CascadePlan FourItems() {
  CascadePlan plan;
  plan.prefix_items = {PrefixWorkItem{0, 0, 0, 64, 0, 256, 0}, PrefixWorkItem{0, 1, 0, 64, 0, 128, 0},
                       PrefixWorkItem{0, 0, 0, 64, 256, 384, 1}, PrefixWorkItem{0, 1, 0, 64, 128, 512, 1}};
  return plan;
}

// The kernel's item order per CTA (PrefixItemsByCta), which the cost model reads too.
TEST(PrefixItemsByCta, RoundRobinOrChainsInTheKernelsOrder) {
  CascadePlan plan = FourItems();
  using Lists = std::vector<std::vector<int64_t>>;
  EXPECT_EQ(PrefixItemsByCta(plan, 2, false), (Lists{{0, 2}, {1, 3}}));
  EXPECT_EQ(PrefixItemsByCta(plan, 5, false), (Lists{{0}, {1}, {2}, {3}, {}}));
  plan.prefix_items[0].cta_next = 3;
  plan.prefix_items[1].cta_next = 2;
  EXPECT_EQ(PrefixItemsByCta(plan, 2, true), (Lists{{0, 3}, {1, 2}}));
  EXPECT_PREFIXD_ERROR(PrefixItemsByCta(plan, 0, false), ErrorKind::kInvalidArgument, "ctas");
  plan.prefix_items[3].cta_next = 0;
  EXPECT_PREFIXD_ERROR(PrefixItemsByCta(plan, 2, true), ErrorKind::kInvalidArgument, "loop");
}

TEST(PrefixUnitCompletions, RoundRobinSchedule) {
  // CTA 0 runs items 0 and 2 (ends 3, 5), CTA 1 items 1 and 3 (ends 2, 6): the grid ends at 6.
  const std::vector<PrefixUnitCompletion> u = PrefixUnitCompletions(FourItems(), 2, 128, 1.0);
  ASSERT_EQ(u.size(), 2u);
  EXPECT_EQ(u[0].kv_head, 0);
  EXPECT_DOUBLE_EQ(u[0].fraction, 5.0 / 6.0);
  EXPECT_EQ(u[1].kv_head, 1);
  EXPECT_DOUBLE_EQ(u[1].fraction, 1.0);
}

TEST(PrefixUnitCompletions, BalancedChainsOnlyOnTheirOwnGrid) {
  CascadePlan plan = FourItems();
  plan.prefix_balanced_ctas = 2;
  plan.prefix_items[0].cta_next = 3;  // CTA 0: items 0 then 3 (ends 3, 7)
  plan.prefix_items[1].cta_next = 2;  // CTA 1: items 1 then 2 (ends 2, 4)
  std::vector<PrefixUnitCompletion> u = PrefixUnitCompletions(plan, 2, 128, 1.0);
  ASSERT_EQ(u.size(), 2u);
  EXPECT_DOUBLE_EQ(u[0].fraction, 4.0 / 7.0);
  EXPECT_DOUBLE_EQ(u[1].fraction, 1.0);
  // On another grid the kernel takes the items round-robin: three CTAs, items 0 and 3 on CTA 0.
  u = PrefixUnitCompletions(plan, 3, 128, 1.0);
  ASSERT_EQ(u.size(), 2u);
  EXPECT_DOUBLE_EQ(u[0].fraction, 3.0 / 7.0);
  EXPECT_DOUBLE_EQ(u[1].fraction, 1.0);
  EXPECT_TRUE(PrefixUnitCompletions(CascadePlan{}, 2, 128, 1.0).empty());
  EXPECT_PREFIXD_ERROR(PrefixUnitCompletions(plan, 0, 128, 1.0), ErrorKind::kInvalidArgument, "ctas");
  EXPECT_PREFIXD_ERROR(PrefixUnitCompletions(plan, 2, 128, -1.0), ErrorKind::kInvalidArgument, "overhead");
  plan.prefix_items[3].cta_next = 0;  // a chain that loops
  EXPECT_PREFIXD_ERROR(PrefixUnitCompletions(plan, 2, 128, 1.0), ErrorKind::kInvalidArgument, "loop");
}

// The concurrent step's plan at 32/8 B256 P32768 S256 (k = 16 of 132 SMs, the stream balance on
// 116 CTAs, as the CUDA backend plans it): every (row tile, KV head) gets its last state at the
// very end of the prefix grid. A ⊕ that starts before the grid ends needs another item order first.
TEST(PrefixUnitCompletions, TheHeadlineConcurrentPlanCompletesEveryUnitAtTheEnd) {
  std::mt19937_64 rng(1);
  const std::vector<test::GroupSpec> groups = {test::GroupSpec{32768, std::vector<int>(256, 256)}};
  const KvPoolShape shape{1, test::PagesNeeded(groups, 16) + 1, 16, 8, 128, DType::kFloat16};
  PageAllocator alloc(shape.num_pages);
  const DecodeBatch batch = test::BuildBatch(groups, 32, 16, alloc, rng);
  PlanOptions o;
  o.prefix_tile_rows = 128;
  o.fuse_merge = false;
  o.concurrent_decode_sms = 16;
  o.concurrent_decode_tma = true;
  o.prefix_target_items = 116;
  o.balance_prefix_ctas = 116;
  o.balance_stream = true;
  const CascadePlan plan = PlanCascade(batch, shape, o);
  ASSERT_EQ(plan.prefix_balanced_ctas, 116);
  const std::vector<PrefixUnitCompletion> units = PrefixUnitCompletions(plan, 116, 128, 2.5);
  ASSERT_EQ(units.size(), 64u);  // 8 KV heads × 8 row tiles of 128 rows
  for (const PrefixUnitCompletion& u : units)
    EXPECT_GE(u.fraction, 0.9) << "head " << u.kv_head << " row " << u.row_begin;
}

}  // namespace
}  // namespace prefixd::kernels
