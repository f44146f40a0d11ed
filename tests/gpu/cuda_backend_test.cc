// The CUDA backend's basics: prefix attention (prefill / append, causal and not) against the
// float64 oracle and the CPU backend, the upload batch, bad inputs rejected with clear errors and
// no device fault, and the device's description.
//
// Every test starts with a GPU guard and skips (with the reason) when there is no usable GPU;
// PREFIXD_GPU_TESTS_CPU_STAND_IN=1 runs the backend-level ones with the CPU backend in the GPU's
// place (gpu_backend_fixture.h). The helpers these files share are in gpu_backend_fixture.h.
#include "gpu/gpu_backend_fixture.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "prefixd/common/error.h"
#include "prefixd/kernels/plan.h"
#include "prefixd/kernels/state.h"
#include "support/backend_step.h"
#include "support/test_support.h"
#include "unit/kernels/expect_error.h"
#include "unit/kernels/random_batch.h"

#ifdef PREFIXD_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace prefixd::test {
namespace {

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
