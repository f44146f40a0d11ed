// The CPU backend against the float64 oracle (NaiveCascade / NaiveAttention): cascade decode over
// many shapes and plan splittings, the non-cascade baseline, and causal prefix attention.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "prefixd/kernels/backend.h"
#include "prefixd/kernels/plan.h"
#include "support/backend_step.h"
#include "support/test_support.h"
#include "unit/kernels/random_batch.h"

namespace prefixd::test {
namespace {

// The CPU backend computes in float32 from exact inputs: far tighter than the GPU tolerances.
// The LSE's absolute error follows the scores' magnitude (float dot products), not |s|: peaky
// inputs (scores up to ~150) get a larger bound where s itself lands near 0.
constexpr double kStateTol = 2e-5;
constexpr double kLseTol = 2e-6, kPeakyLseTol = 3e-5;

enum class Split { kBackendDefault, kGpuDefault, kFinest, kNone, kWideTiles };

PlanOptions OptionsFor(Split split, const Backend& backend) {
  PlanOptions o = backend.DefaultPlanOptions();
  switch (split) {
    case Split::kBackendDefault: break;
    case Split::kGpuDefault: o = PlanOptions{}; break;
    case Split::kFinest:  // as many items as possible: 1-token chunks allowed, small row tiles
      o.target_items = 1 << 20;
      o.prefix_tile_rows = 3;
      o.prefix_chunk_align = o.min_prefix_chunk = 1;
      o.decode_chunk_align = o.min_decode_chunk = 1;
      break;
    case Split::kNone: o.target_items = 1; break;
    case Split::kWideTiles:  // items with more rows than the CPU kernel's 64-row tile
      o.prefix_tile_rows = 200;
      break;
  }
  return o;
}

// Peaky queries: uniform in [-45, 45] (score std 15), Planted rows aim at a planted key.
constexpr float kPeakyScale = 45.f;

// Standard deviation of the (natural-unit) scores of all unplanted rows over their requests' slots.
double ScoreStd(const HostKvPool& pool, int layer, const DecodeBatch& batch, const std::vector<uint16_t>& q) {
  const KvPoolShape& s = pool.shape;
  const int h = batch.num_qo_heads, g = h / s.num_kv_heads;
  double n = 0, sum = 0, sum2 = 0;
  for (int r = 0; r < batch.num_requests(); ++r) {
    const auto slots = RequestSlots(batch, r, s.page_size);
    for (int head = 0; head < h; ++head) {
      if (Planted(r, head)) continue;
      const uint16_t* row = &q[(int64_t(r) * h + head) * s.head_dim];
      for (int64_t slot : slots) {
        double dot = 0;
        for (int d = 0; d < s.head_dim; ++d) dot += kernels::ToFloat(s.dtype, row[d]) * pool.K(layer, slot, head / g, d);
        dot /= std::sqrt(double(s.head_dim));
        n += 1;
        sum += dot;
        sum2 += dot * dot;
      }
    }
  }
  return n == 0 ? 0 : std::sqrt(std::max(0.0, sum2 / n - (sum / n) * (sum / n)));
}

void ExpectMatchesOracle(const StepResult& got, const RefOutput& want, DType dtype, bool peaky,
                         const std::string& what) {
  ExpectAllClose(got.v.data(), want.v.data(), int64_t(want.v.size()), kStateTol, what + " v_out");
  ExpectLseClose(got.s.data(), want.s.data(), int64_t(want.s.size()), peaky ? kPeakyLseTol : kLseTol, what + " s_out");
  ExpectAllClose(got.o.data(), want.v.data(), int64_t(want.v.size()), OutputTolerance(dtype), what + " o");
}

// ---------------------------------------------------------------------------------------------
// Cascade decode vs NaiveCascade.

using CascadeCase = CascadeCaseOf<Split>;

class CpuCascadeTest : public ::testing::TestWithParam<CascadeCase> {};

TEST_P(CpuCascadeTest, MatchesFloat64Oracle) {
  const CascadeCase& c = GetParam();
  PREFIXD_SEEDED_RNG(rng);
  const std::vector<GroupSpec> groups = c.groups.empty() ? RandomGroups(rng, 3, 3, 150, 40) : c.groups;
  auto backend = kernels::MakeCpuBackend();

  const KvPoolShape shape{c.num_layers, PagesNeeded(groups, c.page_size) + 3, c.page_size, c.num_kv_heads,
                          c.head_dim, c.dtype};
  kernels::PageAllocator alloc(shape.num_pages);
  const DecodeBatch batch = BuildBatch(groups, c.num_qo_heads, c.page_size, alloc, rng);
  HostKvPool pool = RandomKvPool(rng, shape);
  PoisonSlotsOutsideRequests(pool, batch, c.layer);  // the backend must read nothing else
  const std::vector<uint16_t> q = MakeQueries(rng, pool, c.layer, batch, c.peaky, kPeakyScale);
  if (c.peaky) {
    EXPECT_GE(ScoreStd(pool, c.layer, batch, q), 10.0) << "the peaky case is not peaky";
  }

  const CascadePlan plan = kernels::PlanCascade(batch, shape, OptionsFor(c.split, *backend));
  if (c.expect_prefix_chunks_beyond_pages) {
    EXPECT_TRUE(SplitsPrefixBeyondPages(plan, c.page_size)) << "no prefix was split into more chunks than pages";
  }
  if (c.expect_split_kv) {
    EXPECT_GT(plan.decode_items.size(), size_t(batch.num_requests()) * c.num_kv_heads) << "no split-KV";
  }

  const StepResult got = RunStep(*backend, pool, c.layer, plan, q);
  const RefOutput want = NaiveCascade(pool, c.layer, batch, q, 1.0 / std::sqrt(double(c.head_dim)));
  ExpectMatchesOracle(got, want, c.dtype, c.peaky, c.name);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, CpuCascadeTest,
    ::testing::Values(
        CascadeCase{"b1_suffix1_fp16_h4kv4_d64_p16", kF16, 4, 4, 64, 16, {{100, {1}}}},
        CascadeCase{"mixed_groups_bf16_h4kv2_d128_p16", kBF16, 4, 2, 128, 16,
                    {{37, {5, 16, 17}}, {0, {3, 20}}, {200, {0, 9}}}},
        CascadeCase{"peaky_fp16_h8kv2_d256_p16", kF16, 8, 2, 256, 16, {{150, {7, 33}}, {64, {1, 2, 3}}}, true},
        CascadeCase{"flat_bf16_h8kv2_d256_p16", kBF16, 8, 2, 256, 16, {{150, {7, 33}}, {64, {1, 2, 3}}}},
        CascadeCase{"odd_page5_bf16_h8kv1_d64", kBF16, 8, 1, 64, 5, {{23, {4, 11, 0, 6}}, {0, {13}}}},
        CascadeCase{"finest_page5_peaky_fp16_h8kv1_d128", kF16, 8, 1, 128, 5, {{23, {4, 11}}, {41, {9}}}, true,
                    Split::kFinest, 1, 0, true, true},
        CascadeCase{"more_chunks_than_pages_fp16_h4kv4_d64", kF16, 4, 4, 64, 16, {{40, {3, 2}}}, false,
                    Split::kFinest, 1, 0, true},
        CascadeCase{"gpu_options_bf16_h4kv2_d256", kBF16, 4, 2, 256, 16, {{700, {5, 6, 7}}}, false, Split::kGpuDefault},
        CascadeCase{"no_split_fp16_h4kv2_d128", kF16, 4, 2, 128, 16, {{300, {5, 40}}, {0, {3}}}, false, Split::kNone},
        CascadeCase{"split_kv_long_suffix_fp16_h4kv2_d128", kF16, 4, 2, 128, 16, {{0, {600, 3}}}, false,
                    Split::kBackendDefault, 1, 0, false, true},
        CascadeCase{"layer1_of_2_peaky_bf16_h8kv2_d64", kBF16, 8, 2, 64, 16,
                    {{48, {1}}, {0, {2, 0}}, {130, {17, 16, 15}}, {16, {64}}}, true, Split::kBackendDefault, 2, 1},
        CascadeCase{"empty_requests_fp16_h4kv4_d64", kF16, 4, 4, 64, 16, {{0, {0, 5}}, {30, {0}}, {0, {0}}}},
        CascadeCase{"random_groups_fp16_h4kv1_d128", kF16, 4, 1, 128, 16, {}, false, Split::kBackendDefault},
        CascadeCase{"wide_gqa96_bf16_h96kv1_d64_p16", kBF16, 96, 1, 64, 16, {{40, {3, 9, 1}}, {0, {20}}}, true,
                    Split::kWideTiles},
        CascadeCase{"random_groups_finest_bf16_h8kv4_d64_p7", kBF16, 8, 4, 64, 7, {}, true, Split::kFinest}),
    [](const ::testing::TestParamInfo<CascadeCase>& p) { return p.param.name; });

// A request with neither prefix nor suffix gets the empty state: o = 0, v = 0, s = −inf, no NaN.
TEST(CpuCascade, EmptyRequestGetsEmptyState) {
  std::mt19937_64 rng(TestSeed());
  auto backend = kernels::MakeCpuBackend();
  const KvPoolShape shape{1, 4, 16, 2, 64, kF16};
  kernels::PageAllocator alloc(shape.num_pages);
  const DecodeBatch batch = BuildBatch({{0, {0, 3}}}, 4, 16, alloc, rng);
  const HostKvPool pool = RandomKvPool(rng, shape);
  const auto q = RandomBits(rng, 2 * 4 * 64, kF16, 1.f);
  const StepResult got = RunStep(*backend, pool, 0, kernels::PlanCascade(batch, shape, {}), q);
  ExpectEmptyStates(got, 0, 4, 64);
  for (int h = 4; h < 8; ++h) EXPECT_TRUE(std::isfinite(got.s[h]));
}

// A batch of empty requests only: the plan has no states at all, so the ⊕ over each request's
// (empty) run of slots must read nothing (under UBSan this was a null reference, session 102).
TEST(CpuCascade, BatchOfEmptyRequestsOnlyGetsEmptyStates) {
  std::mt19937_64 rng(TestSeed());
  auto backend = kernels::MakeCpuBackend();
  const KvPoolShape shape{1, 4, 16, 2, 64, kF16};
  kernels::PageAllocator alloc(shape.num_pages);
  const DecodeBatch batch = BuildBatch({{0, {0, 0, 0}}}, 4, 16, alloc, rng);
  const HostKvPool pool = RandomKvPool(rng, shape);
  const auto q = RandomBits(rng, 3 * 4 * 64, kF16, 1.f);
  const StepResult got = RunStep(*backend, pool, 0, kernels::PlanCascade(batch, shape, {}), q);
  ASSERT_EQ(got.v.size(), size_t(3 * 4 * 64));
  ExpectEmptyStates(got, 0, 3 * 4, 64);
}

// Each output is optional, and whichever are asked for are the same bits; a backend reused across
// plans (a large one, then a small one) gives the bits of a fresh backend.
TEST(CpuCascade, OutputsAreOptionalAndWorkspaceIsReusable) {
  PREFIXD_SEEDED_RNG(rng);
  const std::vector<GroupSpec> big = {{300, {5, 7, 9}}, {0, {40, 2}}}, small = {{33, {1}}};
  const KvPoolShape shape{1, PagesNeeded(big, 16) + PagesNeeded(small, 16), 16, 2, 128, kBF16};
  kernels::PageAllocator alloc(shape.num_pages);
  const DecodeBatch big_batch = BuildBatch(big, 8, 16, alloc, rng), small_batch = BuildBatch(small, 8, 16, alloc, rng);
  const HostKvPool pool = RandomKvPool(rng, shape);
  const auto q_big = MakeQueries(rng, pool, 0, big_batch, false, kPeakyScale);
  const auto q_small = MakeQueries(rng, pool, 0, small_batch, false, kPeakyScale);
  auto fresh = kernels::MakeCpuBackend(), reused = kernels::MakeCpuBackend();
  const PlanOptions o = OptionsFor(Split::kFinest, *fresh);
  RunStep(*reused, pool, 0, kernels::PlanCascade(big_batch, shape, o), q_big);
  const CascadePlan plan = kernels::PlanCascade(small_batch, shape, o);
  const StepResult want = RunStep(*fresh, pool, 0, plan, q_small);
  const StepResult got = RunStep(*reused, pool, 0, plan, q_small);
  EXPECT_EQ(got.v, want.v);
  EXPECT_EQ(got.s, want.s);
  EXPECT_EQ(got.o, want.o);

  // One output at a time, into poisoned buffers.
  const int64_t n = int64_t(8) * 128;
  std::vector<uint16_t> o_bits(n, 0xFFFF);
  std::vector<float> v(n, std::nanf("")), s(8, std::nanf(""));
  kernels::CascadeArgs args;
  args.kv = {shape, const_cast<uint16_t*>(pool.k.data()), const_cast<uint16_t*>(pool.v.data())};
  args.q = q_small.data();
  args.o = o_bits.data();
  fresh->RunCascade(args);
  args.o = nullptr;
  args.v_out = v.data();
  fresh->RunCascade(args);
  args.v_out = nullptr;
  args.s_out = s.data();
  fresh->RunCascade(args);
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(kernels::ToFloat(kBF16, o_bits[i]), want.o[i]) << i;
  EXPECT_EQ(v, want.v);
  EXPECT_EQ(s, want.s);
}

// The cascade in parts (Backend::RunCascadeParts) gives the bits of the whole: a fused plan whose
// merge requests have no suffix (prefix + merge may then run before the decode), and a plan with
// split suffixes, whose merge must follow the decode.
TEST(CpuCascade, PartsMatchTheWholeCascade) {
  PREFIXD_SEEDED_RNG(rng);
  // A request without a suffix in each group (a merge request), a group without a prefix.
  const std::vector<GroupSpec> groups = {{300, {5, 0, 37}}, {0, {40, 2}}, {48, {0, 1}}};
  const KvPoolShape shape{1, PagesNeeded(groups, 16), 16, 2, 64, kF16};
  kernels::PageAllocator alloc(shape.num_pages);
  const DecodeBatch batch = BuildBatch(groups, 8, 16, alloc, rng);
  const HostKvPool pool = RandomKvPool(rng, shape);
  const auto q = MakeQueries(rng, pool, 0, batch, true, kPeakyScale);
  auto backend = kernels::MakeCpuBackend();

  const CascadePlan fused = kernels::PlanCascade(batch, shape, OptionsFor(Split::kBackendDefault, *backend));
  ASSERT_FALSE(fused.merge_requests.empty());
  ASSERT_FALSE(fused.MergeNeedsDecode());
  const StepResult want = RunStep(*backend, pool, 0, fused, q);
  const StepResult got = ExpectCascadePartsMatchWhole(*backend, pool, 0, fused, q);
  EXPECT_EQ(got.v, want.v);

  const CascadePlan split = kernels::PlanCascade(batch, shape, OptionsFor(Split::kFinest, *backend));
  ASSERT_TRUE(split.MergeNeedsDecode());
  ExpectCascadePartsMatchWhole(*backend, pool, 0, split, q);
  // The merge part writing packed rows (CascadeArgs::merge_packed_row), 8 heads: 16-byte rows.
  ExpectMergePartPacksRows(*backend, pool, 0, fused, q);
  ExpectMergePartPacksRows(*backend, pool, 0, split, q);
}

// ---------------------------------------------------------------------------------------------
// Non-cascade baseline: every request's table lists the prefix pages then its own; no sharing.

class CpuBaselineTest : public ::testing::TestWithParam<BaselineCase> {};

TEST_P(CpuBaselineTest, NonCascadeEqualsCascade) {
  const BaselineCase& c = GetParam();
  PREFIXD_SEEDED_RNG(rng);
  auto backend = kernels::MakeCpuBackend();
  const KvPoolShape shape{1, PagesNeeded(c.groups, c.page_size) + 2, c.page_size, c.num_kv_heads, c.head_dim, c.dtype};
  kernels::PageAllocator alloc(shape.num_pages);
  const DecodeBatch batch = BuildBatch(c.groups, c.num_qo_heads, c.page_size, alloc, rng);
  const DecodeBatch flat = FlattenBatch(batch, c.page_size);
  const HostKvPool pool = RandomKvPool(rng, shape);
  const auto q = MakeQueries(rng, pool, 0, batch, c.peaky, kPeakyScale);
  const PlanOptions options = backend->DefaultPlanOptions();

  const CascadePlan flat_plan = kernels::PlanCascade(flat, shape, options);
  EXPECT_TRUE(flat_plan.prefix_items.empty());
  const StepResult cascade = RunStep(*backend, pool, 0, kernels::PlanCascade(batch, shape, options), q);
  const StepResult plain = RunStep(*backend, pool, 0, flat_plan, q);
  const RefOutput want = NaiveCascade(pool, 0, batch, q, 1.0 / std::sqrt(double(c.head_dim)));
  ExpectMatchesOracle(cascade, want, c.dtype, c.peaky, "cascade");
  ExpectMatchesOracle(plain, want, c.dtype, c.peaky, "non-cascade");
  const std::vector<double> cascade_v = ToDouble(cascade.v);
  ExpectAllClose(plain.v.data(), cascade_v.data(), int64_t(cascade_v.size()), kStateTol, "non-cascade vs cascade");
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, CpuBaselineTest,
    ::testing::Values(BaselineCase{"fp16_h4kv2_d128_p16", kF16, 4, 2, 128, 16, {{256, {3, 40, 1}}, {0, {7}}}, false},
                      BaselineCase{"peaky_bf16_h8kv1_d64_p16", kBF16, 8, 1, 64, 16, {{320, {2, 0}}, {32, {9}}}, true},
                      BaselineCase{"fp16_h8kv8_d256_p5", kF16, 8, 8, 256, 5, {{45, {1, 6}}}, false}),
    [](const ::testing::TestParamInfo<BaselineCase>& p) { return p.param.name; });

// ---------------------------------------------------------------------------------------------
// RunPrefixAttention (prefill / append): causal with q_offset, and non-causal.

class CpuPrefixAttentionTest : public ::testing::TestWithParam<PrefixCase> {};

TEST_P(CpuPrefixAttentionTest, MatchesFloat64Oracle) {
  const PrefixCase& c = GetParam();
  PREFIXD_SEEDED_RNG(rng);
  auto backend = kernels::MakeCpuBackend();
  const PrefixProblem p = MakePrefixProblem(rng, c, kPeakyScale);
  const StepResult got = RunPrefixCase(*backend, c, p);
  const RefOutput want = NaivePrefixCase(c, p);
  const int64_t rows = int64_t(c.num_queries) * c.num_qo_heads;
  ExpectAllClose(got.v.data(), want.v.data(), rows * c.head_dim, kStateTol, c.name + " v_out");
  ExpectLseClose(got.s.data(), want.s.data(), rows, c.peaky ? kPeakyLseTol : kLseTol, c.name + " s_out");
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, CpuPrefixAttentionTest,
    ::testing::Values(PrefixCase{"causal_prefill_fp16_h4kv2_d128_p16", kF16, 4, 2, 128, 16, 70, 70, 0, true, false},
                      PrefixCase{"causal_append_bf16_h8kv1_d64_p5", kBF16, 8, 1, 64, 5, 90, 17, 73, true, true},
                      PrefixCase{"causal_append_fp16_h8kv2_d256_p16", kF16, 8, 2, 256, 16, 100, 40, 60, true, false},
                      PrefixCase{"noncausal_bf16_h4kv4_d128_p16", kBF16, 4, 4, 128, 16, 130, 9, 0, false, true},
                      PrefixCase{"empty_prefix_fp16_h4kv2_d64_p16", kF16, 4, 2, 64, 16, 0, 5, 0, false, false}),
    [](const ::testing::TestParamInfo<PrefixCase>& p) { return p.param.name; });

}  // namespace
}  // namespace prefixd::test
