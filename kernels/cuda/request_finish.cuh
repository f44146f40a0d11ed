// Device side of RequestFinish (request_finish.h): an arrival, and the ⊕ of a request's run by one
// warp.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "kernels/cuda/request_finish.h"
#include "kernels/cuda/store_cast.cuh"

namespace prefixd::kernels::cuda {

// One arrival at (request, kv_head), by one thread, after every thread that stored the arrival's
// states has made them visible device-wide (__threadfence, then a barrier over those threads).
// True for the last arrival: the counter is then reset and the run is the caller's to finish
// (FinishRequest, on a whole warp).
__device__ __forceinline__ bool ArriveAtRequest(const RequestFinish& f, const int32_t* state_indptr, int num_kv_heads,
                                                int request, int kv_head) {
  int32_t* const counter = f.counters + int64_t(request) * num_kv_heads + kv_head;
  const int run = state_indptr[request + 1] - state_indptr[request];
  if (atomicAdd(counter, 1) + 1 != run) return false;
  atomicExch(counter, 0);  // no other arrival this step; the next step's come after this grid
  return f.diag != 1;
}

// The ⊕ of request's run (slots [state_indptr[request], state_indptr[request + 1])) for the g query
// heads of kv_head, by the whole warp, into f's outputs, after a __threadfence by every lane since
// the last arrival (so that the other arrivals' states, fenced before they were counted, are seen;
// one fence serves several requests finished in a row). Each lane holds 4 float4 of a pass's heads
// (512 / HEAD_DIM heads per pass) and merges the run online, BATCH states' loads in flight at a
// time. The states come from L2 (ld.global.cg): other SMs wrote them, and this SM's L1 may hold
// lines of an earlier step. An empty state (s = −inf) weighs nothing and its v is never multiplied
// in (it may be poison); a run of empty states only gives the empty state (0, −inf).
template <int HEAD_DIM, int BATCH>
__device__ __forceinline__ void FinishRequest(const RequestFinish& f, const float* partial_v, const float* partial_s,
                                              const int32_t* state_indptr, int num_qo_heads, int gqa, int request,
                                              int kv_head, int lane) {
  constexpr int kD4 = HEAD_DIM / 4, kPerLane = 4, kHeadsPerPass = 32 * kPerLane / kD4;
  static_assert(kHeadsPerPass >= 1 && 32 * kPerLane % kD4 == 0, "a pass holds whole heads");
  const int first = state_indptr[request];
  const int n = state_indptr[request + 1] - first;
  for (int h0 = 0; h0 < gqa; h0 += kHeadsPerPass) {
    int head[kPerLane], d4[kPerLane];
    bool valid[kPerLane];
    float m[kPerLane], sum[kPerLane];
    float4 acc[kPerLane];
#pragma unroll
    for (int k = 0; k < kPerLane; ++k) {
      const int e = lane + 32 * k;
      valid[k] = h0 + e / kD4 < gqa;
      head[k] = kv_head * gqa + h0 + e / kD4;
      d4[k] = e % kD4;
      m[k] = -INFINITY;
      sum[k] = 0.f;
      acc[k] = make_float4(0.f, 0.f, 0.f, 0.f);
    }
    for (int i0 = 0; i0 < n; i0 += BATCH) {
      float s[BATCH][kPerLane];
      float4 x[BATCH][kPerLane];
#pragma unroll
      for (int b = 0; b < BATCH; ++b)
#pragma unroll
        for (int k = 0; k < kPerLane; ++k) {
          const bool in = valid[k] && i0 + b < n;
          const int64_t state = int64_t(first + i0 + b) * num_qo_heads + head[k];
          s[b][k] = in ? __ldcg(partial_s + state) : -INFINITY;
          x[b][k] = in ? __ldcg(reinterpret_cast<const float4*>(partial_v + state * HEAD_DIM) + d4[k])
                       : make_float4(0.f, 0.f, 0.f, 0.f);
        }
#pragma unroll
      for (int b = 0; b < BATCH; ++b)
#pragma unroll
        for (int k = 0; k < kPerLane; ++k) {
          if (s[b][k] == -INFINITY) continue;
          const float m_new = fmaxf(m[k], s[b][k]);
          const float rescale = exp2f(m[k] - m_new);  // 0 while nothing was merged (m = −inf)
          const float w = exp2f(s[b][k] - m_new);
          m[k] = m_new;
          sum[k] = sum[k] * rescale + w;
          acc[k].x = acc[k].x * rescale + w * x[b][k].x;
          acc[k].y = acc[k].y * rescale + w * x[b][k].y;
          acc[k].z = acc[k].z * rescale + w * x[b][k].z;
          acc[k].w = acc[k].w * rescale + w * x[b][k].w;
        }
    }
#pragma unroll
    for (int k = 0; k < kPerLane; ++k) {
      if (!valid[k]) continue;
      const float inv = sum[k] > 0.f ? 1.f / sum[k] : 0.f;
      const float4 out = make_float4(acc[k].x * inv, acc[k].y * inv, acc[k].z * inv, acc[k].w * inv);
      const int64_t row = int64_t(request) * num_qo_heads + head[k];
      if (f.v_out != nullptr) reinterpret_cast<float4*>(f.v_out + row * HEAD_DIM)[d4[k]] = out;
      if (f.o != nullptr) StoreCast4(f.out_dtype, f.o, row * HEAD_DIM + 4 * d4[k], out);
      if (d4[k] == 0 && f.s_out != nullptr) f.s_out[row] = sum[k] > 0.f ? m[k] + log2f(sum[k]) : -INFINITY;
    }
  }
}

}  // namespace prefixd::kernels::cuda
