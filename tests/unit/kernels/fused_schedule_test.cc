// The fused cascade kernel's per-CTA work lists (fused_schedule.h): every item exactly once,
// prefix items round-robin, decode items balanced by tokens within one item, prefix entries first
// in each CTA's list, bad options refused.
#include "prefixd/kernels/fused_schedule.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
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

int64_t Tokens(const DecodeWorkItem& it) { return int64_t(it.kv_end) - it.kv_begin; }

void ExpectValidSchedule(const CascadePlan& plan, const FusedScheduleOptions& o, const FusedSchedule& s) {
  const int64_t np = o.prefix_items ? int64_t(plan.prefix_items.size()) : 0;
  const int64_t nd = o.decode_items ? int64_t(plan.decode_items.size()) : 0;
  ASSERT_EQ(s.num_ctas(), int(std::min<int64_t>(o.num_ctas, std::max(np, nd))));
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
  // Per CTA: its prefix entries first, exactly the items i ≡ b (mod CTAs) in plan order; then its
  // decode entries, whose tokens exceed the least loaded CTA's by at most the longest item.
  int64_t max_tokens = 0, min_tokens = INT64_MAX, max_item = 0;
  for (int b = 0; b < s.num_ctas(); ++b) {
    ASSERT_LE(s.cta_indptr[b], s.cta_indptr[b + 1]);
    int64_t next_prefix = b, tokens = 0;
    bool in_decode = false;
    for (int32_t i = s.cta_indptr[b]; i < s.cta_indptr[b + 1]; ++i) {
      const int32_t e = s.entries[size_t(i)];
      if (e >= 0) {
        EXPECT_FALSE(in_decode) << "CTA " << b << ": a prefix entry after a decode entry at " << i;
        EXPECT_EQ(e, next_prefix) << "CTA " << b;
        next_prefix += s.num_ctas();
      } else {
        in_decode = true;
        const int64_t t = Tokens(plan.decode_items[size_t(-e - 1)]);
        tokens += t;
        max_item = std::max(max_item, t);
      }
    }
    EXPECT_GE(next_prefix, np) << "CTA " << b << " misses prefix items";
    max_tokens = std::max(max_tokens, tokens);
    min_tokens = std::min(min_tokens, tokens);
  }
  if (nd > 0) EXPECT_LE(max_tokens - min_tokens, max_item);
}

TEST(FusedSchedule, EveryItemOnceRoundRobinPrefixAndBalancedDecode) {
  const uint64_t seed = test::TestSeed();
  SCOPED_TRACE("PREFIXD_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  for (int trial = 0; trial < 20; ++trial) {
    const CascadePlan plan = RandomPlan(rng, 16 + 40 * (trial % 5));
    for (const int ctas : {1, 7, 132, 100000})
      for (const int subset : {0, 1, 2}) {
        FusedScheduleOptions o;
        o.num_ctas = ctas;
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

// The foundation grid's small-batch shape: 128 prefix items (one per CTA, 4 CTAs without) and
// 512 equal decode items spread 3-4 per CTA, so both halves run on every SM.
TEST(FusedSchedule, BothHalvesOnEverySm) {
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
  ASSERT_EQ(plan.decode_items.size(), 512u);
  FusedScheduleOptions o;
  o.num_ctas = 132;
  const FusedSchedule s = ScheduleFusedItems(plan, o);
  ExpectValidSchedule(plan, o, s);
  for (int b = 0; b < s.num_ctas(); ++b) {
    int prefix = 0, decode = 0;
    for (int32_t i = s.cta_indptr[b]; i < s.cta_indptr[b + 1]; ++i) (s.entries[size_t(i)] >= 0 ? prefix : decode)++;
    EXPECT_EQ(prefix, b < 128 ? 1 : 0) << "CTA " << b;
    EXPECT_GE(decode, 3) << "CTA " << b;
    EXPECT_LE(decode, 4) << "CTA " << b;
  }
}

TEST(FusedSchedule, BadOptionsAreRefused) {
  std::mt19937_64 rng(3);
  const CascadePlan plan = RandomPlan(rng, 64);
  FusedScheduleOptions o;
  o.num_ctas = 0;
  EXPECT_PREFIXD_ERROR(ScheduleFusedItems(plan, o), ErrorKind::kInvalidArgument, "num_ctas");
  // An empty plan gives an empty schedule.
  const FusedSchedule empty = ScheduleFusedItems(CascadePlan{}, FusedScheduleOptions{});
  EXPECT_EQ(empty.num_ctas(), 0);
  EXPECT_TRUE(empty.entries.empty());
}

}  // namespace
}  // namespace prefixd::kernels
