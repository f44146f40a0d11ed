// The CUDA backend against the float64 oracle (NaiveCascade / NaiveAttention) AND the CPU backend
// running the same plan: cascade decode over many shapes and plan splittings, the non-cascade
// baseline, causal/non-causal prefix attention, the merge and cast kernels, a decode step captured
// in a CUDA graph, concurrent prefix/decode (PREFIXD_CONCURRENT_DECODE_SMS), and bad inputs
// rejected with clear errors and no device fault.
//
// Every test starts with a GPU guard and skips (with the reason) when there is no usable GPU.
// PREFIXD_GPU_TESTS_CPU_STAND_IN=1 runs the backend-level tests with the CPU backend in the GPU's
// place: it checks this file's own logic on machines without a GPU (CUDA-only tests still skip).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <tuple>
#include <vector>

#include "prefixd/common/env.h"
#include "prefixd/common/error.h"
#include "prefixd/kernels/backend.h"
#include "prefixd/kernels/cost_model.h"
#include "prefixd/kernels/decode_kernel_choice.h"
#include "prefixd/kernels/measured_choice.h"
#include "prefixd/kernels/plan.h"
#include "prefixd/kernels/prefix_kv_tile.h"
#include "prefixd/kernels/state.h"
#include "support/backend_step.h"
#include "support/test_support.h"
#include "unit/kernels/expect_error.h"
#include "unit/kernels/random_batch.h"

#ifdef PREFIXD_HAVE_CUDA
#include <cuda_runtime.h>

#include "kernels/cuda/cascade_fused.h"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/decode_attention.h"
#include "kernels/cuda/sm90a/prefix_attention_sm90a.h"
#endif

namespace prefixd::test {
namespace {


constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Base-2 LSE error bound (times max(1, |s|)): fp32 scores from exact fp16/bf16 products.
constexpr double kLseTol = 5e-4;

bool CpuStandIn() {
  const char* env = std::getenv("PREFIXD_GPU_TESTS_CPU_STAND_IN");
  return env != nullptr && std::string(env) == "1";
}

#define PREFIXD_REQUIRE_DEVICE_BACKEND()                                                             \
  do {                                                                                               \
    if (!::prefixd::kernels::CudaAvailable() && !CpuStandIn())                                       \
      GTEST_SKIP() << "no usable CUDA GPU (cudaGetDeviceCount failed or returned 0)";               \
  } while (0)

// Small enough that creating one costs little, big enough for every case here.
kernels::WorkspaceLimits TestLimits() {
  kernels::WorkspaceLimits l;
  l.max_requests = 1024;
  l.max_qo_heads = 64;
  l.max_slots = 1 << 14;
  l.max_plan_ints = 1 << 20;
  l.max_state_floats = int64_t(1) << 24;
  return l;
}

std::unique_ptr<Backend> MakeDeviceBackend(const kernels::WorkspaceLimits& limits = TestLimits()) {
  kernels::BackendOptions options;
  options.limits = limits;
  if (kernels::CudaAvailable()) return kernels::MakeCudaBackend(options);
  return kernels::MakeCpuBackend(options);
}

// A CUDA backend made with the environment settings `name`=`value` (switches read at construction
// only), unset again when this returns or throws.
using EnvSettings = std::vector<std::pair<std::string, std::string>>;
std::unique_ptr<Backend> MakeCudaBackendWithEnv(const EnvSettings& settings) {
  struct Env {
    const EnvSettings& settings;
    explicit Env(const EnvSettings& s) : settings(s) {
      for (const auto& [name, value] : settings) setenv(name.c_str(), value.c_str(), 1);
    }
    ~Env() {
      for (const auto& setting : settings) unsetenv(setting.first.c_str());
    }
  } env(settings);
  kernels::BackendOptions options;
  options.limits = TestLimits();
  return kernels::MakeCudaBackend(options);
}

// One device backend for the whole binary (creating one allocates its workspace).
Backend& Device() {
  static std::unique_ptr<Backend> backend = MakeDeviceBackend();
  return *backend;
}

Backend& Cpu() {
  static std::unique_ptr<Backend> backend = kernels::MakeCpuBackend();
  return *backend;
}

// Peaky queries: uniform in [-40, 40] (score std ≈ 40/3 ≥ 10 with a margin for D = 64's sampling
// noise under k in [-1, 1] and scale 1/sqrt(D)); every third head aims at a planted key.
constexpr float kPeakyScale = 40.f;

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

void ExpectMatchesOracle(const StepResult& got, const RefOutput& want, DType dtype, const std::string& what) {
  const int64_t n = int64_t(want.v.size());
  ExpectAllClose(got.v.data(), want.v.data(), n, OutputTolerance(dtype), what + " v_out vs float64");
  ExpectLseClose(got.s.data(), want.s.data(), int64_t(want.s.size()), kLseTol, what + " s_out vs float64");
  ExpectAllClose(got.o.data(), want.v.data(), n, OutputTolerance(dtype), what + " o vs float64");
}

void ExpectMatchesCpu(const StepResult& got, const StepResult& cpu, DType dtype, const std::string& what) {
  const std::vector<double> v = ToDouble(cpu.v), s = ToDouble(cpu.s);
  ExpectAllClose(got.v.data(), v.data(), int64_t(v.size()), OutputTolerance(dtype), what + " v_out vs CPU backend");
  ExpectLseClose(got.s.data(), s.data(), int64_t(s.size()), kLseTol, what + " s_out vs CPU backend");
}

// ---------------------------------------------------------------------------------------------
// Cascade decode.

enum class Split {
  kDevice,        // the device backend's DefaultPlanOptions
  kFinest,        // 1-token chunks allowed, 3-row prefix tiles: as many items as possible
  kFineChunks,    // prefix/suffix chunks down to 1 token, device tile rows
  kNone,          // target_items = 1: no splitting at all
  kFinePrefix,    // prefix chunks down to 1 token, suffixes split as on the device
};

// `backend`'s DefaultPlanOptions with every group planned as a cascade: the tests that use it are
// about the cascade's kernels, which the layout choice (on by default on CUDA) would bypass for
// short prefixes. ChosenLayoutsMatchTheOracle runs the default options themselves.
PlanOptions CascadeOptions(const Backend& backend) {
  PlanOptions o = backend.DefaultPlanOptions();
  o.choose_layout = false;
  return o;
}

// The splits above on top of CascadeOptions(backend) (its fuse_merge kept).
PlanOptions OptionsFor(Split split, const Backend& backend) {
  PlanOptions o = CascadeOptions(backend);
  if (split != Split::kDevice) o.prefix_target_items = 0;  // the variants below set target_items alone
  switch (split) {
    case Split::kDevice: break;
    case Split::kFinest:
      o.target_items = 1 << 20;
      o.prefix_tile_rows = 3;
      o.prefix_chunk_align = o.min_prefix_chunk = 1;
      o.decode_chunk_align = o.min_decode_chunk = 1;
      break;
    case Split::kFineChunks:
      o.target_items = 1 << 12;
      o.prefix_chunk_align = o.min_prefix_chunk = 1;
      o.decode_chunk_align = o.min_decode_chunk = 1;
      break;
    case Split::kNone: o.target_items = 1; break;
    case Split::kFinePrefix:
      o.target_items = 1 << 12;
      o.prefix_chunk_align = o.min_prefix_chunk = 1;
      break;
  }
  return o;
}
PlanOptions OptionsFor(Split split) { return OptionsFor(split, Device()); }

using CascadeCase = CascadeCaseOf<Split>;

// One cascade case's inputs, drawn from rng.
struct CascadeInputs {
  KvPoolShape shape;
  DecodeBatch batch;
  HostKvPool pool;
  std::vector<uint16_t> q;
};

CascadeInputs MakeCascadeInputs(const CascadeCase& c, std::mt19937_64& rng) {
  const std::vector<GroupSpec> groups = c.groups.empty() ? RandomGroups(rng, 4, 4, 400, 80) : c.groups;
  CascadeInputs in;
  in.shape = KvPoolShape{c.num_layers, PagesNeeded(groups, c.page_size) + 3, c.page_size, c.num_kv_heads,
                         c.head_dim, c.dtype};
  kernels::PageAllocator alloc(in.shape.num_pages);
  in.batch = BuildBatch(groups, c.num_qo_heads, c.page_size, alloc, rng);
  in.pool = RandomKvPool(rng, in.shape);
  in.q = MakeQueries(rng, in.pool, c.layer, in.batch, c.peaky, kPeakyScale);
  return in;
}

// A case's inputs, its float64 oracle and its plan with unsplit suffixes (Split::kNone: the decode
// items are the case's suffix lengths, the prefix items few), planned one after the other (no
// concurrent mode).
struct UnsplitCascade {
  CascadeInputs in;
  RefOutput want;
  CascadePlan plan;
};
UnsplitCascade MakeUnsplitCascade(const CascadeCase& c, std::mt19937_64& rng) {
  UnsplitCascade u;
  u.in = MakeCascadeInputs(c, rng);
  u.want = NaiveCascade(u.in.pool, c.layer, u.in.batch, u.in.q, 1.0 / std::sqrt(double(c.head_dim)));
  u.plan = kernels::PlanCascade(u.in.batch, u.in.shape, OptionsFor(Split::kNone));
  EXPECT_EQ(u.plan.concurrent_decode_sms, 0) << c.name;
  return u;
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

// The cascade cases, shared with the concurrent prefix/decode test below.
std::vector<CascadeCase> CascadeCases() {
  return {
        // B = 1, suffix of one token.
        CascadeCase{"b1_suffix1_fp16_h32kv32_d128_p16", kF16, 32, 32, 128, 16, {{100, {1}}}},
        // Several groups, one without prefix, empty suffixes, partly filled last pages.
        CascadeCase{"mixed_groups_bf16_h4kv2_d128_p16", kBF16, 4, 2, 128, 16,
                    {{37, {5, 16, 17}}, {0, {3, 20}}, {200, {0, 9}}}},
        // Every dtype × head_dim, every GQA group size, peaky and flat.
        CascadeCase{"peaky_fp16_h8kv2_d256_p16", kF16, 8, 2, 256, 16, {{150, {7, 33}}, {64, {1, 2, 3}}}, true},
        CascadeCase{"flat_bf16_h8kv1_d256_p16", kBF16, 8, 1, 256, 16, {{150, {7, 33}}, {64, {1, 2, 3}}}},
        CascadeCase{"peaky_bf16_h16kv2_d64_p16", kBF16, 16, 2, 64, 16, {{300, {7, 33, 2}}, {64, {1}}}, true},
        CascadeCase{"flat_fp16_h8kv4_d64_p16", kF16, 8, 4, 64, 16, {{129, {18, 40}}, {0, {77}}}},
        CascadeCase{"peaky_fp16_h8kv8_d128_p16", kF16, 8, 8, 128, 16, {{250, {31, 2, 64}}}, true},
        CascadeCase{"flat_bf16_h8kv8_d128_p16", kBF16, 8, 8, 128, 16, {{250, {31, 2, 64}}}},
        CascadeCase{"peaky_bf16_h8kv4_d256_p16", kBF16, 8, 4, 256, 16, {{90, {5}}, {200, {19, 1}}}, true},
        CascadeCase{"peaky_fp16_h8kv1_d64_p16", kF16, 8, 1, 64, 16, {{77, {3, 45}}}, true},
        // Page size not a power of two; prefix not a multiple of it.
        CascadeCase{"odd_page5_bf16_h8kv1_d64", kBF16, 8, 1, 64, 5, {{23, {4, 11, 0, 6}}, {0, {13}}}},
        // Prefix split into more chunks than pages; suffixes into 1-token chunks.
        CascadeCase{"finest_page5_peaky_fp16_h8kv1_d128", kF16, 8, 1, 128, 5, {{23, {4, 11}}, {41, {9}}}, true,
                    Split::kFinest, 1, 0, true, true},
        CascadeCase{"more_chunks_than_pages_fp16_h4kv4_d64", kF16, 4, 4, 64, 16, {{40, {3, 2}}}, false,
                    Split::kFinest, 1, 0, true},
        CascadeCase{"fine_chunks_bf16_h32kv8_d128_p16", kBF16, 32, 8, 128, 16, {{70, {3, 30}}, {33, {18}}}, true,
                    Split::kFineChunks, 1, 0, true, true},
        CascadeCase{"no_split_fp16_h4kv2_d128", kF16, 4, 2, 128, 16, {{300, {5, 40}}, {0, {3}}}, false, Split::kNone},
        // Long suffixes: split-KV with the device's own options.
        CascadeCase{"split_kv_long_suffix_fp16_h32kv8_d128_p16", kF16, 32, 8, 128, 16, {{0, {1500, 3}}}, true,
                    Split::kDevice, 1, 0, false, true},
        // Realistic sizes: GQA 4, a long prefix chunked over the device.
        CascadeCase{"long_prefix_fp16_h32kv8_d128_p16", kF16, 32, 8, 128, 16,
                    {{2000, {17, 300, 64, 1}}, {1500, {250}}}, false},
        CascadeCase{"long_prefix_peaky_bf16_h32kv32_d128_p16", kBF16, 32, 32, 128, 16, {{1100, {40, 7}}}, true},
        // A layer other than 0.
        CascadeCase{"layer1_of_2_peaky_bf16_h8kv2_d64", kBF16, 8, 2, 64, 16,
                    {{48, {1}}, {0, {2, 0}}, {130, {17, 16, 15}}, {16, {64}}}, true, Split::kDevice, 2, 1},
        CascadeCase{"empty_requests_fp16_h4kv4_d64", kF16, 4, 4, 64, 16, {{0, {0, 5}}, {30, {0}}, {0, {0}}}},
        CascadeCase{"random_groups_fp16_h4kv1_d128", kF16, 4, 1, 128, 16, {}, false},
        CascadeCase{"random_groups_finest_bf16_h8kv4_d64_p7", kBF16, 8, 4, 64, 7, {}, true, Split::kFinest},
        // GQA groups the decode kernels are not compiled for (DecodeSlicingFor): 3 on the group of
        // 4, 5-7 on the group of 8 (tensor cores at head_dim ≤ 128, CUDA cores at 256); at head_dim
        // ≤ 128 9-15 on the tensor-core kernel's group of 16 and larger groups in slices of 16 (24:
        // 16 + 8), at 256 groups of more than 8 heads in slices of 8 (the last slice partial at 9),
        // MQA among them.
        CascadeCase{"gqa3_peaky_fp16_h24kv8_d128_p16", kF16, 24, 8, 128, 16, {{300, {5, 40, 1}}, {0, {17}}}, true},
        CascadeCase{"gqa3_bf16_h6kv2_d256_p16", kBF16, 6, 2, 256, 16, {{150, {70, 3}}, {64, {1, 33}}}},
        CascadeCase{"gqa5_bf16_h40kv8_d128_p16", kBF16, 40, 8, 128, 16, {{500, {200, 3, 64}}, {64, {33}}}},
        CascadeCase{"gqa6_peaky_fp16_h12kv2_d64_p16", kF16, 12, 2, 64, 16, {{250, {31, 2, 64}}}, true},
        CascadeCase{"gqa7_fp16_h28kv4_d128_p16", kF16, 28, 4, 128, 16, {{700, {16, 100}}, {0, {45, 2}}}},
        CascadeCase{"gqa7_peaky_bf16_h28kv4_d256_p16", kBF16, 28, 4, 256, 16, {{90, {5, 40}}, {200, {19, 1}}}, true},
        CascadeCase{"gqa9_fp16_h18kv2_d256_p16", kF16, 18, 2, 256, 16, {{150, {7, 33}}, {64, {1, 2, 3}}}},
        CascadeCase{"gqa12_finest_bf16_h24kv2_d128_p16", kBF16, 24, 2, 128, 16, {{130, {40, 7}}, {0, {20}}}, true,
                    Split::kFinest, 1, 0, true, true},
        CascadeCase{"gqa16_fp16_h32kv2_d64_p16", kF16, 32, 2, 64, 16, {{400, {3, 129}}, {0, {64}}}},
        CascadeCase{"gqa16_peaky_bf16_h32kv2_d128_p16", kBF16, 32, 2, 128, 16, {{700, {300, 1, 45}}, {0, {130, 16}}},
                    true},
        CascadeCase{"gqa10_fp16_h10kv1_d128_p16", kF16, 10, 1, 128, 16, {{260, {77, 5}}, {33, {200}}}},
        CascadeCase{"gqa24_peaky_fp16_h48kv2_d64_p16", kF16, 48, 2, 64, 16, {{300, {150, 2}}, {0, {41}}}, true,
                    Split::kFinest, 1, 0, true, true},
        CascadeCase{"mqa32_peaky_bf16_h32kv1_d128_p16", kBF16, 32, 1, 128, 16, {{1100, {40, 7, 300}}}, true},
        CascadeCase{"mqa64_fp16_h64kv1_d64_p16", kF16, 64, 1, 64, 16, {{200, {3, 90}}, {0, {20}}}}};
}

INSTANTIATE_TEST_SUITE_P(Shapes, CudaCascadeTest, ::testing::ValuesIn(CascadeCases()),
                         [](const ::testing::TestParamInfo<CascadeCase>& info) { return info.param.name; });

// ---------------------------------------------------------------------------------------------
// Concurrent prefix/decode (PREFIXD_CONCURRENT_DECODE_SMS=k, cuda_backend.h): the prefix kernel on
// at most SMs − k CTAs of a second stream beside the decode kernel, every request finished by the
// merge kernel. The cascade cases above, each run twice: with the plan of the default (fused)
// options, which LoadPlan unfuses, and with the concurrent backend's own options (fuse_merge off).

// k decode SMs, kept below the device's SM count.
int ConcurrentDecodeSms(int wanted) {
  int sms = 2;
#ifdef PREFIXD_HAVE_CUDA
  if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0) != cudaSuccess) {
    (void)cudaGetLastError();
    sms = 2;
  }
#endif
  return std::max(1, std::min(wanted, sms - 1));
}

// A CUDA backend made with PREFIXD_CONCURRENT_DECODE_SMS set to `value` (read at construction only).
std::unique_ptr<Backend> MakeConcurrentBackend(const std::string& value) {
  return MakeCudaBackendWithEnv({{"PREFIXD_CONCURRENT_DECODE_SMS", value}});
}

// One concurrent backend (k = 32, as for the benchmark's conc32) for the shape tests.
Backend& Concurrent() {
  static std::unique_ptr<Backend> backend = MakeConcurrentBackend(std::to_string(ConcurrentDecodeSms(32)));
  return *backend;
}

// Runs `c` on `backend` with both plans (above) against the float64 oracle and the CPU backend.
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

// The balanced prefix grid (PlanOptions::balance_prefix_ctas, prefix_balance.h): the persistent
// sm_90a kernel follows the plan's CTA chains where its grid is the plan's, and takes the same items
// round-robin where its grid is capped below it (the concurrent backend's, 4 CTAs). Small shapes with
// the rule's thresholds lifted: 64 requests of GQA 4 (256 rows per KV head: 2 row tiles) × 2 KV heads
// × 2 chunks = 8 items, their tails on 4 more CTAs; every head_dim (its own K/V tile), two groups of
// one prefix length, a peaky case. Then the same by the stream over the heads (empty items among them).
// Head_dim 128's longer K/V tile as the plan chooses it (ChoosePrefixKvTileTokens: long items in
// wide CTAs take 160 tokens): items that no 160-token tile divides, whose last box is shifted back
// over the previous tile and whose chunk ends are masked mid-tile; fp16 and bf16, one chunk and
// several, the same plan with the 128-token tile forced beside it.
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
      PlanOptions o = CascadeOptions(Device());  // as PrefixKvTile.PlannedLongItemsInWideCtasTakeTheLongTile
      o.prefix_tile_rows = 128;
      o.prefix_target_items = target_items;
      o.min_prefix_chunk = 64;
      o.balance_prefix_ctas = 0;  // the balancer would cut the 4 pairs' tails over the idle SMs
      const CascadePlan plan = kernels::PlanCascade(in.batch, in.shape, o);
      ASSERT_EQ(ChoosePrefixKvTileTokens(plan), 160) << "the case does not take the long tile";
      const std::string what = c.name + ", " + std::to_string(target_items) + " items wanted";
      ExpectMatchesOracle(RunStep(Device(), in.pool, c.layer, plan, in.q), want, c.dtype, what);
      const std::unique_ptr<Backend> forced = MakeCudaBackendWithEnv({{"PREFIXD_SM90A_KV_TILE", "128"}});
      ExpectMatchesOracle(RunStep(*forced, in.pool, c.layer, plan, in.q), want, c.dtype, what + " (128 forced)");
    }
  }
}

// Plan options that balance a small prefix grid of `ctas` CTAs from `target_items` items (one or
// a few chunks per (KV head, row tile) pair); with `stream`, by the stream over the heads at an item
// cost of half a tile, so that the stream, not the tails, is the better balance.
PlanOptions BalancedGridOptions(int ctas, int target_items, bool stream) {
  PlanOptions o = CascadeOptions(Device());
  o.prefix_target_items = target_items;
  o.prefix_tile_rows = 128;
  o.min_prefix_chunk = 64;
  o.balance_prefix_ctas = ctas;
  o.balance_min_item_rows = 0;  // the two groups' last row tiles have 128 rows, the others' too
  o.balance_min_chunk_tiles = 1;
  o.balance_min_gain = 0;
  if (stream) {
    o.balance_stream = true;
    o.balance_item_overhead_tiles = 0.5;
  }
  return o;
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
  if (candidates.empty()) GTEST_SKIP() << "no concurrent candidates on this device (the persistent sm_90a prefix kernel)";
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
  if (candidates.empty()) GTEST_SKIP() << "no concurrent candidates on this device (the persistent sm_90a prefix kernel)";
  EXPECT_TRUE(Device().DefaultPlanOptions().concurrent_tma_candidate);
  const std::unique_ptr<Backend> tma_off = MakeCudaBackendWithEnv({{"PREFIXD_CONCURRENT_DECODE_TMA", "0"}});
  EXPECT_FALSE(tma_off->DefaultPlanOptions().concurrent_tma_candidate);
  const int sms = ConcurrentDecodeSms(1 << 20) + 1;
  const CascadeCase cases[] = {
      {"tma_fp16_h32kv8_d128", kF16, 32, 8, 128, 16, {{3000, {17, 700, 0, 1, 256, 300}}, {0, {40}}, {600, {1300, 5}}}, true},
      {"tma_bf16_h16kv2_d64", kBF16, 16, 2, 64, 16, {{2000, {33, 260, 1}}, {500, {90, 16, 7}}}, true},
      {"tma_bf16_h8kv2_d128_p32", kBF16, 8, 2, 128, 32, {{1500, {40, 3, 333}}}, true},
      {"tma_fp16_h8kv4_d128_gqa2", kF16, 8, 4, 128, 16, {{1500, {40, 3, 333}}}, true},
      {"tma_bf16_h8kv8_d64_gqa1", kBF16, 8, 8, 64, 16, {{1200, {40, 3, 200}}, {0, {17}}}, true},
      {"no_tma_fp16_h12kv4_d128_gqa3", kF16, 12, 4, 128, 16, {{1500, {40, 3, 333}}}, true},
      {"no_tma_fp16_h8kv2_d256", kF16, 8, 2, 256, 16, {{1500, {40, 3, 333}}}, true},
  };
  for (const CascadeCase& c : cases) {
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

// ---------------------------------------------------------------------------------------------
// The one-launch fused cascade (PREFIXD_FUSED=1, cuda_backend.h / cascade_fused.h): prefix and
// decode items side by side on one persistent grid, the ⊕ inside through arrival counters (and the
// merge kernel after it for the requests the plan does not finish in decode items). Every cascade case
// above, plus page sizes 8/32/64 and realistic GQA shapes, each step run twice on the same backend
// (the counters must be back at zero after a step) against the float64 oracle and the CPU backend;
// where the fused kernel applies, the test also asserts that it ran (both times).

// A fused backend, with one more setting `name`=`value` (e.g. PREFIXD_FUSED_L2_AHEAD) when given.
std::unique_ptr<Backend> MakeFusedBackendWith(const char* name, const char* value) {
  EnvSettings settings = {{"PREFIXD_FUSED", "1"}};
  if (name != nullptr) settings.emplace_back(name, value);
  return MakeCudaBackendWithEnv(settings);
}
std::unique_ptr<Backend> MakeFusedBackend(const char* l2_ahead = nullptr) {
  return MakeFusedBackendWith(l2_ahead != nullptr ? "PREFIXD_FUSED_L2_AHEAD" : nullptr, l2_ahead);
}

Backend& Fused() {
  static std::unique_ptr<Backend> backend = MakeFusedBackend();
  return *backend;
}

#ifdef PREFIXD_HAVE_CUDA
#define PREFIXD_REQUIRE_FUSED()                                                                       \
  do {                                                                                                \
    PREFIXD_REQUIRE_GPU();                                                                            \
    if (!kernels::cuda::FusedCascadeReady())                                                          \
      GTEST_SKIP() << "the fused cascade kernel needs an sm_90a build and a compute capability 9.0 GPU"; \
  } while (0)

// CUDA graphs, below; *kernel_priorities (if given): the captured kernel nodes' priorities.
void ExpectCapturedStepReplays(Backend& device, size_t* root_nodes, std::vector<int>* kernel_priorities = nullptr);

int64_t FusedLaunches(Backend& backend) { return dynamic_cast<kernels::cuda::CudaBackend&>(backend).fused_launches(); }

// Whether the fused kernel runs `plan` (the conditions of CudaBackend::LoadPlan).
bool FusedApplies(const CascadePlan& plan, DType dtype) {
  if (!kernels::cuda::FusedCascadeSupportsShape(plan.head_dim, dtype, plan.page_size, plan.gqa_group_size()))
    return false;
  for (const kernels::DecodeWorkItem& it : plan.decode_items)
    if (it.kv_begin % 16 != 0) return false;
  return true;
}

void ExpectFusedCascadeCorrect(Backend& backend, const CascadeCase& c, std::mt19937_64& rng,
                               bool poison_unused_slots = false) {
  CascadeInputs in = MakeCascadeInputs(c, rng);
  if (poison_unused_slots) PoisonSlotsOutsideRequests(in.pool, in.batch, c.layer);
  const RefOutput want = NaiveCascade(in.pool, c.layer, in.batch, in.q, 1.0 / std::sqrt(double(c.head_dim)));
  const CascadePlan plan = kernels::PlanCascade(in.batch, in.shape, OptionsFor(c.split, backend));
  const StepResult cpu = RunStep(Cpu(), in.pool, c.layer, plan, in.q);
  const int64_t before = FusedLaunches(backend);
  for (int step = 0; step < 2; ++step) {
    const std::string what = c.name + " (fused, step " + std::to_string(step) + ")";
    const StepResult got = RunStep(backend, in.pool, c.layer, plan, in.q);
    ExpectMatchesOracle(got, want, c.dtype, what);
    ExpectMatchesCpu(got, cpu, c.dtype, what);
  }
  if (FusedApplies(plan, c.dtype)) EXPECT_EQ(FusedLaunches(backend) - before, 2) << c.name << ": the fused kernel did not run";
  else EXPECT_EQ(FusedLaunches(backend), before) << c.name << ": the fused kernel ran a plan it does not support";
}
#endif

// Shapes the cascade cases lack: the fused kernel's page sizes other than 16, GQA 4/8 at realistic
// sizes, a long split suffix with the device's options, requests without a suffix, a GQA group of 3
// whose requests straddle the prefix kernel's warpgroups.
std::vector<CascadeCase> FusedCascadeCases() {
  std::vector<CascadeCase> cases = CascadeCases();
  const std::vector<CascadeCase> more = {
      CascadeCase{"page8_fp16_h32kv8_d128", kF16, 32, 8, 128, 8, {{700, {5, 130, 1}}, {0, {60}}}, true},
      CascadeCase{"page32_bf16_h16kv2_d64", kBF16, 16, 2, 64, 32, {{1000, {31, 32, 33}}, {64, {1}}}, true},
      CascadeCase{"page64_fp16_h8kv1_d128", kF16, 8, 1, 128, 64, {{640, {200, 0, 3}}}, false},
      CascadeCase{"gqa4_b48_p3000_fp16_d128", kF16, 32, 8, 128, 16,
                  {{3000, std::vector<int>(48, 256)}}, true},
      CascadeCase{"gqa8_b20_p2500_bf16_d64", kBF16, 64, 8, 64, 16, {{2500, {5, 1000, 0, 300, 17, 129, 256, 2, 64, 80}},
                                                                    {129, {0, 3, 800, 1, 1, 1, 1, 1, 1, 1}}}},
      CascadeCase{"long_split_suffix_bf16_h32kv8_d128", kBF16, 32, 8, 128, 16, {{0, {4000, 3}}, {500, {2100}}}, true,
                  Split::kDevice, 1, 0, false, true},
      // A GQA group of 3 with 30 requests: 90 rows per KV head, so a 64-row warpgroup boundary
      // splits request 21 and the fused kernel's per-request arrival counts cannot apply (its
      // finishing items would wait forever for request 29's): the kernels above run it.
      CascadeCase{"gqa3_b30_p900_fp16_h24kv8_d128", kF16, 24, 8, 128, 16, {{900, std::vector<int>(30, 40)}}, true},
  };
  cases.insert(cases.end(), more.begin(), more.end());
  return cases;
}

class CudaFusedCascadeTest : public ::testing::TestWithParam<CascadeCase> {};

TEST_P(CudaFusedCascadeTest, MatchesFloat64OracleAndCpuBackendTwice) {
#ifdef PREFIXD_HAVE_CUDA
  PREFIXD_REQUIRE_FUSED();
  PREFIXD_SEEDED_RNG(rng);
  ExpectFusedCascadeCorrect(Fused(), GetParam(), rng);
#else
  GTEST_SKIP() << "built without CUDA";
#endif
}

INSTANTIATE_TEST_SUITE_P(Shapes, CudaFusedCascadeTest, ::testing::ValuesIn(FusedCascadeCases()),
                         [](const ::testing::TestParamInfo<CascadeCase>& info) { return info.param.name; });

// The same cases with NaN bits in every slot outside the requests' prefixes and suffixes: the
// suffix warps load whole page rows past a suffix's end and zero their V rows before P·V, the
// prefix tiles read past a chunk's end (NaN must not reach a state even as 0 · NaN).
TEST(CudaFusedCascade, NaNOutsideTheRequestsNeverReachesAState) {
#ifdef PREFIXD_HAVE_CUDA
  PREFIXD_REQUIRE_FUSED();
  PREFIXD_SEEDED_RNG(rng);
  for (const CascadeCase& c : FusedCascadeCases()) ExpectFusedCascadeCorrect(Fused(), c, rng, true);
#else
  GTEST_SKIP() << "built without CUDA";
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

// The suffix warps' L2 prefetch distance (PREFIXD_FUSED_L2_AHEAD) changes no result; a bad one is refused.
TEST(CudaFusedCascade, EveryL2PrefetchDistanceIsCorrectAndABadOneIsRefused) {
#ifdef PREFIXD_HAVE_CUDA
  PREFIXD_REQUIRE_FUSED();
  PREFIXD_SEEDED_RNG(rng);
  const CascadeCase c{"l2ahead_fp16_h32kv8_d128", kF16, 32, 8, 128, 16, {{2000, {17, 300, 64, 1}}, {900, {250, 0}}}, true};
  for (const char* ahead : {"0", "2", "8"}) {
    SCOPED_TRACE(ahead);
    std::unique_ptr<Backend> backend = MakeFusedBackend(ahead);
    ExpectFusedCascadeCorrect(*backend, c, rng);
  }
  for (const char* bad : {"-1", "x", "9"})
    EXPECT_PREFIXD_ERROR(MakeFusedBackend(bad), ErrorKind::kInvalidArgument, "PREFIXD_FUSED_L2_AHEAD");
#else
  GTEST_SKIP() << "built without CUDA";
#endif
}

// The merge-kernel mode (PREFIXD_FUSED_MERGE=kernel: no ⊕ inside, the merge kernel finishes every
// request) on the cases that exercise the ⊕: several groups, split suffixes, requests without a
// suffix, page size 8; bad values of the mode and of the diagnostics switch are refused.
TEST(CudaFusedCascade, MergeKernelModeIsCorrectAndBadSettingsAreRefused) {
#ifdef PREFIXD_HAVE_CUDA
  PREFIXD_REQUIRE_FUSED();
  PREFIXD_SEEDED_RNG(rng);
  std::unique_ptr<Backend> backend = MakeFusedBackendWith("PREFIXD_FUSED_MERGE", "kernel");
  EXPECT_NE(backend->Describe().find("merge kernel"), std::string::npos) << backend->Describe();
  int ran = 0;
  for (const CascadeCase& c : FusedCascadeCases()) {
    if (c.name.find("mixed_groups") == std::string::npos && c.name.find("page8") == std::string::npos &&
        c.name.find("long_split_suffix") == std::string::npos && c.name.find("gqa8") == std::string::npos)
      continue;
    SCOPED_TRACE(c.name);
    ExpectFusedCascadeCorrect(*backend, c, rng);
    ++ran;
  }
  EXPECT_GE(ran, 4);
  for (const char* bad : {"outside", "1"})
    EXPECT_PREFIXD_ERROR(MakeFusedBackendWith("PREFIXD_FUSED_MERGE", bad), ErrorKind::kInvalidArgument,
                         "PREFIXD_FUSED_MERGE");
  for (const char* bad : {"3", "-1", "x"})
    EXPECT_PREFIXD_ERROR(MakeFusedBackendWith("PREFIXD_FUSED_DIAG", bad), ErrorKind::kInvalidArgument,
                         "PREFIXD_FUSED_DIAG");
#else
  GTEST_SKIP() << "built without CUDA";
#endif
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

// The fused step is ONE kernel: a captured step has a single root node and replays correctly.
TEST(CudaGraph, FusedStepIsOneNodeAndReplaysCorrectly) {
#ifdef PREFIXD_HAVE_CUDA
  PREFIXD_REQUIRE_FUSED();
  size_t roots = 0;
  ExpectCapturedStepReplays(Fused(), &roots);
  EXPECT_EQ(roots, 1u) << "the fused step should be one kernel node";
#else
  GTEST_SKIP() << "built without CUDA";
#endif
}

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
  for (int i = 0; i < 4 * 64; ++i) {
    ASSERT_EQ(got.v[i], 0.f) << i;
    ASSERT_EQ(got.o[i], 0.f) << i;
  }
  for (int h = 0; h < 4; ++h) EXPECT_EQ(got.s[h], kNegInf);
  for (int h = 4; h < 8; ++h) EXPECT_TRUE(std::isfinite(got.s[h]));
  for (int i = 4 * 64; i < 8 * 64; ++i) ASSERT_TRUE(std::isfinite(got.v[i])) << i;
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

// ---------------------------------------------------------------------------------------------
// Fused merge (plan.h: finishing decode items ⊕ the prefix-chunk states and write the outputs;
// merge_requests go through the merge kernel): every mix of finishing and merged requests, prefix
// chunks beyond one staging pass, each output alone, the same answer as the unfused plan.

// Per (request, head) row: ‖got − want‖ / max(‖want‖, 1e-3) ≤ tol, so that a wrong or unwritten
// row cannot hide in a global norm; reports the worst row.
void ExpectRowsClose(const std::vector<float>& got, const std::vector<double>& want, int64_t rows, int dim, double tol,
                     const std::string& what) {
  double worst = 0;
  int64_t worst_row = -1;
  for (int64_t r = 0; r < rows; ++r) {
    double num = 0, den = 0;
    for (int d = 0; d < dim; ++d) {
      const double g = got[r * dim + d], w = want[r * dim + d];
      num += std::isfinite(g) ? (g - w) * (g - w) : 1e30;
      den += w * w;
    }
    const double err = std::sqrt(num) / std::max(std::sqrt(den), 1e-3);
    if (err > worst) worst = err, worst_row = r;
  }
  EXPECT_LE(worst, tol) << what << ": worst row " << worst_row << " (request · heads + head) has rel. error " << worst;
}

struct FusedCase {
  std::string name;
  DType dtype;
  int num_qo_heads, num_kv_heads, head_dim;
  std::vector<GroupSpec> groups;
  Split split;
  bool expect_merged;  // some request goes through the merge kernel
  int min_prefix_chunks = 1;  // the most prefix chunks of a group is at least this
};

void PrintTo(const FusedCase& c, std::ostream* os) { *os << c.name; }

class CudaFusedMergeTest : public ::testing::TestWithParam<FusedCase> {};

TEST_P(CudaFusedMergeTest, MatchesOracleAndTheUnfusedPlanWithAnySubsetOfOutputs) {
  PREFIXD_REQUIRE_DEVICE_BACKEND();
  const FusedCase& c = GetParam();
  PREFIXD_SEEDED_RNG(rng);
  const int page_size = 16;
  const KvPoolShape shape{1, PagesNeeded(c.groups, page_size) + 3, page_size, c.num_kv_heads, c.head_dim, c.dtype};
  kernels::PageAllocator alloc(shape.num_pages);
  const DecodeBatch batch = BuildBatch(c.groups, c.num_qo_heads, page_size, alloc, rng);
  const HostKvPool pool = RandomKvPool(rng, shape);
  const std::vector<uint16_t> q = MakeQueries(rng, pool, 0, batch, true, kPeakyScale);
  const RefOutput want = NaiveCascade(pool, 0, batch, q, 1.0 / std::sqrt(double(c.head_dim)));
  const int64_t rows = int64_t(batch.num_requests()) * c.num_qo_heads, n = rows * c.head_dim;
  const double tol = OutputTolerance(c.dtype);

  PlanOptions options = OptionsFor(c.split);
  options.fuse_merge = true;
  const CascadePlan fused = kernels::PlanCascade(batch, shape, options);
  options.fuse_merge = false;
  const CascadePlan unfused = kernels::PlanCascade(batch, shape, options);
  size_t finishing = 0;
  for (const auto& it : fused.decode_items) finishing += it.finish;
  EXPECT_GT(finishing, 0u) << "no request is finished by its decode items";
  EXPECT_EQ(!fused.merge_requests.empty(), c.expect_merged) << fused.merge_requests.size() << " merged requests";
  int most_chunks = 0;
  for (int32_t chunks : fused.group_num_chunks) most_chunks = std::max(most_chunks, chunks);
  // (The CPU stand-in's own options split less: the counts are only promised on the GPU.)
  if (c.split != Split::kDevice || kernels::CudaAvailable()) EXPECT_GE(most_chunks, c.min_prefix_chunks);
  EXPECT_EQ(unfused.merge_requests.size(), size_t(batch.num_requests()));

  const StepResult got = RunStep(Device(), pool, 0, fused, q);
  ExpectMatchesOracle(got, want, c.dtype, c.name + " fused");
  ExpectRowsClose(got.v, want.v, rows, c.head_dim, 4 * tol, c.name + " fused v_out rows");
  ExpectRowsClose(got.o, want.v, rows, c.head_dim, 4 * tol, c.name + " fused o rows");
  const StepResult plain = RunStep(Device(), pool, 0, unfused, q);
  ExpectMatchesOracle(plain, want, c.dtype, c.name + " unfused");
  const std::vector<double> plain_v = ToDouble(plain.v), plain_s = ToDouble(plain.s);
  ExpectAllClose(got.v.data(), plain_v.data(), n, 1e-5, c.name + " fused vs unfused v");
  ExpectLseClose(got.s.data(), plain_s.data(), rows, 1e-5, c.name + " fused vs unfused s");

  // Each output alone (the others null): the requested one right, nothing else written.
  for (int which = 0; which < 3; ++which) {
    SCOPED_TRACE("only output " + std::to_string(which) + " (0 o, 1 v_out, 2 s_out)");
    BackendBuffers mem(Device());
    kernels::CascadeArgs args = StepArgs(mem, pool, 0, q, rows);
    void* o = args.o;
    float *v_out = args.v_out, *s_out = args.s_out;
    if (which != 0) args.o = nullptr;
    if (which != 1) args.v_out = nullptr;
    if (which != 2) args.s_out = nullptr;
    Device().LoadPlan(fused);
    Device().RunCascade(args);
    const auto o_bits = mem.Download<uint16_t>(o, n);
    const auto v = mem.Download<float>(v_out, n);
    const auto s_got = mem.Download<float>(s_out, rows);
    int64_t written_o = 0, written_v = 0, written_s = 0;
    for (int64_t i = 0; i < n; ++i) written_o += o_bits[i] != 0xFFFF, written_v += !std::isnan(v[i]);
    for (int64_t i = 0; i < rows; ++i) written_s += !std::isnan(s_got[i]);
    EXPECT_EQ(written_o, which == 0 ? n : 0);
    EXPECT_EQ(written_v, which == 1 ? n : 0);
    EXPECT_EQ(written_s, which == 2 ? rows : 0);
    if (which == 0) {
      std::vector<float> o_f(n);
      for (int64_t i = 0; i < n; ++i) o_f[i] = kernels::ToFloat(c.dtype, o_bits[i]);
      ExpectRowsClose(o_f, want.v, rows, c.head_dim, 4 * tol, c.name + " o alone");
    }
    if (which == 1) ExpectRowsClose(v, want.v, rows, c.head_dim, 4 * tol, c.name + " v_out alone");
    if (which == 2) ExpectLseClose(s_got.data(), want.s.data(), rows, kLseTol, c.name + " s_out alone");
  }
}

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

INSTANTIATE_TEST_SUITE_P(
    Shapes, CudaFusedMergeTest,
    ::testing::Values(
        // GQA 4 (tensor-core decode): a chunked prefix; one-chunk, empty and split suffixes; a group
        // without prefix (finishing items with no prefix chunk to merge).
        FusedCase{"g4_d128_fp16_mixed", kF16, 32, 8, 128, {{1500, {100, 0, 700, 33}}, {0, {250, 5}}, {64, {1, 0}}},
                  Split::kDevice, true, 2},
        // Every request finished in the decode kernel (one-chunk suffixes only): no merge launch.
        FusedCase{"g4_d128_bf16_all_fused", kBF16, 16, 4, 128, {{700, {10, 64, 200}}, {0, {1, 17}}}, Split::kDevice,
                  false, 1},
        // Many prefix chunks (1-token chunks allowed): several staging passes per finishing item.
        FusedCase{"g8_d128_fp16_many_chunks", kF16, 64, 8, 128, {{300, {9, 40}}, {45, {3}}}, Split::kFinePrefix,
                  false, 40},
        FusedCase{"g8_d64_bf16_many_chunks", kBF16, 16, 2, 64, {{500, {20, 0}}, {0, {5}}}, Split::kFinePrefix, true,
                  40},
        // Suffixes split too: finishing and merged requests side by side.
        FusedCase{"g4_d64_fp16_split_suffixes", kF16, 16, 4, 64, {{400, {600, 3}}, {0, {2000, 30}}},
                  Split::kFinePrefix, true, 40},
        // CUDA-core decode kernel: GQA 1, 2, and 8 at head_dim 256 (one prefix chunk per pass); the
        // tensor-core one at GQA 4, head_dim 256.
        FusedCase{"g1_d128_fp16", kF16, 8, 8, 128, {{900, {30, 1}}, {0, {0, 12}}}, Split::kFinePrefix, true, 20},
        FusedCase{"g2_d64_bf16", kBF16, 8, 4, 64, {{260, {6, 2, 1}}}, Split::kDevice, false, 1},
        FusedCase{"g8_d256_bf16", kBF16, 8, 1, 256, {{200, {17, 3}}, {33, {0, 8}}}, Split::kFinePrefix, true, 10},
        FusedCase{"g4_d256_fp16", kF16, 8, 2, 256, {{90, {5, 60}}}, Split::kFinePrefix, false, 20}),
    [](const ::testing::TestParamInfo<FusedCase>& info) { return info.param.name; });

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

// ---------------------------------------------------------------------------------------------
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

// ---------------------------------------------------------------------------------------------
// RunPrefixAttention (prefill / append): causal with q_offset, and non-causal.

class CudaPrefixAttentionTest : public ::testing::TestWithParam<PrefixCase> {};

TEST_P(CudaPrefixAttentionTest, MatchesFloat64OracleAndCpuBackend) {
  PREFIXD_REQUIRE_DEVICE_BACKEND();
  const PrefixCase& c = GetParam();
  PREFIXD_SEEDED_RNG(rng);
  const PrefixProblem p = MakePrefixProblem(rng, c, 33.f);
  const StepResult got = RunPrefixCase(Device(), c, p);
  const StepResult cpu = RunPrefixCase(Cpu(), c, p);
  const RefOutput want = NaivePrefixCase(c, p);
  const int64_t rows = int64_t(c.num_queries) * c.num_qo_heads;
  ExpectAllClose(got.v.data(), want.v.data(), rows * c.head_dim, OutputTolerance(c.dtype), c.name + " v_out vs float64");
  ExpectLseClose(got.s.data(), want.s.data(), rows, kLseTol, c.name + " s_out vs float64");
  ExpectMatchesCpu(got, cpu, c.dtype, c.name);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, CudaPrefixAttentionTest,
    ::testing::Values(PrefixCase{"causal_prefill_fp16_h4kv2_d128_p16", kF16, 4, 2, 128, 16, 70, 70, 0, true, false},
                      PrefixCase{"causal_append_bf16_h8kv1_d64_p5", kBF16, 8, 1, 64, 5, 90, 17, 73, true, true},
                      PrefixCase{"causal_append_fp16_h8kv2_d256_p16", kF16, 8, 2, 256, 16, 100, 40, 60, true, false},
                      // Long prefix, few queries: chunked along the KV axis, then merged.
                      PrefixCase{"causal_long_chunked_fp16_h8kv2_d128_p16", kF16, 8, 2, 128, 16, 3000, 50, 2950, true,
                                 true},
                      PrefixCase{"causal_prefill_long_bf16_h4kv4_d64_p16", kBF16, 4, 4, 64, 16, 700, 700, 0, true,
                                 false},
                      PrefixCase{"noncausal_bf16_h4kv4_d128_p16", kBF16, 4, 4, 128, 16, 130, 9, 0, false, true},
                      PrefixCase{"noncausal_chunked_fp16_h32kv8_d128_p16", kF16, 32, 8, 128, 16, 2500, 3, 0, false,
                                 true},
                      PrefixCase{"empty_prefix_fp16_h4kv2_d64_p16", kF16, 4, 2, 64, 16, 0, 5, 0, false, false}),
    [](const ::testing::TestParamInfo<PrefixCase>& info) { return info.param.name; });

// ---------------------------------------------------------------------------------------------
// Merge and cast kernels.

// Random states [n][rows][dim] with s in [-40, 40]; about a quarter empty (s = −inf, v = NaN, which
// a correct merge never reads) and a few rows empty in every state.
struct RandomStates {
  std::vector<float> v, s;
};
RandomStates MakeStates(std::mt19937_64& rng, int n, int rows, int dim) {
  RandomStates st{std::vector<float>(int64_t(n) * rows * dim), std::vector<float>(int64_t(n) * rows)};
  std::uniform_real_distribution<float> val(-1.f, 1.f), lse(-40.f, 40.f);
  for (int i = 0; i < n; ++i)
    for (int r = 0; r < rows; ++r) {
      const int64_t state = int64_t(i) * rows + r;
      const bool empty = r % 7 == 3 || rng() % 4 == 0;
      st.s[state] = empty ? kNegInf : lse(rng);
      for (int d = 0; d < dim; ++d)
        st.v[state * dim + d] = empty ? std::numeric_limits<float>::quiet_NaN() : val(rng);
    }
  return st;
}

// The expected merge in double: state.h's n-ary MergeStates with the empty states' v zeroed (their
// value is meaningless; the poison must not reach the output).
RefOutput ExpectedMerge(const RandomStates& st, int n, int rows, int dim) {
  RefOutput out{std::vector<double>(int64_t(rows) * dim), std::vector<double>(rows)};
  std::vector<double> v(int64_t(n) * dim), s(n);
  for (int r = 0; r < rows; ++r) {
    for (int i = 0; i < n; ++i) {
      const int64_t state = int64_t(i) * rows + r;
      s[i] = st.s[state];
      for (int d = 0; d < dim; ++d) v[int64_t(i) * dim + d] = std::isinf(s[i]) ? 0.0 : st.v[state * dim + d];
    }
    double s_out;
    kernels::MergeStates(v.data(), dim, s.data(), 1, n, dim, &out.v[int64_t(r) * dim], &s_out);
    out.s[r] = s_out;
  }
  return out;
}

struct MergeCase {
  int n, rows, dim;
};

class CudaMergeStatesTest : public ::testing::TestWithParam<MergeCase> {};

TEST_P(CudaMergeStatesTest, MatchesDoubleMergeAndSkipsEmptyStates) {
  PREFIXD_REQUIRE_DEVICE_BACKEND();
  const MergeCase c = GetParam();
  PREFIXD_SEEDED_RNG(rng);
  const RandomStates st = MakeStates(rng, c.n, c.rows, c.dim);
  BackendBuffers mem(Device());
  // One spare element so that n = 0 still uploads a (never read) buffer.
  std::vector<float> v_host = st.v, s_host = st.s;
  v_host.push_back(0.f);
  s_host.push_back(0.f);
  const auto* v_in = static_cast<const float*>(mem.Upload(v_host.data(), v_host.size() * 4));
  const auto* s_in = static_cast<const float*>(mem.Upload(s_host.data(), s_host.size() * 4));
  auto* v_out = static_cast<float*>(mem.Poisoned(int64_t(c.rows) * c.dim * 4));
  auto* s_out = static_cast<float*>(mem.Poisoned(int64_t(c.rows) * 4));
  Device().MergeStates(v_in, s_in, c.n, c.rows, c.dim, v_out, s_out);
  const auto v = mem.Download<float>(v_out, int64_t(c.rows) * c.dim);
  const auto s = mem.Download<float>(s_out, c.rows);
  const RefOutput want = ExpectedMerge(st, c.n, c.rows, c.dim);
  ExpectAllClose(v.data(), want.v.data(), int64_t(v.size()), 1e-5, "merged v");
  ExpectLseClose(s.data(), want.s.data(), c.rows, 1e-6, "merged s");
  for (int r = 0; r < c.rows; ++r)
    if (std::isinf(want.s[r]))
      for (int d = 0; d < c.dim; ++d) ASSERT_EQ(v[int64_t(r) * c.dim + d], 0.f) << "empty row " << r << " d " << d;
}

INSTANTIATE_TEST_SUITE_P(Shapes, CudaMergeStatesTest,
                         ::testing::Values(MergeCase{0, 5, 64}, MergeCase{1, 37, 128}, MergeCase{2, 64, 256},
                                           MergeCase{3, 37, 64}, MergeCase{4, 33, 256}, MergeCase{5, 9, 128},
                                           MergeCase{20, 9, 64}, MergeCase{32, 7, 256},
                                           MergeCase{33, 5, 128}, MergeCase{40, 19, 128},
                                           MergeCase{70, 3, 256},
                                           // More rows than one wave of resident warps (4224 on an
                                           // H200): two rows per warp by default at n ≤ 4, D ≤ 128,
                                           // an odd count leaving the last warp one row.
                                           MergeCase{4, 9001, 128}, MergeCase{3, 8999, 64},
                                           MergeCase{1, 20000, 128}, MergeCase{5, 9001, 128},
                                           // Runs of 5-8 states at D ≤ 128: every load of a row at
                                           // once (MergeShortRunsKernel<1, 8>); longer ones, and 5-8
                                           // at D 256, one block per row where the rows fit in one
                                           // wave of blocks (1056 on an H200: MergeLongRunsKernel,
                                           // also the cases of 20-70 states above), else the
                                           // general kernel.
                                           MergeCase{6, 37, 64}, MergeCase{7, 4500, 128}, MergeCase{8, 33, 128},
                                           MergeCase{8, 9001, 64}, MergeCase{9, 37, 128}, MergeCase{8, 17, 256},
                                           MergeCase{44, 48, 64}, MergeCase{44, 48, 256}, MergeCase{17, 1056, 128},
                                           MergeCase{13, 1057, 256}, MergeCase{12, 1500, 128}, MergeCase{6, 1000, 256}),
                         [](const ::testing::TestParamInfo<MergeCase>& info) {
                           return "n" + std::to_string(info.param.n) + "_rows" + std::to_string(info.param.rows) + "_d" +
                                  std::to_string(info.param.dim);
                         });

// Plan options that send every request through the merge kernel: runs of 2-4 states (one to three
// prefix chunks, suffixes whole; first) and of more (the finest splits; second).
std::pair<PlanOptions, PlanOptions> MergeKernelPlanOptions(const Backend& backend) {
  PlanOptions shortest = CascadeOptions(backend);
  shortest.fuse_merge = false;
  shortest.balance_prefix_ctas = 0;
  shortest.concurrent_candidates.clear();
  shortest.prefix_target_items = 0;
  shortest.target_items = 48;
  PlanOptions finest = shortest;
  finest.target_items = 1 << 20;
  finest.decode_chunk_align = finest.min_decode_chunk = 16;
  return {shortest, finest};
}

// Two rows per warp (PREFIXD_MERGE_ROWS_PER_WARP=2; by default only a merge of more than one wave
// of resident warps takes them): the cascade's merge of short runs gives the bits of one row per
// warp, to o / v_out / s_out and to packed rows; runs longer than 4 states fall back to one row per
// warp (the plan with the finest splits).
TEST(CudaMergeStates, TwoRowsPerWarpGiveTheBitsOfOne) {
  PREFIXD_REQUIRE_GPU();
  PREFIXD_SEEDED_RNG(rng);
  std::unique_ptr<Backend> pairs = MakeCudaBackendWithEnv({{"PREFIXD_MERGE_ROWS_PER_WARP", "2"}});
  std::unique_ptr<Backend> singles = MakeCudaBackendWithEnv({{"PREFIXD_MERGE_ROWS_PER_WARP", "1"}});
  const std::vector<GroupSpec> groups = {{1000, {300, 0, 17, 64}}, {0, {45, 2}}, {130, {0, 1}}, {2000, {5, 250}}};
  for (const auto& [hq, hkv, d, dtype] : {std::tuple{32, 8, 128, kF16}, std::tuple{16, 16, 64, kBF16},
                                          std::tuple{6, 2, 128, kBF16}, std::tuple{2, 1, 64, kF16}}) {
    SCOPED_TRACE("heads " + std::to_string(hq) + "/" + std::to_string(hkv) + ", d " + std::to_string(d));
    const KvPoolShape shape{1, PagesNeeded(groups, 16), 16, hkv, d, dtype};
    kernels::PageAllocator alloc(shape.num_pages);
    const DecodeBatch batch = BuildBatch(groups, hq, 16, alloc, rng);
    const HostKvPool pool = RandomKvPool(rng, shape);
    const auto q = MakeQueries(rng, pool, 0, batch, true, kPeakyScale);
    const RefOutput want = NaiveCascade(pool, 0, batch, q, 1.0 / std::sqrt(double(d)));
    const auto [shortest, finest] = MergeKernelPlanOptions(*pairs);
    for (const auto& [name, options] : {std::pair{"short runs", shortest}, std::pair{"finest", finest}}) {
      SCOPED_TRACE(name);
      const CascadePlan plan = kernels::PlanCascade(batch, shape, options);
      int longest = 0;
      for (int32_t r : plan.merge_requests)
        longest = std::max(longest, plan.state_indptr[size_t(r) + 1] - plan.state_indptr[size_t(r)]);
      if (options.target_items == 48) EXPECT_LE(longest, 4) << "the two-row kernel's runs";
      else EXPECT_GT(longest, 4) << "the fallback's runs";
      const StepResult got = RunStep(*pairs, pool, 0, plan, q);
      const StepResult one = RunStep(*singles, pool, 0, plan, q);
      ExpectMatchesOracle(got, want, dtype, name);
      ASSERT_EQ(got.v.size(), one.v.size());
      EXPECT_EQ(std::memcmp(got.v.data(), one.v.data(), got.v.size() * 4), 0) << "v_out bits";
      EXPECT_EQ(std::memcmp(got.s.data(), one.s.data(), got.s.size() * 4), 0) << "s_out bits";
      EXPECT_EQ(std::memcmp(got.o.data(), one.o.data(), got.o.size() * 4), 0) << "o bits";
      ExpectMergePartPacksRows(*pairs, pool, 0, plan, q);
    }
  }
}

// The merge's run bounds by arithmetic (PREFIXD_MERGE_RUN_LOOKUP=auto: where every request has
// the same number of states, and the row index as the request where every request is merged) give
// the bits of the bounds loaded from the plan's arrays (table): uniform runs of 2-4 states and of
// more (both merge kernels), runs that differ, a merge of some requests only, and the concurrent
// mode's merge of every request.
TEST(CudaMergeStates, RunBoundsByArithmeticGiveTheBitsOfTheTable) {
  PREFIXD_REQUIRE_GPU();
  PREFIXD_SEEDED_RNG(rng);
  const std::string k = std::to_string(ConcurrentDecodeSms(32));
  struct Pair {
    const char* name;
    std::unique_ptr<Backend> arithmetic, table;
  };
  Pair pairs[] = {
      {"sequential", MakeCudaBackendWithEnv({{"PREFIXD_MERGE_RUN_LOOKUP", "auto"}}),
       MakeCudaBackendWithEnv({{"PREFIXD_MERGE_RUN_LOOKUP", "table"}})},
      {"concurrent", MakeCudaBackendWithEnv({{"PREFIXD_MERGE_RUN_LOOKUP", "auto"}, {"PREFIXD_CONCURRENT_DECODE_SMS", k}}),
       MakeCudaBackendWithEnv({{"PREFIXD_MERGE_RUN_LOOKUP", "table"}, {"PREFIXD_CONCURRENT_DECODE_SMS", k}})},
  };
  const std::vector<GroupSpec> uniform = {{1500, {40, 40, 40, 40, 40, 40, 40}}};
  const std::vector<GroupSpec> differing = {{1000, {300, 0, 17, 64}}, {0, {45, 2}}, {130, {0, 1}}};
  for (const auto& [hq, hkv, d, dtype] : {std::tuple{32, 8, 128, kF16}, std::tuple{16, 16, 64, kBF16},
                                          std::tuple{6, 2, 128, kBF16}}) {
    for (const auto& [groups_name, groups] : {std::pair{"uniform", uniform}, std::pair{"differing", differing}}) {
      const CascadeCase c{std::string(groups_name) + " runs, heads " + std::to_string(hq) + "/" + std::to_string(hkv) +
                              ", d " + std::to_string(d),
                          dtype, hq, hkv, d, 16, groups, true};
      SCOPED_TRACE(c.name);
      const CascadeInputs in = MakeCascadeInputs(c, rng);
      const RefOutput want = NaiveCascade(in.pool, 0, in.batch, in.q, 1.0 / std::sqrt(double(d)));
      const auto [every, finest] = MergeKernelPlanOptions(*pairs[0].arithmetic);
      PlanOptions some = finest;
      some.fuse_merge = true;  // one-chunk suffixes finished by their decode items
      for (const auto& [plan_name, options] :
           {std::pair{"every request, short runs", every}, std::pair{"every request, long runs", finest},
            std::pair{"some requests", some}}) {
        SCOPED_TRACE(plan_name);
        const CascadePlan plan = kernels::PlanCascade(in.batch, in.shape, options);
        EXPECT_EQ(plan.UniformRunStates() > 0, std::string(groups_name) == "uniform") << "the case's runs";
        for (Pair& pair : pairs) {
          SCOPED_TRACE(pair.name);
          const StepResult got = RunStep(*pair.arithmetic, in.pool, 0, plan, in.q);
          const StepResult loaded = RunStep(*pair.table, in.pool, 0, plan, in.q);
          ExpectMatchesOracle(got, want, dtype, plan_name);
          ASSERT_EQ(got.v.size(), loaded.v.size());
          EXPECT_EQ(std::memcmp(got.v.data(), loaded.v.data(), got.v.size() * 4), 0) << "v_out bits";
          EXPECT_EQ(std::memcmp(got.s.data(), loaded.s.data(), got.s.size() * 4), 0) << "s_out bits";
          EXPECT_EQ(std::memcmp(got.o.data(), loaded.o.data(), got.o.size() * 4), 0) << "o bits";
          ExpectMergePartPacksRows(*pair.arithmetic, in.pool, 0, plan, in.q);
        }
      }
    }
  }
}

// The merge's skipped loads of the states a stream plan leaves empty (CascadePlan::EmptyPrefixStates,
// PREFIXD_MERGE_SKIP_EMPTY): the bits of the merge that loads them (an empty state weighs 0 either
// way), and the oracle's results, in the concurrent mode (every request through the merge kernel),
// on whole and narrow slots.
TEST(CudaMergeStates, SkippedEmptyStatesGiveTheBitsOfLoadedOnes) {
  PREFIXD_REQUIRE_GPU();
  PREFIXD_SEEDED_RNG(rng);
  const std::string k = std::to_string(ConcurrentDecodeSms(32));
  const std::unique_ptr<Backend> skip =
      MakeCudaBackendWithEnv({{"PREFIXD_CONCURRENT_DECODE_SMS", k}, {"PREFIXD_MERGE_SKIP_EMPTY", "1"}});
  const std::unique_ptr<Backend> load =
      MakeCudaBackendWithEnv({{"PREFIXD_CONCURRENT_DECODE_SMS", k}, {"PREFIXD_MERGE_SKIP_EMPTY", "0"}});
  std::vector<int> suffixes(64);
  for (int& n : suffixes) n = 1 + int(rng() % 70);
  const CascadeCase cases[] = {
      {"skip_fp16_h8kv2_d128", kF16, 8, 2, 128, 16, {{3000, suffixes}}, true},
      {"skip_bf16_h12kv3_d64", kBF16, 12, 3, 64, 16, {{2500, suffixes}}},
  };
  int plans_with_empty_states = 0;
  for (const CascadeCase& c : cases) {
    SCOPED_TRACE(c.name);
    const CascadeInputs in = MakeCascadeInputs(c, rng);
    const RefOutput want = NaiveCascade(in.pool, c.layer, in.batch, in.q, 1.0 / std::sqrt(double(c.head_dim)));
    for (const int ctas : {10, 11, 12, 13}) {
      SCOPED_TRACE(std::to_string(ctas) + " CTAs");
      const CascadePlan plan = kernels::PlanCascade(in.batch, in.shape, BalancedGridOptions(ctas, 4, true));
      plans_with_empty_states += plan.EmptyPrefixStates() != 0;
      const StepResult got = RunStep(*skip, in.pool, c.layer, plan, in.q);
      const StepResult loaded = RunStep(*load, in.pool, c.layer, plan, in.q);
      ExpectMatchesOracle(got, want, c.dtype, c.name);
      ASSERT_EQ(got.v.size(), loaded.v.size());
      EXPECT_EQ(std::memcmp(got.v.data(), loaded.v.data(), got.v.size() * 4), 0) << "v_out bits";
      EXPECT_EQ(std::memcmp(got.s.data(), loaded.s.data(), got.s.size() * 4), 0) << "s_out bits";
      EXPECT_EQ(std::memcmp(got.o.data(), loaded.o.data(), got.o.size() * 4), 0) << "o bits";
    }
  }
  // 3 of the 8 layouts have empty items (session 60); fewer would leave the skip barely tested.
  EXPECT_GE(plans_with_empty_states, 2) << "too few of the stream plans had empty states to skip";
}

TEST(CudaMergeStateInPlace, MatchesDoubleMergeIncludingEmptySides) {
  PREFIXD_REQUIRE_DEVICE_BACKEND();
  PREFIXD_SEEDED_RNG(rng);
  for (int dim : {64, 128, 256}) {
    const int rows = 50;
    RandomStates st = MakeStates(rng, 2, rows, dim);  // state 0 = (v, s), state 1 = other
    // Cover all four empty/non-empty combinations explicitly.
    st.s[0] = kNegInf, st.s[rows] = kNegInf;
    st.s[1] = kNegInf, st.s[rows + 1] = 5.f;
    st.s[2] = 7.f, st.s[rows + 2] = kNegInf;
    st.s[3] = 1e4f, st.s[rows + 3] = 1e4f - 3.f;  // large |s| stays finite
    // Empty states hold the empty state's v = 0 here (the binary merge's contract, state.h).
    for (int r = 0; r < rows; ++r)
      for (int i = 0; i < 2; ++i)
        for (int d = 0; d < dim; ++d) {
          float& x = st.v[(int64_t(i) * rows + r) * dim + d];
          if (std::isinf(st.s[int64_t(i) * rows + r])) x = 0.f;
          else if (r < 4) x = 0.25f * (d % 5);
        }
    BackendBuffers mem(Device());
    auto* v = static_cast<float*>(mem.Upload(st.v.data(), int64_t(rows) * dim * 4));
    auto* s = static_cast<float*>(mem.Upload(st.s.data(), rows * 4));
    const auto* v_other = static_cast<const float*>(mem.Upload(st.v.data() + int64_t(rows) * dim, int64_t(rows) * dim * 4));
    const auto* s_other = static_cast<const float*>(mem.Upload(st.s.data() + rows, rows * 4));
    Device().MergeStateInPlace(v, s, v_other, s_other, rows, dim);
    const auto got_v = mem.Download<float>(v, int64_t(rows) * dim);
    const auto got_s = mem.Download<float>(s, rows);
    const RefOutput want = ExpectedMerge(st, 2, rows, dim);
    ExpectAllClose(got_v.data(), want.v.data(), int64_t(got_v.size()), 1e-5, "in-place v d" + std::to_string(dim));
    ExpectLseClose(got_s.data(), want.s.data(), rows, 1e-6, "in-place s d" + std::to_string(dim));
    for (int d = 0; d < dim; ++d) ASSERT_EQ(got_v[d], 0.f) << "both empty: v must be 0";
    EXPECT_EQ(got_s[0], kNegInf);
  }
}

TEST(CudaCastStates, RoundsToNearestEvenLikeTheHost) {
  PREFIXD_REQUIRE_DEVICE_BACKEND();
  std::mt19937_64 rng(TestSeed());
  const int64_t count = 100003;
  std::vector<float> x(count);
  std::uniform_real_distribution<float> dist(-70000.f, 70000.f);
  for (auto& f : x) f = dist(rng) * std::pow(2.f, float(int(rng() % 40) - 30));
  x[0] = 0.f, x[1] = -0.f, x[2] = 1e-8f, x[3] = 65520.f, x[4] = kNegInf;
  for (DType dtype : {kF16, kBF16}) {
    BackendBuffers mem(Device());
    const auto* v = static_cast<const float*>(mem.Upload(x.data(), count * 4));
    void* out = mem.Poisoned(count * 2);
    Device().CastStates(v, count, dtype, out);
    const auto bits = mem.Download<uint16_t>(out, count);
    int64_t bad = 0, first = -1;
    for (int64_t i = 0; i < count; ++i)
      if (bits[i] != kernels::FromFloat(dtype, x[i]) && bad++ == 0) first = i;
    EXPECT_EQ(bad, 0) << kernels::DTypeName(dtype) << ": first mismatch at " << first << " (" << x[first] << ")";
  }
}

// ---------------------------------------------------------------------------------------------
// A decode step captured in a CUDA graph and replayed: same results as the oracle, and a replay
// after new queries are written to the same buffer computes with the new queries.

#ifdef PREFIXD_HAVE_CUDA
// Captures one RunCascade of `device` and replays it twice (the second time with new queries);
// *root_nodes: the captured graph's root nodes (kernels with no dependency).
void ExpectCapturedStepReplays(Backend& device, size_t* root_nodes, std::vector<int>* kernel_priorities) {
  PREFIXD_SEEDED_RNG(rng);
  const std::vector<GroupSpec> groups = {{700, {17, 40, 1}}, {0, {300}}, {130, {0, 9}}};
  const KvPoolShape shape{1, PagesNeeded(groups, 16) + 2, 16, 8, 128, kF16};
  kernels::PageAllocator alloc(shape.num_pages);
  const DecodeBatch batch = BuildBatch(groups, 32, 16, alloc, rng);
  const HostKvPool pool = RandomKvPool(rng, shape);
  const CascadePlan plan = kernels::PlanCascade(batch, shape, CascadeOptions(device));
  ASSERT_FALSE(plan.prefix_items.empty());
  ASSERT_FALSE(plan.decode_items.empty());
  const int64_t rows = int64_t(batch.num_requests()) * batch.num_qo_heads, n = rows * shape.head_dim;

  BackendBuffers mem(device);
  std::vector<uint16_t> q = MakeQueries(rng, pool, 0, batch, true, kPeakyScale);
  const kernels::CascadeArgs args = StepArgs(mem, pool, 0, q, rows);
  device.LoadPlan(plan);
  device.RunCascade(args);  // warm-up outside the capture (first launches set kernel attributes)
  device.Synchronize();

  // Global mode: the capture fails if RunCascade makes any call unsafe during capture
  // (allocation, synchronisation, a synchronous copy).
  auto stream = static_cast<cudaStream_t>(device.stream());
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), cudaSuccess);
  device.RunCascade(args);
  ASSERT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
  ASSERT_EQ(cudaGraphGetRootNodes(graph, nullptr, root_nodes), cudaSuccess);
  if (kernel_priorities != nullptr) {
    size_t count = 0;
    ASSERT_EQ(cudaGraphGetNodes(graph, nullptr, &count), cudaSuccess);
    std::vector<cudaGraphNode_t> nodes(count);
    ASSERT_EQ(cudaGraphGetNodes(graph, nodes.data(), &count), cudaSuccess);
    for (cudaGraphNode_t node : nodes) {
      cudaGraphNodeType type;
      ASSERT_EQ(cudaGraphNodeGetType(node, &type), cudaSuccess);
      if (type != cudaGraphNodeTypeKernel) continue;
      cudaLaunchAttributeValue value{};
      ASSERT_EQ(cudaGraphKernelNodeGetAttribute(node, cudaLaunchAttributePriority, &value), cudaSuccess);
      kernel_priorities->push_back(value.priority);
    }
  }
  // With the captured streams' priorities (the concurrent step's prefix first; cuda_backend.h).
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, cudaGraphInstantiateFlagUseNodePriority), cudaSuccess);

  for (int replay = 0; replay < 2; ++replay) {
    if (replay == 1) {  // new queries in the captured buffer
      q = MakeQueries(rng, pool, 0, batch, false, kPeakyScale);
      device.CopyToDevice(const_cast<void*>(args.q), q.data(), q.size() * 2);
    }
    device.Fill(args.o, 0xFF, n * 2);
    device.Fill(args.v_out, 0xFF, n * 4);
    device.Fill(args.s_out, 0xFF, rows * 4);
    ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
    const StepResult got = DownloadStep(mem, args, shape.dtype, rows, shape.head_dim);
    const RefOutput want = NaiveCascade(pool, 0, batch, q, 1.0 / std::sqrt(double(shape.head_dim)));
    ExpectMatchesOracle(got, want, shape.dtype, "graph replay " + std::to_string(replay));
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
}
#endif

TEST(CudaGraph, CapturedStepReplaysCorrectly) {
  PREFIXD_REQUIRE_GPU();
#ifdef PREFIXD_HAVE_CUDA
  size_t roots = 0;
  ExpectCapturedStepReplays(Device(), &roots);
#endif
}

// The concurrent step (fork/join through events) captures too: the prefix and decode kernels are
// both roots of the graph (neither waits for the other), and the replays are correct.
TEST(CudaGraph, ConcurrentStepReplaysCorrectly) {
  PREFIXD_REQUIRE_GPU();
#ifdef PREFIXD_HAVE_CUDA
  size_t roots = 0;
  std::vector<int> priorities;
  ExpectCapturedStepReplays(Concurrent(), &roots, &priorities);
  EXPECT_GE(roots, 2u) << "the prefix and decode kernels should be independent graph nodes";
  // The streams' priorities travel into the nodes (the prefix's above the decode's), which a graph
  // instantiated with cudaGraphInstantiateFlagUseNodePriority then keeps (cuda_backend.h).
  ASSERT_GE(priorities.size(), 2u);
  int least = 0, greatest = 0;
  ASSERT_EQ(cudaDeviceGetStreamPriorityRange(&least, &greatest), cudaSuccess);
  EXPECT_NE(std::find(priorities.begin(), priorities.end(), greatest), priorities.end()) << "no node at the prefix's priority";
  EXPECT_NE(std::find(priorities.begin(), priorities.end(), least), priorities.end()) << "no node at the decode's priority";
#endif
}

// The early decode's step (three launches on one stream, each the previous one's programmatic
// dependent) captures and replays correctly, its early items run in the capture.
TEST(CudaGraph, EarlyDecodeStepReplaysCorrectly) {
  PREFIXD_REQUIRE_GPU();
#ifdef PREFIXD_HAVE_CUDA
  std::unique_ptr<Backend> backend = MakeCudaBackendWithEnv({{"PREFIXD_EARLY_DECODE_PERCENT", "50"}});
  auto& device = dynamic_cast<kernels::cuda::CudaBackend&>(*backend);
  size_t roots = 0;
  ExpectCapturedStepReplays(*backend, &roots, nullptr);
  EXPECT_GE(device.early_decode_steps(), 2) << "the warm-up and the capture should have run early items";
#endif
}

// ---------------------------------------------------------------------------------------------
// The decode part on another stream (CascadeArgs::stream, as the worker runs it beside the state
// exchange), ordered by events: the bits of the whole cascade; also with SMs left free
// (CascadeArgs::decode_free_sms: one CTA per SM looping over the items), down to 3 CTAs, item by
// item (PREFIXD_DECODE_STREAM=0) and as the streaming kernel (the default).

#ifdef PREFIXD_HAVE_CUDA
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

// ---------------------------------------------------------------------------------------------
// The upload batch (Backend::BeginUploadBatch): copies from pinned memory done by one kernel,
// others by the copy engine, all landing as if each had been a cudaMemcpyAsync in call order
// (a destination written twice keeps the second); a plan loaded twice in one batch computes with
// the second; the step computed from a batched plan is the oracle's.

TEST(CudaBackend, UploadBatchLandsEveryCopyInCallOrder) {
  PREFIXD_REQUIRE_GPU();
#ifdef PREFIXD_HAVE_CUDA
  std::mt19937_64 rng(TestSeed());
  constexpr size_t kBytes = 3 * 4096 + 16;
  uint8_t* pinned = nullptr;
  ASSERT_EQ(cudaHostAlloc(reinterpret_cast<void**>(&pinned), 2 * kBytes, cudaHostAllocDefault), cudaSuccess);
  for (size_t i = 0; i < 2 * kBytes; ++i) pinned[i] = uint8_t(rng());
  std::vector<uint8_t> pageable(777);
  for (uint8_t& b : pageable) b = uint8_t(rng());
  {
    BackendBuffers mem(Device());
    auto* dst = static_cast<uint8_t*>(mem.Poisoned(2 * kBytes));
    Device().BeginUploadBatch();
    Device().CopyToDeviceAsync(dst, pinned, kBytes);                      // 16-byte units
    Device().CopyToDeviceAsync(dst + kBytes + 3, pinned + kBytes + 5, 1001);  // unaligned: bytes
    Device().CopyToDeviceAsync(dst + kBytes + 2000, pageable.data(), pageable.size());  // copy engine
    Device().CopyToDeviceAsync(dst + 64, pinned + kBytes, 32);            // overwrites [64, 96)
    Device().EndUploadBatch();
    const auto got = mem.Download<uint8_t>(dst, 2 * kBytes);
    std::vector<uint8_t> want(2 * kBytes, 0xFF);
    std::memcpy(want.data(), pinned, kBytes);
    std::memcpy(want.data() + kBytes + 3, pinned + kBytes + 5, 1001);
    std::memcpy(want.data() + kBytes + 2000, pageable.data(), pageable.size());
    std::memcpy(want.data() + 64, pinned + kBytes, 32);
    for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(got[i], want[i]) << "byte " << i;
  }
  cudaFreeHost(pinned);

  // Plans through a batch: the second LoadPlan of one batch wins and the step is the oracle's.
  const std::vector<GroupSpec> groups = {{700, {17, 40, 1}}, {0, {300}}, {130, {0, 9}}};
  const KvPoolShape shape{1, PagesNeeded(groups, 16) + 2, 16, 8, 128, kF16};
  kernels::PageAllocator alloc(shape.num_pages);
  const DecodeBatch batch = BuildBatch(groups, 32, 16, alloc, rng);
  const HostKvPool pool = RandomKvPool(rng, shape);
  const auto q = MakeQueries(rng, pool, 0, batch, true, kPeakyScale);
  const int64_t rows = int64_t(batch.num_requests()) * batch.num_qo_heads;
  kernels::PageAllocator other_alloc(shape.num_pages);
  const DecodeBatch other = BuildBatch({{700, {17}}}, 32, 16, other_alloc, rng);  // one request
  BackendBuffers mem(Device());
  const kernels::CascadeArgs args = StepArgs(mem, pool, 0, q, rows);
  Device().BeginUploadBatch();
  Device().LoadPlan(kernels::PlanCascade(other, shape, CascadeOptions(Device())));
  Device().LoadPlan(kernels::PlanCascade(batch, shape, CascadeOptions(Device())));
  Device().EndUploadBatch();
  Device().RunCascade(args);
  const StepResult got = DownloadStep(mem, args, shape.dtype, rows, shape.head_dim);
  const RefOutput want = NaiveCascade(pool, 0, batch, q, 1.0 / std::sqrt(double(shape.head_dim)));
  ExpectMatchesOracle(got, want, shape.dtype, "batched plan upload");
#endif
}

// ---------------------------------------------------------------------------------------------
// Bad inputs: a clear error, nothing launched, and the backend still computes correctly after.

TEST(CudaBackendErrors, BadInputsAreRejectedWithoutDeviceFault) {
  PREFIXD_REQUIRE_DEVICE_BACKEND();
  const auto bad = ErrorKind::kInvalidArgument;
  std::mt19937_64 rng(TestSeed());
  const KvPoolShape shape{2, 40, 16, 2, 128, kF16};
  kernels::PageAllocator alloc(shape.num_pages);
  const DecodeBatch batch = BuildBatch({{100, {5, 30}}, {0, {20}}}, 8, 16, alloc, rng);
  const HostKvPool pool = RandomKvPool(rng, shape);
  const auto q = MakeQueries(rng, pool, 1, batch, false, kPeakyScale);
  const CascadePlan plan = kernels::PlanCascade(batch, shape, CascadeOptions(Device()));
  const int64_t rows = int64_t(batch.num_requests()) * batch.num_qo_heads;

  {  // A fresh backend has no plan.
    auto fresh = MakeDeviceBackend();
    BackendBuffers mem(*fresh);
    EXPECT_PREFIXD_ERROR(fresh->RunCascade(StepArgs(mem, pool, 1, q, rows)), bad, "no plan loaded");
  }
  {  // A plan larger than the workspace.
    kernels::WorkspaceLimits tiny = TestLimits();
    tiny.max_slots = 2;
    auto small = MakeDeviceBackend(tiny);
    EXPECT_PREFIXD_ERROR(small->LoadPlan(plan), bad, "slots");
  }
  {  // Corrupted plans: a decode item past its suffix, a page id outside the pool.
    CascadePlan broken = plan;
    ASSERT_FALSE(broken.decode_items.empty());
    broken.decode_items[0].kv_end = 1 << 20;
    EXPECT_PREFIXD_ERROR(Device().LoadPlan(broken), bad, "decode item 0");
    broken = plan;
    broken.suffix.indices[0] = shape.num_pages + 5;
    EXPECT_PREFIXD_ERROR(Device().LoadPlan(broken), bad, "page");
  }
  Device().LoadPlan(plan);
  {
    BackendBuffers mem(Device());
    kernels::CascadeArgs args = StepArgs(mem, pool, 1, q, rows);
    kernels::CascadeArgs wrong = args;
    wrong.layer = 2;
    EXPECT_PREFIXD_ERROR(Device().RunCascade(wrong), bad, "layer 2");
    wrong = args;
    wrong.kv.shape.num_pages = 10;  // smaller than the pool the plan was checked against
    EXPECT_PREFIXD_ERROR(Device().RunCascade(wrong), bad, "does not match the loaded plan");
    wrong = args;
    wrong.kv.shape.head_dim = 64;
    EXPECT_PREFIXD_ERROR(Device().RunCascade(wrong), bad, "head_dim");
    wrong = args;
    wrong.q = nullptr;
    EXPECT_PREFIXD_ERROR(Device().RunCascade(wrong), bad, "q is null");
    wrong = args;
    wrong.sm_scale = std::numeric_limits<float>::quiet_NaN();
    EXPECT_PREFIXD_ERROR(Device().RunCascade(wrong), bad, "sm_scale");
  }
  {
    BackendBuffers mem(Device());
    kernels::PrefixAttentionArgs args;
    args.kv = {shape, mem.Poisoned(pool.k.size() * 2), mem.Poisoned(pool.v.size() * 2)};
    args.prefix = {30, 200};  // pages [30, 43) of a 40-page pool
    args.num_queries = 2;
    args.num_qo_heads = 8;
    args.q = mem.Poisoned(2 * 8 * 128 * 2);
    args.v_out = static_cast<float*>(mem.Poisoned(2 * 8 * 128 * 4));
    args.s_out = static_cast<float*>(mem.Poisoned(2 * 8 * 4));
    EXPECT_PREFIXD_ERROR(Device().RunPrefixAttention(args), bad, "outside the pool");
    args.prefix = {0, 100};
    args.num_qo_heads = 7;
    EXPECT_PREFIXD_ERROR(Device().RunPrefixAttention(args), bad, "num_qo_heads 7");
  }
  EXPECT_PREFIXD_ERROR(Device().MergeStates(nullptr, nullptr, 2, 4, 128, nullptr, nullptr), bad, "null pointer");

  // The device is healthy: the good plan still gives the right answer.
  const StepResult got = RunStep(Device(), pool, 1, plan, q);
  ExpectMatchesOracle(got, NaiveCascade(pool, 1, batch, q, 1.0 / std::sqrt(128.0)), kF16, "after errors");
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

// ---------------------------------------------------------------------------------------------
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

TEST(CudaBackendInfo, DescribesTheDevice) {
  PREFIXD_REQUIRE_GPU();
  EXPECT_EQ(Device().kind(), kernels::BackendKind::kCuda);
  EXPECT_EQ(Device().Describe().rfind("cuda:0 ", 0), 0u) << Device().Describe();
  EXPECT_GE(kernels::CudaDeviceCount(), 1);
  EXPECT_GE(Device().DefaultPlanOptions().target_items, 2);
  EXPECT_NE(Device().stream(), nullptr);
}

}  // namespace
}  // namespace prefixd::test
