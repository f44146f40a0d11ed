// Shared test helpers: random inputs, a float64 naive attention oracle, closeness checks that
// count NaNs, and the GPU skip guard.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "prefixd/kernels/backend.h"
#include "prefixd/kernels/decode_batch.h"
#include "prefixd/kernels/dtype.h"
#include "prefixd/kernels/kv_cache.h"

namespace prefixd::test {

using kernels::DType;
// The kernel types most backend and planner tests name, and the two 16-bit dtypes by short names.
using kernels::Backend;
using kernels::CascadePlan;
using kernels::DecodeBatch;
using kernels::KvPoolShape;
using kernels::PlanOptions;
inline constexpr DType kF16 = DType::kFloat16, kBF16 = DType::kBFloat16;

// Skips the current test with a reason when this machine has no usable GPU (or the build has no
// CUDA backend). ctest shows such tests as skipped, never as passed.
#define PREFIXD_REQUIRE_GPU()                                                         \
  do {                                                                                \
    if (!::prefixd::kernels::CudaAvailable())                                         \
      GTEST_SKIP() << "no usable CUDA GPU (cudaGetDeviceCount failed or returned 0)"; \
  } while (0)

// Fresh seed per call unless PREFIXD_TEST_SEED is set; printed on failure via SCOPED_TRACE.
uint64_t TestSeed();

// Declares `seed` (TestSeed()) and a std::mt19937_64 named `rng` seeded with it, and puts
// PREFIXD_TEST_SEED=<seed> in every failure message of the enclosing scope (so a failure reruns
// with the same inputs).
#define PREFIXD_SEEDED_RNG(rng)                                                \
  const uint64_t seed = ::prefixd::test::TestSeed();                           \
  SCOPED_TRACE("PREFIXD_TEST_SEED=" + std::to_string(seed));                   \
  std::mt19937_64 rng(seed)

// Random values in dtype bits, uniform in [-scale, scale].
std::vector<uint16_t> RandomBits(std::mt19937_64& rng, int64_t count, DType dtype, float scale);

// Host K/V pool [layers][pages·page_size][H_kv][D] filled with random values in [-1, 1].
struct HostKvPool {
  kernels::KvPoolShape shape;
  std::vector<uint16_t> k, v;
  float K(int layer, int64_t slot, int head, int d) const {
    return kernels::ToFloat(shape.dtype, k[shape.Offset(layer, slot, head) + d]);
  }
  float V(int layer, int64_t slot, int head, int d) const {
    return kernels::ToFloat(shape.dtype, v[shape.Offset(layer, slot, head) + d]);
  }
};
HostKvPool RandomKvPool(std::mt19937_64& rng, const kernels::KvPoolShape& shape);

// Makes the softmax peaky: copies the key of `slot` into the query row q (scaled), so that the
// planted key dominates (a wrong max subtraction or log base then fails loudly).
void PlantKey(const HostKvPool& pool, int layer, int64_t slot, int kv_head, float gain,
              uint16_t* q_row);

// Float64 oracle: state of one query row (dtype bits, D values) over the given pool slots of one
// KV head. Returns v (D doubles) and the base-2 LSE. No slots: (0, -inf).
struct RefState {
  std::vector<double> v;
  double s;
};
RefState NaiveAttention(const HostKvPool& pool, int layer, int kv_head, const uint16_t* q_row,
                        const std::vector<int64_t>& slots, double sm_scale);

// Slots of request r in a DecodeBatch: its group's prefix tokens, then its suffix tokens.
std::vector<int64_t> RequestSlots(const kernels::DecodeBatch& batch, int request, int page_size);

// NaN bits in K and V at every slot of `layer` that no request of `batch` attends to (unused pages,
// the tails of partly filled pages): kernels may read such slots (TMA boxes, whole page rows) but
// must mask them so that not even 0 · NaN reaches a state.
void PoisonSlotsOutsideRequests(HostKvPool& pool, const kernels::DecodeBatch& batch, int layer);

// Float64 reference of a whole cascade step: v [B][H_qo][D], s [B][H_qo].
struct RefOutput {
  std::vector<double> v, s;
};
RefOutput NaiveCascade(const HostKvPool& pool, int layer, const kernels::DecodeBatch& batch,
                       const std::vector<uint16_t>& q, double sm_scale);

// ‖got − want‖₂ / ‖want‖₂ over all elements, with NaN/inf in `got` counted separately; fails the
// test (with max abs error and its index) when rel > tol or any NaN appears.
struct CloseReport {
  double rel_err = 0, max_abs_err = 0;
  int64_t worst_index = -1, nan_count = 0;
};
CloseReport Compare(const float* got, const double* want, int64_t n);
void ExpectAllClose(const float* got, const double* want, int64_t n, double tol,
                    const std::string& what);
// LSE compare: absolute error on s (base 2), −inf must match −inf exactly.
void ExpectLseClose(const float* got, const double* want, int64_t n, double tol,
                    const std::string& what);

// Relative-error bounds per input dtype for fp32-accumulated attention outputs.
double OutputTolerance(DType dtype);

}  // namespace prefixd::test
