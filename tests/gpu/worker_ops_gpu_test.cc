// The worker's n-ary merge of exchanged states (MergeExchangedStates) on the GPU against a float64
// ⊕ of the same states, on fresh random inputs: contributions from the received (packed) rows and
// from the local rows, empty ones (−1), whole rows empty, LSEs far apart (negligible weights),
// n from 1 to beyond one warp's 32 lanes, head_dim 64/128/256 on the 16-byte path and odd head
// counts on the scalar one. Outputs are poisoned with NaN first. Skips without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "prefixd/kernels/backend.h"
#include "prefixd/worker/worker_ops.h"
#include "support/test_support.h"

namespace prefixd::test {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

struct MergeCase {
  int n, rows, heads, head_dim;
};

std::string CaseName(const testing::TestParamInfo<MergeCase>& info) {
  const MergeCase& c = info.param;
  return "n" + std::to_string(c.n) + "_rows" + std::to_string(c.rows) + "_h" + std::to_string(c.heads) + "_d" +
         std::to_string(c.head_dim);
}

// A device buffer of the backend, filled from (or read back to) a host vector. Through the Backend
// interface, not prefix_test_cases.h's DeviceBuffer (CUDA runtime), so that this file also builds
// (and skips) where nvcc is absent, like the other backend-level GPU tests.
template <typename T>
class DeviceArray {
 public:
  DeviceArray(kernels::Backend& be, const std::vector<T>& host) : be_(be), size_(host.size()) {
    ptr_ = be_.Alloc(std::max<size_t>(1, size_) * sizeof(T));
    if (size_ > 0) be_.CopyToDevice(ptr_, host.data(), size_ * sizeof(T));
  }
  ~DeviceArray() { be_.Free(ptr_); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  T* get() const { return static_cast<T*>(ptr_); }
  std::vector<T> ToHost() const {
    std::vector<T> host(size_);
    be_.Synchronize();
    if (size_ > 0) be_.CopyToHost(host.data(), ptr_, size_ * sizeof(T));
    return host;
  }

 private:
  kernels::Backend& be_;
  size_t size_;
  void* ptr_ = nullptr;
};

class MergeExchangedStatesGpu : public testing::TestWithParam<MergeCase> {};

TEST_P(MergeExchangedStatesGpu, MatchesFloat64Merge) {
  PREFIXD_REQUIRE_GPU();
  const MergeCase c = GetParam();
  PREFIXD_SEEDED_RNG(rng);
  auto be = kernels::MakeCudaBackend();
  const int local_rows = c.rows + 3, recv_rows = c.n * c.rows + 5;
  const int64_t vw = int64_t(c.heads) * c.head_dim, row = vw + c.heads;
  std::uniform_real_distribution<float> unit(-1.f, 1.f), lse(-20.f, 20.f);
  std::vector<float> packed(size_t(recv_rows) * row), v_local(size_t(local_rows) * vw), s_local(size_t(local_rows) * c.heads);
  for (int r = 0; r < recv_rows; ++r) {
    for (int64_t e = 0; e < vw; ++e) packed[r * row + e] = unit(rng);
    for (int h = 0; h < c.heads; ++h) packed[r * row + vw + h] = lse(rng);
  }
  for (float& x : v_local) x = unit(rng);
  for (float& x : s_local) x = lse(rng);
  // A few states 200 below the rest (negligible weights: 2^−180 underflows to 0 in fp32) and an
  // empty head in a local row.
  s_local[0] = -200.f;
  if (recv_rows > 1) packed[1 * row + vw] = -200.f;
  if (c.heads > 1) s_local[1 * c.heads + 1] = kNegInf;
  // idx[k][j]: contribution 0 of row j is local row j; the others received rows (a random
  // permutation, some repeated), every 7th empty; the last own row (rows > 2) is all empty.
  std::vector<int32_t> idx(size_t(c.n) * c.rows);
  std::uniform_int_distribution<int> pick(0, recv_rows - 1);
  for (int k = 0; k < c.n; ++k)
    for (int j = 0; j < c.rows; ++j) {
      int32_t& i = idx[size_t(k) * c.rows + j];
      i = k == 0 ? -2 - j : pick(rng);
      if ((k * 31 + j) % 7 == 3) i = -1;
      if (c.rows > 2 && j == c.rows - 1) i = -1;
    }

  DeviceArray<float> d_packed(*be, packed), d_v_local(*be, v_local), d_s_local(*be, s_local);
  DeviceArray<int32_t> d_idx(*be, idx);
  const std::vector<float> nan_v(size_t(c.rows) * vw, std::nanf("")), nan_s(size_t(c.rows) * c.heads, std::nanf(""));
  DeviceArray<float> d_v_out(*be, nan_v), d_s_out(*be, nan_s);
  worker::MergeExchangedStates(*be, d_packed.get(), d_v_local.get(), d_s_local.get(), d_idx.get(), c.n, c.rows,
                               c.heads, c.head_dim, d_v_out.get(), d_s_out.get());
  const std::vector<float> v_out = d_v_out.ToHost(), s_out = d_s_out.ToHost();

  double worst_v = 0, worst_s = 0;
  for (int j = 0; j < c.rows; ++j)
    for (int h = 0; h < c.heads; ++h) {
      std::vector<double> s(c.n);
      std::vector<const float*> v(c.n, nullptr);
      double m = -std::numeric_limits<double>::infinity();
      for (int k = 0; k < c.n; ++k) {
        const int32_t i = idx[size_t(k) * c.rows + j];
        s[k] = i == -1 ? -std::numeric_limits<double>::infinity()
               : i >= 0 ? packed[i * row + vw + h]
                        : s_local[int64_t(-2 - i) * c.heads + h];
        if (i != -1)
          v[k] = i >= 0 ? &packed[i * row + int64_t(h) * c.head_dim] : &v_local[int64_t(-2 - i) * vw + int64_t(h) * c.head_dim];
        m = std::max(m, s[k]);
      }
      const float got_s = s_out[size_t(j) * c.heads + h];
      const float* got_v = &v_out[(size_t(j) * c.heads + h) * c.head_dim];
      ASSERT_FALSE(std::isnan(got_s)) << "row " << j << " head " << h;
      if (std::isinf(m)) {  // every contribution empty: (0, −inf)
        EXPECT_EQ(got_s, kNegInf) << "row " << j << " head " << h;
        for (int e = 0; e < c.head_dim; ++e) ASSERT_EQ(got_v[e], 0.f) << "row " << j << " head " << h << " e " << e;
        continue;
      }
      double sum_w = 0;
      std::vector<double> want(c.head_dim, 0.0);
      for (int k = 0; k < c.n; ++k) {
        if (v[k] == nullptr) continue;
        const double w = std::exp2(s[k] - m);
        sum_w += w;
        for (int e = 0; e < c.head_dim; ++e) want[e] += w * v[k][e];
      }
      const double want_s = m + std::log2(sum_w);
      worst_s = std::max(worst_s, std::abs(got_s - want_s) / std::max(1.0, std::abs(want_s)));
      double err = 0, norm = 0;
      for (int e = 0; e < c.head_dim; ++e) {
        ASSERT_FALSE(std::isnan(got_v[e])) << "row " << j << " head " << h << " e " << e;
        err = std::max(err, std::abs(got_v[e] - want[e] / sum_w));
        norm = std::max(norm, std::abs(want[e] / sum_w));
      }
      worst_v = std::max(worst_v, err / std::max(norm, 1e-6));
    }
  EXPECT_LT(worst_v, 1e-5) << "v: worst relative error";
  EXPECT_LT(worst_s, 1e-5) << "s: worst relative error";
}

INSTANTIATE_TEST_SUITE_P(Shapes, MergeExchangedStatesGpu,
                         testing::Values(MergeCase{1, 5, 8, 128}, MergeCase{2, 64, 32, 128}, MergeCase{3, 7, 4, 64},
                                         MergeCase{4, 32, 32, 128}, MergeCase{8, 16, 32, 128},
                                         MergeCase{8, 9, 16, 256}, MergeCase{31, 4, 8, 64},
                                         MergeCase{32, 3, 8, 128}, MergeCase{33, 3, 4, 128},
                                         MergeCase{70, 2, 4, 256},
                                         // scalar path: heads not a multiple of 4
                                         MergeCase{5, 6, 3, 128}, MergeCase{8, 4, 1, 256}, MergeCase{40, 3, 3, 64},
                                         MergeCase{2, 5, 3, 8}),
                         CaseName);

}  // namespace
}  // namespace prefixd::test
