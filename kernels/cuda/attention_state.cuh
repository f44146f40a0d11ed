// Device-side attention-state helpers, base 2 (the host-side definitions are in
// prefixd/kernels/state.h). Scores are pre-multiplied by log2(e) (sm_scale_log2), so every
// exponential is a single ex2 instruction and the LSE comes out in base 2 directly.
//
// Empty state: (v = 0, s = −inf). Every helper here keeps it NaN-free: a running max of −inf is
// replaced by 0 before it is subtracted, so exp2(−inf − 0) = 0 instead of exp2(−inf + inf) = NaN.
#pragma once

#include <cuda_runtime.h>

#include <cmath>

namespace prefixd::kernels::cuda {

// 2^x with the hardware approximation (rel. error ~2^-22); exp2(−inf) = +0, subnormals flush to 0.
__device__ __forceinline__ float FastExp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// 1 / x and log2(x) with the hardware approximations (rel. error ~2^-23 and abs. ~2^-22), for x > 0.
__device__ __forceinline__ float FastRcp(float x) {
  float y;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
__device__ __forceinline__ float FastLog2(float x) {
  float y;
  asm("lg2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// The max to subtract from scores when the running max may still be −inf (no key seen yet).
__device__ __forceinline__ float SafeMax(float m) { return m == -INFINITY ? 0.f : m; }

// Reductions over the 4 lanes of an mma quad (lanes 4i..4i+3 share the rows of a C fragment).
__device__ __forceinline__ float QuadMax(float x) {
  x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
  return fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
}
__device__ __forceinline__ float QuadSum(float x) {
  x += __shfl_xor_sync(0xffffffffu, x, 1);
  return x + __shfl_xor_sync(0xffffffffu, x, 2);
}

// Base-2 LSE of a row whose probabilities 2^(x − m) summed to `sum`; −inf when nothing was seen.
__device__ __forceinline__ float FinalLse(float m, float sum) {
  return sum > 0.f ? m + log2f(sum) : -INFINITY;
}

// Weights of two states in their merge: w_a = 2^(s_a − m), w_b = 2^(s_b − m), m = max(s_a, s_b);
// both 0 when both states are empty (the caller then writes the empty state).
__device__ __forceinline__ void MergeWeights(float s_a, float s_b, float* w_a, float* w_b,
                                             float* m) {
  *m = fmaxf(s_a, s_b);
  const float safe = SafeMax(*m);
  *w_a = FastExp2(s_a - safe);
  *w_b = FastExp2(s_b - safe);
}

}  // namespace prefixd::kernels::cuda
