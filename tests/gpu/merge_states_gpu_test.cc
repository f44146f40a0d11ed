// Fused merge (plan.h: finishing decode items ⊕ the prefix-chunk states and write the outputs;
// merge_requests go through the merge kernel): every mix of finishing and merged requests, prefix
// chunks beyond one staging pass, each output alone, the same answer as the unfused plan. Then the
// merge and cast kernels alone: n-ary merge against a float64 merge (empty states skipped), its
// row, run-bound and empty-state forms bit for bit, the in-place merge, the state cast.
//
// Every test starts with a GPU guard and skips (with the reason) when there is no usable GPU;
// PREFIXD_GPU_TESTS_CPU_STAND_IN=1 runs the backend-level ones with the CPU backend in the GPU's
// place (gpu_backend_fixture.h). The helpers these files share are in gpu_backend_fixture.h.
#include "gpu/gpu_backend_fixture.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "prefixd/kernels/plan.h"
#include "prefixd/kernels/state.h"
#include "support/backend_step.h"
#include "support/test_support.h"
#include "unit/kernels/random_batch.h"

#ifdef PREFIXD_HAVE_CUDA
#include <cuda_runtime.h>

#include "kernels/cuda/merge_states.h"
#include "prefixd/common/cuda_check.h"
#endif

namespace prefixd::test {
namespace {

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

// The merge kernels with each state's v stored in the dtype (MergeStatesParams::v_in_16bit, the
// concurrent step's PREFIXD_CONCURRENT_STATES16): every kernel's shapes of the fp32 test above (two
// rows per warp, runs of 5-8, one block per row, the general kernel), fp16 and bf16, against the
// float64 merge of the same rounded values (the merge itself adds only fp32 rounding); the empty
// states' v is a 16-bit NaN that must never be read.
TEST(CudaMergeStates, SixteenBitValuesMatchTheDoubleMergeOfTheRoundedStates) {
  PREFIXD_REQUIRE_GPU();
#ifdef PREFIXD_HAVE_CUDA
  PREFIXD_SEEDED_RNG(rng);
  const MergeCase cases[] = {{1, 37, 128}, {3, 8999, 64}, {4, 9001, 128}, {5, 9001, 128}, {8, 33, 128},
                             {4, 33, 256}, {9, 37, 128}, {44, 48, 256}, {17, 1056, 128}, {13, 1057, 256}};
  for (const DType dtype : {kF16, kBF16})
    for (const MergeCase& c : cases) {
      const std::string what = std::string(kernels::DTypeName(dtype)) + " n" + std::to_string(c.n) + " rows" +
                               std::to_string(c.rows) + " d" + std::to_string(c.dim);
      SCOPED_TRACE(what);
      RandomStates st = MakeStates(rng, c.n, c.rows, c.dim);
      std::vector<uint16_t> v16(st.v.size());
      for (size_t i = 0; i < v16.size(); ++i) {
        v16[i] = kernels::FromFloat(dtype, st.v[i]);  // NaN stays NaN (the empty states' poison)
        st.v[i] = kernels::ToFloat(dtype, v16[i]);    // the reference merges the rounded values
      }
      BackendBuffers mem(Device());
      kernels::cuda::MergeStatesParams m;
      m.v_in = mem.Upload(v16.data(), int64_t(v16.size()) * 2);
      m.v_in_16bit = true;
      m.s_in = static_cast<const float*>(mem.Upload(st.s.data(), int64_t(st.s.size()) * 4));
      m.num_states = m.max_run_states = c.n;
      m.rows = c.rows;
      m.head_dim = c.dim;
      m.out_dtype = dtype;
      m.v_out = static_cast<float*>(mem.Poisoned(int64_t(c.rows) * c.dim * 4));
      m.s_out = static_cast<float*>(mem.Poisoned(int64_t(c.rows) * 4));
      // On the backend's stream, behind its poisoning of the outputs (BackendBuffers::Poisoned is an
      // async fill there): on the legacy stream the merge raced the fill, and a whole-suite run with
      // eight shards on one GPU (s100 call 7) found 4665 of 9001 rows' LSE still poison.
      kernels::cuda::MergeStates(m, static_cast<cudaStream_t>(Device().stream()));
      PREFIXD_CUDA_CHECK(cudaDeviceSynchronize());
      const auto v = mem.Download<float>(m.v_out, int64_t(c.rows) * c.dim);
      const auto s = mem.Download<float>(m.s_out, c.rows);
      const RefOutput want = ExpectedMerge(st, c.n, c.rows, c.dim);
      ExpectAllClose(v.data(), want.v.data(), int64_t(v.size()), 1e-5, what + " merged v");
      ExpectLseClose(s.data(), want.s.data(), c.rows, 1e-6, what + " merged s");
    }
#endif
}

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

}  // namespace
}  // namespace prefixd::test
