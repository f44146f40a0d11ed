// What the CUDA backend's GPU tests share (tests/gpu/*_gpu_test.cc, cuda_backend_test.cc): the
// device guard, the backends (one device backend for the binary, the CPU backend beside it, CUDA
// backends made with environment settings), the comparisons against the float64 oracle and the CPU
// backend, and the cascade cases with their plan splittings.
//
// PREFIXD_GPU_TESTS_CPU_STAND_IN=1 runs the backend-level tests with the CPU backend in the GPU's
// place: it checks the tests' own logic on machines without a GPU (CUDA-only tests still skip).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "prefixd/kernels/backend.h"
#include "prefixd/kernels/plan.h"
#include "support/backend_step.h"
#include "support/test_support.h"
#include "unit/kernels/random_batch.h"

#ifdef PREFIXD_HAVE_CUDA
#include "kernels/cuda/cascade_fused.h"
#endif

namespace prefixd::test {

// The empty state's LSE.
inline constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Base-2 LSE error bound (times max(1, |s|)): fp32 scores from exact fp16/bf16 products.
inline constexpr double kLseTol = 5e-4;

// PREFIXD_GPU_TESTS_CPU_STAND_IN=1: the CPU backend stands in for the GPU in the backend-level
// tests.
bool CpuStandIn();

// Skips the test (with the reason) unless there is a usable GPU or the CPU stand-in is on.
#define PREFIXD_REQUIRE_DEVICE_BACKEND()                                                             \
  do {                                                                                               \
    if (!::prefixd::kernels::CudaAvailable() && !CpuStandIn())                                       \
      GTEST_SKIP() << "no usable CUDA GPU (cudaGetDeviceCount failed or returned 0)";               \
  } while (0)

// Small enough that creating one costs little, big enough for every case here.
kernels::WorkspaceLimits TestLimits();

// A CUDA backend, or the CPU backend where there is no GPU (the stand-in).
std::unique_ptr<Backend> MakeDeviceBackend(const kernels::WorkspaceLimits& limits = TestLimits());

// Environment settings, each `name`=`value`.
using EnvSettings = std::vector<std::pair<std::string, std::string>>;

// A CUDA backend made with the environment settings (switches read at construction only), unset
// again when this returns or throws.
std::unique_ptr<Backend> MakeCudaBackendWithEnv(const EnvSettings& settings);

// One device backend for the whole binary (creating one allocates its workspace).
Backend& Device();

// The CPU backend every device result is compared with.
Backend& Cpu();

// Peaky queries: uniform in [-40, 40] (score std ≈ 40/3 ≥ 10 with a margin for D = 64's sampling
// noise under k in [-1, 1] and scale 1/sqrt(D)); every third head aims at a planted key.
inline constexpr float kPeakyScale = 40.f;

// v_out, s_out and o against the float64 oracle (the dtype's tolerance, kLseTol for s).
void ExpectMatchesOracle(const StepResult& got, const RefOutput& want, DType dtype, const std::string& what);

// v_out and s_out against the CPU backend's run of the same plan.
void ExpectMatchesCpu(const StepResult& got, const StepResult& cpu, DType dtype, const std::string& what);

// How finely a cascade case's plan is split into work items.
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
PlanOptions CascadeOptions(const Backend& backend);

// The Split on top of CascadeOptions(backend) (its fuse_merge kept).
PlanOptions OptionsFor(Split split, const Backend& backend);

// The same on the device backend, Device().
PlanOptions OptionsFor(Split split);

using CascadeCase = CascadeCaseOf<Split>;

// One cascade case's inputs, drawn from rng.
struct CascadeInputs {
  KvPoolShape shape;
  DecodeBatch batch;
  HostKvPool pool;
  std::vector<uint16_t> q;
};

CascadeInputs MakeCascadeInputs(const CascadeCase& c, std::mt19937_64& rng);

// A case's inputs, its float64 oracle and its plan with unsplit suffixes (Split::kNone: the decode
// items are the case's suffix lengths, the prefix items few), planned one after the other (no
// concurrent mode).
struct UnsplitCascade {
  CascadeInputs in;
  RefOutput want;
  CascadePlan plan;
};

UnsplitCascade MakeUnsplitCascade(const CascadeCase& c, std::mt19937_64& rng);

// The cascade cases: every dtype × head_dim, GQA group and page size, peaky and flat queries, the
// splits above; run by the cascade, concurrent, early-decode and (with FusedCascadeCases) fused
// tests.
std::vector<CascadeCase> CascadeCases();

// k decode SMs, kept below the device's SM count.
int ConcurrentDecodeSms(int wanted);

// A CUDA backend made with PREFIXD_CONCURRENT_DECODE_SMS set to `value` (read at construction only).
std::unique_ptr<Backend> MakeConcurrentBackend(const std::string& value);

// One concurrent backend (k = 32, as for the benchmark's conc32) for the shape tests.
Backend& Concurrent();

// Plan options that balance a small prefix grid of `ctas` CTAs from `target_items` items (one or
// a few chunks per (KV head, row tile) pair); with `stream`, by the stream over the heads at an item
// cost of half a tile, so that the stream, not the tails, is the better balance.
PlanOptions BalancedGridOptions(int ctas, int target_items, bool stream);

// A fused backend, with one more setting `name`=`value` (e.g. PREFIXD_FUSED_L2_AHEAD) when given.
std::unique_ptr<Backend> MakeFusedBackendWith(const char* name, const char* value);

// A fused backend, with PREFIXD_FUSED_L2_AHEAD=`l2_ahead` when given.
std::unique_ptr<Backend> MakeFusedBackend(const char* l2_ahead = nullptr);

// One fused backend for the shape tests.
Backend& Fused();

#ifdef PREFIXD_HAVE_CUDA
// Skips the test unless the fused cascade kernel can run here (an sm_90a build on an sm_90 GPU).
#define PREFIXD_REQUIRE_FUSED()                                                                       \
  do {                                                                                                \
    PREFIXD_REQUIRE_GPU();                                                                            \
    if (!kernels::cuda::FusedCascadeReady())                                                          \
      GTEST_SKIP() << "the fused cascade kernel needs an sm_90a build and a compute capability 9.0 GPU"; \
  } while (0)
#endif

// Shapes the cascade cases lack: the fused kernel's page sizes other than 16, GQA 4/8 at realistic
// sizes, a long split suffix with the device's options, requests without a suffix, a GQA group of 3
// whose requests straddle the prefix kernel's warpgroups.
std::vector<CascadeCase> FusedCascadeCases();

// Per (request, head) row: ‖got − want‖ / max(‖want‖, 1e-3) ≤ tol, so that a wrong or unwritten
// row cannot hide in a global norm; reports the worst row.
void ExpectRowsClose(const std::vector<float>& got, const std::vector<double>& want, int64_t rows, int dim, double tol,
                     const std::string& what);

}  // namespace prefixd::test
