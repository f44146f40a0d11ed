// The worker's data-movement ops on the CPU backend, and the two reductions' arithmetic: the
// tree's scale / sum / finish must equal the n-ary ⊕ of the same states.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "prefixd/kernels/backend.h"
#include "prefixd/kernels/state.h"
#include "prefixd/worker/worker_ops.h"
#include "support/test_support.h"

namespace prefixd::worker {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

std::vector<float> Random(std::mt19937_64& rng, size_t n, float lo, float hi) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

TEST(WorkerOps, GatherRowsTakesRemoteLocalOrFill) {
  auto be = kernels::MakeCpuBackend();
  std::vector<uint32_t> remote = {1, 2, 3, 4, 5, 6}, local = {10, 20, 30, 40};
  const int32_t idx[4] = {2, -2, -1, -3};
  std::vector<uint32_t> out(8, 99);
  GatherRows(*be, out.data(), remote.data(), local.data(), idx, 4, 2, 7);
  EXPECT_EQ(out, (std::vector<uint32_t>{5, 6, 10, 20, 7, 7, 30, 40}));
}

TEST(WorkerOps, PackUnpackRoundTrip) {
  std::mt19937_64 rng(test::TestSeed());
  auto be = kernels::MakeCpuBackend();
  const int heads = 3, d = 8, rows = 5;
  const std::vector<float> v = Random(rng, rows * heads * d, -1, 1), s = Random(rng, rows * heads, -5, 5);
  const int32_t pack_idx[3] = {4, 0, 2};
  std::vector<float> packed(3 * heads * (d + 1));
  PackStates(*be, v.data(), s.data(), pack_idx, 3, heads, d, packed.data());
  // n = 2: row 0 ← packed 1 (= local 0) and empty; row 1 ← local 3 and packed 0 (= local 4).
  const int32_t idx[4] = {1, -5, -1, 0};
  std::vector<float> v_in(2 * 2 * heads * d), s_in(2 * 2 * heads);
  UnpackStates(*be, packed.data(), v.data(), s.data(), idx, 2, 2, heads, d, v_in.data(), s_in.data());
  auto v_row = [&](const std::vector<float>& a, int r) { return std::vector<float>(a.begin() + r * heads * d, a.begin() + (r + 1) * heads * d); };
  auto s_row = [&](const std::vector<float>& a, int r) { return std::vector<float>(a.begin() + r * heads, a.begin() + (r + 1) * heads); };
  EXPECT_EQ(v_row(v_in, 0), v_row(v, 0));
  EXPECT_EQ(s_row(s_in, 0), s_row(s, 0));
  EXPECT_EQ(v_row(v_in, 1), v_row(v, 3));
  EXPECT_EQ(v_row(v_in, 2), std::vector<float>(heads * d, 0.f));
  EXPECT_EQ(s_row(s_in, 2), std::vector<float>(heads, kNegInf));
  EXPECT_EQ(v_row(v_in, 3), v_row(v, 4));
  EXPECT_EQ(s_row(s_in, 3), s_row(s, 4));
}

// The fused unpack + n-ary merge against UnpackStates followed by the backend's MergeStates, and
// both against a float64 merge: empty contributions, a whole row empty, LSEs far apart.
TEST(WorkerOps, MergeExchangedStatesEqualsUnpackThenMerge) {
  std::mt19937_64 rng(test::TestSeed());
  auto be = kernels::MakeCpuBackend();
  const int heads = 3, d = 8, local_rows = 4, recv_rows = 6, own = 3, n = 3, row = heads * (d + 1);
  const std::vector<float> v_local = Random(rng, local_rows * heads * d, -1, 1);
  std::vector<float> s_local = Random(rng, local_rows * heads, -200, 200);
  std::vector<float> packed = Random(rng, recv_rows * row, -1, 1);
  for (int r = 0; r < recv_rows; ++r)
    for (int h = 0; h < heads; ++h) packed[r * row + heads * d + h] = float(int(rng() % 400) - 200) + 0.25f;
  s_local[1 * heads + 2] = kNegInf;  // an empty head in a local row
  // idx[k][j]: own row 0 ← local 1, recv 4, empty; row 1 ← local 3, recv 0, recv 2; row 2 ← empty ×3.
  const int32_t idx[n * own] = {-3, -5, -1, 4, 0, -1, -1, 2, -1};
  std::vector<float> v_in(n * own * heads * d), s_in(n * own * heads), v_ref(own * heads * d), s_ref(own * heads);
  UnpackStates(*be, packed.data(), v_local.data(), s_local.data(), idx, n, own, heads, d, v_in.data(), s_in.data());
  be->MergeStates(v_in.data(), s_in.data(), n, own * heads, d, v_ref.data(), s_ref.data());
  std::vector<float> v_out(own * heads * d, std::nanf("")), s_out(own * heads, std::nanf(""));
  MergeExchangedStates(*be, packed.data(), v_local.data(), s_local.data(), idx, n, own, heads, d, v_out.data(),
                       s_out.data());
  for (size_t i = 0; i < v_out.size(); ++i) {
    ASSERT_FALSE(std::isnan(v_out[i])) << i;
    EXPECT_NEAR(v_out[i], v_ref[i], 1e-6f * (1.f + std::abs(v_ref[i]))) << i;
  }
  for (size_t i = 0; i < s_out.size(); ++i) {
    ASSERT_FALSE(std::isnan(s_out[i])) << i;
    if (std::isinf(s_ref[i])) EXPECT_EQ(s_out[i], s_ref[i]) << i;
    else EXPECT_NEAR(s_out[i], s_ref[i], 1e-5f * (1.f + std::abs(s_ref[i]))) << i;
  }
  // Row 2 is all empty: (0, −inf).
  for (int h = 0; h < heads; ++h) EXPECT_EQ(s_out[2 * heads + h], kNegInf);
  for (int e = 0; e < heads * d; ++e) EXPECT_EQ(v_out[2 * heads * d + e], 0.f);
  // float64 reference for row 1, head 0 (three non-empty states).
  {
    const int h = 0;
    const double s0 = s_local[3 * heads + h], s1 = packed[0 * row + heads * d + h], s2 = packed[2 * row + heads * d + h];
    const double m = std::max({s0, s1, s2});
    const double w0 = std::exp2(s0 - m), w1 = std::exp2(s1 - m), w2 = std::exp2(s2 - m), sw = w0 + w1 + w2;
    EXPECT_NEAR(s_out[1 * heads + h], m + std::log2(sw), 1e-4 * (1 + std::abs(m)));
    for (int e = 0; e < d; ++e) {
      const double x = (w0 * v_local[(3 * heads + h) * d + e] + w1 * packed[0 * row + h * d + e] +
                        w2 * packed[2 * row + h * d + e]) / sw;
      EXPECT_NEAR(v_out[(1 * heads + h) * d + e], x, 1e-5 * (1 + std::abs(x))) << e;
    }
  }
}

TEST(WorkerOps, TreeReductionEqualsNaryMerge) {
  std::mt19937_64 rng(test::TestSeed());
  auto be = kernels::MakeCpuBackend();
  const int heads = 4, d = 16, rows = 3, parts = 5, row = heads * (d + 1);
  // parts "ranks" each hold a state for every row; some are empty; one whole row is empty.
  std::vector<float> v = Random(rng, size_t(parts) * rows * heads * d, -1, 1);
  std::vector<float> s = Random(rng, size_t(parts) * rows * heads, -300, 300);
  for (int p = 0; p < parts; ++p)
    for (int h = 0; h < heads; ++h) {
      if (rng() % 3 == 0) s[(p * rows + 1) * heads + h] = kNegInf;
      s[(p * rows + 2) * heads + h] = kNegInf;  // row 2: nothing anywhere
    }
  for (int p = 0; p < parts; ++p)
    for (int i = 0; i < heads * d; ++i)
      if (s[(p * rows + 2) * heads + i / d] == kNegInf) v[(p * rows + 2) * heads * d + i] = 0;
  // Max over parts.
  std::vector<float> m(rows * heads, kNegInf);
  for (int p = 0; p < parts; ++p)
    for (int i = 0; i < rows * heads; ++i) m[i] = std::max(m[i], s[p * rows * heads + i]);
  // Scale each part into its slab and sum the slabs.
  std::vector<int32_t> pos = {0, 1, 2}, dst = {0, 1, 2};
  std::vector<float> sum(rows * row, 0.f);
  for (int p = 0; p < parts; ++p) {
    std::vector<float> slab(rows * row, 0.f);
    TreeScaleStates(*be, v.data() + p * rows * heads * d, s.data() + p * rows * heads, m.data(), pos.data(), dst.data(),
                    rows, heads, d, slab.data());
    for (size_t i = 0; i < slab.size(); ++i) sum[i] += slab[i];
  }
  std::vector<float> tv(rows * heads * d), ts(rows * heads);
  TreeFinishStates(*be, sum.data(), m.data(), pos.data(), rows, heads, d, tv.data(), ts.data());
  // n-ary ⊕ of the same states.
  std::vector<float> mv(rows * heads * d), ms(rows * heads);
  be->MergeStates(v.data(), s.data(), parts, rows * heads, d, mv.data(), ms.data());
  const std::vector<double> want_v(mv.begin(), mv.end()), want_s(ms.begin(), ms.end());
  test::ExpectAllClose(tv.data(), want_v.data(), int64_t(tv.size()), 1e-5, "tree v vs merge");
  test::ExpectLseClose(ts.data(), want_s.data(), int64_t(ts.size()), 1e-5, "tree s vs merge");
  for (int h = 0; h < heads; ++h) EXPECT_EQ(ts[2 * heads + h], kNegInf);
}

}  // namespace
}  // namespace prefixd::worker
