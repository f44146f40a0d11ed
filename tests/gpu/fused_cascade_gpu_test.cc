// The one-launch fused cascade (PREFIXD_FUSED=1, cuda_backend.h / cascade_fused.h): prefix and
// decode items side by side on one persistent grid, the ⊕ inside through arrival counters (and the
// merge kernel after it for the requests the plan does not finish in decode items). Every cascade
// case (CascadeCases), plus page sizes 8/32/64 and realistic GQA shapes, each step run twice on the
// same backend (the counters must be back at zero after a step) against the float64 oracle and the
// CPU backend; where the fused kernel applies, the test also asserts that it ran (both times).
//
// Every test starts with a GPU guard and skips (with the reason) when there is no usable GPU;
// PREFIXD_GPU_TESTS_CPU_STAND_IN=1 runs the backend-level ones with the CPU backend in the GPU's
// place (gpu_backend_fixture.h). The helpers these files share are in gpu_backend_fixture.h.
#include "gpu/gpu_backend_fixture.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <string>

#include "prefixd/common/error.h"
#include "prefixd/kernels/plan.h"
#include "support/backend_step.h"
#include "support/test_support.h"
#include "unit/kernels/expect_error.h"

#ifdef PREFIXD_HAVE_CUDA

#include "kernels/cuda/cascade_fused.h"
#include "kernels/cuda/cuda_backend.h"
#endif

namespace prefixd::test {
namespace {

#ifdef PREFIXD_HAVE_CUDA
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

}  // namespace
}  // namespace prefixd::test
