// The decode kernels' forms against the float64 oracle: the CUDA-core decode, the pipeline depths
// and the shallow CTA's length rule, the warp rounds and the one-warp rule, the next-wave prefetch,
// the item pages, and each decode kernel variant (CudaDecodeVariantTest).
//
// Every test starts with a GPU guard and skips (with the reason) when there is no usable GPU;
// PREFIXD_GPU_TESTS_CPU_STAND_IN=1 runs the backend-level ones with the CPU backend in the GPU's
// place (gpu_backend_fixture.h). The helpers these files share are in gpu_backend_fixture.h.
#include "gpu/gpu_backend_fixture.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "prefixd/common/error.h"
#include "prefixd/kernels/plan.h"
#include "support/backend_step.h"
#include "support/test_support.h"
#include "unit/kernels/expect_error.h"
#include "unit/kernels/random_batch.h"

#ifdef PREFIXD_HAVE_CUDA

#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/decode_attention.h"
#endif

namespace prefixd::test {
namespace {

// The CUDA-core decode kernel where the tensor-core one is the default (GQA 4 and 8, head_dim
// 64/128): both stay correct, so either can be chosen (PREFIXD_DECODE_KERNEL=simt|mma).
class CudaCoresDecodeTest : public ::testing::TestWithParam<CascadeCase> {};

// Case c's batch (fresh random K/V and queries from rng) through `backend`, against the float64 oracle.
void ExpectCaseMatchesOracle(Backend& backend, const CascadeCase& c, const std::string& name, std::mt19937_64& rng) {
  const KvPoolShape shape{1, PagesNeeded(c.groups, c.page_size) + 3, c.page_size, c.num_kv_heads, c.head_dim, c.dtype};
  kernels::PageAllocator alloc(shape.num_pages);
  const DecodeBatch batch = BuildBatch(c.groups, c.num_qo_heads, c.page_size, alloc, rng);
  const HostKvPool pool = RandomKvPool(rng, shape);
  const std::vector<uint16_t> q = MakeQueries(rng, pool, 0, batch, c.peaky, kPeakyScale);
  const CascadePlan plan = kernels::PlanCascade(batch, shape, OptionsFor(c.split));
  ExpectMatchesOracle(RunStep(backend, pool, 0, plan, q), NaiveCascade(pool, 0, batch, q, 1.0 / std::sqrt(double(c.head_dim))),
                      c.dtype, name);
}

TEST_P(CudaCoresDecodeTest, MatchesFloat64Oracle) {
  PREFIXD_REQUIRE_GPU();
  const CascadeCase& c = GetParam();
  PREFIXD_SEEDED_RNG(rng);
  std::unique_ptr<Backend> simt = MakeCudaBackendWithEnv({{"PREFIXD_DECODE_KERNEL", "simt"}});
  EXPECT_NE(simt->Describe().find("simt"), std::string::npos) << simt->Describe();
  ExpectCaseMatchesOracle(*simt, c, c.name, rng);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, CudaCoresDecodeTest,
    ::testing::Values(CascadeCase{"peaky_fp16_h32kv8_d128_p16", kF16, 32, 8, 128, 16, {{70, {300, 1, 17}}}, true},
                      CascadeCase{"flat_bf16_h16kv2_d64_p16", kBF16, 16, 2, 64, 16, {{0, {45, 250}}}},
                      CascadeCase{"finest_bf16_h8kv1_d128_p5", kBF16, 8, 1, 128, 5, {{23, {4, 11}}}, true, Split::kFinest}),
    [](const ::testing::TestParamInfo<CascadeCase>& info) { return info.param.name; });

// The decode kernels' pipelines (PREFIXD_DECODE_PIPELINE: the two depths, and the narrow 64-thread
// CTA and the one-warp CTA of the CUDA-core kernel at GQA 1 and 2, the one-stage 2-warp CTA of the
// tensor-core kernel at head_dim ≤ 128, the rule elsewhere): the rule,
// and each forced, on items short and long (one token to several steps, a page size that is not a
// multiple of 16), on the CUDA-core kernel (GQA 1 and 2; "shallow" runs deep at GQA 2) and the
// 2-warp tensor-core kernel (GQA 4, 8, and GQA 4 at head_dim 256, forced there since its items of
// ≤ 32 tokens would otherwise take CUDA cores; warps forced, since a small batch would otherwise get
// 4 warps): all match the oracle, so the rules may pick any.
class DecodePipelineTest : public ::testing::TestWithParam<std::tuple<CascadeCase, const char*>> {};

TEST_P(DecodePipelineTest, MatchesFloat64Oracle) {
  PREFIXD_REQUIRE_GPU();
  const CascadeCase& c = std::get<0>(GetParam());
  const char* pipeline = std::get<1>(GetParam());
  PREFIXD_SEEDED_RNG(rng);
  std::unique_ptr<Backend> backend =
      MakeCudaBackendWithEnv({{"PREFIXD_DECODE_PIPELINE", pipeline}, {"PREFIXD_DECODE_WARPS", "2"},
                              {"PREFIXD_DECODE_KERNEL", "mma"}});  // where built; GQA 1 and 2 stay on CUDA cores
  const bool forced = backend->Describe().find(std::string("decode pipeline forced: ") + pipeline) != std::string::npos;
  EXPECT_EQ(forced, std::string(pipeline) != "auto") << backend->Describe();
  ExpectCaseMatchesOracle(*backend, c, c.name + "_" + pipeline, rng);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, DecodePipelineTest,
    ::testing::Combine(
        ::testing::Values(CascadeCase{"h8kv8_fp16_d128_p16", kF16, 8, 8, 128, 16, {{70, {32, 1, 31, 33, 16}}, {0, {300, 17}}}, true},
                          CascadeCase{"h16kv8_bf16_d64_p16", kBF16, 16, 8, 64, 16, {{40, {64, 3, 65}}, {0, {32, 129}}}},
                          CascadeCase{"h32kv8_fp16_d128_p16", kF16, 32, 8, 128, 16, {{130, {32, 1, 17, 33}}, {0, {32, 260}}}, true},
                          CascadeCase{"h64kv8_bf16_d64_p16", kBF16, 64, 8, 64, 16, {{23, {32, 5, 300}}}},
                          CascadeCase{"h8kv2_fp16_d256_p5", kF16, 8, 2, 256, 5, {{11, {7, 8, 9, 31}}}, true},
                          CascadeCase{"h32kv8_bf16_d128_p5", kBF16, 32, 8, 128, 5, {{11, {12, 32, 47}}}},
                          CascadeCase{"h4kv4_bf16_d256_p16", kBF16, 4, 4, 256, 16, {{50, {16, 3, 40}}, {0, {8, 70}}}, true},
                          CascadeCase{"h16kv8_fp16_d128_p16", kF16, 16, 8, 128, 16, {{90, {64, 2, 33}}, {0, {17, 130}}}},
                          CascadeCase{"h8kv4_fp16_d256_p7", kF16, 8, 4, 256, 7, {{30, {5, 31, 64}}}, true}),
        ::testing::Values("auto", "shallow", "deep", "narrow", "warp", "single")),
    [](const ::testing::TestParamInfo<std::tuple<CascadeCase, const char*>>& info) {
      return std::get<0>(info.param).name + "_" + std::get<1>(info.param);
    });

// Every case (fresh random inputs) through one backend made with `env`, whose description must say
// `described` (so that a setting the backend ignored fails the test rather than testing the default).
void ExpectCasesMatchOracleWithEnv(const EnvSettings& env, const std::string& described,
                                   const std::vector<CascadeCase>& cases, const std::string& name_suffix,
                                   std::mt19937_64& rng) {
  std::unique_ptr<Backend> backend = MakeCudaBackendWithEnv(env);
  EXPECT_NE(backend->Describe().find(described), std::string::npos) << backend->Describe();
  for (const CascadeCase& c : cases) ExpectCaseMatchesOracle(*backend, c, c.name + name_suffix, rng);
}

// The one-warp CTA's ring depths (PREFIXD_DECODE_WARP_ROUNDS: an item of 32 tokens in 1, 2 or 4
// rounds of copies, i.e. 9 / 5 / 3 stages at head_dim 128 and 5 / 3 / 2 at 64) on GQA 1 and 2,
// items of one token to several rounds and a page size that is not a multiple of 16: all match the
// oracle; forced without a depth it takes the length rule's 4; an unknown depth is refused when the
// backend is made.
TEST(DecodeWarpRounds, EachDepthMatchesFloat64Oracle) {
  PREFIXD_REQUIRE_GPU();
  PREFIXD_SEEDED_RNG(rng);
  const std::vector<CascadeCase> cases = {
      {"h8kv8_fp16_d128_p16", kF16, 8, 8, 128, 16, {{70, {32, 1, 31, 33, 16}}, {0, {300, 17}}}, true},
      {"h16kv8_bf16_d64_p16", kBF16, 16, 8, 64, 16, {{40, {64, 3, 65}}, {0, {32, 129}}}},
      {"h4kv4_bf16_d128_p5", kBF16, 4, 4, 128, 5, {{11, {7, 8, 9, 31, 70}}}},
  };
  for (const char* rounds : {"1", "2", "4"})
    ExpectCasesMatchOracleWithEnv({{"PREFIXD_DECODE_PIPELINE", "warp"}, {"PREFIXD_DECODE_WARP_ROUNDS", rounds}},
                                  std::string("[warp CTA rounds: ") + rounds + "]", cases, std::string("_warp_rounds_") + rounds, rng);
  // Forced without a depth: the length rule's.
  ExpectCasesMatchOracleWithEnv({{"PREFIXD_DECODE_PIPELINE", "warp"}}, "[warp CTA rounds: 4]", {cases[0]}, "_warp_default", rng);
  EXPECT_THROW(MakeCudaBackendWithEnv({{"PREFIXD_DECODE_WARP_ROUNDS", "3"}}), Error);
}

// The length rule's one-warp CTA (PREFIXD_DECODE_WARP_MIN_ITEMS; by default from 8192 items): taken
// from the first item, and off, on GQA-1 batches whose items all fit it (≤ 32 tokens) and on ones
// that do not, and by default on a batch past the threshold (256 requests × 32 KV heads of ≤ 32
// suffix tokens): all match the oracle.
TEST(DecodeWarpRule, MatchesFloat64OracleOnAndOff) {
  PREFIXD_REQUIRE_GPU();
  PREFIXD_SEEDED_RNG(rng);
  const std::vector<CascadeCase> cases = {
      {"h8kv8_fp16_d128_p16_short", kF16, 8, 8, 128, 16, {{70, {32, 1, 31, 17, 16}}, {0, {3, 32}}}, true},
      {"h8kv8_bf16_d64_p5_short", kBF16, 8, 8, 64, 5, {{40, {9, 3, 32}}, {0, {32, 29}}}},
      {"h4kv4_fp16_d128_p16_long", kF16, 4, 4, 128, 16, {{11, {7, 33, 70}}}},
  };
  for (const char* min_items : {"1", "0"})
    ExpectCasesMatchOracleWithEnv({{"PREFIXD_DECODE_WARP_MIN_ITEMS", min_items}},
                                  min_items[0] == '0' ? "[warp CTA rule: off]" : "[warp CTA rule: from 1 item]", cases,
                                  std::string("_warp_rule_") + min_items, rng);
  std::vector<int> suffixes(256);
  for (int& s : suffixes) s = 1 + int(rng() % 32);
  const CascadeCase past_threshold{"h32kv32_fp16_d128_p16_b256", kF16, 32, 32, 128, 16, {{300, suffixes}}};
  {  // its plan has the rule's 8192 items (one per request and KV head), all of ≤ 32 tokens
    const KvPoolShape shape{1, PagesNeeded(past_threshold.groups, 16) + 3, 16, 32, 128, kF16};
    kernels::PageAllocator alloc(shape.num_pages);
    const CascadePlan plan =
        kernels::PlanCascade(BuildBatch(past_threshold.groups, 32, 16, alloc, rng), shape, OptionsFor(past_threshold.split));
    ASSERT_GE(plan.decode_items.size(), 8192u);
  }
  std::unique_ptr<Backend> backend = MakeCudaBackendWithEnv({});
  EXPECT_EQ(backend->Describe().find("warp CTA rule"), std::string::npos) << backend->Describe();
  ExpectCaseMatchesOracle(*backend, past_threshold, past_threshold.name, rng);
}

// A decode of several waves (more items than resident CTAs: 82 requests × 16 or 32 KV heads),
// where each CTA prefetches the start of the item one wave later (PREFIXD_DECODE_NEXT_WAVE, on by
// default): on and off, on the CUDA-core (GQA 1) and the tensor-core (GQA 4) kernel, with suffixes
// of ≤ 32 tokens (the shallow pipeline) and of up to 100 (the deep one), all match the oracle.
TEST(DecodeNextWave, ManyItemsMatchFloat64OracleWithAndWithoutPrefetch) {
  PREFIXD_REQUIRE_GPU();
  PREFIXD_SEEDED_RNG(rng);
  for (const auto& [num_qo_heads, num_kv_heads] : {std::pair{32, 32}, std::pair{64, 16}}) {
    for (const int max_suffix : {32, 100}) {
      for (const char* next_wave : {"1", "0"}) {
        std::unique_ptr<Backend> backend = MakeCudaBackendWithEnv({{"PREFIXD_DECODE_NEXT_WAVE", next_wave}});
        EXPECT_EQ(backend->Describe().find("next-wave prefetch off") == std::string::npos, next_wave[0] == '1')
            << backend->Describe();
        std::vector<int> with_prefix(41), without_prefix(41);
        for (int& s : with_prefix) s = 1 + int(rng() % max_suffix);
        for (int& s : without_prefix) s = 1 + int(rng() % max_suffix);
        const std::vector<GroupSpec> groups = {{70, with_prefix}, {0, without_prefix}};
        const KvPoolShape shape{1, PagesNeeded(groups, 16) + 3, 16, num_kv_heads, 128, kF16};
        kernels::PageAllocator alloc(shape.num_pages);
        const DecodeBatch batch = BuildBatch(groups, num_qo_heads, 16, alloc, rng);
        const HostKvPool pool = RandomKvPool(rng, shape);
        const std::vector<uint16_t> q = MakeQueries(rng, pool, 0, batch, false, kPeakyScale);
        const CascadePlan plan = kernels::PlanCascade(batch, shape, OptionsFor(Split::kDevice));
        ASSERT_GT(plan.decode_items.size(), 1300u);
        ExpectMatchesOracle(RunStep(*backend, pool, 0, plan, q), NaiveCascade(pool, 0, batch, q, 1.0 / std::sqrt(128.0)),
                            kF16,
                            "h" + std::to_string(num_qo_heads) + "kv" + std::to_string(num_kv_heads) + "_s" +
                                std::to_string(max_suffix) + "_next_wave_" + next_wave);
      }
    }
  }
}

// The items' first pages passed with them (PREFIXD_DECODE_ITEM_PAGES: lookup, and next-wave with
// the next-wave K/V prefetch; decode_item_pages_gpu_test.cc shows the kernels read them): through
// the backend's own plan upload (WriteDecodeItemPages) on the pipeline cases, plans with suffixes
// split mid-page, a decode of several waves, and the early decode (its items offset past the late
// ones, TMA off so that the one-item kernel runs them): all match the oracle; `off` is not described
// (whatever the default: a later session may flip it once timed); an unknown value is refused when
// the backend is made.
TEST(DecodeItemPages, EachModeMatchesFloat64Oracle) {
  PREFIXD_REQUIRE_GPU();
  PREFIXD_SEEDED_RNG(rng);
  std::vector<int> many(300);
  for (int& s : many) s = 1 + int(rng() % 32);
  const std::vector<CascadeCase> cases = {
      {"h8kv8_fp16_d128_p16", kF16, 8, 8, 128, 16, {{70, {32, 1, 31, 33, 16}}, {0, {300, 17}}}, true},
      {"h32kv8_fp16_d128_p16", kF16, 32, 8, 128, 16, {{130, {32, 1, 17, 33}}, {0, {32, 260}}}, true},
      {"h32kv8_bf16_d128_p5_finest", kBF16, 32, 8, 128, 5, {{11, {12, 32, 47}}, {0, {100, 3}}}, false, Split::kFinest},
      {"h16kv8_fp16_d128_p16_finest", kF16, 16, 8, 128, 16, {{90, {64, 2, 33}}, {0, {17, 130}}}, false, Split::kFinest},
      {"h64kv8_bf16_d64_p16", kBF16, 64, 8, 64, 16, {{23, {32, 5, 300}}}},
      {"h8kv2_fp16_d256_p7", kF16, 8, 2, 256, 7, {{30, {5, 31, 64}}}, true},
      {"h32kv32_fp16_d128_p16_waves", kF16, 32, 32, 128, 16, {{200, many}}},
      {"h32kv8_bf16_d128_p16_waves", kBF16, 32, 8, 128, 16, {{0, many}}},
  };
  for (const char* mode : {"lookup", "next-wave"}) {
    ExpectCasesMatchOracleWithEnv({{"PREFIXD_DECODE_ITEM_PAGES", mode}},
                                  std::string("[decode item pages: ") + mode + "]", cases,
                                  std::string("_item_pages_") + mode, rng);
#ifdef PREFIXD_HAVE_CUDA
    std::unique_ptr<Backend> early = MakeCudaBackendWithEnv({{"PREFIXD_DECODE_ITEM_PAGES", mode},
                                                             {"PREFIXD_EARLY_DECODE_PERCENT", "50"},
                                                             {"PREFIXD_EARLY_DECODE_TMA", "0"}});
    for (const CascadeCase& c : {cases[0], cases[1], cases[6]})
      ExpectCaseMatchesOracle(*early, c, c.name + "_item_pages_early_" + mode, rng);
    EXPECT_GT(dynamic_cast<kernels::cuda::CudaBackend&>(*early).early_decode_steps(), 0) << "no early items ran";
#endif
  }
  EXPECT_EQ(MakeCudaBackendWithEnv({{"PREFIXD_DECODE_ITEM_PAGES", "off"}})->Describe().find("decode item pages"),
            std::string::npos);
  EXPECT_THROW(MakeCudaBackendWithEnv({{"PREFIXD_DECODE_ITEM_PAGES", "on"}}), Error);
}

// The length rule: shallow only where every item fits in what the shallow pipeline keeps in
// flight (stages − 1 steps), and never for an unknown length.
TEST(DecodePipeline, ShallowOnlyWhereEveryItemFits) {
#ifdef PREFIXD_HAVE_CUDA
  kernels::cuda::DecodeAttentionParams p;
  EXPECT_FALSE(kernels::cuda::DecodeShallowPipeline(p, 16, 3)) << "unknown length";
  p.max_item_tokens = 32;
  EXPECT_TRUE(kernels::cuda::DecodeShallowPipeline(p, 16, 3));
  EXPECT_TRUE(kernels::cuda::DecodeShallowPipeline(p, 32, 2));
  p.max_item_tokens = 33;
  EXPECT_FALSE(kernels::cuda::DecodeShallowPipeline(p, 16, 3));
  EXPECT_FALSE(kernels::cuda::DecodeShallowPipeline(p, 32, 2));
  p.pipeline = kernels::cuda::DecodePipeline::kShallow;
  EXPECT_TRUE(kernels::cuda::DecodeShallowPipeline(p, 32, 2));
  p.max_item_tokens = 1;
  p.pipeline = kernels::cuda::DecodePipeline::kDeep;
  EXPECT_FALSE(kernels::cuda::DecodeShallowPipeline(p, 32, 2));
#else
  GTEST_SKIP() << "built without CUDA";
#endif
}

// 16-bit partial states (DecodeAttentionParams::states_16bit, PREFIXD_CONCURRENT_STATES16) come
// only from the TMA decode: every other launcher refuses them, naming its kernel, before anything
// touches a device (so this runs everywhere; the TMA decode's acceptance is
// CudaConcurrentCascade.TheStatesIn16BitsStayWithinTheirRounding's).
TEST(DecodeLaunchers, SixteenBitStatesOnlyFromTheTmaDecode) {
#ifdef PREFIXD_HAVE_CUDA
  using kernels::cuda::DecodeKernel;
  kernels::cuda::DecodeAttentionParams p;
  p.num_qo_heads = 32;
  p.num_kv_heads = 8;  // g = 4: served by both the CUDA-core and the tensor-core kernels
  p.head_dim = 128;
  p.page_size = 16;
  p.num_items = 1;
  p.max_item_tokens = 256;
  p.states_16bit = true;
  p.kernel = DecodeKernel::kCudaCores;
  EXPECT_INVALID_ARGUMENT(kernels::cuda::DecodeAttention(p, nullptr), "CUDA-core decode");
  p.kernel = DecodeKernel::kTensorCores;
  EXPECT_INVALID_ARGUMENT(kernels::cuda::DecodeAttention(p, nullptr), "tensor-core decode");
  p.max_sms = 16;
  p.stream_items = true;  // the cp.async streaming kernel (stream_tma off)
  EXPECT_INVALID_ARGUMENT(kernels::cuda::DecodeAttention(p, nullptr), "cp.async streaming decode");
  p.num_qo_heads = 8;  // g = 1: the CUDA-core kernel whatever is asked
  EXPECT_INVALID_ARGUMENT(kernels::cuda::DecodeAttention(p, nullptr), "CUDA-core decode");
#else
  GTEST_SKIP() << "built without CUDA";
#endif
}

// The tensor-core decode kernel at every warps-per-CTA setting, with and without the programmatic
// dependent launch after the prefix kernel, the evict-first K/V policy and the prefix-state
// prefetch (PREFIXD_DECODE_WARPS / _PDL / _EVICT_FIRST / _PREFETCH); and with the sm_90a prefix
// kernel triggering the decode launch early (PREFIXD_PREFIX_PDL_TRIGGER, read with the others when
// the backend is made), also with a capped persistent grid (PREFIXD_SM90A_MAX_CTAS: several items per prefix
// CTA, so decode CTAs start while prefix CTAs still compute their last items); and the decode as
// one CTA per SM looping over the items (PREFIXD_DECODE_PERSISTENT), as the streaming kernel
// (PREFIXD_DECODE_STREAM=1) or one item at a time.
struct DecodeVariant {
  int warps;
  bool pdl;
  bool evict_first = true, prefetch = true;
  bool trigger = false;
  int prefix_max_ctas = 0;  // 0: one prefix CTA per SM
  bool persistent = false, stream = false;
  bool tma = false;  // PREFIXD_DECODE_TMA: the streaming kernel's tiles by the TMA (sm_90a)
};

class CudaDecodeVariantTest : public ::testing::TestWithParam<DecodeVariant> {};

TEST_P(CudaDecodeVariantTest, MatchesFloat64Oracle) {
  PREFIXD_REQUIRE_GPU();
  const DecodeVariant variant = GetParam();
  PREFIXD_SEEDED_RNG(rng);
  setenv("PREFIXD_DECODE_WARPS", std::to_string(variant.warps).c_str(), 1);
  setenv("PREFIXD_DECODE_PDL", variant.pdl ? "1" : "0", 1);
  setenv("PREFIXD_DECODE_EVICT_FIRST", variant.evict_first ? "1" : "0", 1);
  setenv("PREFIXD_DECODE_PREFETCH", variant.prefetch ? "1" : "0", 1);
  setenv("PREFIXD_DECODE_PERSISTENT", variant.persistent ? "1" : "0", 1);
  setenv("PREFIXD_DECODE_STREAM", variant.stream ? "1" : "0", 1);
  setenv("PREFIXD_DECODE_TMA", variant.tma ? "1" : "0", 1);
  setenv("PREFIXD_PREFIX_PDL_TRIGGER", variant.trigger ? "1" : "0", 1);  // the default is on
  if (variant.prefix_max_ctas > 0) setenv("PREFIXD_SM90A_MAX_CTAS", std::to_string(variant.prefix_max_ctas).c_str(), 1);
  std::unique_ptr<Backend> backend = MakeDeviceBackend();  // reads them all, once
  for (const char* name : {"PREFIXD_DECODE_WARPS", "PREFIXD_DECODE_PDL", "PREFIXD_DECODE_EVICT_FIRST", "PREFIXD_DECODE_PREFETCH",
                           "PREFIXD_DECODE_PERSISTENT", "PREFIXD_DECODE_STREAM", "PREFIXD_DECODE_TMA",
                           "PREFIXD_PREFIX_PDL_TRIGGER", "PREFIXD_SM90A_MAX_CTAS"})
    unsetenv(name);
  EXPECT_NE(backend->Describe().find("warps forced: " + std::to_string(variant.warps)), std::string::npos)
      << backend->Describe();
  EXPECT_EQ(backend->Describe().find("[decode persistent]") != std::string::npos, variant.persistent)
      << backend->Describe();
  EXPECT_EQ(backend->Describe().find("[decode streaming]") != std::string::npos, variant.stream)
      << backend->Describe();
  EXPECT_EQ(backend->Describe().find("[decode TMA]") != std::string::npos, variant.tma) << backend->Describe();
  struct Shape {
    DType dtype;
    int h_qo, h_kv, dim;
    std::vector<GroupSpec> groups;
    Split split;
  };
  const Shape shapes[] = {
      {kF16, 32, 8, 128, {{1100, {300, 0, 17, 64}}, {0, {129, 1}}}, Split::kDevice},
      {kBF16, 64, 8, 128, {{200, {45, 1000}}, {70, {16}}}, Split::kFineChunks},
      {kF16, 16, 4, 64, {{333, {5, 80}}, {0, {0}}}, Split::kFinest},
      {kBF16, 16, 2, 64, {{2000, {255, 256, 257}}}, Split::kDevice},
      // Finishing items that merge many prefix chunks (the streaming kernel reads them from L2,
      // four at a time).
      {kF16, 32, 8, 128, {{700, {33, 250, 0}}, {0, {40}}}, Split::kFinePrefix},
      // head_dim 256 at g = 4 (at most 4 warps per CTA; no streaming kernel, so the persistent
      // variants loop over items one at a time).
      {kBF16, 16, 4, 256, {{600, {40, 300, 1}}, {0, {17, 0}}}, Split::kFinePrefix},
      {kF16, 8, 2, 256, {{129, {500, 16}}}, Split::kDevice},
      // The 16-row group (g = 16), and g = 24 in slices of 16 + 8: no streaming kernel, so the
      // persistent variants loop over items one at a time.
      {kBF16, 32, 2, 128, {{900, {60, 700, 1}}, {0, {33, 0}}}, Split::kFinePrefix},
      {kF16, 48, 2, 64, {{400, {257, 8}}, {17, {90}}}, Split::kDevice},
      // Groups of 1 and 2: the CUDA-core kernel, or with PREFIXD_DECODE_TMA the persistent TMA
      // decode (its tiles pad the mma's N of 8 heads).
      {kF16, 16, 16, 128, {{500, {32, 300, 0, 1}}, {0, {45}}}, Split::kFinePrefix},
      {kBF16, 8, 4, 64, {{260, {31, 17, 90}}}, Split::kDevice},
  };
  for (const Shape& s : shapes) {
    const KvPoolShape shape{1, PagesNeeded(s.groups, 16) + 3, 16, s.h_kv, s.dim, s.dtype};
    kernels::PageAllocator alloc(shape.num_pages);
    const DecodeBatch batch = BuildBatch(s.groups, s.h_qo, 16, alloc, rng);
    const HostKvPool pool = RandomKvPool(rng, shape);
    const std::vector<uint16_t> q = MakeQueries(rng, pool, 0, batch, true, kPeakyScale);
    const CascadePlan plan = kernels::PlanCascade(batch, shape, OptionsFor(s.split));
    const StepResult got = RunStep(*backend, pool, 0, plan, q);
    const std::string what = "h" + std::to_string(s.h_qo) + "/" + std::to_string(s.h_kv) + " d" + std::to_string(s.dim);
    const RefOutput want = NaiveCascade(pool, 0, batch, q, 1.0 / std::sqrt(double(s.dim)));
    ExpectMatchesOracle(got, want, s.dtype, what);
    ExpectRowsClose(got.v, want.v, int64_t(batch.num_requests()) * s.h_qo, s.dim, 4 * OutputTolerance(s.dtype),
                    what + " rows");
  }
}

INSTANTIATE_TEST_SUITE_P(Variants, CudaDecodeVariantTest,
                         ::testing::Values(DecodeVariant{1, true}, DecodeVariant{2, true}, DecodeVariant{4, true},
                                           DecodeVariant{1, false}, DecodeVariant{4, false},
                                           DecodeVariant{2, true, false, false},
                                           DecodeVariant{1, true, true, true, true}, DecodeVariant{2, true, true, true, true},
                                           DecodeVariant{4, true, true, true, true},
                                           DecodeVariant{2, false, true, true, true},
                                           DecodeVariant{2, true, true, true, true, 3},
                                           DecodeVariant{8, true, true, true, false, 0, true, true},
                                           DecodeVariant{8, false, true, true, false, 0, true, true},
                                           DecodeVariant{8, true, false, false, true, 3, true, true},
                                           DecodeVariant{8, true, true, true, false, 0, true, false},
                                           DecodeVariant{8, true, true, true, false, 0, true, true, true},
                                           DecodeVariant{8, false, false, false, false, 0, true, true, true},
                                           DecodeVariant{8, true, true, true, true, 3, true, true, true},
                                           DecodeVariant{4, true, true, true, false, 0, true, true, true}),
                         [](const ::testing::TestParamInfo<DecodeVariant>& info) {
                           const DecodeVariant& v = info.param;
                           return "warps" + std::to_string(v.warps) + (v.pdl ? "_pdl" : "_nopdl") +
                                  (v.evict_first ? "" : "_noevict") + (v.prefetch ? "" : "_noprefetch") +
                                  (v.trigger ? "_trigger" : "") +
                                  (v.prefix_max_ctas > 0 ? "_prefixctas" + std::to_string(v.prefix_max_ctas) : "") +
                                  (v.persistent ? "_persistent" : "") + (v.persistent && !v.stream ? "_nostream" : "") +
                                  (v.tma ? "_tma" : "");
                         });

}  // namespace
}  // namespace prefixd::test
