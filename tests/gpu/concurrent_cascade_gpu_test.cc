// Concurrent prefix/decode (PREFIXD_CONCURRENT_DECODE_SMS=k, cuda_backend.h): the prefix kernel on
// at most SMs − k CTAs of a second stream beside the decode kernel, every request finished by the
// merge kernel. The cascade cases (CascadeCases), each run twice: with the plan of the default
// (fused) options, which LoadPlan unfuses, and with the concurrent backend's own options
// (fuse_merge off). Also the early decode beside the prefix grid (PREFIXD_EARLY_DECODE_PERCENT) and
// the decode on exactly the SMs left free (CascadeArgs::decode_free_sms).
//
// Every test starts with a GPU guard and skips (with the reason) when there is no usable GPU;
// PREFIXD_GPU_TESTS_CPU_STAND_IN=1 runs the backend-level ones with the CPU backend in the GPU's
// place (gpu_backend_fixture.h). The helpers these files share are in gpu_backend_fixture.h.
#include "gpu/gpu_backend_fixture.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "prefixd/common/error.h"
#include "prefixd/kernels/cost_model.h"
#include "prefixd/kernels/decode_kernel_choice.h"
#include "prefixd/kernels/plan.h"
#include "support/backend_step.h"
#include "support/test_support.h"
#include "unit/kernels/expect_error.h"

#ifdef PREFIXD_HAVE_CUDA

#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/sm90a/prefix_attention_sm90a.h"
#endif

namespace prefixd::test {
namespace {

// Skips the test, with the reason, where the backend plans no concurrent step (its candidates k
// empty: no persistent sm_90a prefix kernel here).
#define PREFIXD_SKIP_WITHOUT_CONCURRENT_CANDIDATES(candidates) \
  if ((candidates).empty())                                      \
  GTEST_SKIP() << "no concurrent candidates on this device (the persistent sm_90a prefix kernel)"

// Runs `c` on `backend` with both plans (this file's first lines) against the float64 oracle and the CPU backend.
void ExpectConcurrentCascadeCorrect(Backend& backend, const CascadeCase& c, std::mt19937_64& rng) {
  const CascadeInputs in = MakeCascadeInputs(c, rng);
  const RefOutput want = NaiveCascade(in.pool, c.layer, in.batch, in.q, 1.0 / std::sqrt(double(c.head_dim)));
  const PlanOptions own = OptionsFor(c.split, backend);
  EXPECT_FALSE(own.fuse_merge) << "the concurrent backend's DefaultPlanOptions must not fuse the merge";
  const std::pair<std::string, CascadePlan> plans[] = {
      {c.name + " (fused plan, unfused by LoadPlan)", kernels::PlanCascade(in.batch, in.shape, OptionsFor(c.split))},
      {c.name + " (concurrent options)", kernels::PlanCascade(in.batch, in.shape, own)},
  };
  for (const auto& [what, plan] : plans) {
    const StepResult got = RunStep(backend, in.pool, c.layer, plan, in.q);
    const StepResult cpu = RunStep(Cpu(), in.pool, c.layer, plan, in.q);
    ExpectMatchesOracle(got, want, c.dtype, what);
    ExpectMatchesCpu(got, cpu, c.dtype, what);
  }
}

class CudaConcurrentCascadeTest : public ::testing::TestWithParam<CascadeCase> {};

TEST_P(CudaConcurrentCascadeTest, MatchesFloat64OracleAndCpuBackend) {
  PREFIXD_REQUIRE_GPU();
  PREFIXD_SEEDED_RNG(rng);
  ExpectConcurrentCascadeCorrect(Concurrent(), GetParam(), rng);
}

INSTANTIATE_TEST_SUITE_P(Shapes, CudaConcurrentCascadeTest, ::testing::ValuesIn(CascadeCases()),
                         [](const ::testing::TestParamInfo<CascadeCase>& info) { return info.param.name; });

// Early decode (PREFIXD_EARLY_DECODE_PERCENT, early_decode.h): a share of the finished requests'
// suffixes beside the prefix grid, each such request finished by an empty merge-only item after it.
// Every cascade case at 30% and 100% of those suffix tokens, its fused plan (finishing items) and
// the finest split (merged requests beside the early ones), against the float64 oracle and the CPU
// backend; the step must have run early items wherever the plan has finishing ones, as the
// persistent TMA decode wherever that kernel is built for the shape (PREFIXD_EARLY_DECODE_TMA, on
// by default; also with it off, and with its items spread one per CTA, PREFIXD_DECODE_TMA_ITEMS_PER_CTA).
// Then the decode part alone after the prefix part (the early grid launched normally) and a
// CUDA-graph replay of the whole step.
TEST(CudaEarlyDecode, MatchesFloat64OracleAndCpuBackend) {
  PREFIXD_REQUIRE_GPU();
#ifdef PREFIXD_HAVE_CUDA
  PREFIXD_SEEDED_RNG(rng);
  for (const auto& [percent, tma, per_cta] : {std::tuple{"30", "1", "0"}, std::tuple{"100", "1", "0"},
                                              std::tuple{"30", "0", "0"}, std::tuple{"100", "1", "1"}}) {
    SCOPED_TRACE(std::string("PREFIXD_EARLY_DECODE_PERCENT=") + percent + " PREFIXD_EARLY_DECODE_TMA=" + tma +
                 " PREFIXD_DECODE_TMA_ITEMS_PER_CTA=" + per_cta);
    std::unique_ptr<Backend> backend = MakeCudaBackendWithEnv({{"PREFIXD_EARLY_DECODE_PERCENT", percent},
                                                               {"PREFIXD_EARLY_DECODE_TMA", tma},
                                                               {"PREFIXD_DECODE_TMA_ITEMS_PER_CTA", per_cta}});
    auto& device = dynamic_cast<kernels::cuda::CudaBackend&>(*backend);
    for (const CascadeCase& c : CascadeCases()) {
      SCOPED_TRACE(c.name);
      const bool tma_built = tma[0] == '1' && kernels::TmaDecodeBuilt(c.num_qo_heads / c.num_kv_heads, c.head_dim);
      const CascadeInputs in = MakeCascadeInputs(c, rng);
      const RefOutput want = NaiveCascade(in.pool, c.layer, in.batch, in.q, 1.0 / std::sqrt(double(c.head_dim)));
      PlanOptions finest = OptionsFor(c.split);
      finest.target_items = 1 << 20;
      finest.decode_chunk_align = finest.min_decode_chunk = 16;
      for (const auto& [what, plan] : {std::pair{std::string("fused plan"), kernels::PlanCascade(in.batch, in.shape, OptionsFor(c.split))},
                                       std::pair{std::string("finest plan"), kernels::PlanCascade(in.batch, in.shape, finest)}}) {
        SCOPED_TRACE(what);
        // Early items run where the plan has finishing ones and its prefix grid leaves SMs idle.
        bool finishing = false;
        for (const auto& it : plan.decode_items) finishing = finishing || it.finish;
        const int prefix_ctas = plan.prefix_balanced_ctas > 0 ? plan.prefix_balanced_ctas
                                                              : int(std::min<size_t>(plan.prefix_items.size(), device.num_sms()));
        const int64_t before = device.early_decode_steps(), tma_before = device.early_tma_launches();
        const StepResult got = ExpectCascadePartsMatchWhole(*backend, in.pool, c.layer, plan, in.q);
        const StepResult cpu = RunStep(Cpu(), in.pool, c.layer, plan, in.q);
        ExpectMatchesOracle(got, want, c.dtype, what);
        ExpectMatchesCpu(got, cpu, c.dtype, what);
        if (finishing && !plan.prefix_items.empty() && prefix_ctas < device.num_sms()) {
          EXPECT_GT(device.early_decode_steps(), before) << "no early items ran";
          if (tma_built) EXPECT_GT(device.early_tma_launches(), tma_before) << "the early grid was not the TMA decode";
        } else {
          EXPECT_EQ(device.early_decode_steps(), before) << "early items without idle SMs beside the prefix grid";
        }
        if (tma[0] == '0') EXPECT_EQ(device.early_tma_launches(), tma_before) << "PREFIXD_EARLY_DECODE_TMA=0";
        ExpectMergePartPacksRows(*backend, in.pool, c.layer, plan, in.q);
      }
    }
  }
#endif
}

// The automatic early share (PREFIXD_EARLY_DECODE_PERCENT unset: EarlyDecodeAutoShare), here with
// no shortest prefix part (PREFIXD_EARLY_DECODE_MIN_PREFIX_US=0) so that small cases take it: early
// items run at GQA 1, as the TMA decode, and the step is correct; none with PREFIXD_EARLY_DECODE_TMA=0
// (the rule is sized for the TMA decode's rate), at GQA 4 (EarlyDecodeRule::max_gqa) and by default
// at these short prefixes (180 µs).
TEST(CudaEarlyDecode, AutoShareWhereTheRuleTakesIt) {
  PREFIXD_REQUIRE_GPU();
#ifdef PREFIXD_HAVE_CUDA
  PREFIXD_SEEDED_RNG(rng);
  const CascadeCase cases[] = {
      {"auto_fp16_h16kv16_d128", kF16, 16, 16, 128, 16, {{900, {40, 33, 64, 17, 50}}, {300, {20, 31}}}, true},
      {"auto_bf16_h8kv8_d128", kBF16, 8, 8, 128, 16, {{1200, {5, 70, 33}}, {64, {9}}}, false},
      {"no_auto_bf16_h32kv8_d128", kBF16, 32, 8, 128, 16, {{1200, {5, 70, 33}}, {64, {9}}}, false},
  };
  const std::unique_ptr<Backend> any = MakeCudaBackendWithEnv({{"PREFIXD_EARLY_DECODE_MIN_PREFIX_US", "0"}});
  const std::unique_ptr<Backend> no_tma = MakeCudaBackendWithEnv(
      {{"PREFIXD_EARLY_DECODE_MIN_PREFIX_US", "0"}, {"PREFIXD_EARLY_DECODE_TMA", "0"}});
  for (const CascadeCase& c : cases) {
    SCOPED_TRACE(c.name);
    // Unsplit: few prefix items (SMs idle beside them) and finishing decode items.
    const auto [in, want, plan] = MakeUnsplitCascade(c, rng);
    bool finishing = false;
    for (const auto& it : plan.decode_items) finishing = finishing || it.finish;
    ASSERT_TRUE(finishing && !plan.prefix_items.empty());
    const int sms = dynamic_cast<kernels::cuda::CudaBackend&>(Device()).num_sms();
    ASSERT_LT(plan.prefix_balanced_ctas > 0 ? plan.prefix_balanced_ctas : int(plan.prefix_items.size()), sms);
    for (Backend* backend : {any.get(), no_tma.get(), &Device()}) {
      auto& cuda = dynamic_cast<kernels::cuda::CudaBackend&>(*backend);
      SCOPED_TRACE(backend->Describe());
      const int64_t steps = cuda.early_decode_steps(), tma = cuda.early_tma_launches();
      const StepResult got = ExpectCascadePartsMatchWhole(*backend, in.pool, c.layer, plan, in.q);
      ExpectMatchesOracle(got, want, c.dtype, c.name);
      if (backend == any.get() && c.num_qo_heads == c.num_kv_heads) {
        EXPECT_GT(cuda.early_decode_steps(), steps) << "no early items ran";
        EXPECT_GT(cuda.early_tma_launches(), tma) << "the early grid was not the TMA decode";
      } else {
        EXPECT_EQ(cuda.early_decode_steps(), steps);
      }
    }
  }
#endif
}

// Every cap from one prefix CTA (k = SMs − 1) to almost the whole device (k = 1), on a long prefix
// (many prefix items per CTA) with GQA 4 / D 128 and GQA 8 / D 64 and split suffixes.
TEST(CudaConcurrentCascade, AnyDecodeSmCount) {
  PREFIXD_REQUIRE_GPU();
  PREFIXD_SEEDED_RNG(rng);
  const int sms = ConcurrentDecodeSms(1 << 20) + 1;
  const CascadeCase cases[] = {
      {"long_prefix_fp16_h32kv8_d128", kF16, 32, 8, 128, 16, {{3000, {17, 700, 0, 1}}, {0, {40}}, {600, {1300}}}, true},
      {"long_prefix_bf16_h64kv8_d64", kBF16, 64, 8, 64, 16, {{2500, {5, 1000}}, {129, {0, 3}}}},
  };
  for (const int k : {1, sms / 2, sms - 1}) {
    SCOPED_TRACE("PREFIXD_CONCURRENT_DECODE_SMS=" + std::to_string(k));
    std::unique_ptr<Backend> backend = MakeConcurrentBackend(std::to_string(k));
    for (const CascadeCase& c : cases) ExpectConcurrentCascadeCorrect(*backend, c, rng);
  }
}

// The switch is read once at construction, named by Describe(), and checked.
TEST(CudaConcurrentCascade, SwitchIsCheckedAndDescribed) {
  PREFIXD_REQUIRE_GPU();
  const int sms = ConcurrentDecodeSms(1 << 20) + 1;
  const std::string bad_values[] = {"-1", "abc", "4x", std::to_string(sms)};
  for (const std::string& bad : bad_values)
    EXPECT_PREFIXD_ERROR(MakeConcurrentBackend(bad), ErrorKind::kInvalidArgument, "PREFIXD_CONCURRENT_DECODE_SMS");
  const std::unique_ptr<Backend> off = MakeConcurrentBackend("0");
  EXPECT_EQ(off->Describe().find("concurrent"), std::string::npos) << off->Describe();
  // "auto" and an empty value are the default (the planner's choice): nothing forced.
  for (const char* automatic : {"auto", ""})
    EXPECT_EQ(MakeConcurrentBackend(automatic)->DefaultPlanOptions().concurrent_decode_sms, 0) << automatic;
  EXPECT_TRUE(off->DefaultPlanOptions().fuse_merge);
  EXPECT_NE(Concurrent().Describe().find("concurrent prefix/decode"), std::string::npos) << Concurrent().Describe();
  EXPECT_FALSE(Concurrent().DefaultPlanOptions().fuse_merge);
  EXPECT_LE(Concurrent().DefaultPlanOptions().prefix_target_items, Device().DefaultPlanOptions().prefix_target_items);
  EXPECT_TRUE(off->DefaultPlanOptions().concurrent_candidates.empty());
  EXPECT_TRUE(Concurrent().DefaultPlanOptions().concurrent_candidates.empty()) << "forced: no choice to make";
  EXPECT_EQ(Concurrent().DefaultPlanOptions().concurrent_decode_sms, ConcurrentDecodeSms(32));
  // Its decode: =force gives a forced k's plans the persistent TMA decode (and says so); without a
  // forced k it changes nothing; any other word is refused.
  EXPECT_FALSE(Concurrent().DefaultPlanOptions().concurrent_decode_tma);
  const std::unique_ptr<Backend> forced = MakeCudaBackendWithEnv(
      {{"PREFIXD_CONCURRENT_DECODE_SMS", std::to_string(ConcurrentDecodeSms(20))}, {"PREFIXD_CONCURRENT_DECODE_TMA", "force"}});
  EXPECT_TRUE(forced->DefaultPlanOptions().concurrent_decode_tma);
  EXPECT_NE(forced->Describe().find("the persistent TMA decode]"), std::string::npos) << forced->Describe();
  EXPECT_FALSE(MakeCudaBackendWithEnv({{"PREFIXD_CONCURRENT_DECODE_TMA", "force"}})->DefaultPlanOptions().concurrent_decode_tma);
  EXPECT_PREFIXD_ERROR(MakeCudaBackendWithEnv({{"PREFIXD_CONCURRENT_DECODE_TMA", "forced"}}), ErrorKind::kInvalidArgument,
                       "PREFIXD_CONCURRENT_DECODE_TMA");
  // The TMA decode's candidates from PREFIXD_CONCURRENT_TMA_CANDIDATES where the planner chooses
  // the mode (its default options carry candidates); each k in [1, SMs − 1], checked on every
  // backend, the mode off too.
  if (!Device().DefaultPlanOptions().concurrent_tma_candidates.empty()) {
    const std::unique_ptr<Backend> listed = MakeCudaBackendWithEnv({{"PREFIXD_CONCURRENT_TMA_CANDIDATES", "9,3"}});
    EXPECT_EQ(listed->DefaultPlanOptions().concurrent_tma_candidates, (std::vector<int>{9, 3}));
  }
  EXPECT_PREFIXD_ERROR(MakeCudaBackendWithEnv({{"PREFIXD_CONCURRENT_TMA_CANDIDATES", std::to_string(sms)}}),
                       ErrorKind::kInvalidArgument, "PREFIXD_CONCURRENT_TMA_CANDIDATES");
  EXPECT_PREFIXD_ERROR(MakeCudaBackendWithEnv({{"PREFIXD_CONCURRENT_DECODE_SMS", "0"},
                                               {"PREFIXD_CONCURRENT_TMA_CANDIDATES", "8,x"}}),
                       ErrorKind::kInvalidArgument, "PREFIXD_CONCURRENT_TMA_CANDIDATES");
}

// The options of a plan for the concurrent mode with the decode on k of the device's `sms` SMs, as
// the planner makes them (ScoreConcurrentCascade in plan.cc).
PlanOptions ConcurrentModeOptions(int sms, int k) {
  PlanOptions o = CascadeOptions(Device());
  o.concurrent_decode_sms = k;
  o.fuse_merge = false;
  o.prefix_target_items = sms - k;
  o.balance_prefix_ctas = sms - k;
  o.balance_stream = true;
  return o;
}

// The planner's choice (PREFIXD_CONCURRENT_DECODE_SMS unset: auto): on the sm_90a kernel the
// default options carry the candidates (15% and 21% of the SMs); a plan made for the mode (k in the
// plan) runs concurrently on the default backend, and one after the other on a backend with the
// mode off, both correct; plans without k run as before.
TEST(CudaConcurrentCascade, ThePlannersChoiceRunsConcurrently) {
  PREFIXD_REQUIRE_GPU();
#ifdef PREFIXD_HAVE_CUDA
  PREFIXD_SEEDED_RNG(rng);
  auto& device = dynamic_cast<kernels::cuda::CudaBackend&>(Device());
  const int sms = ConcurrentDecodeSms(1 << 20) + 1;
  const std::vector<int> candidates = Device().DefaultPlanOptions().concurrent_candidates;
  if (kernels::cuda::sm90a::DeviceReady()) {
    // 15% and 21% of the SMs, and the TMA decode's own 20-64 of 132 scaled (their values: the CPU
    // test CostModel.ConcurrentCandidatesAreTheH200sScaled).
    EXPECT_EQ(candidates, kernels::ConcurrentDecodeCandidates(sms));
    EXPECT_EQ(Device().DefaultPlanOptions().concurrent_tma_candidates, kernels::ConcurrentTmaDecodeCandidates(sms));
    EXPECT_NE(Device().Describe().find("where the planner chooses it"), std::string::npos) << Device().Describe();
  }
  // An owner that turns the mode off (the multi-rank engine: BackendOptions::concurrent_prefix_decode).
  kernels::BackendOptions no_mode;
  no_mode.concurrent_prefix_decode = false;
  const std::unique_ptr<Backend> without = kernels::MakeCudaBackend(no_mode);
  EXPECT_TRUE(without->DefaultPlanOptions().concurrent_candidates.empty());
  EXPECT_EQ(without->Describe().find("concurrent"), std::string::npos) << without->Describe();
  PREFIXD_SKIP_WITHOUT_CONCURRENT_CANDIDATES(candidates);
  const std::unique_ptr<Backend> off = MakeConcurrentBackend("0");
  const CascadeCase c{"planned_concurrent_fp16_h32kv8_d128", kF16, 32, 8, 128, 16,
                      {{3000, {17, 700, 0, 1, 256, 300}}, {0, {40}}, {600, {1300, 5}}}, true};
  const CascadeInputs in = MakeCascadeInputs(c, rng);
  const RefOutput want = NaiveCascade(in.pool, c.layer, in.batch, in.q, 1.0 / std::sqrt(double(c.head_dim)));
  for (const int k : candidates) {
    SCOPED_TRACE("k = " + std::to_string(k));
    const CascadePlan plan = kernels::PlanCascade(in.batch, in.shape, ConcurrentModeOptions(sms, k));
    ASSERT_EQ(plan.concurrent_decode_sms, k);
    const int64_t before = device.concurrent_steps();
    ExpectMatchesOracle(RunStep(Device(), in.pool, c.layer, plan, in.q), want, c.dtype, c.name + " (concurrent)");
    EXPECT_EQ(device.loaded_concurrent_decode_sms(), k);
    EXPECT_EQ(device.concurrent_steps() - before, 1) << "the plan's k did not make the step concurrent";
    ExpectMatchesOracle(RunStep(*off, in.pool, c.layer, plan, in.q), want, c.dtype, c.name + " (mode off)");
    EXPECT_EQ(dynamic_cast<kernels::cuda::CudaBackend&>(*off).concurrent_steps(), 0);
  }
  const int64_t before = device.concurrent_steps();
  ExpectMatchesOracle(RunStep(Device(), in.pool, c.layer, kernels::PlanCascade(in.batch, in.shape, CascadeOptions(Device())),
                              in.q),
                      want, c.dtype, c.name + " (no k)");
  EXPECT_EQ(device.concurrent_steps(), before);
#endif
}

// Cases for the concurrent mode's TMA decode: GQA 1, 2, 4, 8 at head_dim 64 and 128, fp16 and
// bf16, page 16 and 32 (the decode built for them), and GQA 3 and head_dim 256 (not built: another
// decode).
const std::vector<CascadeCase>& TmaDecodeCases() {
  static const std::vector<CascadeCase> cases = {
      {"tma_fp16_h32kv8_d128", kF16, 32, 8, 128, 16, {{3000, {17, 700, 0, 1, 256, 300}}, {0, {40}}, {600, {1300, 5}}}, true},
      {"tma_bf16_h16kv2_d64", kBF16, 16, 2, 64, 16, {{2000, {33, 260, 1}}, {500, {90, 16, 7}}}, true},
      {"tma_bf16_h8kv2_d128_p32", kBF16, 8, 2, 128, 32, {{1500, {40, 3, 333}}}, true},
      {"tma_fp16_h8kv4_d128_gqa2", kF16, 8, 4, 128, 16, {{1500, {40, 3, 333}}}, true},
      {"tma_bf16_h8kv8_d64_gqa1", kBF16, 8, 8, 64, 16, {{1200, {40, 3, 200}}, {0, {17}}}, true},
      {"tma_bf16_h64kv8_d128_gqa8", kBF16, 64, 8, 128, 32, {{2500, {64, 1, 129}}}, true},
      {"no_tma_fp16_h12kv4_d128_gqa3", kF16, 12, 4, 128, 16, {{1500, {40, 3, 333}}}, true},
      {"no_tma_fp16_h8kv2_d256", kF16, 8, 2, 256, 16, {{1500, {40, 3, 333}}}, true},
  };
  return cases;
}

// A concurrent plan whose decode is the persistent TMA decode on its k SMs (CascadePlan::
// concurrent_decode_tma, the planner's choice where the decode fits beside the prefix): correct
// against the float64 oracle at GQA 1, 2, 4 and 8, head_dim 64 and 128, fp16 and bf16, and run as
// that kernel where it is built (the backend counts those steps), at the planner's smallest k and at
// the largest of the TMA decode's own candidates (PlanOptions::concurrent_tma_candidates); at shapes
// it is not built for (GQA 3, head_dim 256) and on a backend with PREFIXD_CONCURRENT_DECODE_TMA=0
// the plan runs with the other decode, also correct.
TEST(CudaConcurrentCascade, ThePlansTmaDecodeRunsOnTheKSms) {
  PREFIXD_REQUIRE_GPU();
#ifdef PREFIXD_HAVE_CUDA
  PREFIXD_SEEDED_RNG(rng);
  const std::vector<int> candidates = Device().DefaultPlanOptions().concurrent_candidates;
  PREFIXD_SKIP_WITHOUT_CONCURRENT_CANDIDATES(candidates);
  EXPECT_TRUE(Device().DefaultPlanOptions().concurrent_tma_candidate);
  const std::unique_ptr<Backend> tma_off = MakeCudaBackendWithEnv({{"PREFIXD_CONCURRENT_DECODE_TMA", "0"}});
  EXPECT_FALSE(tma_off->DefaultPlanOptions().concurrent_tma_candidate);
  const int sms = ConcurrentDecodeSms(1 << 20) + 1;
  for (const CascadeCase& c : TmaDecodeCases()) {
    const bool built = kernels::TmaDecodeBuilt(c.num_qo_heads / c.num_kv_heads, c.head_dim);
    const CascadeInputs in = MakeCascadeInputs(c, rng);
    const RefOutput want = NaiveCascade(in.pool, c.layer, in.batch, in.q, 1.0 / std::sqrt(double(c.head_dim)));
    for (const int k : {candidates.front(), Device().DefaultPlanOptions().concurrent_tma_candidates.back()}) {
      PlanOptions o = ConcurrentModeOptions(sms, k);
      o.concurrent_decode_tma = true;
      const CascadePlan plan = kernels::PlanCascade(in.batch, in.shape, o);
      ASSERT_EQ(plan.concurrent_decode_tma, 1) << c.name;
      for (Backend* backend : {&Device(), tma_off.get()}) {
        auto& cuda = dynamic_cast<kernels::cuda::CudaBackend&>(*backend);
        const bool on = backend == &Device();
        SCOPED_TRACE(c.name + " k = " + std::to_string(k) + (on ? "" : " (PREFIXD_CONCURRENT_DECODE_TMA=0)"));
        const int64_t steps = cuda.concurrent_steps(), tma_steps = cuda.concurrent_tma_steps();
        ExpectMatchesOracle(RunStep(*backend, in.pool, c.layer, plan, in.q), want, c.dtype, c.name);
        EXPECT_EQ(cuda.concurrent_steps() - steps, 1);
        EXPECT_EQ(cuda.concurrent_tma_steps() - tma_steps, on && built ? 1 : 0);
      }
    }
  }
#endif
}

// A plan's own warps for its TMA decode (CascadePlan::concurrent_tma_warps, the measured choice's
// kFewerTmaWarps): where the plan's decode is the TMA decode (TmaDecodeCases) the launch runs 8 or
// 12 warps per CTA as the plan asks and the backend's own (12) where it asks for none (the backend
// reports each), whole and in parts alike (the same bits), correct against the float64 oracle; where
// the TMA decode is not built (GQA 3, head_dim 256) the other decode runs, also correct.
TEST(CudaConcurrentCascade, ThePlansOwnTmaWarpsRun) {
  PREFIXD_REQUIRE_GPU();
#ifdef PREFIXD_HAVE_CUDA
  PREFIXD_SEEDED_RNG(rng);
  const std::vector<int> candidates = Device().DefaultPlanOptions().concurrent_candidates;
  PREFIXD_SKIP_WITHOUT_CONCURRENT_CANDIDATES(candidates);
  auto& cuda = dynamic_cast<kernels::cuda::CudaBackend&>(Device());
  const int sms = ConcurrentDecodeSms(1 << 20) + 1;
  for (const CascadeCase& c : TmaDecodeCases()) {
    const bool built = kernels::TmaDecodeBuilt(c.num_qo_heads / c.num_kv_heads, c.head_dim);
    const CascadeInputs in = MakeCascadeInputs(c, rng);
    const RefOutput want = NaiveCascade(in.pool, c.layer, in.batch, in.q, 1.0 / std::sqrt(double(c.head_dim)));
    PlanOptions o = ConcurrentModeOptions(sms, candidates.front());
    o.concurrent_decode_tma = true;
    CascadePlan plan = kernels::PlanCascade(in.batch, in.shape, o);
    for (const int warps : {8, 0, 12}) {
      SCOPED_TRACE(c.name + " concurrent_tma_warps = " + std::to_string(warps));
      plan.concurrent_tma_warps = warps;
      const int64_t tma_steps = cuda.concurrent_tma_steps();
      const StepResult got = ExpectCascadePartsMatchWhole(Device(), in.pool, c.layer, plan, in.q);
      ExpectMatchesOracle(got, want, c.dtype, c.name);
      EXPECT_EQ(cuda.concurrent_tma_steps() - tma_steps, built ? 1 : 0);
      if (built) EXPECT_EQ(cuda.last_concurrent_tma_warps(), warps == 0 ? 12 : warps);
    }
  }
#endif
}

// The concurrent step chained on one stream where its decode is the TMA decode
// (PREFIXD_CONCURRENT_CHAIN=1, the TMA decode's steps only: the prefix grid signalling at its start,
// the TMA decode its programmatic dependent, the merge the decode's):
// where the plan's decode is the TMA decode (GQA 1, 2, 4, 8 at head_dim 64 and 128) the step runs
// chained (the backend counts it) and gives the bits of its three parts run one after the other and
// of the two-stream step (PREFIXD_CONCURRENT_CHAIN=0), correct against the float64 oracle, at the
// smallest and the largest k (TmaDecodeCases); where it is not (GQA 3, head_dim 256) the two-stream
// step runs, also correct.
TEST(CudaConcurrentCascade, TheChainedStepMatchesItsParts) {
  PREFIXD_REQUIRE_GPU();
#ifdef PREFIXD_HAVE_CUDA
  PREFIXD_SEEDED_RNG(rng);
  const std::unique_ptr<Backend> backend = MakeCudaBackendWithEnv({{"PREFIXD_CONCURRENT_CHAIN", "1"}});
  auto& cuda = dynamic_cast<kernels::cuda::CudaBackend&>(*backend);
  const std::unique_ptr<Backend> two_streams = MakeCudaBackendWithEnv({{"PREFIXD_CONCURRENT_CHAIN", "0"}});
  const std::vector<int> candidates = backend->DefaultPlanOptions().concurrent_candidates;
  PREFIXD_SKIP_WITHOUT_CONCURRENT_CANDIDATES(candidates);
  EXPECT_EQ(backend->Describe().find("not chained"), std::string::npos) << backend->Describe();
  EXPECT_NE(two_streams->Describe().find("not chained"), std::string::npos) << two_streams->Describe();
  const int sms = ConcurrentDecodeSms(1 << 20) + 1;
  for (const CascadeCase& c : TmaDecodeCases()) {
    const bool built = kernels::TmaDecodeBuilt(c.num_qo_heads / c.num_kv_heads, c.head_dim);
    const CascadeInputs in = MakeCascadeInputs(c, rng);
    const RefOutput want = NaiveCascade(in.pool, c.layer, in.batch, in.q, 1.0 / std::sqrt(double(c.head_dim)));
    for (const int k : {candidates.front(), backend->DefaultPlanOptions().concurrent_tma_candidates.back()}) {
      SCOPED_TRACE(c.name + " k = " + std::to_string(k));
      PlanOptions o = ConcurrentModeOptions(sms, k);
      o.concurrent_decode_tma = true;
      const CascadePlan plan = kernels::PlanCascade(in.batch, in.shape, o);
      const int64_t steps = cuda.concurrent_steps(), chained = cuda.chained_steps();
      // The whole step first (chained or on two streams), then its parts alone: the same bits.
      const StepResult got = ExpectCascadePartsMatchWhole(*backend, in.pool, c.layer, plan, in.q);
      ExpectMatchesOracle(got, want, c.dtype, c.name);
      EXPECT_EQ(cuda.concurrent_steps() - steps, 1);
      EXPECT_EQ(cuda.chained_steps() - chained, built ? 1 : 0);
      const StepResult two = RunStep(*two_streams, in.pool, c.layer, plan, in.q);
      EXPECT_EQ(dynamic_cast<kernels::cuda::CudaBackend&>(*two_streams).chained_steps(), 0);
      EXPECT_EQ(got.v, two.v);  // NaN anywhere fails (NaN != NaN)
      EXPECT_EQ(got.s, two.s);
      EXPECT_EQ(got.o, two.o);
    }
  }
  // Without the three launches' PDL nothing chains, and the description says so.
  const std::unique_ptr<Backend> no_pdl =
      MakeCudaBackendWithEnv({{"PREFIXD_CONCURRENT_CHAIN", "1"}, {"PREFIXD_DECODE_PDL", "0"}});
  EXPECT_NE(no_pdl->Describe().find("not chained"), std::string::npos) << no_pdl->Describe();
  EXPECT_PREFIXD_ERROR(MakeCudaBackendWithEnv({{"PREFIXD_CONCURRENT_CHAIN", "yes"}}), ErrorKind::kInvalidArgument,
                       "PREFIXD_CONCURRENT_CHAIN");
#endif
}

// The concurrent step's states with v in 16 bits (PREFIXD_CONCURRENT_STATES16, the default since
// session 99: the sm_90a prefix kernel and the TMA decode write v in the dtype, the merge reads it
// so): where the plan's decode is the TMA decode (TmaDecodeCases) the step takes them (the backend
// counts it), chained and on two streams, with the bits of its parts run one after the other (each
// part decides the width alone), correct against the float64 oracle, and within the 16-bit rounding
// of the fp32 states (PREFIXD_CONCURRENT_STATES16=0; relative L2 of v ≤ the dtype's unit roundoff
// · 2) but not equal to them; where it is not (GQA 3, head_dim 256) nothing changes: the fp32
// states' bits. The description names the fp32 form; a malformed value is an error.
TEST(CudaConcurrentCascade, TheStatesIn16BitsStayWithinTheirRounding) {
  PREFIXD_REQUIRE_GPU();
#ifdef PREFIXD_HAVE_CUDA
  PREFIXD_SEEDED_RNG(rng);
  const std::vector<int> candidates = Device().DefaultPlanOptions().concurrent_candidates;
  PREFIXD_SKIP_WITHOUT_CONCURRENT_CANDIDATES(candidates);
  const std::unique_ptr<Backend> fp32_states = MakeCudaBackendWithEnv({{"PREFIXD_CONCURRENT_STATES16", "0"}});
  Backend& chained = Device();
  const std::unique_ptr<Backend> two_streams = MakeCudaBackendWithEnv({{"PREFIXD_CONCURRENT_CHAIN", "0"}});
  EXPECT_NE(fp32_states->Describe().find("states in fp32"), std::string::npos) << fp32_states->Describe();
  EXPECT_EQ(Device().Describe().find("states in fp32"), std::string::npos) << Device().Describe();
  auto& fp32 = dynamic_cast<kernels::cuda::CudaBackend&>(*fp32_states);
  const int sms = ConcurrentDecodeSms(1 << 20) + 1;
  for (const CascadeCase& c : TmaDecodeCases()) {
    const bool built = kernels::TmaDecodeBuilt(c.num_qo_heads / c.num_kv_heads, c.head_dim);
    const CascadeInputs in = MakeCascadeInputs(c, rng);
    const RefOutput want = NaiveCascade(in.pool, c.layer, in.batch, in.q, 1.0 / std::sqrt(double(c.head_dim)));
    // Twice the unit roundoff: each state's v rounded once, merged with weights summing to 1.
    const double bound = c.dtype == kF16 ? std::ldexp(1.0, -10) : std::ldexp(1.0, -7);
    for (const int k : {candidates.front(), chained.DefaultPlanOptions().concurrent_tma_candidates.back()}) {
      PlanOptions o = ConcurrentModeOptions(sms, k);
      o.concurrent_decode_tma = true;
      const CascadePlan plan = kernels::PlanCascade(in.batch, in.shape, o);
      const int64_t fp32_before = fp32.states16_steps();
      const StepResult base = RunStep(fp32, in.pool, c.layer, plan, in.q);
      EXPECT_EQ(fp32.states16_steps(), fp32_before) << "PREFIXD_CONCURRENT_STATES16=0 writes fp32 states";
      for (Backend* backend : {&chained, two_streams.get()}) {
        auto& cuda = dynamic_cast<kernels::cuda::CudaBackend&>(*backend);
        SCOPED_TRACE(c.name + " k = " + std::to_string(k) + (backend == &chained ? " chained" : " two streams"));
        const int64_t before = cuda.states16_steps();
        const StepResult got = ExpectCascadePartsMatchWhole(*backend, in.pool, c.layer, plan, in.q);
        EXPECT_EQ(cuda.states16_steps() - before, built ? 1 : 0);
        ExpectMatchesOracle(got, want, c.dtype, c.name);
        ASSERT_EQ(got.v.size(), base.v.size());
        if (!built) {
          EXPECT_EQ(got.v, base.v);  // NaN anywhere fails (NaN != NaN)
          EXPECT_EQ(got.s, base.s);
          continue;
        }
        double diff2 = 0, norm2 = 0;
        for (size_t i = 0; i < got.v.size(); ++i) {
          const double d = double(got.v[i]) - double(base.v[i]);
          diff2 += d * d;
          norm2 += double(base.v[i]) * double(base.v[i]);
        }
        const double rel = std::sqrt(diff2 / norm2);
        EXPECT_LE(rel, bound) << "v against the fp32 states' step";  // NaN fails
        EXPECT_GT(rel, 0.0) << "the same bits as fp32 states: were they written in 16 bits?";
        EXPECT_EQ(got.s, base.s) << "the LSE stays fp32";
      }
    }
  }
  EXPECT_PREFIXD_ERROR(MakeCudaBackendWithEnv({{"PREFIXD_CONCURRENT_STATES16", "on"}}), ErrorKind::kInvalidArgument,
                       "PREFIXD_CONCURRENT_STATES16");
#endif
}

// The concurrent step chained also where its decode is the one-item decode
// (PREFIXD_CONCURRENT_CHAIN=all, the default: a CTA per item as the prefix grid's programmatic
// dependent, each signalling at its start, the last waiting for the prefix grid at its exit): at
// GQA 1-8 and head_dim 64-256 with the plan's decode not the TMA decode
// (CascadePlan::concurrent_decode_tma off), where the TMA decode is not built (GQA 3, head_dim
// 256), and where the decode is cut into group slices (GQA 8 at head_dim 256), the step runs
// chained (the backend counts it), gives the bits of its parts run one after the other and of the
// two-stream step, and is correct against the float64 oracle, at the smallest and the largest k;
// the description names the TMA-only mode (1).
TEST(CudaConcurrentCascade, TheOneItemDecodesChainMatchesTwoStreams) {
  PREFIXD_REQUIRE_GPU();
#ifdef PREFIXD_HAVE_CUDA
  PREFIXD_SEEDED_RNG(rng);
  const std::unique_ptr<Backend> backend = MakeCudaBackendWithEnv({{"PREFIXD_CONCURRENT_CHAIN", "all"}});
  auto& cuda = dynamic_cast<kernels::cuda::CudaBackend&>(*backend);
  const std::unique_ptr<Backend> two_streams = MakeCudaBackendWithEnv({{"PREFIXD_CONCURRENT_CHAIN", "0"}});
  const std::vector<int> candidates = backend->DefaultPlanOptions().concurrent_candidates;
  PREFIXD_SKIP_WITHOUT_CONCURRENT_CANDIDATES(candidates);
  EXPECT_EQ(backend->Describe().find("chained only"), std::string::npos) << backend->Describe();
  EXPECT_EQ(Device().Describe().find("chained only"), std::string::npos) << Device().Describe();
  const std::unique_ptr<Backend> tma_only = MakeCudaBackendWithEnv({{"PREFIXD_CONCURRENT_CHAIN", "1"}});
  EXPECT_NE(tma_only->Describe().find("chained only with the TMA decode"), std::string::npos) << tma_only->Describe();
  std::vector<CascadeCase> cases = TmaDecodeCases();
  cases.push_back({"sliced_bf16_h16kv2_d256", kBF16, 16, 2, 256, 16, {{1500, {40, 3, 333}}}, true});
  const int sms = ConcurrentDecodeSms(1 << 20) + 1;
  for (const CascadeCase& c : cases) {
    const CascadeInputs in = MakeCascadeInputs(c, rng);
    const RefOutput want = NaiveCascade(in.pool, c.layer, in.batch, in.q, 1.0 / std::sqrt(double(c.head_dim)));
    for (const int k : {candidates.front(), candidates.back()}) {
      SCOPED_TRACE(c.name + " k = " + std::to_string(k));
      PlanOptions o = ConcurrentModeOptions(sms, k);
      o.concurrent_decode_tma = false;
      const CascadePlan plan = kernels::PlanCascade(in.batch, in.shape, o);
      ASSERT_EQ(plan.concurrent_decode_sms, k);
      const int64_t steps = cuda.concurrent_steps(), chained = cuda.chained_steps();
      const StepResult got = ExpectCascadePartsMatchWhole(*backend, in.pool, c.layer, plan, in.q);
      ExpectMatchesOracle(got, want, c.dtype, c.name);
      EXPECT_EQ(cuda.concurrent_steps() - steps, 1);
      EXPECT_EQ(cuda.chained_steps() - chained, 1);
      const StepResult two = RunStep(*two_streams, in.pool, c.layer, plan, in.q);
      EXPECT_EQ(got.v, two.v);  // NaN anywhere fails (NaN != NaN)
      EXPECT_EQ(got.s, two.s);
      EXPECT_EQ(got.o, two.o);
    }
  }
#endif
}

// The decode confined to exactly the k SMs the prefix grid leaves (PREFIXD_DECODE_PERSISTENT: one
// CTA per SM looping over the items), as the cp.async streaming kernel and with its tiles copied
// by the TMA (PREFIXD_DECODE_TMA, where it applies: sm_90a; its tiles' arithmetic with the heads
// as the mma's N, the default, as 12 warps per CTA, the default, and as 8,
// PREFIXD_DECODE_TMA_WARPS=8, and as its M, PREFIXD_DECODE_TMA_SWAP_AB=0, 8 warps), at k = 1, 36
// and SMs − 1; every cascade case and the fused kernel's (page sizes 1-64, item boundaries
// anywhere: the TMA kernel's lane-copied tiles). One test per decode form and k, so that the
// suite's shards share them (as one test it took 157-211 s of one shard).
struct FreeSmDecode {
  const char* tma;
  const char* swap_ab;
  const char* warps;
  int k;  // 1, or 0 for ConcurrentDecodeSms(36), or -1 for SMs − 1 (the device's count, known at run time)
};

std::string FreeSmDecodeName(const ::testing::TestParamInfo<FreeSmDecode>& info) {
  const FreeSmDecode& d = info.param;
  return std::string("tma") + d.tma + "_swapab" + d.swap_ab + "_warps" + d.warps + "_k" +
         (d.k == 1 ? "1" : d.k == 0 ? "36" : "sms_minus_1");
}

std::vector<FreeSmDecode> FreeSmDecodes() {
  std::vector<FreeSmDecode> all;
  for (const FreeSmDecode form : {FreeSmDecode{"0", "1", "12", 0}, FreeSmDecode{"1", "1", "12", 0},
                                  FreeSmDecode{"1", "1", "8", 0}, FreeSmDecode{"1", "0", "12", 0}})
    for (const int k : {1, 0, -1}) {
      FreeSmDecode d = form;
      d.k = k;
      all.push_back(d);
    }
  return all;
}

class CudaDecodeOnFreeSmsTest : public ::testing::TestWithParam<FreeSmDecode> {};

TEST_P(CudaDecodeOnFreeSmsTest, DecodeOnExactlyTheFreeSms) {
  PREFIXD_REQUIRE_GPU();
  PREFIXD_SEEDED_RNG(rng);
  const FreeSmDecode& d = GetParam();
  const int sms = ConcurrentDecodeSms(1 << 20) + 1;
  const int k = d.k == 1 ? 1 : d.k == 0 ? ConcurrentDecodeSms(36) : sms - 1;
  SCOPED_TRACE(std::string("PREFIXD_DECODE_TMA=") + d.tma + " PREFIXD_DECODE_TMA_SWAP_AB=" + d.swap_ab +
               " PREFIXD_DECODE_TMA_WARPS=" + d.warps + " PREFIXD_CONCURRENT_DECODE_SMS=" + std::to_string(k));
  std::unique_ptr<Backend> backend = MakeCudaBackendWithEnv({{"PREFIXD_CONCURRENT_DECODE_SMS", std::to_string(k)},
                                                             {"PREFIXD_DECODE_PERSISTENT", "1"},
                                                             {"PREFIXD_DECODE_TMA", d.tma},
                                                             {"PREFIXD_DECODE_TMA_SWAP_AB", d.swap_ab},
                                                             {"PREFIXD_DECODE_TMA_WARPS", d.warps}});
  const std::string describe = backend->Describe();
  EXPECT_EQ(describe.find("[decode TMA]") != std::string::npos, d.tma[0] == '1') << describe;
  EXPECT_EQ(describe.find("[decode TMA tiles: heads as M]") != std::string::npos, d.tma[0] == '1' && d.swap_ab[0] == '0')
      << describe;
  // 12 warps run only with the heads as N: without, 8 (and the planner's model counts 8).
  EXPECT_EQ(describe.find("[decode TMA: 8 warps per CTA]") != std::string::npos, d.warps[0] == '8' || d.swap_ab[0] == '0')
      << describe;
  for (const CascadeCase& c : FusedCascadeCases()) ExpectConcurrentCascadeCorrect(*backend, c, rng);
}

INSTANTIATE_TEST_SUITE_P(Forms, CudaDecodeOnFreeSmsTest, ::testing::ValuesIn(FreeSmDecodes()), FreeSmDecodeName);

}  // namespace
}  // namespace prefixd::test
