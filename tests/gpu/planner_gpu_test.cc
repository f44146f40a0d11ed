// The planner's plans on the GPU: the chosen layouts against the float64 oracle, TimeUs timing only
// its own work, and the measured choice (kernels::MeasuredPlanner) timing near ties while the step
// it keeps computes the cascade's attention.
//
// Every test starts with a GPU guard and skips (with the reason) when there is no usable GPU;
// PREFIXD_GPU_TESTS_CPU_STAND_IN=1 runs the backend-level ones with the CPU backend in the GPU's
// place (gpu_backend_fixture.h). The helpers these files share are in gpu_backend_fixture.h.
#include "gpu/gpu_backend_fixture.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "prefixd/kernels/cost_model.h"
#include "prefixd/kernels/measured_choice.h"
#include "prefixd/kernels/plan.h"
#include "support/backend_step.h"
#include "support/test_support.h"
#include "unit/kernels/random_batch.h"

namespace prefixd::test {
namespace {

// The device's default plan options choose each group's layout with the cost model (on by
// default on CUDA): whatever they choose must compute the same attention. Four batches of one
// group (32/8, short random suffixes): 16 requests over a 128-token prefix, which the built-in H200
// model plans as plain decode (predicted ~30% faster), over a 1024-token one, which it plans as a
// cascade of 128-token prefix chunks (PlanOptions::fine_prefix_chunk: 16 items of 512 tokens would
// leave the prefix grid on 16 SMs), and over a 2048-token one, which it keeps as a cascade with the
// usual chunks; and 48 requests (192 rows per KV head) over 2048 tokens, which it plans with the
// narrow prefix CTA's 64-row items (PlanOptions::narrow_tile_rows, predicted ~17% faster). Each
// checked against the float64 oracle, and the choice itself checked, so that every layout really ran.
TEST(CudaPlanner, ChosenLayoutsMatchTheOracle) {
  PREFIXD_REQUIRE_DEVICE_BACKEND();
  PREFIXD_SEEDED_RNG(rng);
  const int page_size = 16, hq = 32, hkv = 8, d = 128;
  PlanOptions options = Device().DefaultPlanOptions();
  // The CPU stand-in plans without the choice by default; its planning and oracle checks still run.
  if (CpuStandIn() && !kernels::CudaAvailable()) options.choose_layout = true;
  ASSERT_TRUE(options.choose_layout) << "the CUDA backend's default plans without the layout choice";
  for (const auto& [requests, prefix] : std::vector<std::pair<int, int>>{{16, 128}, {16, 1024}, {16, 2048}, {48, 2048}}) {
    SCOPED_TRACE(std::to_string(requests) + " requests, prefix " + std::to_string(prefix));
    std::vector<GroupSpec> groups = {{prefix, std::vector<int>(requests, 0)}};
    for (int& len : groups[0].suffix_lens) len = 1 + int(rng() % 40);
    const KvPoolShape shape{1, PagesNeeded(groups, page_size) + 3, page_size, hkv, d, kF16};
    kernels::PageAllocator alloc(shape.num_pages);
    const DecodeBatch batch = BuildBatch(groups, hq, page_size, alloc, rng);
    const HostKvPool pool = RandomKvPool(rng, shape);
    const std::vector<uint16_t> q = MakeQueries(rng, pool, 0, batch, true, kPeakyScale);
    const RefOutput want = NaiveCascade(pool, 0, batch, q, 1.0 / std::sqrt(double(d)));
    kernels::PlanReport report;
    const CascadePlan plan = kernels::PlanCascade(batch, shape, options, &report);
    const bool plain = prefix == 128;
    ASSERT_EQ(report.group_plain.size(), 1u);
    EXPECT_EQ(report.group_plain[0], plain ? 1 : 0) << "predicted cascade " << report.predicted_cascade_us
                                                    << " us, plain " << report.predicted_plain_us;
    EXPECT_EQ(plan.groups[0].prefix.num_tokens, plain ? 0 : prefix);
    const bool fine = prefix == 1024 && options.fine_prefix_chunk > 0;  // (the CPU stand-in has none)
    EXPECT_EQ(report.min_prefix_chunk, fine ? options.fine_prefix_chunk : options.min_prefix_chunk);
    if (fine)
      for (const kernels::PrefixWorkItem& item : plan.prefix_items) EXPECT_EQ(item.kv_end - item.kv_begin, 128);
    const bool narrow = requests == 48 && options.narrow_tile_rows > 0;  // (nor narrow items)
    EXPECT_EQ(report.prefix_tile_rows, narrow ? options.narrow_tile_rows : options.prefix_tile_rows)
        << "predicted " << report.predicted_us << " us, cascade " << report.predicted_cascade_us;
    if (narrow)
      for (const kernels::PrefixWorkItem& item : plan.prefix_items)
        EXPECT_LE(item.row_end - item.row_begin, options.narrow_tile_rows);
    ExpectMatchesOracle(RunStep(Device(), pool, 0, plan, q), want, kF16,
                        plain    ? "plain chosen"
                        : fine   ? "cascade with fine chunks chosen"
                        : narrow ? "cascade with narrow items chosen"
                                 : "cascade chosen");
  }
}

// Backend::TimeUs times only the work it is given: not what was queued before it.
TEST(CudaPlanner, TimeUsTimesOnlyItsOwnWork) {
  PREFIXD_REQUIRE_DEVICE_BACKEND();
  Backend& be = Device();
  const size_t bytes = size_t(1) << 30;
  BackendBuffers mem(be);
  void* buffer = mem.Poisoned(bytes);
  const double fill_us = be.TimeUs([&] { be.Fill(buffer, 0x11, bytes); });
  EXPECT_GT(fill_us, 50.0) << "1 GiB written in under 50 us";  // > 20 TB/s: not timed
  EXPECT_LT(fill_us, 2e6);
  be.Fill(buffer, 0x22, bytes);  // queued before, not timed
  const double empty_us = be.TimeUs([] {});
  EXPECT_GE(empty_us, 0.0);
  EXPECT_LT(empty_us, 0.25 * fill_us) << "TimeUs counted the work queued before it";
}

// The measured choice (kernels::MeasuredPlanner) on the device: near ties of the H200 model — plain
// decode against the cascade (32/8 B3 P256 S256), the model's split or concurrent variant against
// the cascade (32/8 B200 P5000 S100, where session 75 measured the model's choice 10% slower) —
// timed with finite positive times, one of the candidates kept, its outputs those of the float64
// oracle (small case) or of the device's cascade (large case), and the class served from then on.
TEST(CudaPlanner, MeasuredChoiceTimesNearTiesAndComputesTheCascadesAttention) {
  PREFIXD_REQUIRE_DEVICE_BACKEND();
  PREFIXD_SEEDED_RNG(rng);
  const int page_size = 16, hq = 32, hkv = 8, d = 128;
  // The CPU stand-in plans as the CUDA backend does on an H200 (its own default has no layout choice).
  PlanOptions options = kernels::CudaAvailable() ? Device().DefaultPlanOptions() : kernels::H200BackendPlanOptions();
  options.choose_layout = true;
  for (const auto& [requests, prefix, suffix] : std::vector<std::tuple<int, int, int>>{{3, 256, 256}, {200, 5000, 100}}) {
    SCOPED_TRACE(std::to_string(requests) + " requests, prefix " + std::to_string(prefix) + ", suffix " +
                 std::to_string(suffix));
    std::vector<GroupSpec> groups = {{prefix, std::vector<int>(size_t(requests), suffix)}};
    const KvPoolShape shape{1, PagesNeeded(groups, page_size) + 3, page_size, hkv, d, kF16};
    kernels::PageAllocator alloc(shape.num_pages);
    const DecodeBatch batch = BuildBatch(groups, hq, page_size, alloc, rng);
    const HostKvPool pool = RandomKvPool(rng, shape);
    const std::vector<uint16_t> q = MakeQueries(rng, pool, 0, batch, false, 0.f);
    BackendBuffers mem(Device());
    const kernels::KvPoolView kv{shape, mem.Upload(pool.k.data(), pool.k.size() * 2),
                                 mem.Upload(pool.v.data(), pool.v.size() * 2)};
    kernels::MeasuredChoiceOptions mo;
    mo.warmup_rounds = 1;
    mo.timed_rounds = 3;
    kernels::MeasuredPlanner planner(mo);
    kernels::MeasuredChoiceReport rep;
    const CascadePlan plan = planner.Plan(batch, shape, options, Device(), kv, &rep);
    ASSERT_TRUE(rep.timed) << "no near tie: predicted " << rep.model.predicted_us << " us, cascade "
                           << rep.model.predicted_cascade_us << ", plain " << rep.model.predicted_plain_us;
    ASSERT_GE(rep.candidates.size(), 2u);
    ASSERT_EQ(rep.measured_us.size(), rep.candidates.size());
    for (size_t i = 0; i < rep.candidates.size(); ++i) {
      EXPECT_TRUE(std::isfinite(rep.measured_us[i]) && rep.measured_us[i] > 0)
          << kernels::PlanCandidateName(rep.candidates[i]) << ": " << rep.measured_us[i] << " us";
      std::printf("  [measured] %s: predicted %.1f us, measured %.1f us%s\n",
                  kernels::PlanCandidateName(rep.candidates[i]), rep.predicted_us[i], rep.measured_us[i],
                  rep.candidates[i] == rep.chosen ? " (kept)" : "");
    }
    EXPECT_NE(std::find(rep.candidates.begin(), rep.candidates.end(), rep.chosen), rep.candidates.end());
    const StepResult got = RunStep(Device(), pool, 0, plan, q);
    if (requests <= 8) {
      ExpectMatchesOracle(got, NaiveCascade(pool, 0, batch, q, 1.0 / std::sqrt(double(d))), kF16, "measured choice");
    } else {
      PlanOptions fixed = options;
      fixed.choose_layout = false;
      const StepResult cascade = RunStep(Device(), pool, 0, kernels::PlanCascade(batch, shape, fixed), q);
      const std::vector<double> v = ToDouble(cascade.v), s = ToDouble(cascade.s);
      ExpectAllClose(got.v.data(), v.data(), int64_t(v.size()), OutputTolerance(kF16), "measured choice vs cascade");
      ExpectLseClose(got.s.data(), s.data(), int64_t(s.size()), kLseTol, "measured choice vs cascade (s)");
    }
    kernels::MeasuredChoiceReport again;
    const CascadePlan same = planner.Plan(batch, shape, options, Device(), kv, &again);
    EXPECT_TRUE(again.from_cache);
    EXPECT_EQ(same.Serialize(), plan.Serialize());
    EXPECT_EQ(planner.timings(), 1);
  }
}

}  // namespace
}  // namespace prefixd::test
