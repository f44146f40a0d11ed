// The merge operator ⊕ (state.h) and the backend's merge entry points: algebra against the float64
// oracle, empty and extreme states, and a float32 fuzz of a million merges.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "prefixd/kernels/backend.h"
#include "prefixd/kernels/state.h"
#include "support/test_support.h"
#include "unit/kernels/expect_error.h"

namespace prefixd::kernels {
namespace {

using test::RefState;

constexpr double kInf = std::numeric_limits<double>::infinity();

template <typename T>
struct State {
  std::vector<T> v;
  T s;
};

template <typename T>
State<T> Merge(const State<T>& a, const State<T>& b) {
  State<T> out{std::vector<T>(a.v.size()), 0};
  MergeState(a.v.data(), a.s, b.v.data(), b.s, int(a.v.size()), out.v.data(), &out.s);
  return out;
}

template <typename T>
State<T> MergeAll(const std::vector<State<T>>& parts) {
  const int n = int(parts.size()), d = int(parts[0].v.size());
  std::vector<T> v(size_t(n) * d), s(n);
  for (int i = 0; i < n; ++i) {
    std::copy(parts[i].v.begin(), parts[i].v.end(), v.begin() + size_t(i) * d);
    s[i] = parts[i].s;
  }
  State<T> out{std::vector<T>(d), 0};
  MergeStates(v.data(), d, s.data(), 1, n, d, out.v.data(), &out.s);
  return out;
}

State<double> FromRef(const RefState& r) { return {r.v, r.s}; }
State<float> ToFloat(const State<double>& a) { return {std::vector<float>(a.v.begin(), a.v.end()), float(a.s)}; }

void ExpectStateNear(const State<double>& got, const State<double>& want, double tol, const std::string& what) {
  if (std::isinf(want.s)) {
    EXPECT_EQ(got.s, want.s) << what;
  } else {
    EXPECT_NEAR(got.s, want.s, tol * std::max(1.0, std::abs(want.s))) << what;
  }
  for (size_t d = 0; d < want.v.size(); ++d) ASSERT_NEAR(got.v[d], want.v[d], tol) << what << " d=" << d;
}

// A random key set of one KV head, its states over random parts and over the whole.
class MergeAlgebra : public ::testing::Test {
 protected:
  void SetUp() override {
    seed_ = test::TestSeed();
    rng_.seed(seed_);
    pool_ = test::RandomKvPool(rng_, KvPoolShape{1, 8, 16, 1, 64, DType::kFloat16});
    q_ = test::RandomBits(rng_, 64, DType::kFloat16, 6.f);  // score std 2: not flat
  }
  RefState StateOf(const std::vector<int64_t>& slots) {
    return test::NaiveAttention(pool_, 0, 0, q_.data(), slots, 0.125);
  }
  // Random partition of the pool's 128 slots into k parts (some possibly empty).
  std::vector<std::vector<int64_t>> RandomParts(int k) {
    std::vector<std::vector<int64_t>> parts(k);
    for (int64_t slot = 0; slot < 128; ++slot) parts[rng_() % k].push_back(slot);
    return parts;
  }
  uint64_t seed_;
  std::mt19937_64 rng_;
  test::HostKvPool pool_;
  std::vector<uint16_t> q_;
};

TEST_F(MergeAlgebra, WholeIsTheMergeOfItsPartsInAnyOrder) {
  SCOPED_TRACE("PREFIXD_TEST_SEED=" + std::to_string(seed_));
  std::vector<int64_t> all(128);
  std::iota(all.begin(), all.end(), 0);
  const State<double> whole = FromRef(StateOf(all));
  for (int trial = 0; trial < 20; ++trial) {
    const auto parts = RandomParts(1 + int(rng_() % 9));
    std::vector<State<double>> states;
    for (const auto& p : parts) states.push_back(FromRef(StateOf(p)));
    // Left fold in a random order, a balanced tree, and the n-ary merge all give the whole.
    std::shuffle(states.begin(), states.end(), rng_);
    State<double> fold = states[0];
    for (size_t i = 1; i < states.size(); ++i) fold = Merge(fold, states[i]);
    std::vector<State<double>> level = states;
    while (level.size() > 1) {
      std::vector<State<double>> next;
      for (size_t i = 0; i + 1 < level.size(); i += 2) next.push_back(Merge(level[i], level[i + 1]));
      if (level.size() % 2) next.push_back(level.back());
      level = next;
    }
    ExpectStateNear(fold, whole, 1e-12, "left fold");
    ExpectStateNear(level[0], whole, 1e-12, "tree");
    ExpectStateNear(MergeAll(states), whole, 1e-12, "n-ary");
    // The same in float32 from float32 parts: rounding only.
    std::vector<State<float>> fstates;
    for (const auto& st : states) fstates.push_back(ToFloat(st));
    const State<float> f = MergeAll(fstates);
    ExpectStateNear({std::vector<double>(f.v.begin(), f.v.end()), f.s}, whole, 2e-6, "n-ary float");
  }
}

TEST_F(MergeAlgebra, IsCommutativeAndAssociative) {
  SCOPED_TRACE("PREFIXD_TEST_SEED=" + std::to_string(seed_));
  const auto parts = RandomParts(3);
  const State<float> a = ToFloat(FromRef(StateOf(parts[0]))), b = ToFloat(FromRef(StateOf(parts[1]))),
                     c = ToFloat(FromRef(StateOf(parts[2])));
  const State<float> ab = Merge(a, b), ba = Merge(b, a);
  EXPECT_EQ(ab.s, ba.s);  // IEEE + and max are commutative: bit-identical
  EXPECT_EQ(ab.v, ba.v);
  const State<float> left = Merge(ab, c), right = Merge(a, Merge(b, c));
  EXPECT_NEAR(left.s, right.s, 1e-5 * std::max(1.f, std::abs(left.s)));
  for (size_t d = 0; d < left.v.size(); ++d) EXPECT_NEAR(left.v[d], right.v[d], 1e-6) << d;
}

TEST(MergeState, EmptyStateIsTheIdentity) {
  std::mt19937_64 rng(test::TestSeed());
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  const State<float> empty{std::vector<float>(32, 0.f), kEmptyLse<float>};
  for (float s : {-1e4f, -3.5f, 0.f, 17.25f, 1e4f}) {
    State<float> a{std::vector<float>(32), s};
    for (float& x : a.v) x = u(rng);
    for (const State<float>& m : {Merge(a, empty), Merge(empty, a)}) {
      EXPECT_EQ(m.s, a.s);
      EXPECT_EQ(m.v, a.v);
    }
    EXPECT_EQ(MergeAll<float>({empty, a, empty}).v, a.v);
  }
}

TEST(MergeState, TwoEmptiesMergeToEmptyWithoutNaN) {
  // Poisoned outputs: the merge must write every element.
  const State<float> empty{std::vector<float>(16, 0.f), kEmptyLse<float>};
  State<float> out{std::vector<float>(16, std::nanf("")), std::nanf("")};
  MergeState(empty.v.data(), empty.s, empty.v.data(), empty.s, 16, out.v.data(), &out.s);
  EXPECT_EQ(out.s, kEmptyLse<float>);
  for (float x : out.v) EXPECT_EQ(x, 0.f);
  const State<float> all = MergeAll<float>({empty, empty, empty});
  EXPECT_EQ(all.s, kEmptyLse<float>);
  for (float x : all.v) EXPECT_EQ(x, 0.f);
  State<float> none{std::vector<float>(16, std::nanf("")), std::nanf("")};
  MergeStates<float>(nullptr, 16, nullptr, 1, 0, 16, none.v.data(), &none.s);  // n = 0
  EXPECT_EQ(none.s, kEmptyLse<float>);
  for (float x : none.v) EXPECT_EQ(x, 0.f);
}

TEST(MergeState, ExtremeLseStaysFinite) {
  // |s| up to 1e4: 2^(1e4) overflows any float; the max subtraction must keep the merge exact.
  const std::vector<std::pair<double, double>> pairs = {
      {1e4, 1e4 - 3}, {1e4, -1e4}, {-1e4, -1e4 + 0.5}, {-1e4, -1e4}, {1e4, 1e4}, {9999.5, 1e4}, {-1e4, 40}};
  for (const auto& [sa, sb] : pairs) {
    const State<float> a{{1.f, -2.f, 0.5f}, float(sa)}, b{{-1.f, 4.f, 0.25f}, float(sb)};
    const State<float> m = Merge(a, b);
    // Exact in closed form: weights 1 / (1 + 2^(s_b − s_a)) with the float inputs.
    const double da = double(a.s), db = double(b.s), wb = 1.0 / (1.0 + std::exp2(da - db)), wa = 1.0 - wb;
    const double s = std::max(da, db) + std::log2(1.0 + std::exp2(-std::abs(da - db)));
    ASSERT_TRUE(std::isfinite(m.s)) << sa << " " << sb;
    EXPECT_NEAR(m.s, s, 2e-3) << sa << " " << sb;  // ulp(1e4) in float is ~1e-3
    for (int d = 0; d < 3; ++d) EXPECT_NEAR(m.v[d], wa * a.v[d] + wb * b.v[d], 1e-6) << sa << " " << sb;
  }
}

// A million merges of random float32 states (empty, extreme, equal, ordinary) against float64 from
// the same inputs: binary out-of-place, binary in place, and n-ary merges of up to 6 states.
TEST(MergeState, FuzzMillionMergesFloat32AgainstFloat64) {
  const uint64_t seed = test::TestSeed();
  SCOPED_TRACE("PREFIXD_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> unit(-1.f, 1.f), ordinary(-60.f, 60.f), near(-30.f, 30.f);
  constexpr int kDim = 4, kMaxN = 6, kMerges = 1 << 20;
  auto random_lse = [&](float other) -> float {
    switch (rng() % 8) {
      case 0: return kEmptyLse<float>;
      case 1: return 1e4f - std::abs(near(rng));
      case 2: return -1e4f + std::abs(near(rng));
      case 3: return other;                                                  // equal scores
      case 4: return std::isfinite(other) ? other + near(rng) * 1e-3f : 0.f;  // nearly equal
      default: return ordinary(rng);
    }
  };
  int64_t merges = 0, nan_count = 0, bad_lse = 0, bad_v = 0, empties = 0;
  double worst_v = 0, worst_s = 0;
  float v[kMaxN * kDim], s[kMaxN], vo[kDim], so;
  double v64[kMaxN * kDim], s64[kMaxN], vo64[kDim], so64;
  for (int iter = 0; merges < kMerges; ++iter) {
    const int kind = iter % 3, n = kind < 2 ? 2 : 3 + int(rng() % (kMaxN - 2));
    for (int i = 0; i < n; ++i) {
      s[i] = random_lse(i > 0 ? s[i - 1] : 0.f);
      for (int d = 0; d < kDim; ++d) v[i * kDim + d] = unit(rng);
    }
    std::copy(v, v + n * kDim, v64);
    std::copy(s, s + n, s64);
    if (kind == 0) {
      MergeState(v, s[0], v + kDim, s[1], kDim, vo, &so);
    } else if (kind == 1) {  // in place into the first state
      MergeState(v, s[0], v + kDim, s[1], kDim, v, &so);
      std::copy(v, v + kDim, vo);
    } else {
      MergeStates(v, kDim, s, 1, n, kDim, vo, &so);
    }
    MergeStates(v64, kDim, s64, 1, n, kDim, vo64, &so64);
    merges += n - 1;
    for (int d = 0; d < kDim; ++d) nan_count += std::isnan(vo[d]);
    nan_count += std::isnan(so);
    if (std::isinf(so64)) {  // every input empty
      ++empties;
      bad_lse += !(std::isinf(so) && so < 0);
      for (int d = 0; d < kDim; ++d) bad_v += vo[d] != 0.f;
      continue;
    }
    const double es = std::abs(so - so64) / std::max(1.0, std::abs(so64));
    worst_s = std::max(worst_s, es);
    bad_lse += es > 1e-6;  // s and log2(Σw) each round once in float: a few ulps
    for (int d = 0; d < kDim; ++d) {
      const double e = std::abs(vo[d] - vo64[d]);  // |v| ≤ 1: absolute error is relative to the scale
      worst_v = std::max(worst_v, e);
      bad_v += e > 1e-6;
    }
  }
  EXPECT_EQ(nan_count, 0);
  EXPECT_EQ(bad_lse, 0) << "worst relative LSE error " << worst_s;
  EXPECT_EQ(bad_v, 0) << "worst v error " << worst_v;
  EXPECT_GT(empties, 1000);  // the empty ⊕ empty path was exercised
}

TEST(MergeStates, NaryEqualsChainOfBinaryMerges) {
  std::mt19937_64 rng(test::TestSeed());
  std::uniform_real_distribution<double> u(-1, 1), lse(-50, 50);
  for (int n : {1, 2, 3, 7, 16}) {
    std::vector<State<double>> parts(n);
    for (auto& p : parts) {
      p.v.resize(8);
      p.s = rng() % 4 == 0 ? -kInf : lse(rng);
      for (double& x : p.v) x = std::isinf(p.s) ? 0.0 : u(rng);  // an empty state is (0, −inf)
    }
    State<double> chain = parts[0];
    for (int i = 1; i < n; ++i) chain = Merge(chain, parts[i]);
    ExpectStateNear(MergeAll(parts), chain, 1e-12, "n=" + std::to_string(n));
  }
}

// The backend entry points (rows × head_dim layouts) against per-row float64 merges.
TEST(CpuBackendMerge, MergeStatesAndInPlaceMatchFloat64) {
  const uint64_t seed = test::TestSeed();
  SCOPED_TRACE("PREFIXD_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1), lse(-200, 200);
  auto backend = MakeCpuBackend();
  const int n = 5, rows = 33, dim = 128;
  std::vector<float> v_in(size_t(n) * rows * dim), s_in(size_t(n) * rows);
  for (float& x : v_in) x = u(rng);
  for (float& x : s_in) x = rng() % 5 == 0 ? kEmptyLse<float> : lse(rng);
  for (int r = 0; r < rows; r += 7)
    for (int i = 0; i < n; ++i) s_in[size_t(i) * rows + r] = kEmptyLse<float>;  // some rows all empty
  std::vector<float> v_out(size_t(rows) * dim, std::nanf("")), s_out(rows, std::nanf(""));
  backend->MergeStates(v_in.data(), s_in.data(), n, rows, dim, v_out.data(), s_out.data());

  std::vector<float> v_acc(v_in.begin(), v_in.begin() + size_t(rows) * dim), s_acc(s_in.begin(), s_in.begin() + rows);
  for (int i = 1; i < n; ++i)
    backend->MergeStateInPlace(v_acc.data(), s_acc.data(), &v_in[size_t(i) * rows * dim], &s_in[size_t(i) * rows],
                               rows, dim);

  std::vector<double> want_v(size_t(rows) * dim), want_s(rows);
  for (int r = 0; r < rows; ++r) {
    std::vector<State<double>> parts;
    for (int i = 0; i < n; ++i) {
      const float* v = &v_in[(size_t(i) * rows + r) * dim];
      parts.push_back({std::vector<double>(v, v + dim), s_in[size_t(i) * rows + r]});
    }
    const State<double> m = MergeAll(parts);
    std::copy(m.v.begin(), m.v.end(), want_v.begin() + size_t(r) * dim);
    want_s[r] = m.s;
  }
  test::ExpectAllClose(v_out.data(), want_v.data(), int64_t(want_v.size()), 1e-6, "MergeStates v");
  test::ExpectLseClose(s_out.data(), want_s.data(), rows, 1e-6, "MergeStates s");
  test::ExpectAllClose(v_acc.data(), want_v.data(), int64_t(want_v.size()), 1e-6, "MergeStateInPlace v");
  test::ExpectLseClose(s_acc.data(), want_s.data(), rows, 1e-6, "MergeStateInPlace s");
}

TEST(CpuBackendMerge, CastStatesRoundsToNearest) {
  std::mt19937_64 rng(test::TestSeed());
  std::uniform_real_distribution<float> u(-70000, 70000);
  auto backend = MakeCpuBackend();
  std::vector<float> v(1000);
  for (float& x : v) x = u(rng) * (rng() % 2 ? 1e-6f : 1.f);
  for (DType t : {DType::kFloat16, DType::kBFloat16}) {
    std::vector<uint16_t> out(v.size(), 0xFFFF);
    backend->CastStates(v.data(), int64_t(v.size()), t, out.data());
    for (size_t i = 0; i < v.size(); ++i) ASSERT_EQ(out[i], FromFloat(t, v[i])) << DTypeName(t) << " " << v[i];
  }
}

TEST(CpuBackendMerge, RejectsOverlappingOrNullBuffers) {
  auto backend = MakeCpuBackend();
  std::vector<float> v(2 * 4 * 64), s(2 * 4);
  EXPECT_INVALID_ARGUMENT(backend->MergeStates(v.data(), s.data(), 2, 4, 64, v.data(), s.data() + 8), "overlap");
  EXPECT_INVALID_ARGUMENT(backend->MergeStates(v.data(), s.data(), 2, 4, 64, nullptr, s.data()), "null");
  EXPECT_INVALID_ARGUMENT(backend->MergeStates(v.data(), s.data(), -1, 4, 64, v.data(), s.data()), "n -1");
  EXPECT_INVALID_ARGUMENT(backend->MergeStateInPlace(v.data(), s.data(), nullptr, s.data(), 4, 64), "null");
  EXPECT_INVALID_ARGUMENT(backend->CastStates(nullptr, 3, DType::kFloat16, v.data()), "null");
}

TEST(State, LseBaseConversion) {
  EXPECT_DOUBLE_EQ(Lse2ToLn(1.0), std::log(2.0));
  EXPECT_NEAR(Lse2ToLn(std::log2(std::exp(1.0) + std::exp(2.0))), std::log(std::exp(1.0) + std::exp(2.0)), 1e-15);
}

}  // namespace
}  // namespace prefixd::kernels
