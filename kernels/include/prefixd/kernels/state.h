// The attention state and the merge operator ⊕ (seeds 000 and 002), host side.
//
// For one query row and a set I of keys, with scores x_j = sm_scale · (q · k_j):
//   s(I) = log2( Σ_{j∈I} exp(x_j) )                 -- BASE-2 log-sum-exp, everywhere in prefixd
//   v(I) = Σ_{j∈I} exp(x_j − ln2·s(I)) · v_j         -- the softmax-weighted value, normalised over I
// The empty set is (v = 0, s = −inf).
//
//   (v_a, s_a) ⊕ (v_b, s_b) = ( (w_a v_a + w_b v_b) / (w_a + w_b),  m + log2(w_a + w_b) )
//   with m = max(s_a, s_b), w_a = 2^(s_a − m), w_b = 2^(s_b − m).
//
// ⊕ is commutative and associative, so a KV set can be cut anywhere (pages, GPUs) and the pieces'
// states combined in any order. Subtracting m keeps |s| up to 1e4 (and beyond) finite; two empty
// states merge to the empty state, never NaN. The CUDA kernels use the same base-2 convention
// (scores pre-multiplied by log2(e), exp2f), see kernels/cuda/state.cuh.
#pragma once

#include <cmath>
#include <limits>

namespace prefixd::kernels {

template <typename T>
constexpr T kEmptyLse = -std::numeric_limits<T>::infinity();

// (v_out, s_out) = (v_a, s_a) ⊕ (v_b, s_b); v_out may alias v_a or v_b (in-place merge).
template <typename T>
inline void MergeState(const T* v_a, T s_a, const T* v_b, T s_b, int head_dim, T* v_out, T* s_out) {
  const T m = s_a > s_b ? s_a : s_b;
  if (m == kEmptyLse<T>) {  // both empty (also guards −inf − (−inf) = NaN)
    for (int d = 0; d < head_dim; ++d) v_out[d] = T(0);
    *s_out = kEmptyLse<T>;
    return;
  }
  const T w_a = std::exp2(s_a - m);
  const T w_b = std::exp2(s_b - m);
  const T inv = T(1) / (w_a + w_b);
  for (int d = 0; d < head_dim; ++d) v_out[d] = (w_a * v_a[d] + w_b * v_b[d]) * inv;
  *s_out = m + std::log2(w_a + w_b);
}

// N-ary merge: states i = 0..n-1 at v + i·v_stride (head_dim values) and s[i·s_stride].
// One pass: max first, then a weighted sum, so it costs no more than n binary merges and rounds less.
template <typename T>
inline void MergeStates(const T* v, long v_stride, const T* s, long s_stride, int n, int head_dim,
                        T* v_out, T* s_out) {
  T m = kEmptyLse<T>;
  for (int i = 0; i < n; ++i) m = s[i * s_stride] > m ? s[i * s_stride] : m;
  for (int d = 0; d < head_dim; ++d) v_out[d] = T(0);
  if (m == kEmptyLse<T>) {
    *s_out = kEmptyLse<T>;
    return;
  }
  T sum_w = 0;
  for (int i = 0; i < n; ++i) {
    const T w = std::exp2(s[i * s_stride] - m);
    if (w == T(0)) continue;
    sum_w += w;
    for (int d = 0; d < head_dim; ++d) v_out[d] += w * v[i * v_stride + d];
  }
  const T inv = T(1) / sum_w;
  for (int d = 0; d < head_dim; ++d) v_out[d] *= inv;
  *s_out = m + std::log2(sum_w);
}

// Natural-log ⇄ base-2 LSE, for callers that want the other convention.
template <typename T>
inline T Lse2ToLn(T s2) { return s2 * T(0.6931471805599453); }

}  // namespace prefixd::kernels
