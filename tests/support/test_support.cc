#include "support/test_support.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

namespace prefixd::test {

uint64_t TestSeed() {
  if (const char* env = std::getenv("PREFIXD_TEST_SEED")) return std::strtoull(env, nullptr, 10);
  static std::random_device device;
  return (uint64_t(device()) << 32) ^ device();
}

std::vector<uint16_t> RandomBits(std::mt19937_64& rng, int64_t count, DType dtype, float scale) {
  std::uniform_real_distribution<float> dist(-scale, scale);
  std::vector<uint16_t> out(count);
  for (auto& x : out) x = kernels::FromFloat(dtype, dist(rng));
  return out;
}

HostKvPool RandomKvPool(std::mt19937_64& rng, const kernels::KvPoolShape& shape) {
  HostKvPool pool;
  pool.shape = shape;
  pool.k = RandomBits(rng, shape.ElementsPerArray(), shape.dtype, 1.0f);
  pool.v = RandomBits(rng, shape.ElementsPerArray(), shape.dtype, 1.0f);
  return pool;
}

void PlantKey(const HostKvPool& pool, int layer, int64_t slot, int kv_head, float gain,
              uint16_t* q_row) {
  const int d = pool.shape.head_dim;
  for (int i = 0; i < d; ++i)
    q_row[i] = kernels::FromFloat(pool.shape.dtype, gain * pool.K(layer, slot, kv_head, i));
}

RefState NaiveAttention(const HostKvPool& pool, int layer, int kv_head, const uint16_t* q_row,
                        const std::vector<int64_t>& slots, double sm_scale) {
  const int d = pool.shape.head_dim;
  RefState out{std::vector<double>(d, 0.0), -std::numeric_limits<double>::infinity()};
  if (slots.empty()) return out;
  std::vector<double> q(d), scores(slots.size());
  for (int i = 0; i < d; ++i) q[i] = kernels::ToFloat(pool.shape.dtype, q_row[i]);
  double m = -std::numeric_limits<double>::infinity();
  for (size_t j = 0; j < slots.size(); ++j) {
    double dot = 0;
    for (int i = 0; i < d; ++i) dot += q[i] * pool.K(layer, slots[j], kv_head, i);
    scores[j] = dot * sm_scale;
    m = std::max(m, scores[j]);
  }
  double sum = 0;
  for (size_t j = 0; j < slots.size(); ++j) {
    const double p = std::exp(scores[j] - m);
    sum += p;
    for (int i = 0; i < d; ++i) out.v[i] += p * pool.V(layer, slots[j], kv_head, i);
  }
  for (int i = 0; i < d; ++i) out.v[i] /= sum;
  out.s = (m + std::log(sum)) / std::log(2.0);
  return out;
}

std::vector<int64_t> RequestSlots(const kernels::DecodeBatch& batch, int request, int page_size) {
  std::vector<int64_t> slots;
  for (const auto& g : batch.groups) {
    if (request < g.first_request || request >= g.first_request + g.num_requests) continue;
    for (int64_t t = 0; t < g.prefix.num_tokens; ++t)
      slots.push_back(int64_t(g.prefix.first_page) * page_size + t);
  }
  const int64_t len = batch.suffix.SeqLen(request, page_size);
  for (int64_t t = 0; t < len; ++t) slots.push_back(batch.suffix.Slot(request, t, page_size));
  return slots;
}

void PoisonSlotsOutsideRequests(HostKvPool& pool, const kernels::DecodeBatch& batch, int layer) {
  std::vector<bool> used(size_t(pool.shape.num_pages) * pool.shape.page_size, false);
  for (int r = 0; r < batch.num_requests(); ++r)
    for (const int64_t slot : RequestSlots(batch, r, pool.shape.page_size)) used[size_t(slot)] = true;
  constexpr uint16_t kNaNBits = 0x7fff;  // NaN in fp16 and in bf16
  for (size_t slot = 0; slot < used.size(); ++slot) {
    if (used[slot]) continue;
    for (int h = 0; h < pool.shape.num_kv_heads; ++h) {
      const int64_t at = pool.shape.Offset(layer, int64_t(slot), h);
      std::fill_n(pool.k.begin() + at, pool.shape.head_dim, kNaNBits);
      std::fill_n(pool.v.begin() + at, pool.shape.head_dim, kNaNBits);
    }
  }
}

RefOutput NaiveCascade(const HostKvPool& pool, int layer, const kernels::DecodeBatch& batch,
                       const std::vector<uint16_t>& q, double sm_scale) {
  const int b = batch.num_requests(), h = batch.num_qo_heads, d = pool.shape.head_dim;
  const int g = h / pool.shape.num_kv_heads;
  RefOutput out{std::vector<double>(int64_t(b) * h * d), std::vector<double>(int64_t(b) * h)};
  for (int r = 0; r < b; ++r) {
    const auto slots = RequestSlots(batch, r, pool.shape.page_size);
    for (int head = 0; head < h; ++head) {
      const int64_t row = int64_t(r) * h + head;
      const RefState st = NaiveAttention(pool, layer, head / g, &q[row * d], slots, sm_scale);
      std::copy(st.v.begin(), st.v.end(), out.v.begin() + row * d);
      out.s[row] = st.s;
    }
  }
  return out;
}

CloseReport Compare(const float* got, const double* want, int64_t n) {
  CloseReport r;
  double num = 0, den = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(got[i])) {
      ++r.nan_count;
      continue;
    }
    const double e = std::abs(double(got[i]) - want[i]);
    num += e * e;
    den += want[i] * want[i];
    if (e > r.max_abs_err) {
      r.max_abs_err = e;
      r.worst_index = i;
    }
  }
  r.rel_err = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  return r;
}

void ExpectAllClose(const float* got, const double* want, int64_t n, double tol,
                    const std::string& what) {
  const CloseReport r = Compare(got, want, n);
  EXPECT_EQ(r.nan_count, 0) << what << ": " << r.nan_count << " non-finite values of " << n;
  EXPECT_LE(r.rel_err, tol) << what << ": relative error " << r.rel_err << " > " << tol
                            << " (max abs err " << r.max_abs_err << " at " << r.worst_index
                            << ": got " << (r.worst_index >= 0 ? got[r.worst_index] : 0.f)
                            << ", want " << (r.worst_index >= 0 ? want[r.worst_index] : 0.0) << ")";
}

void ExpectLseClose(const float* got, const double* want, int64_t n, double tol,
                    const std::string& what) {
  int64_t bad = 0, first_bad = -1;
  for (int64_t i = 0; i < n; ++i) {
    bool ok;
    if (std::isinf(want[i]) && want[i] < 0) ok = std::isinf(got[i]) && got[i] < 0;
    else ok = std::isfinite(got[i]) && std::abs(double(got[i]) - want[i]) <= tol * std::max(1.0, std::abs(want[i]));
    if (!ok && bad++ == 0) first_bad = i;
  }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << n << " LSE values off; first at "
                    << first_bad << ": got " << (first_bad >= 0 ? got[first_bad] : 0.f)
                    << ", want " << (first_bad >= 0 ? want[first_bad] : 0.0);
}

double OutputTolerance(DType dtype) {
  // Inputs are exact in both paths; the error comes from fp32 accumulation and, on the GPU,
  // rounding P (the softmax probabilities) to the input dtype before the P·V product.
  return dtype == DType::kFloat16 ? 2e-3 : 1e-2;
}

}  // namespace prefixd::test
