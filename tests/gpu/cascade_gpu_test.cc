// The CUDA backend's cascade decode against the float64 oracle (NaiveCascade) and the CPU backend
// running the same plan: many shapes and plan splittings, the prefix grid's long tiles and balance,
// the sequential TMA decode, NaN outside the requests, the decode warm-up and the planner settings
// read at construction, the cascade's parts and its decode part on another stream, every GQA group
// size, random shapes (CudaCascadeFuzz), and the non-cascade baseline.
//
// Every test starts with a GPU guard and skips (with the reason) when there is no usable GPU;
// PREFIXD_GPU_TESTS_CPU_STAND_IN=1 runs the backend-level ones with the CPU backend in the GPU's
// place (gpu_backend_fixture.h). The helpers these files share are in gpu_backend_fixture.h.
#include "gpu/gpu_backend_fixture.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "prefixd/common/env.h"
#include "prefixd/common/error.h"
#include "prefixd/kernels/decode_kernel_choice.h"
#include "prefixd/kernels/plan.h"
#include "prefixd/kernels/prefix_kv_tile.h"
#include "support/backend_step.h"
#include "support/test_support.h"
#include "unit/kernels/expect_error.h"
#include "unit/kernels/random_batch.h"

#ifdef PREFIXD_HAVE_CUDA
#include <cuda_runtime.h>

#include "kernels/cuda/cascade_fused.h"
#include "kernels/cuda/cuda_backend.h"
#endif

namespace prefixd::test {
namespace {

// Standard deviation of the (natural-unit) scores of one query row over its request's slots.
double ScoreStd(const HostKvPool& pool, int layer, const DecodeBatch& batch, const std::vector<uint16_t>& q,
                int request, int head) {
  const KvPoolShape& s = pool.shape;
  const int g = batch.num_qo_heads / s.num_kv_heads;
  const uint16_t* row = &q[(int64_t(request) * batch.num_qo_heads + head) * s.head_dim];
  double sum = 0, sum2 = 0;
  const auto slots = RequestSlots(batch, request, s.page_size);
  for (int64_t slot : slots) {
    double dot = 0;
    for (int d = 0; d < s.head_dim; ++d) dot += kernels::ToFloat(s.dtype, row[d]) * pool.K(layer, slot, head / g, d);
    dot /= std::sqrt(double(s.head_dim));
    sum += dot;
    sum2 += dot * dot;
  }
  const double n = double(slots.size());
  return std::sqrt(std::max(0.0, sum2 / n - (sum / n) * (sum / n)));
}

// One case with NaN bits outside its requests (PoisonSlotsOutsideRequests) on `backend` with its own
// plan options, against the float64 oracle of the clean slots.
void ExpectPoisonedCascadeCorrect(Backend& backend, const CascadeCase& c, std::mt19937_64& rng) {
  CascadeInputs in = MakeCascadeInputs(c, rng);
  PoisonSlotsOutsideRequests(in.pool, in.batch, c.layer);
  const RefOutput want = NaiveCascade(in.pool, c.layer, in.batch, in.q, 1.0 / std::sqrt(double(c.head_dim)));
  const CascadePlan plan = kernels::PlanCascade(in.batch, in.shape, OptionsFor(c.split, backend));
  ExpectMatchesOracle(RunStep(backend, in.pool, c.layer, plan, in.q), want, c.dtype, c.name + " (NaN outside)");
}

class CudaCascadeTest : public ::testing::TestWithParam<CascadeCase> {};

TEST_P(CudaCascadeTest, MatchesFloat64OracleAndCpuBackend) {
  PREFIXD_REQUIRE_DEVICE_BACKEND();
  const CascadeCase& c = GetParam();
  PREFIXD_SEEDED_RNG(rng);
  const CascadeInputs in = MakeCascadeInputs(c, rng);
  const KvPoolShape& shape = in.shape;
  const DecodeBatch& batch = in.batch;
  const HostKvPool& pool = in.pool;
  const std::vector<uint16_t>& q = in.q;
  if (c.peaky) {  // the request with the most slots, its score std averaged over all heads
    int longest = 0;
    for (int r = 1; r < batch.num_requests(); ++r)
      if (RequestSlots(batch, r, c.page_size).size() > RequestSlots(batch, longest, c.page_size).size()) longest = r;
    if (RequestSlots(batch, longest, c.page_size).size() >= 16) {
      double std_sum = 0;
      for (int head = 0; head < c.num_qo_heads; ++head) std_sum += ScoreStd(pool, c.layer, batch, q, longest, head);
      EXPECT_GE(std_sum / c.num_qo_heads, 10.0) << "peaky case is not peaky (request " << longest << ")";
    }
  }

  const CascadePlan plan = kernels::PlanCascade(batch, shape, OptionsFor(c.split));
  if (c.expect_prefix_chunks_beyond_pages) {
    EXPECT_TRUE(SplitsPrefixBeyondPages(plan, c.page_size)) << "no prefix was split into more chunks than pages";
  }
  // (The CPU stand-in's own options split less: the split is only promised on the GPU.)
  if (c.expect_split_kv && (c.split != Split::kDevice || kernels::CudaAvailable()))
    EXPECT_GT(plan.decode_items.size(), size_t(batch.num_requests()) * c.num_kv_heads) << "no split-KV";

  const StepResult got = RunStep(Device(), pool, c.layer, plan, q);
  const StepResult cpu = RunStep(Cpu(), pool, c.layer, plan, q);
  const RefOutput want = NaiveCascade(pool, c.layer, batch, q, 1.0 / std::sqrt(double(c.head_dim)));
  ExpectMatchesOracle(got, want, c.dtype, c.name);
  ExpectMatchesCpu(got, cpu, c.dtype, c.name);
}

INSTANTIATE_TEST_SUITE_P(Shapes, CudaCascadeTest, ::testing::ValuesIn(CascadeCases()),
                         [](const ::testing::TestParamInfo<CascadeCase>& info) { return info.param.name; });

// The balanced prefix grid (PlanOptions::balance_prefix_ctas, prefix_balance.h): the persistent
// sm_90a kernel follows the plan's CTA chains where its grid is the plan's, and takes the same items
// round-robin where its grid is capped below it (the concurrent backend's, 4 CTAs). Small shapes with
// the rule's thresholds lifted: 64 requests of GQA 4 (256 rows per KV head: 2 row tiles) × 2 KV heads
// × 2 chunks = 8 items, their tails on 4 more CTAs; every head_dim (its own K/V tile), two groups of
// one prefix length, a peaky case. Then the same by the stream over the heads (empty items among them).
// Head_dim 128's two K/V tiles on the same plans: the plan's own (ChoosePrefixKvTileTokens: 128 for
// these items of 1334-6150 tokens, short of kLongTileItemTokens) and the longer 160-token one
// forced beside it (which plans of long items in wide CTAs take): items that no 160-token tile
// divides, whose last box is shifted back over the previous tile and whose chunk ends are masked
// mid-tile; fp16 and bf16, one chunk and several.
TEST(CudaCascade, HeadDim128LongTilePlansMatchTheOracle) {
  PREFIXD_REQUIRE_GPU();
  PREFIXD_SEEDED_RNG(rng);
  std::vector<int> suffixes(64);
  for (int& n : suffixes) n = int(rng() % 70);
  const CascadeCase cases[] = {
      {"long_tile_fp16_h8kv2_d128", kF16, 8, 2, 128, 16, {{4001, suffixes}}},
      {"long_tile_peaky_bf16_h8kv2_d128", kBF16, 8, 2, 128, 16, {{6150, suffixes}}, true},
  };
  for (const CascadeCase& c : cases) {
    SCOPED_TRACE(c.name);
    const CascadeInputs in = MakeCascadeInputs(c, rng);
    const RefOutput want = NaiveCascade(in.pool, c.layer, in.batch, in.q, 1.0 / std::sqrt(double(c.head_dim)));
    for (int target_items : {2, 12}) {  // one chunk per (KV head, row tile) pair, or three
      PlanOptions o = CascadeOptions(Device());  // as PrefixKvTile.PlannedItemsInWideCtasShortOfTheLongTile
      o.prefix_tile_rows = 128;
      o.prefix_target_items = target_items;
      o.min_prefix_chunk = 64;
      o.balance_prefix_ctas = 0;  // the balancer would cut the 4 pairs' tails over the idle SMs
      const CascadePlan plan = kernels::PlanCascade(in.batch, in.shape, o);
      // Items of a few thousand tokens in wide CTAs: the plan's tile is 128 (short of
      // kLongTileItemTokens), the long tile forced beside it, with a last tile the item ends inside.
      ASSERT_EQ(ChoosePrefixKvTileTokens(plan), 128) << "the case's plan changed tile";
      const std::string what = c.name + ", " + std::to_string(target_items) + " items wanted";
      ExpectMatchesOracle(RunStep(Device(), in.pool, c.layer, plan, in.q), want, c.dtype, what);
      const std::unique_ptr<Backend> forced = MakeCudaBackendWithEnv({{"PREFIXD_SM90A_KV_TILE", "160"}});
      ExpectMatchesOracle(RunStep(*forced, in.pool, c.layer, plan, in.q), want, c.dtype, what + " (160 forced)");
    }
  }
}

TEST(CudaCascade, BalancedPrefixGridMatchesTheOracle) {
  PREFIXD_REQUIRE_GPU();
  PREFIXD_SEEDED_RNG(rng);
  std::vector<int> suffixes(64), halves(32);
  for (int& n : suffixes) n = int(rng() % 70);
  for (int& n : halves) n = 1 + int(rng() % 40);
  const CascadeCase cases[] = {
      {"balanced_peaky_fp16_h8kv2_d128", kF16, 8, 2, 128, 16, {{3000, suffixes}}, true},
      {"balanced_bf16_h8kv2_d64", kBF16, 8, 2, 64, 16, {{3000, suffixes}}},
      {"balanced_fp16_h8kv2_d256", kF16, 8, 2, 256, 16, {{3000, suffixes}}},
      {"balanced_two_groups_bf16_h8kv2_d128", kBF16, 8, 2, 128, 16, {{2500, halves}, {2500, halves}}},
  };
  const int sms = ConcurrentDecodeSms(1 << 20) + 1;
  std::unique_ptr<Backend> capped = MakeConcurrentBackend(std::to_string(std::max(1, sms - 4)));
  int narrow_slots_taken = 0;
  for (const CascadeCase& c : cases) {
    SCOPED_TRACE(c.name);
    const CascadeInputs in = MakeCascadeInputs(c, rng);
    PlanOptions o = BalancedGridOptions(12, 8, false);
    const CascadePlan plan = kernels::PlanCascade(in.batch, in.shape, o);
    ASSERT_EQ(plan.prefix_balanced_ctas, 12) << "the case does not balance";
    const RefOutput want = NaiveCascade(in.pool, c.layer, in.batch, in.q, 1.0 / std::sqrt(double(c.head_dim)));
    ExpectMatchesOracle(RunStep(Device(), in.pool, c.layer, plan, in.q), want, c.dtype, c.name + " (chains)");
    ExpectMatchesOracle(RunStep(*capped, in.pool, c.layer, plan, in.q), want, c.dtype,
                        c.name + " (capped grid: round-robin)");
    // The stream over the heads (PlanOptions::balance_stream) on the same 12 CTAs, from one chunk
    // per pair: shares of 6 slots of 2 row tiles (12 slots of the two groups' 1), a head's range in
    // 3-4 pieces, empty items where a head has fewer (the two groups' case).
    o = BalancedGridOptions(12, 4, true);
    const CascadePlan stream = kernels::PlanCascade(in.batch, in.shape, o);
    ASSERT_EQ(stream.prefix_balanced_ctas, 12) << "the stream case does not balance";
    ASSERT_GE(stream.group_num_chunks.front(), 3) << "the tails balanced it, not the stream";
    ExpectMatchesOracle(RunStep(Device(), in.pool, c.layer, stream, in.q), want, c.dtype, c.name + " (stream)");
    ExpectMatchesOracle(RunStep(*capped, in.pool, c.layer, stream, in.q), want, c.dtype,
                        c.name + " (stream, capped grid: round-robin)");
    // ... and on 11 CTAs with narrow slots (PlanOptions::balance_stream_narrow): 5 slots of 2 row
    // tiles and one CTA that runs both row tiles of its share, where that is less busy (the cases
    // of 2 row tiles per head; the two groups' single row tiles take 11 slots of 1 either way).
    o.balance_prefix_ctas = 11;
    o.balance_stream_narrow = false;
    const CascadePlan whole = kernels::PlanCascade(in.batch, in.shape, o);
    o.balance_stream_narrow = true;
    const CascadePlan narrow = kernels::PlanCascade(in.batch, in.shape, o);
    narrow_slots_taken += narrow.prefix_balanced_ctas == 11 && whole.prefix_balanced_ctas != 11;
    ExpectMatchesOracle(RunStep(Device(), in.pool, c.layer, narrow, in.q), want, c.dtype, c.name + " (narrow slot)");
    ExpectMatchesOracle(RunStep(*capped, in.pool, c.layer, narrow, in.q), want, c.dtype,
                        c.name + " (narrow slot, capped grid: round-robin)");
  }
  EXPECT_EQ(narrow_slots_taken, 3) << "the cases of two row tiles per head did not all take a narrow slot";
}

// The sequential step's decode as the persistent TMA decode on every SM where SequentialTmaDecodeWarps
// (decode_kernel_choice.h) takes it (GQA 1, head_dim 128, items of 128-512 tokens, at most one per
// warp), with 12 and with 8 warps, and with its items spread one per CTA
// (PREFIXD_DECODE_TMA_ITEMS_PER_CTA=1), against the float64 oracle, the step and its parts alone;
// the backend counts those launches, none with PREFIXD_SEQUENTIAL_TMA=0, nor at shapes the rule leaves.
TEST(CudaCascade, SequentialTmaDecodeWhereTheRuleTakesIt) {
  PREFIXD_REQUIRE_GPU();
#ifdef PREFIXD_HAVE_CUDA
  PREFIXD_SEEDED_RNG(rng);
  const int sms = dynamic_cast<kernels::cuda::CudaBackend&>(Device()).num_sms();
  // 6·SMs + 1 items of one KV head each (one request per item at 1 KV head): the 8-warp form.
  const int eight_warp_requests = 6 * sms + 1;
  const CascadeCase cases[] = {
      {"seq_tma_fp16_h16kv16_d128", kF16, 16, 16, 128, 16, {{700, {200, 300, 150, 256}}, {64, {129, 400}}}, true},
      {"seq_tma_bf16_h8kv8_d128_p5", kBF16, 8, 8, 128, 5, {{333, {128, 511, 140}}}, false},
      {"seq_tma8_fp16_h1kv1_d128", kF16, 1, 1, 128, 16, {{300, std::vector<int>(size_t(eight_warp_requests), 160)}}, false},
      {"no_seq_tma_fp16_h16kv16_d128_s32", kF16, 16, 16, 128, 16, {{700, {32, 20, 31}}}, true},
      {"no_seq_tma_fp16_h16kv16_d64", kF16, 16, 16, 64, 16, {{700, {200, 300}}}, true},
      {"no_seq_tma_fp16_h16kv4_d128", kF16, 16, 4, 128, 16, {{700, {200, 300}}}, true},
  };
  const std::unique_ptr<Backend> off = MakeCudaBackendWithEnv({{"PREFIXD_SEQUENTIAL_TMA", "0"}});
  const std::unique_ptr<Backend> spread = MakeCudaBackendWithEnv({{"PREFIXD_DECODE_TMA_ITEMS_PER_CTA", "1"}});
  EXPECT_NE(spread->Describe().find("[decode TMA: 1 item per CTA]"), std::string::npos) << spread->Describe();
  int taken12 = 0, taken8 = 0;
  for (const CascadeCase& c : cases) {
    SCOPED_TRACE(c.name);
    const auto [in, want, plan] = MakeUnsplitCascade(c, rng);  // the items are the cases' lengths
    ASSERT_FALSE(plan.prefix_items.empty());
    int max_tokens = 0;
    for (const kernels::DecodeWorkItem& it : plan.decode_items) max_tokens = std::max(max_tokens, it.kv_end - it.kv_begin);
    const int warps = kernels::SequentialTmaDecodeWarps(c.num_qo_heads / c.num_kv_heads, c.head_dim,
                                                        int(plan.decode_items.size()), max_tokens, sms);
    taken12 += warps == 12, taken8 += warps == 8;
    EXPECT_EQ(warps > 0, c.name.rfind("seq_tma", 0) == 0) << plan.decode_items.size() << " items of <= " << max_tokens;
    for (Backend* backend : {&Device(), spread.get(), off.get()}) {
      auto& cuda = dynamic_cast<kernels::cuda::CudaBackend&>(*backend);
      const bool on = backend != off.get();
      SCOPED_TRACE(backend->Describe());
      const int64_t before = cuda.sequential_tma_launches();
      const StepResult got = ExpectCascadePartsMatchWhole(*backend, in.pool, c.layer, plan, in.q);
      ExpectMatchesOracle(got, want, c.dtype, c.name);
      if (on && warps > 0) EXPECT_GE(cuda.sequential_tma_launches() - before, 2) << "the step and its decode part";
      else EXPECT_EQ(cuda.sequential_tma_launches(), before);
    }
  }
  EXPECT_GT(taken12, 0);
  EXPECT_GT(taken8, 0);
#endif
}

// NaN bits in every slot outside the requests' prefixes and suffixes (unused pages, the tails of
// partly filled pages) on the default backend, the concurrent one and the persistent TMA decode:
// the kernels read such slots (TMA boxes, whole page rows) and must mask them, not even 0 · NaN.
TEST(CudaCascade, NaNOutsideTheRequestsNeverReachesAState) {
  PREFIXD_REQUIRE_GPU();
  PREFIXD_SEEDED_RNG(rng);
  std::unique_ptr<Backend> tma = MakeCudaBackendWithEnv({{"PREFIXD_CONCURRENT_DECODE_SMS", std::to_string(ConcurrentDecodeSms(36))},
                                                         {"PREFIXD_DECODE_PERSISTENT", "1"},
                                                         {"PREFIXD_DECODE_TMA", "1"}});
  for (Backend* backend : {&Device(), &Concurrent(), tma.get()}) {
    SCOPED_TRACE(backend->Describe());
    for (const CascadeCase& c : FusedCascadeCases()) ExpectPoisonedCascadeCorrect(*backend, c, rng);
  }
}

// The decode kernel's start pulled into L2 by the prefix kernel (PREFIXD_DECODE_WARMUP,
// PREFIXD_DECODE_WARMUP_MIB; DecodeL2Warmup) is a hint: off, on without K/V rows, with 1 MiB of
// them (a few items, one tile each) and with 1024 MiB (every item, more tokens than any suffix has)
// give the oracle's results on every cascade shape (page sizes 8-64, split suffixes, requests
// without a suffix, several groups); bad settings are refused. The wide prefix CTA is forced: the
// backend skips the warm-up beside the narrow one, which these small shapes would otherwise get.
std::unique_ptr<Backend> MakeBackendWithDecodeWarmup(const char* on, const char* mib) {
  return MakeCudaBackendWithEnv(
      {{"PREFIXD_DECODE_WARMUP", on}, {"PREFIXD_DECODE_WARMUP_MIB", mib}, {"PREFIXD_SM90A_CONSUMERS", "2"}});
}

TEST(CudaCascade, DecodeWarmupChangesNoResultAndBadSettingsAreRefused) {
#ifdef PREFIXD_HAVE_CUDA
  PREFIXD_REQUIRE_GPU();
  PREFIXD_SEEDED_RNG(rng);
  struct Setting {
    const char *on, *mib, *described;
  };
  const Setting settings[] = {{"0", "4", "decode warm-up off"},
                              {"1", "0", "decode warm-up with 0 MiB of K/V"},
                              {"1", "1", "decode warm-up with 1 MiB of K/V"},
                              {"1", "1024", "decode warm-up with 1024 MiB of K/V"}};
  for (const Setting& setting : settings) {
    std::unique_ptr<Backend> backend = MakeBackendWithDecodeWarmup(setting.on, setting.mib);
    SCOPED_TRACE(backend->Describe());
    EXPECT_NE(backend->Describe().find(setting.described), std::string::npos) << backend->Describe();
    for (const CascadeCase& c : FusedCascadeCases()) {
      SCOPED_TRACE(c.name);
      const CascadeInputs in = MakeCascadeInputs(c, rng);
      const RefOutput want = NaiveCascade(in.pool, c.layer, in.batch, in.q, 1.0 / std::sqrt(double(c.head_dim)));
      const CascadePlan plan = kernels::PlanCascade(in.batch, in.shape, OptionsFor(c.split, *backend));
      ExpectMatchesOracle(RunStep(*backend, in.pool, c.layer, plan, in.q), want, c.dtype, c.name);
    }
  }
  for (const char* bad : {"-1", "x", "1025", "8M"})
    EXPECT_PREFIXD_ERROR(MakeBackendWithDecodeWarmup("1", bad), ErrorKind::kInvalidArgument, "PREFIXD_DECODE_WARMUP_MIB");
  for (const char* bad : {"2", "on"})
    EXPECT_PREFIXD_ERROR(MakeBackendWithDecodeWarmup(bad, "0"), ErrorKind::kInvalidArgument, "PREFIXD_DECODE_WARMUP");
#else
  GTEST_SKIP() << "built without CUDA";
#endif
}

// The planner's settings, read when the backend is made, are checked there: a malformed one
// stops the program at start-up, naming the variable, not at its first step.
TEST(CudaCascade, MalformedPlannerSettingsAreRefusedAtConstruction) {
#ifdef PREFIXD_HAVE_CUDA
  PREFIXD_REQUIRE_GPU();
  const std::pair<const char*, const char*> bad[] = {
      {"PREFIXD_CHOOSE_LAYOUT", "yes"},        {"PREFIXD_MIN_PREFIX_CHUNK", "0"},
      {"PREFIXD_FINE_PREFIX_CHUNK", "x"},      {"PREFIXD_TINY_PREFIX_TOKENS", "-2"},
      {"PREFIXD_PREFIX_TARGET_ITEMS", "1e3"},  {"PREFIXD_DECODE_TARGET_ITEMS", "0"},
      {"PREFIXD_PREFIX_BALANCE", "on"},        {"PREFIXD_PREFIX_BALANCE_MIN_GAIN", "10000"},
      {"PREFIXD_PREFIX_TILE_ROWS", "many"},    {"PREFIXD_NARROW_TILE_ROWS", "-1"}};
  for (const auto& [name, value] : bad) {
    SCOPED_TRACE(std::string(name) + "=" + value);
    EXPECT_PREFIXD_ERROR(MakeCudaBackendWithEnv({{name, value}}), ErrorKind::kInvalidArgument, name);
  }
#else
  GTEST_SKIP() << "built without CUDA";
#endif
}

// The planner's settings are read once, when the backend is made: a step's plan reads no
// environment variable, and a setting changed later leaves that backend's plans as they were.
TEST(CudaCascade, PlannerSettingsAreReadOnceAtConstruction) {
#ifdef PREFIXD_HAVE_CUDA
  PREFIXD_REQUIRE_GPU();
  const std::unique_ptr<Backend> backend = MakeCudaBackendWithEnv({{"PREFIXD_MIN_PREFIX_CHUNK", "1024"}});
  EXPECT_EQ(backend->DefaultPlanOptions().min_prefix_chunk, 1024);
  ASSERT_EQ(setenv("PREFIXD_MIN_PREFIX_CHUNK", "2048", 1), 0);
  const int later = backend->DefaultPlanOptions().min_prefix_chunk;
  const std::unique_ptr<Backend> fresh = MakeCudaBackend(kernels::BackendOptions{TestLimits()});
  ASSERT_EQ(unsetenv("PREFIXD_MIN_PREFIX_CHUNK"), 0);
  EXPECT_EQ(later, 1024) << "the backend re-read the environment";
  EXPECT_EQ(fresh->DefaultPlanOptions().min_prefix_chunk, 2048) << "a backend made after the change reads it";
#else
  GTEST_SKIP() << "built without CUDA";
#endif
}

// A request with neither prefix nor suffix gets the empty state: o = 0, v = 0, s = −inf, no NaN.
TEST(CudaCascade, EmptyRequestGetsEmptyState) {
  PREFIXD_REQUIRE_DEVICE_BACKEND();
  std::mt19937_64 rng(TestSeed());
  const KvPoolShape shape{1, 4, 16, 2, 64, kF16};
  kernels::PageAllocator alloc(shape.num_pages);
  const DecodeBatch batch = BuildBatch({{0, {0, 3}}}, 4, 16, alloc, rng);
  const HostKvPool pool = RandomKvPool(rng, shape);
  const auto q = RandomBits(rng, 2 * 4 * 64, kF16, 1.f);
  const StepResult got =
      RunStep(Device(), pool, 0, kernels::PlanCascade(batch, shape, CascadeOptions(Device())), q);
  ExpectEmptyStates(got, 0, 4, 64);
  for (int h = 4; h < 8; ++h) EXPECT_TRUE(std::isfinite(got.s[h]));
  for (int i = 4 * 64; i < 8 * 64; ++i) ASSERT_TRUE(std::isfinite(got.v[i])) << i;
}

// A batch of empty requests only: the plan has no prefix item, no decode item and no state to
// merge (the CPU reference's merge once bound a null reference here, session 102). Every backend
// mode (the concurrent and fused ones on a GPU only) gives each query head the empty state over its
// poisoned outputs and launches nothing invalid (a zero-CTA grid would be a launch error).
TEST(CudaCascade, BatchOfEmptyRequestsOnlyGetsEmptyStates) {
  PREFIXD_REQUIRE_DEVICE_BACKEND();
  std::mt19937_64 rng(TestSeed());
  const KvPoolShape shape{1, 4, 16, 2, 64, kF16};
  kernels::PageAllocator alloc(shape.num_pages);
  const DecodeBatch batch = BuildBatch({{0, {0, 0, 0}}}, 4, 16, alloc, rng);
  const HostKvPool pool = RandomKvPool(rng, shape);
  const auto q = RandomBits(rng, 3 * 4 * 64, kF16, 1.f);
  std::vector<Backend*> backends = {&Device()};
  if (kernels::CudaAvailable()) backends.insert(backends.end(), {&Concurrent(), &Fused()});  // no stand-in
  for (Backend* backend : backends) {
    SCOPED_TRACE(backend->Describe());
    const StepResult got = RunStep(*backend, pool, 0, kernels::PlanCascade(batch, shape, CascadeOptions(*backend)), q);
    ASSERT_EQ(got.v.size(), size_t(3 * 4 * 64));
    ExpectEmptyStates(got, 0, 3 * 4, 64);
  }
}

// The cascade in parts (Backend::RunCascadeParts, as the worker's send-before-decode runs it:
// prefix + merge, then the decode) gives the bits of the whole; so do three separate calls, also
// for a plan whose split suffixes make the merge wait for the decode.
TEST(CudaCascade, PartsMatchTheWholeCascade) {
  PREFIXD_REQUIRE_DEVICE_BACKEND();
  PREFIXD_SEEDED_RNG(rng);
  const std::vector<GroupSpec> groups = {{1000, {300, 0, 17, 64}}, {0, {45, 2}}, {130, {0, 1}}};
  for (const auto& [hq, hkv, d, dtype] :
       {std::tuple{32, 8, 128, kF16}, std::tuple{16, 16, 64, kBF16}, std::tuple{2, 1, 64, kF16}}) {
    SCOPED_TRACE("heads " + std::to_string(hq) + "/" + std::to_string(hkv) + ", d " + std::to_string(d));
    const KvPoolShape shape{1, PagesNeeded(groups, 16), 16, hkv, d, dtype};
    kernels::PageAllocator alloc(shape.num_pages);
    const DecodeBatch batch = BuildBatch(groups, hq, 16, alloc, rng);
    const HostKvPool pool = RandomKvPool(rng, shape);
    const auto q = MakeQueries(rng, pool, 0, batch, true, 45.f);
    // No suffix split, whatever the backend's item target (the CPU stand-in's splits suffixes of
    // 128+ tokens): the merge then needs no decode.
    PlanOptions whole = CascadeOptions(Device());
    whole.min_decode_chunk = 1 << 30;
    const CascadePlan fused = kernels::PlanCascade(batch, shape, whole);
    ASSERT_FALSE(fused.merge_requests.empty());
    ASSERT_FALSE(fused.MergeNeedsDecode());
    ExpectCascadePartsMatchWhole(Device(), pool, 0, fused, q);
    PlanOptions finest = CascadeOptions(Device());
    finest.target_items = 1 << 20;
    finest.decode_chunk_align = finest.min_decode_chunk = 16;
    const CascadePlan split = kernels::PlanCascade(batch, shape, finest);
    ASSERT_TRUE(split.MergeNeedsDecode());
    ExpectCascadePartsMatchWhole(Device(), pool, 0, split, q);
    // The merge part writing packed rows (CascadeArgs::merge_packed_row): H·(D + 1) floats per
    // row, 16-byte aligned for 32 and 16 heads, not for 2 (the kernel's scalar stores).
    ExpectMergePartPacksRows(Device(), pool, 0, fused, q);
    ExpectMergePartPacksRows(Device(), pool, 0, split, q);
  }
}

// Non-cascade baseline (every request's table lists the prefix pages, then its own) = cascade.


class CudaBaselineTest : public ::testing::TestWithParam<BaselineCase> {};

TEST_P(CudaBaselineTest, NonCascadeEqualsCascade) {
  PREFIXD_REQUIRE_DEVICE_BACKEND();
  const BaselineCase& c = GetParam();
  PREFIXD_SEEDED_RNG(rng);
  const KvPoolShape shape{1, PagesNeeded(c.groups, c.page_size) + 2, c.page_size, c.num_kv_heads, c.head_dim, c.dtype};
  kernels::PageAllocator alloc(shape.num_pages);
  const DecodeBatch batch = BuildBatch(c.groups, c.num_qo_heads, c.page_size, alloc, rng);
  const DecodeBatch flat = FlattenBatch(batch, c.page_size);
  const HostKvPool pool = RandomKvPool(rng, shape);
  const auto q = MakeQueries(rng, pool, 0, batch, c.peaky, kPeakyScale);
  const PlanOptions options = CascadeOptions(Device());

  const CascadePlan flat_plan = kernels::PlanCascade(flat, shape, options);
  EXPECT_TRUE(flat_plan.prefix_items.empty());
  const StepResult cascade = RunStep(Device(), pool, 0, kernels::PlanCascade(batch, shape, options), q);
  const StepResult plain = RunStep(Device(), pool, 0, flat_plan, q);
  const RefOutput want = NaiveCascade(pool, 0, batch, q, 1.0 / std::sqrt(double(c.head_dim)));
  ExpectMatchesOracle(cascade, want, c.dtype, "cascade");
  ExpectMatchesOracle(plain, want, c.dtype, "non-cascade");
  const std::vector<double> cascade_v = ToDouble(cascade.v);
  ExpectAllClose(plain.v.data(), cascade_v.data(), int64_t(cascade_v.size()), OutputTolerance(c.dtype),
                 "non-cascade vs cascade");
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, CudaBaselineTest,
    ::testing::Values(BaselineCase{"fp16_h32kv8_d128_p16", kF16, 32, 8, 128, 16, {{1024, {3, 40, 1}}, {0, {7}}}, false},
                      BaselineCase{"peaky_bf16_h8kv1_d64_p16", kBF16, 8, 1, 64, 16, {{320, {2, 0}}, {32, {9}}}, true},
                      BaselineCase{"fp16_h8kv8_d256_p5", kF16, 8, 8, 256, 5, {{45, {1, 6}}}, false}),
    [](const ::testing::TestParamInfo<BaselineCase>& info) { return info.param.name; });

#ifdef PREFIXD_HAVE_CUDA
// The decode part on another stream (CascadeArgs::stream, as the worker runs it beside the state
// exchange), ordered by events: the bits of the whole cascade; also with SMs left free
// (CascadeArgs::decode_free_sms: one CTA per SM looping over the items), down to 3 CTAs, item by
// item (PREFIXD_DECODE_STREAM=0) and as the streaming kernel (the default).


void ExpectDecodePartOnSideStreamMatchesWhole(Backend& be, int hq, int hkv, int d, DType dtype) {
  SCOPED_TRACE(be.Describe());
  SCOPED_TRACE("heads " + std::to_string(hq) + "/" + std::to_string(hkv) + ", d " + std::to_string(d));
  PREFIXD_SEEDED_RNG(rng);
  const std::vector<GroupSpec> groups = {{1000, {300, 0, 17, 64}}, {0, {45, 2}}, {130, {0, 1}}};
  const KvPoolShape shape{1, PagesNeeded(groups, 16), 16, hkv, d, dtype};
  kernels::PageAllocator alloc(shape.num_pages);
  const DecodeBatch batch = BuildBatch(groups, hq, 16, alloc, rng);
  const HostKvPool pool = RandomKvPool(rng, shape);
  const auto q = MakeQueries(rng, pool, 0, batch, true, 45.f);
  const CascadePlan plan = kernels::PlanCascade(batch, shape, CascadeOptions(be));
  ASSERT_FALSE(plan.MergeNeedsDecode());
  ASSERT_FALSE(plan.decode_items.empty());
  const int64_t rows = int64_t(batch.num_requests()) * batch.num_qo_heads;
  const StepResult whole = RunStep(be, pool, 0, plan, q);
  const RefOutput want = NaiveCascade(pool, 0, batch, q, 1.0 / std::sqrt(double(shape.head_dim)));
  ExpectMatchesOracle(whole, want, shape.dtype, "whole cascade");

  auto main = static_cast<cudaStream_t>(be.stream());
  cudaStream_t side = nullptr;
  cudaEvent_t merged = nullptr, decoded = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaEventCreateWithFlags(&merged, cudaEventDisableTiming), cudaSuccess);
  ASSERT_EQ(cudaEventCreateWithFlags(&decoded, cudaEventDisableTiming), cudaSuccess);
  int sms = 0, device = 0;
  ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), cudaSuccess);
  ASSERT_GT(int(plan.decode_items.size()), 3);
  for (const int free_sms : {0, 24, sms - 3}) {
    SCOPED_TRACE("decode_free_sms " + std::to_string(free_sms));
    BackendBuffers mem(be);
    kernels::CascadeArgs args = StepArgs(mem, pool, 0, q, rows);
    be.LoadPlan(plan);
    be.RunCascadeParts(args, Backend::kPrefixPart | Backend::kMergePart);
    ASSERT_EQ(cudaEventRecord(merged, main), cudaSuccess);
    ASSERT_EQ(cudaStreamWaitEvent(side, merged, 0), cudaSuccess);
    kernels::CascadeArgs decode = args;
    decode.stream = side;
    decode.decode_free_sms = free_sms;
    be.RunCascadeParts(decode, Backend::kDecodePart);
    ASSERT_EQ(cudaEventRecord(decoded, side), cudaSuccess);
    ASSERT_EQ(cudaStreamWaitEvent(main, decoded, 0), cudaSuccess);
    const StepResult got = DownloadStep(mem, args, shape.dtype, rows, shape.head_dim);
    if (free_sms == 0) {  // the same kernels as the whole run, on another stream: the same bits
      for (size_t i = 0; i < whole.v.size(); ++i) ASSERT_EQ(kernels::FloatBits(got.v[i]), kernels::FloatBits(whole.v[i])) << i;
      for (size_t i = 0; i < whole.s.size(); ++i) ASSERT_EQ(kernels::FloatBits(got.s[i]), kernels::FloatBits(whole.s[i])) << i;
      for (size_t i = 0; i < whole.o.size(); ++i) ASSERT_EQ(kernels::FloatBits(got.o[i]), kernels::FloatBits(whole.o[i])) << i;
    } else {  // one CTA per SM has 8 warps (the whole run 2 or 4): tokens summed in another order
      ExpectMatchesOracle(got, want, shape.dtype, "decode_free_sms " + std::to_string(free_sms));
    }
  }
  cudaEventDestroy(merged);
  cudaEventDestroy(decoded);
  cudaStreamDestroy(side);
}
#endif

TEST(CudaCascade, DecodePartOnAnotherStreamMatchesTheWhole) {
  PREFIXD_REQUIRE_GPU();
#ifdef PREFIXD_HAVE_CUDA
  // The default: the tensor-core decode kernel streaming across its items (PREFIXD_DECODE_STREAM),
  // and the CUDA-core one.
  ASSERT_NE(Device().Describe().find("[decode streaming]"), std::string::npos) << Device().Describe();
  ExpectDecodePartOnSideStreamMatchesWhole(Device(), 32, 8, 128, kBF16);
  ExpectDecodePartOnSideStreamMatchesWhole(Device(), 64, 8, 64, kF16);  // GQA 8, head_dim 64
  ExpectDecodePartOnSideStreamMatchesWhole(Device(), 16, 16, 64, kF16);
  // The tensor-core kernel taking its items one at a time.
  setenv("PREFIXD_DECODE_STREAM", "0", 1);
  std::unique_ptr<Backend> item_by_item = MakeDeviceBackend();
  unsetenv("PREFIXD_DECODE_STREAM");
  ASSERT_EQ(item_by_item->Describe().find("[decode streaming]"), std::string::npos) << item_by_item->Describe();
  ExpectDecodePartOnSideStreamMatchesWhole(*item_by_item, 32, 8, 128, kBF16);
  ExpectDecodePartOnSideStreamMatchesWhole(*item_by_item, 64, 8, 64, kF16);
#endif
}

// Every GQA group size loads and runs: the decode kernels serve a group size they are not compiled
// for on the next compiled one, or in slices (DecodeSlicingFor), so LoadPlan refuses none. A group
// of 16 (the tensor-core decode's 16-row group) and of 11 (rows past 11 on zero queries), one KV
// head, against the oracle.
TEST(CudaCascade, EveryGroupSizeLoadsAndMatchesTheOracle) {
  PREFIXD_REQUIRE_GPU();
  std::mt19937_64 rng(TestSeed());
  for (const int g : {16, 11}) {
    SCOPED_TRACE("GQA group size " + std::to_string(g));
    const KvPoolShape shape{1, 8, 16, 1, 64, kF16};
    kernels::PageAllocator alloc(shape.num_pages);
    const DecodeBatch batch = BuildBatch({{20, {5}}}, g, 16, alloc, rng);
    const HostKvPool pool = RandomKvPool(rng, shape);
    const std::vector<uint16_t> q = MakeQueries(rng, pool, 0, batch, false, kPeakyScale);
    const CascadePlan plan = kernels::PlanCascade(batch, shape, CascadeOptions(Device()));
    ASSERT_NO_THROW(Device().LoadPlan(plan));
    const StepResult got = RunStep(Device(), pool, 0, plan, q);
    ExpectMatchesOracle(got, NaiveCascade(pool, 0, batch, q, 1.0 / std::sqrt(64.0)), kF16, "g " + std::to_string(g));
  }
}

// Random shapes beyond every listed case. Each draw picks the KV heads (1-8), the GQA group (1-16,
// 3 and 5 among them), head_dim, page size (1-64), dtype, flat or peaky queries and 1-3 random
// groups (RandomGroups: empty prefixes and suffixes among them), and runs one step on three
// backends, each with its own plan options, against the float64 oracle: the default (the planner's
// choices, layouts included), a forced concurrent step with the persistent TMA decode on k of
// {1, 20, 48} SMs (PREFIXD_CONCURRENT_DECODE_TMA=force; a shape it cannot take runs the other
// decode), and the fused kernel (or its fallback for shapes it does not take). The draws come from
// the test seed, fresh each run (PREFIXD_TEST_SEED reproduces a failure's); PREFIXD_FUZZ_CASES sets
// their number (24).


// A random cascade case whose float64 oracle stays cheap (≤ ~1e8 multiply-adds) and whose pool fits
// TestLimits().
// One of `choices`, uniformly.
int PickOne(std::mt19937_64& rng, std::initializer_list<int> choices) { return *(choices.begin() + rng() % choices.size()); }

CascadeCase RandomCascadeCase(std::mt19937_64& rng, int index) {
  auto pick = [&rng](std::initializer_list<int> choices) { return PickOne(rng, choices); };
  CascadeCase c;
  c.num_kv_heads = pick({1, 2, 4, 8});
  const int gqa = pick({1, 2, 3, 4, 4, 5, 8, 16});
  while (c.num_kv_heads > 1 && c.num_kv_heads * gqa > TestLimits().max_qo_heads) c.num_kv_heads /= 2;
  c.num_qo_heads = c.num_kv_heads * gqa;
  c.head_dim = pick({64, 128, 256});
  c.page_size = pick({1, 5, 8, 16, 16, 32, 64});
  c.dtype = rng() % 2 == 0 ? kF16 : kBF16;
  c.peaky = rng() % 2 == 0;
  c.groups = RandomGroups(rng, 1 + int(rng() % 3), 24, 2500, 600);
  auto tokens = [&c] {
    int64_t all = 0, slots = 0;
    for (const GroupSpec& g : c.groups) {
      slots += g.prefix_tokens;
      for (const int s : g.suffix_lens) all += g.prefix_tokens + s, slots += s;
    }
    return std::pair{all, slots};
  };
  // Halve the lengths until the oracle's work and the pool's slots (with a page of slack per
  // sequence) are within bounds.
  for (;;) {
    const auto [all, slots] = tokens();
    int64_t sequences = 0;
    for (const GroupSpec& g : c.groups) sequences += 1 + int64_t(g.suffix_lens.size());
    if (all * c.num_qo_heads * c.head_dim <= 100'000'000 && slots + sequences * c.page_size <= TestLimits().max_slots / 2)
      break;
    for (GroupSpec& g : c.groups) {
      g.prefix_tokens /= 2;
      for (int& s : g.suffix_lens) s /= 2;
    }
  }
  c.name = "fuzz" + std::to_string(index) + (c.dtype == kF16 ? "_fp16" : "_bf16") + "_h" + std::to_string(c.num_qo_heads) +
           "kv" + std::to_string(c.num_kv_heads) + "_d" + std::to_string(c.head_dim) + "_p" +
           std::to_string(c.page_size) + (c.peaky ? "_peaky" : "");
  return c;
}

TEST(CudaCascadeFuzz, RandomShapesMatchTheOracle) {
  PREFIXD_REQUIRE_GPU();
#ifdef PREFIXD_HAVE_CUDA
  PREFIXD_SEEDED_RNG(rng);
  const int cases = int(EnvInteger("PREFIXD_FUZZ_CASES", 1, 100000, 24));
  std::map<int, std::unique_ptr<Backend>> concurrent;  // by k, made on first use
  const bool fused = kernels::cuda::FusedCascadeReady();
  int64_t tma_steps = 0, fused_steps = 0;
  for (int i = 0; i < cases; ++i) {
    const CascadeCase c = RandomCascadeCase(rng, i);
    const int k = ConcurrentDecodeSms(PickOne(rng, {1, 20, 48}));
    std::string groups;
    for (const GroupSpec& g : c.groups)
      groups += " {" + std::to_string(g.prefix_tokens) + ": " + std::to_string(g.suffix_lens.size()) + " suffixes}";
    SCOPED_TRACE(c.name + ", groups" + groups + ", concurrent k = " + std::to_string(k));
    std::unique_ptr<Backend>& conc = concurrent[k];
    if (conc == nullptr) {
      conc = MakeCudaBackendWithEnv(
          {{"PREFIXD_CONCURRENT_DECODE_SMS", std::to_string(k)}, {"PREFIXD_CONCURRENT_DECODE_TMA", "force"}});
      ASSERT_TRUE(conc->DefaultPlanOptions().concurrent_decode_tma) << "=force did not reach the plan options";
    }
    const CascadeInputs in = MakeCascadeInputs(c, rng);
    const RefOutput want = NaiveCascade(in.pool, c.layer, in.batch, in.q, 1.0 / std::sqrt(double(c.head_dim)));
    std::vector<std::pair<const char*, Backend*>> backends = {{"default", &Device()}, {"concurrent", conc.get()}};
    if (fused) backends.emplace_back("fused", &Fused());
    for (const auto& [which, backend] : backends) {
      auto& cuda = dynamic_cast<kernels::cuda::CudaBackend&>(*backend);
      const int64_t tma_before = cuda.concurrent_tma_steps(), fused_before = cuda.fused_launches();
      const CascadePlan plan = kernels::PlanCascade(in.batch, in.shape, backend->DefaultPlanOptions());
      ExpectMatchesOracle(RunStep(*backend, in.pool, c.layer, plan, in.q), want, c.dtype, c.name + " on " + which);
      tma_steps += cuda.concurrent_tma_steps() - tma_before;
      fused_steps += cuda.fused_launches() - fused_before;
    }
  }
  std::cout << "[ fuzz     ] " << cases << " random shapes, each on " << (fused ? 3 : 2)
            << " backends; the TMA decode ran " << tma_steps << " concurrent steps, the fused kernel " << fused_steps
            << " steps (PREFIXD_TEST_SEED=" << seed << ")\n";
#endif
}

}  // namespace
}  // namespace prefixd::test
