// The reference attention math (internal to kernels/): one tile of query rows against a range of
// KV tokens of one KV head, producing attention states (fp32 v, base-2 LSE).
//
// Deliberately plain: float32 loops and an online softmax over blocks of keys. It shares no code
// with the CUDA kernels so that it can catch their bugs. Each block of K/V is converted to float
// once and reused by every row of the tile, which is the multi-query structure of the prefix
// kernel and keeps the CPU backend fast enough for multi-rank tests.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "prefixd/kernels/dtype.h"
#include "prefixd/kernels/state.h"

namespace prefixd::kernels::ref {

constexpr int kTileRows = 64;   // query rows attended together
constexpr int kKeyBlock = 64;   // keys converted and scored per step
constexpr float kLog2e = 1.4426950408889634f;

// fp16/bf16 bits → float for n values (fp16 through a 64K-entry table built once).
void DecodeRow(DType dtype, const uint16_t* src, int n, float* dst);

// One layer of the pool: element (slot, kv_head, d) at k[slot · token_stride + kv_head · head_dim + d].
struct KvLayer {
  const uint16_t* k = nullptr;
  const uint16_t* v = nullptr;
  int64_t token_stride = 0;
  int head_dim = 0;
  DType dtype = DType::kFloat16;
};

// Fixed-size buffers for one tile, allocated once per backend so that run methods never allocate.
// Rows are max_head_dim floats apart.
struct TileScratch {
  explicit TileScratch(int max_head_dim)
      : d_(max_head_dim),
        q_(size_t(kTileRows) * d_),
        acc_(size_t(kTileRows) * d_),
        k_(size_t(kKeyBlock) * d_),
        v_(size_t(kKeyBlock) * d_),
        m_(kTileRows),
        l_(kTileRows),
        row_end_(kTileRows) {}
  float* q(int row) { return &q_[size_t(row) * d_]; }
  int32_t* row_end() { return row_end_.data(); }

  int d_;
  std::vector<float> q_, acc_, k_, v_, m_, l_;  // queries, running sums, K/V block, running max/sum
  std::vector<int32_t> row_end_;                // causal limit of each row (exclusive)
};

// Loads a query row (dtype bits) into the tile, pre-multiplied by sm_scale · log2(e) so that
// scores come out in base 2 (exp2 / log2 throughout, as state.h requires).
inline void LoadQueryRow(DType dtype, const uint16_t* q_row, int head_dim, float scale_log2, float* dst) {
  DecodeRow(dtype, q_row, head_dim, dst);
  for (int d = 0; d < head_dim; ++d) dst[d] *= scale_log2;
}

// Eight independent partial sums: vectorisable without -ffast-math, and rounds a little better.
inline float Dot(const float* a, const float* b, int n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  for (int i = 0; i < n; i += 8)
    for (int j = 0; j < 8; ++j) acc[j] += a[i + j] * b[i + j];
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

// States of tile rows [0, rows) (queries in scratch.q(), already scaled) over tokens
// [kv_begin, kv_end) of kv_head; token t lives at pool slot slot_of(t). With limit_rows, row i
// only sees tokens below scratch.row_end()[i] (causal masking). Each row's state goes to
// write(row, v, s); a row that sees no token gets the empty state (0, −inf).
template <typename SlotOf, typename Write>
void AttendTile(const KvLayer& kv, int kv_head, int rows, int32_t kv_begin, int32_t kv_end, bool limit_rows,
                SlotOf slot_of, TileScratch& s, Write write) {
  const int dim = kv.head_dim;
  const float neg_inf = -std::numeric_limits<float>::infinity();
  for (int i = 0; i < rows; ++i) {
    s.m_[i] = neg_inf;
    s.l_[i] = 0.f;
    std::fill_n(&s.acc_[size_t(i) * s.d_], dim, 0.f);
  }
  float scores[kKeyBlock];
  for (int32_t t0 = kv_begin; t0 < kv_end; t0 += kKeyBlock) {
    const int nb = std::min<int32_t>(kKeyBlock, kv_end - t0);
    for (int j = 0; j < nb; ++j) {
      const int64_t off = slot_of(t0 + j) * kv.token_stride + int64_t(kv_head) * dim;
      DecodeRow(kv.dtype, kv.k + off, dim, &s.k_[size_t(j) * s.d_]);
      DecodeRow(kv.dtype, kv.v + off, dim, &s.v_[size_t(j) * s.d_]);
    }
    for (int i = 0; i < rows; ++i) {
      const int n = limit_rows ? std::min<int32_t>(nb, s.row_end_[i] - t0) : nb;
      if (n <= 0) continue;
      const float* q = &s.q_[size_t(i) * s.d_];
      float block_max = neg_inf;
      for (int j = 0; j < n; ++j) {
        scores[j] = Dot(q, &s.k_[size_t(j) * s.d_], dim);
        block_max = std::max(block_max, scores[j]);
      }
      const float m_new = std::max(s.m_[i], block_max);
      const float rescale = std::exp2(s.m_[i] - m_new);  // m = −inf on the first block: 0
      float* acc = &s.acc_[size_t(i) * s.d_];
      float l = s.l_[i] * rescale;
      for (int d = 0; d < dim; ++d) acc[d] *= rescale;
      for (int j = 0; j < n; ++j) {
        const float p = std::exp2(scores[j] - m_new);
        l += p;
        const float* v = &s.v_[size_t(j) * s.d_];
        for (int d = 0; d < dim; ++d) acc[d] += p * v[d];
      }
      s.l_[i] = l;
      s.m_[i] = m_new;
    }
  }
  for (int i = 0; i < rows; ++i) {
    float* acc = &s.acc_[size_t(i) * s.d_];
    if (s.l_[i] == 0.f) {  // saw no token: the empty state
      std::fill_n(acc, dim, 0.f);
      write(i, static_cast<const float*>(acc), kEmptyLse<float>);
      continue;
    }
    const float inv = 1.f / s.l_[i];
    for (int d = 0; d < dim; ++d) acc[d] *= inv;
    write(i, static_cast<const float*>(acc), s.m_[i] + std::log2(s.l_[i]));
  }
}

}  // namespace prefixd::kernels::ref
