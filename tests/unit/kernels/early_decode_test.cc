// SplitEarlyDecode (prefixd/kernels/early_decode.h): which requests go early, and the items that
// replace theirs.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "prefixd/kernels/early_decode.h"
#include "prefixd/kernels/page_table.h"
#include "prefixd/kernels/plan.h"
#include "support/test_support.h"
#include "unit/kernels/expect_error.h"
#include "unit/kernels/random_batch.h"

namespace prefixd::kernels {
namespace {

// A fused plan (finishing items) of these groups: 8/2 heads, head_dim 64, page 16.
CascadePlan FusedPlan(const std::vector<test::GroupSpec>& groups, std::mt19937_64& rng) {
  const KvPoolShape shape{1, test::PagesNeeded(groups, 16) + 2, 16, 2, 64, DType::kFloat16};
  PageAllocator alloc(shape.num_pages);
  const DecodeBatch batch = test::BuildBatch(groups, 8, 16, alloc, rng);
  PlanOptions o;
  o.target_items = 24;
  o.decode_chunk_align = 16;
  o.min_decode_chunk = 256;
  return PlanCascade(batch, shape, o);
}

bool Same(const DecodeWorkItem& a, const DecodeWorkItem& b) {
  return a.request == b.request && a.kv_head == b.kv_head && a.kv_begin == b.kv_begin && a.kv_end == b.kv_end &&
         a.slot_offset == b.slot_offset && a.finish == b.finish;
}

TEST(EarlyDecode, NoShareLeavesThePlansItems) {
  std::mt19937_64 rng(test::TestSeed());
  const CascadePlan plan = FusedPlan({{1000, {40, 40, 40}}}, rng);
  const EarlyDecodeSplit split = SplitEarlyDecode(plan, 0.0);
  EXPECT_EQ(split.num_early, 0);
  EXPECT_EQ(split.num_early_requests, 0);
  ASSERT_EQ(split.items.size(), plan.decode_items.size());
  EXPECT_EQ(split.num_late, int(plan.decode_items.size()));
  for (size_t i = 0; i < split.items.size(); ++i) EXPECT_TRUE(Same(split.items[i], plan.decode_items[i])) << i;
}

// Ten equal suffixes: 30% of their tokens is the first three requests. Each gets one early item
// per KV head (the whole suffix into the suffix slot) and one merge-only item (no tokens, finishing,
// merging every slot of its run); the other requests keep their items, first, in order.
TEST(EarlyDecode, TheFirstRequestsUpToTheShareGoEarly) {
  std::mt19937_64 rng(test::TestSeed());
  const CascadePlan plan = FusedPlan({{1000, std::vector<int>(10, 40)}}, rng);
  const int heads = plan.num_kv_heads;
  const EarlyDecodeSplit split = SplitEarlyDecode(plan, 0.3);
  EXPECT_EQ(split.num_early_requests, 3);
  EXPECT_EQ(split.num_early, 3 * heads);
  EXPECT_EQ(split.num_late, int(plan.decode_items.size()));  // 7 requests' items + 3 merge-only each head
  ASSERT_EQ(split.items.size(), plan.decode_items.size() + size_t(3 * heads));
  int kept = 0;
  for (const DecodeWorkItem& it : plan.decode_items)
    if (it.request >= 3) EXPECT_TRUE(Same(split.items[size_t(kept++)], it)) << "kept item " << kept;
  for (int i = kept; i < split.num_late; ++i) {  // merge-only
    const DecodeWorkItem& m = split.items[size_t(i)];
    const int32_t run = plan.state_indptr[m.request + 1] - plan.state_indptr[m.request];
    EXPECT_LT(m.request, 3);
    EXPECT_EQ(m.kv_begin, m.kv_end) << "a merge-only item has no tokens";
    EXPECT_EQ(m.finish, 1);
    EXPECT_EQ(m.slot_offset, run) << "it merges every slot of the request's run";
  }
  for (int i = split.num_late; i < split.num_late + split.num_early; ++i) {  // early
    const DecodeWorkItem& e = split.items[size_t(i)];
    EXPECT_LT(e.request, 3);
    EXPECT_EQ(e.finish, 0);
    EXPECT_EQ(e.kv_begin, 0);
    EXPECT_EQ(e.kv_end, 40);
    EXPECT_EQ(e.slot_offset, plan.group_num_chunks[0]) << "the suffix slot, after the prefix chunks";
  }
}

// Only requests finished by their decode items go early, at least one where the share is below a
// request; a split suffix (merged by the merge step) and an empty one keep their items.
TEST(EarlyDecode, OnlyFinishedRequestsGoEarly) {
  std::mt19937_64 rng(test::TestSeed());
  const CascadePlan plan = FusedPlan({{1000, {900, 0, 30, 50}}, {64, {20}}}, rng);
  ASSERT_EQ(plan.merge_requests, (std::vector<int32_t>{0, 1}));  // 900 tokens split; no suffix
  EarlyDecodeSplit split = SplitEarlyDecode(plan, 0.01);
  EXPECT_EQ(split.num_early_requests, 1);
  for (int i = split.num_late; i < split.num_late + split.num_early; ++i) EXPECT_EQ(split.items[size_t(i)].request, 2);
  split = SplitEarlyDecode(plan, 1.0);
  EXPECT_EQ(split.num_early_requests, 3);  // requests 2, 3, 4
  for (int i = split.num_late; i < split.num_late + split.num_early; ++i) EXPECT_GE(split.items[size_t(i)].request, 2);
  int request0_items = 0;
  for (int i = 0; i < split.num_late; ++i) request0_items += split.items[size_t(i)].request == 0;
  int planned = 0;
  for (const DecodeWorkItem& it : plan.decode_items) planned += it.request == 0;
  EXPECT_EQ(request0_items, planned) << "the split suffix keeps its items";
}

TEST(EarlyDecode, ShareOutsideZeroToOneIsRefused) {
  std::mt19937_64 rng(test::TestSeed());
  const CascadePlan plan = FusedPlan({{1000, {40}}}, rng);
  EXPECT_INVALID_ARGUMENT(SplitEarlyDecode(plan, -0.1), "early_share");
  EXPECT_INVALID_ARGUMENT(SplitEarlyDecode(plan, 1.5), "early_share");
}

// EarlyDecodeAutoShare: what the idle SMs stream at the rule's rate during the predicted prefix
// part, as a share of the finished suffixes' K/V bytes, times the safety; 0 below the rule's
// prefix time or share, and at most 1.
TEST(EarlyDecode, AutoShareIsWhatTheIdleSmsStreamBesideThePrefix) {
  std::mt19937_64 rng(test::TestSeed());
  const CascadePlan plan = FusedPlan({{1000, std::vector<int>(10, 40)}}, rng);
  double bytes = 0;  // the finished suffixes' K/V: 2 · 64 · 2 bytes per token and KV head
  for (const DecodeWorkItem& it : plan.decode_items)
    if (it.finish) bytes += double(it.kv_end - it.kv_begin) * 256.0;
  ASSERT_GT(bytes, 0.0);
  EarlyDecodeRule rule;
  rule.min_prefix_us = 100.0;
  rule.min_share = 0.0;
  rule.max_share = 1.0;
  rule.max_gqa = 4;  // the plan's 8/2 heads
  // Choose the rate so that 2 SMs over 200 µs stream exactly the finished bytes: share = safety.
  rule.sm_gbs = bytes / (2 * 200.0 * 1e3);
  EXPECT_NEAR(EarlyDecodeAutoShare(plan, 2, 200.0, 256, rule), rule.safety, 1e-12);
  EXPECT_NEAR(EarlyDecodeAutoShare(plan, 1, 200.0, 256, rule), rule.safety / 2, 1e-12);
  EXPECT_NEAR(EarlyDecodeAutoShare(plan, 2, 100.0, 256, rule), rule.safety / 2, 1e-12) << "at min_prefix_us";
  EXPECT_EQ(EarlyDecodeAutoShare(plan, 8, 200.0, 256, rule), 1.0) << "at most every finished request";
  rule.max_share = 0.4;
  EXPECT_EQ(EarlyDecodeAutoShare(plan, 8, 200.0, 256, rule), 0.4) << "at most max_share";
  EXPECT_EQ(EarlyDecodeAutoShare(plan, 2, 99.9, 256, rule), 0.0) << "a short prefix";
  EXPECT_EQ(EarlyDecodeAutoShare(plan, 0, 200.0, 256, rule), 0.0) << "no idle SM";
  rule.min_share = 0.5;
  EXPECT_EQ(EarlyDecodeAutoShare(plan, 1, 200.0, 256, rule), 0.0) << "under min_share";
  // Defaults (H200, session 61): 4 idle SMs beside a 215 µs prefix take ~30% of 32/32 B256 S32's
  // 134 MB, 40% (the cap) of 34 MB; none beside a 152 µs (B64) or 65 µs (P8192) prefix, nor at 32/8.
  CascadePlan b256 = plan;  // 32/32 heads
  b256.num_qo_heads = b256.num_kv_heads = 32;
  b256.decode_items.clear();
  for (int r = 0; r < 256; ++r)
    for (int h = 0; h < 32; ++h) b256.decode_items.push_back(DecodeWorkItem{r, h, 0, 32, 1, 1});
  EXPECT_NEAR(EarlyDecodeAutoShare(b256, 4, 215.0, 512), 0.85 * 4 * 55e9 * 215e-6 / (256.0 * 32 * 32 * 512), 1e-9);
  EXPECT_GT(EarlyDecodeAutoShare(b256, 4, 215.0, 512), 0.29);
  EXPECT_LT(EarlyDecodeAutoShare(b256, 4, 215.0, 512), 0.31);
  EXPECT_EQ(EarlyDecodeAutoShare(b256, 4, 65.0, 512), 0.0);
  EXPECT_EQ(EarlyDecodeAutoShare(b256, 4, 152.0, 512), 0.0);
  b256.decode_items.resize(64 * 32);  // 34 MB: the cap
  EXPECT_EQ(EarlyDecodeAutoShare(b256, 4, 232.0, 512), 0.4);
  CascadePlan gqa4 = b256;  // 32/8: measured slower
  gqa4.num_kv_heads = 8;
  EXPECT_EQ(EarlyDecodeAutoShare(gqa4, 4, 232.0, 512), 0.0);
  // Plans without finishing items (merged by the merge kernel) have nothing to go early.
  CascadePlan merged = b256;
  for (DecodeWorkItem& it : merged.decode_items) it.finish = 0;
  EXPECT_EQ(EarlyDecodeAutoShare(merged, 4, 215.0, 512), 0.0);
  EXPECT_INVALID_ARGUMENT(EarlyDecodeAutoShare(plan, -1, 200.0, 256), "idle_sms");
  // Eligibility, before any prediction: idle SMs, the group size, a finishing item.
  EXPECT_TRUE(EarlyDecodeAutoEligible(b256, 4));
  EXPECT_FALSE(EarlyDecodeAutoEligible(b256, 0));
  EXPECT_FALSE(EarlyDecodeAutoEligible(gqa4, 4));
  EXPECT_FALSE(EarlyDecodeAutoEligible(merged, 4));
  EXPECT_INVALID_ARGUMENT(EarlyDecodeAutoEligible(b256, -1), "idle_sms");
}

}  // namespace
}  // namespace prefixd::kernels
