// State-merge kernels: n-ary ⊕ over runs of partial states, binary in-place ⊕, and the fp32 → dtype
// cast of final outputs. The n-ary kernels are built for each way a state's v may be stored (VIn:
// fp32, or the model's fp16 / bf16, MergeStatesParams::v_in_16bit). One warp per row (two for
// short runs of a large merge; runs of 5-8 states with all their loads at once:
// MergeShortRunsKernel; one block per row for long runs of few rows: MergeLongRunsKernel): a row is
// at most 256 values, so a warp's four-value loads cover it in two passes and the one-warp merges
// need no shared memory or block barrier.

#include "kernels/cuda/merge_states.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "kernels/cuda/programmatic_launch.cuh"
#include "kernels/cuda/resident_ctas.cuh"
#include "prefixd/common/cuda_check.h"

namespace prefixd::kernels::cuda {
namespace {

constexpr int kWarpsPerBlock = 4;
constexpr int kWarpSize = 32;

__device__ __forceinline__ float WarpMax(float x) {
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2)
    x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, offset));
  return x;
}

__device__ __forceinline__ float WarpSum(float x) {
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2)
    x += __shfl_xor_sync(0xffffffffu, x, offset);
  return x;
}

// Four floats → four dtype values at out (8 bytes, aligned because head_dim % 4 == 0).
__device__ __forceinline__ void StoreCast4(DType dtype, void* out, int64_t index, float4 x) {
  if (dtype == DType::kFloat16) {
    __half2* p = reinterpret_cast<__half2*>(static_cast<__half*>(out) + index);
    p[0] = __floats2half2_rn(x.x, x.y);
    p[1] = __floats2half2_rn(x.z, x.w);
  } else {
    __nv_bfloat162* p =
        reinterpret_cast<__nv_bfloat162*>(static_cast<__nv_bfloat16*>(out) + index);
    p[0] = __floats2bfloat162_rn(x.x, x.y);
    p[1] = __floats2bfloat162_rn(x.z, x.w);
  }
}

// Values 4·index4 .. 4·index4 + 3 of v (its quad index4), stored as VIn (fp32, __half or
// __nv_bfloat16), as fp32: one 16-byte load for fp32, one 8-byte load for the 16-bit types
// (head_dim % 4 == 0 keeps it aligned). The kernels index a state's v by quads (state_quads).
template <typename VIn>
__device__ __forceinline__ float4 LoadValues4(const VIn* v, int64_t index4) {
  if constexpr (std::is_same_v<VIn, float>) {
    return reinterpret_cast<const float4*>(v)[index4];
  } else {
    const uint2 u = reinterpret_cast<const uint2*>(v)[index4];
    float2 lo, hi;
    if constexpr (std::is_same_v<VIn, __half>) {
      lo = __half22float2(*reinterpret_cast<const __half2*>(&u.x));
      hi = __half22float2(*reinterpret_cast<const __half2*>(&u.y));
    } else {
      lo = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&u.x));
      hi = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&u.y));
    }
    return make_float4(lo.x, lo.y, hi.x, hi.y);
  }
}

// Resident blocks per SM the merge kernel is built for (__launch_bounds__): registers for at
// most 64 per thread, so that a merge of B · H rows runs in few waves. Each wave costs a chain of
// dependent memory latencies (run bounds → states → outputs); at 120 registers (4 blocks per SM) the
// 8192-row merge of a 32/8 B256 step took 3.9 waves and 12.4 µs on the H200 (bench/RESULTS.md,
// session 48).
constexpr int kMergeBlocksPerSm = 8;

constexpr int kBatch = 4;  // states whose v loads are in flight together, per row
// The longest run MergeShortRunsKernel takes at one row per warp (its 8 float4 loads in 32 registers).
constexpr int kWideStates = 8;

// Where the states of a warp's rows are. The rows are row0 .. row0 + kRows − 1 (MergeStatesKernel):
// consecutive heads of one request in runs mode, consecutive rows in fixed-n mode, so that row j's
// state i is at v_in[(first + j + i · stride) · head_dim], s_in[first + j + i · stride] and its
// output row is out_row + j.
struct MergeRun {
  int n;            // states per row
  int head;         // runs mode: row 0's query head (row j's: head + j); fixed-n mode: 0
  int64_t first;
  int64_t stride;
  int64_t out_row;
  int packed_row;   // MergeStatesParams::packed_row of the request, or −1: the usual outputs
};

__device__ __forceinline__ MergeRun FindMergeRun(const MergeStatesParams& p, int row0) {
  MergeRun run;
  run.packed_row = -1;
  if (p.run_indptr != nullptr) {
    const int head = row0 % p.num_heads;
    const int request = p.requests != nullptr ? p.requests[row0 / p.num_heads] : row0 / p.num_heads;
    int begin;
    if (p.uniform_run_states > 0) {  // the run bounds by arithmetic (MergeStatesParams::uniform_run_states)
      run.n = p.uniform_run_states;
      begin = request * run.n;
    } else {
      begin = p.run_indptr[request];
      run.n = p.run_indptr[request + 1] - begin;
    }
    run.head = head;
    run.first = int64_t(begin) * p.num_heads + head;
    run.stride = p.num_heads;
    run.out_row = int64_t(request) * p.num_heads + head;
    if (p.packed_row != nullptr) run.packed_row = p.packed_row[request];
  } else {
    run.n = p.num_states;
    run.head = 0;
    run.first = row0;
    run.stride = p.rows;
    run.out_row = row0;
  }
  return run;
}

// Row j's KV head's bits of MergeStatesParams::empty_states, shifted so that bit i · num_kv_heads is
// its state i (0 without a mask): one division per row, off the loads' path.
__device__ __forceinline__ uint64_t RowEmptyStates(const MergeStatesParams& p, const MergeRun& run, int j) {
  return p.empty_states == 0 ? 0 : p.empty_states >> ((run.head + j) / (p.num_heads / p.num_kv_heads));
}

// Whether state i is known empty from the row's bits (RowEmptyStates), so that its v need not be loaded.
__device__ __forceinline__ bool KnownEmptyState(const MergeStatesParams& p, uint64_t row_bits, int i) {
  const int bit = i * p.num_kv_heads;
  return row_bits != 0 && bit < 64 && ((row_bits >> bit) & 1) != 0;
}

// The plan said state i is empty: its s must say so too (a wrong mask would drop a state's v).
__device__ __forceinline__ void CheckKnownEmptyState(const MergeStatesParams& p, uint64_t row_bits, int i, float s_i) {
  if (s_i != -INFINITY && KnownEmptyState(p, row_bits, i)) __trap();
}

// Row j's merged float4 d4: to its packed row (MergeStatesParams::packed_row; a packed row is
// H · (D + 1) floats, 16-byte aligned only for H % 4 == 0), else to v_out and o.
__device__ __forceinline__ void StoreMergedValues(const MergeStatesParams& p, const MergeRun& run, int j, int d4,
                                                  float4 x) {
  const int64_t row = run.out_row + j;
  if (run.packed_row >= 0) {
    const int head = int(row % p.num_heads);
    float* v = p.packed_out + int64_t(run.packed_row) * p.num_heads * (p.head_dim + 1) + int64_t(head) * p.head_dim;
    if ((reinterpret_cast<uintptr_t>(v) & 15) == 0) {
      reinterpret_cast<float4*>(v)[d4] = x;
    } else {
      v[4 * d4] = x.x;
      v[4 * d4 + 1] = x.y;
      v[4 * d4 + 2] = x.z;
      v[4 * d4 + 3] = x.w;
    }
    return;
  }
  const int64_t index = row * p.head_dim + d4 * 4;
  if (p.v_out != nullptr) reinterpret_cast<float4*>(p.v_out + index)[0] = x;
  if (p.o != nullptr) StoreCast4(p.out_dtype, p.o, index, x);
}

__device__ __forceinline__ void StoreMergedLse(const MergeStatesParams& p, const MergeRun& run, int j, float s) {
  const int64_t row = run.out_row + j;
  if (run.packed_row >= 0) {
    const int head = int(row % p.num_heads);
    p.packed_out[int64_t(run.packed_row) * p.num_heads * (p.head_dim + 1) + int64_t(p.num_heads) * p.head_dim + head] = s;
  } else if (p.s_out != nullptr) {
    p.s_out[row] = s;
  }
}

// The largest LSE m of a run of n states (state i's s at s_in[first + i · stride], loaded by lane
// i mod 32 and checked against the plan's empty mask) and the sum of the weights 2^(s_i − m), over
// the warp, as (m, sum): (−inf, 0) for a run of empty states only.
__device__ __forceinline__ float2 RunMaxAndWeightSum(const MergeStatesParams& p, int64_t first, int64_t stride, int n,
                                                     uint64_t row_empty, int lane) {
  float m = -INFINITY, sum_w = 0.f;
  for (int i = lane; i < n; i += kWarpSize) {
    const float s_i = p.s_in[first + i * stride];
    CheckKnownEmptyState(p, row_empty, i, s_i);
    m = fmaxf(m, s_i);
  }
  m = WarpMax(m);
  if (m != -INFINITY) {
    for (int i = lane; i < n; i += kWarpSize) sum_w += exp2f(p.s_in[first + i * stride] - m);
    sum_w = WarpSum(sum_w);
  }
  return make_float2(m, sum_w);
}

// Row j of the run, any length and head_dim: kBatch states' loads in flight at a time.
template <typename VIn>
__device__ __forceinline__ void MergeOneRow(const MergeStatesParams& p, const MergeRun& run, int j, int lane) {
  const int n = run.n;
  const int64_t first = run.first + j, stride = run.stride;
  const int d4_count = p.head_dim / 4;
  const VIn* const v_first = static_cast<const VIn*>(p.v_in) + first * p.head_dim;
  const int64_t state_quads = stride * d4_count;
  const uint64_t row_empty = RowEmptyStates(p, run, j);
  auto load_v = [&](int i, int d4) {
    return i < n && !KnownEmptyState(p, row_empty, i) ? LoadValues4(v_first, i * state_quads + d4)
                                                      : make_float4(0.f, 0.f, 0.f, 0.f);
  };
  // The v loads of the first batch go out with the s loads, before the LSE reduction below.
  float4 x[kBatch];
#pragma unroll
  for (int k = 0; k < kBatch; ++k) x[k] = lane < d4_count ? load_v(k, lane) : make_float4(0.f, 0.f, 0.f, 0.f);

  // Passes 1-2: the largest LSE of the run m (so every weight 2^(s_i − m) is ≤ 1, no overflow),
  // then the sum of the weights. Runs of up to 32 states keep s_i in lane i's register, where pass
  // 3 takes it by shuffle.
  const bool s_in_lanes = n <= kWarpSize;
  float s_lane = -INFINITY, m = -INFINITY, sum_w = 0.f;
  if (s_in_lanes) {
    if (lane < n) s_lane = p.s_in[first + lane * stride];
    if (lane < n) CheckKnownEmptyState(p, row_empty, lane, s_lane);
    m = WarpMax(s_lane);
    if (m != -INFINITY) sum_w = WarpSum(exp2f(s_lane - m));
  } else {
    const float2 lse = RunMaxAndWeightSum(p, first, stride, n, row_empty, lane);
    m = lse.x;
    sum_w = lse.y;
  }
  // An empty run (or one of empty states only) is the empty state: v = 0, s = −inf.
  const float inv = m == -INFINITY ? 0.f : 1.f / sum_w;

  // Pass 3: the weighted sum of v, kBatch states at a time, their loads all independent of each
  // other (a state's v is loaded whatever its weight and dropped by a select, so no load waits on
  // an exp2): a row of n states costs ceil(n / kBatch) memory latencies, not n. Every lane runs
  // every round, also past the row's end (head_dim < 128), because the weights come by a
  // whole-warp shuffle.
  for (int d4_base = 0; d4_base < d4_count; d4_base += kWarpSize) {
    const int d4 = d4_base + lane;
    const bool active = d4 < d4_count;
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
    if (m != -INFINITY) {
#pragma unroll 1
      for (int i0 = 0; i0 < n; i0 += kBatch) {
        if (i0 > 0 || d4_base > 0) {
#pragma unroll
          for (int k = 0; k < kBatch; ++k) x[k] = active ? load_v(i0 + k, d4) : make_float4(0.f, 0.f, 0.f, 0.f);
        }
#pragma unroll
        for (int k = 0; k < kBatch; ++k) {
          if (i0 + k >= n) break;  // uniform over the warp, as the shuffle needs
          const float s_i = s_in_lanes ? __shfl_sync(0xffffffffu, s_lane, i0 + k) : p.s_in[first + (i0 + k) * stride];
          const float wk = exp2f(s_i - m);  // 0 for an empty state (s = −inf)
          if (wk == 0.f) continue;          // its v may be poison: never multiply it in
          acc.x += wk * x[k].x;
          acc.y += wk * x[k].y;
          acc.z += wk * x[k].z;
          acc.w += wk * x[k].w;
        }
      }
    }
    if (active) StoreMergedValues(p, run, j, d4, make_float4(acc.x * inv, acc.y * inv, acc.z * inv, acc.w * inv));
  }
  if (lane == 0) StoreMergedLse(p, run, j, m == -INFINITY ? m : m + log2f(sum_w));
}

// The n-ary merge, one row per warp: any run length and head_dim.
template <typename VIn>
__global__ void __launch_bounds__(kWarpsPerBlock * kWarpSize, kMergeBlocksPerSm) MergeStatesKernel(MergeStatesParams p) {
  WaitForPrimaryGrid();  // MergeStatesParams::programmatic_launch
  const int lane = threadIdx.x % kWarpSize;
  const int row = blockIdx.x * kWarpsPerBlock + threadIdx.x / kWarpSize;
  if (row >= p.rows) return;
  MergeOneRow<VIn>(p, FindMergeRun(p, row), 0, lane);
}

// The n-ary merge of short runs (at most kStates states: MergeStatesParams::max_run_states) at
// head_dim ≤ 128, kRows rows per warp: every state of the warp's rows loaded at once, one memory
// latency for them all. Two rows of at most kBatch states: a merge larger than the resident warps
// takes half the waves (each wave a chain of dependent loads: run bounds → states → outputs). One
// row of at most kWideStates: a run of 5-8 states (the concurrent mode's prefix-stream chunks and
// decode state) in one latency instead of MergeOneRow's two batches. A separate kernel from the
// general one: with MergeOneRow's loops beside it, ptxas spilled this path's loads at 64 registers.
// The arithmetic is MergeOneRow's, state by state in the same order.
template <typename VIn, int kRows, int kStates>
__global__ void __launch_bounds__(kWarpsPerBlock * kWarpSize, kMergeBlocksPerSm) MergeShortRunsKernel(MergeStatesParams p) {
  WaitForPrimaryGrid();  // MergeStatesParams::programmatic_launch
  const int lane = threadIdx.x % kWarpSize;
  const int row0 = (blockIdx.x * kWarpsPerBlock + threadIdx.x / kWarpSize) * kRows;
  if (row0 >= p.rows) return;
  const int rows_here = min(kRows, p.rows - row0);  // warp-uniform
  const MergeRun run = FindMergeRun(p, row0);
  const int n = run.n, d4_count = p.head_dim / 4;
  if (n > kStates) __trap();  // the launcher's max_run_states was wrong: never merge a run in part
  const VIn* const v_first = static_cast<const VIn*>(p.v_in) + run.first * p.head_dim;
  const int64_t state_quads = run.stride * d4_count;
  float4 x[kRows][kStates];
  float s_lane[kRows];
  uint64_t row_empty[kRows];
#pragma unroll
  for (int j = 0; j < kRows; ++j) row_empty[j] = RowEmptyStates(p, run, j);
#pragma unroll
  for (int j = 0; j < kRows; ++j) {
    const bool row = j < rows_here;
#pragma unroll
    for (int k = 0; k < kStates; ++k)
      x[j][k] = row && k < n && lane < d4_count && !KnownEmptyState(p, row_empty[j], k)
                    ? LoadValues4(v_first, k * state_quads + j * d4_count + lane)
                    : make_float4(0.f, 0.f, 0.f, 0.f);
    s_lane[j] = row && lane < n ? p.s_in[run.first + j + lane * run.stride] : -INFINITY;
  }
#pragma unroll
  for (int j = 0; j < kRows; ++j)
    if (j < rows_here && lane < n) CheckKnownEmptyState(p, row_empty[j], lane, s_lane[j]);
#pragma unroll
  for (int j = 0; j < kRows; ++j) {
    if (j >= rows_here) break;
    // m: the largest LSE, so that every weight 2^(s_i − m) is ≤ 1; lane i holds state i's weight.
    const float m = WarpMax(s_lane[j]);
    const float w_lane = m == -INFINITY ? 0.f : exp2f(s_lane[j] - m);  // 0 for an empty state
    const float sum_w = WarpSum(w_lane);
    const float inv = m == -INFINITY ? 0.f : 1.f / sum_w;  // all empty: the empty state (0, −inf)
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
    for (int k = 0; k < kStates; ++k) {
      const float wk = __shfl_sync(0xffffffffu, w_lane, k);
      if (wk == 0.f) continue;  // an empty state's v (or a state past the run) may be poison
      acc.x += wk * x[j][k].x;
      acc.y += wk * x[j][k].y;
      acc.z += wk * x[j][k].z;
      acc.w += wk * x[j][k].w;
    }
    if (lane < d4_count) StoreMergedValues(p, run, j, lane, make_float4(acc.x * inv, acc.y * inv, acc.z * inv, acc.w * inv));
    if (lane == 0) StoreMergedLse(p, run, j, m == -INFINITY ? m : m + log2f(sum_w));
  }
}

// The n-ary merge of few rows with long runs: one block per row, its kWarpsPerBlock warps each
// taking every kWarpsPerBlock-th state of the run (kBatch loads in flight per warp, as MergeOneRow),
// their partial sums added in shared memory in warp order. A run of n states costs
// ceil(n / (kWarpsPerBlock · kBatch)) memory latencies per 128 floats of head_dim instead of
// MergeOneRow's ceil(n / kBatch): plain decode of one or a few requests over a long prefix merges
// runs of 30-50 chunk states per row, which took 13-26 µs one warp per row (H200, bench/RESULTS.md,
// session 75). Worth it only where one warp per row leaves the SMs' warps idle (MergeLongRuns).
template <typename VIn>
__global__ void __launch_bounds__(kWarpsPerBlock * kWarpSize, kMergeBlocksPerSm) MergeLongRunsKernel(MergeStatesParams p) {
  WaitForPrimaryGrid();  // MergeStatesParams::programmatic_launch
  constexpr int kMaxFloat4s = 256 / 4;  // the largest head_dim's float4s
  __shared__ float4 partial[kWarpsPerBlock][kMaxFloat4s];
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  const MergeRun run = FindMergeRun(p, blockIdx.x);
  const int n = run.n, d4_count = p.head_dim / 4;
  const VIn* const v_first = static_cast<const VIn*>(p.v_in) + run.first * p.head_dim;
  const int64_t state_quads = run.stride * d4_count;
  const uint64_t row_empty = RowEmptyStates(p, run, 0);
  // m and the sum of the weights over the whole run, in every warp (the s loads are a few bytes;
  // each warp needs m for its own weights).
  const float2 lse = RunMaxAndWeightSum(p, run.first, run.stride, n, row_empty, lane);
  const float m = lse.x, sum_w = lse.y;
  const float inv = m == -INFINITY ? 0.f : 1.f / sum_w;
  for (int d4_base = 0; d4_base < d4_count; d4_base += kWarpSize) {
    const int d4 = d4_base + lane;
    const bool active = d4 < d4_count;
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
    if (m != -INFINITY) {
#pragma unroll 1
      for (int i0 = warp; i0 < n; i0 += kWarpsPerBlock * kBatch) {
        float4 x[kBatch];
#pragma unroll
        for (int k = 0; k < kBatch; ++k) {
          const int i = i0 + k * kWarpsPerBlock;
          x[k] = active && i < n && !KnownEmptyState(p, row_empty, i) ? LoadValues4(v_first, i * state_quads + d4)
                                                                       : make_float4(0.f, 0.f, 0.f, 0.f);
        }
#pragma unroll
        for (int k = 0; k < kBatch; ++k) {
          const int i = i0 + k * kWarpsPerBlock;
          if (i >= n) break;  // uniform over the warp
          const float wk = exp2f(p.s_in[run.first + i * run.stride] - m);  // 0 for an empty state
          if (wk == 0.f) continue;  // its v may be poison: never multiply it in
          acc.x += wk * x[k].x;
          acc.y += wk * x[k].y;
          acc.z += wk * x[k].z;
          acc.w += wk * x[k].w;
        }
      }
    }
    if (active) partial[warp][d4] = acc;
  }
  __syncthreads();
  // The warps' sums added in warp order, each float4 of the row by one thread.
  for (int d4 = threadIdx.x; d4 < d4_count; d4 += blockDim.x) {
    float4 sum = partial[0][d4];
#pragma unroll
    for (int w = 1; w < kWarpsPerBlock; ++w) {
      const float4 x = partial[w][d4];
      sum.x += x.x;
      sum.y += x.y;
      sum.z += x.z;
      sum.w += x.w;
    }
    StoreMergedValues(p, run, 0, d4, make_float4(sum.x * inv, sum.y * inv, sum.z * inv, sum.w * inv));
  }
  if (threadIdx.x == 0) StoreMergedLse(p, run, 0, m == -INFINITY ? m : m + log2f(sum_w));
}

__global__ void MergeStateInPlaceKernel(float* v, float* s, const float* v_other,
                                        const float* s_other, int rows, int head_dim) {
  const int lane = threadIdx.x % kWarpSize;
  const int row = blockIdx.x * kWarpsPerBlock + threadIdx.x / kWarpSize;
  if (row >= rows) return;
  const float s_a = s[row], s_b = s_other[row];
  const float m = fmaxf(s_a, s_b);
  // Weights are exactly 0 for an empty side, so its v is never read (it may be anything).
  const float w_a = m == -INFINITY ? 0.f : exp2f(s_a - m);
  const float w_b = m == -INFINITY ? 0.f : exp2f(s_b - m);
  const float inv = m == -INFINITY ? 0.f : 1.f / (w_a + w_b);
  float4* va = reinterpret_cast<float4*>(v + int64_t(row) * head_dim);
  const float4* vb = reinterpret_cast<const float4*>(v_other + int64_t(row) * head_dim);
  for (int d4 = lane; d4 < head_dim / 4; d4 += kWarpSize) {
    const float4 a = w_a != 0.f ? va[d4] : make_float4(0.f, 0.f, 0.f, 0.f);
    const float4 b = w_b != 0.f ? vb[d4] : make_float4(0.f, 0.f, 0.f, 0.f);
    va[d4] = make_float4((w_a * a.x + w_b * b.x) * inv, (w_a * a.y + w_b * b.y) * inv,
                         (w_a * a.z + w_b * b.z) * inv, (w_a * a.w + w_b * b.w) * inv);
  }
  __syncwarp();  // every lane has read s[row] before lane 0 overwrites it
  if (lane == 0) s[row] = m == -INFINITY ? m : m + log2f(w_a + w_b);
}

__global__ void CastStatesKernel(const float* v, int64_t count, DType dtype, void* out) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    if (dtype == DType::kFloat16) static_cast<__half*>(out)[i] = __float2half_rn(v[i]);
    else static_cast<__nv_bfloat16*>(out)[i] = __float2bfloat16_rn(v[i]);
  }
}

int BlocksForRows(int rows) { return (rows + kWarpsPerBlock - 1) / kWarpsPerBlock; }

// Rows per warp of the n-ary merge: MergeStatesParams::rows_per_warp, or by default two where one
// row per warp would take more than one wave of resident warps; two only where every run is short
// (max_run_states ≤ kBatch), head_dim ≤ 128 and the runs' head count is even (a warp's two rows
// are heads of one request). One row per warp lowers the latency of a merge that fits in a wave.
int MergeRowsPerWarp(const MergeStatesParams& params) {
  const bool pairs_fit = params.max_run_states > 0 && params.max_run_states <= kBatch && params.head_dim <= 128 &&
                         (params.run_indptr == nullptr || params.num_heads % 2 == 0);
  if (!pairs_fit || params.rows_per_warp == 1) return 1;
  if (params.rows_per_warp == 2) return 2;
  const int sms = params.num_sms > 0 ? params.num_sms : DeviceSmCountOnce();
  return BlocksForRows(params.rows) > int64_t(sms) * kMergeBlocksPerSm ? 2 : 1;
}

// Whether the merge takes MergeLongRunsKernel: runs longer than one batch that the short-run kernels
// do not take, and few enough rows that a block per row fits in one wave of resident blocks (with
// more rows one warp per row already keeps the SMs busy, and the block's extra warps cost waves).
bool MergeLongRuns(const MergeStatesParams& params) {
  const bool short_kernel = params.max_run_states <= kWideStates && params.head_dim <= 128;
  if (params.max_run_states <= kBatch || short_kernel || params.head_dim > 256) return false;
  const int sms = params.num_sms > 0 ? params.num_sms : DeviceSmCountOnce();
  return int64_t(params.rows) <= int64_t(sms) * kMergeBlocksPerSm;
}

// The n-ary merge's kernel for these params (the kernel choice above), its v stored as VIn.
template <typename VIn>
void LaunchMerge(const MergeStatesParams& params, cudaStream_t stream) {
  const dim3 block(unsigned(kWarpsPerBlock * kWarpSize));
  if (MergeRowsPerWarp(params) == 2) {
    LaunchMaybeProgrammatic(MergeShortRunsKernel<VIn, 2, kBatch>, dim3(unsigned(BlocksForRows((params.rows + 1) / 2))),
                            block, 0, stream, params.programmatic_launch, params);
  } else if (MergeLongRuns(params)) {
    LaunchMaybeProgrammatic(MergeLongRunsKernel<VIn>, dim3(unsigned(params.rows)), block, 0, stream,
                            params.programmatic_launch, params);
  } else if (params.max_run_states > kBatch && params.max_run_states <= kWideStates && params.head_dim <= 128) {
    LaunchMaybeProgrammatic(MergeShortRunsKernel<VIn, 1, kWideStates>, dim3(unsigned(BlocksForRows(params.rows))),
                            block, 0, stream, params.programmatic_launch, params);
  } else {
    LaunchMaybeProgrammatic(MergeStatesKernel<VIn>, dim3(unsigned(BlocksForRows(params.rows))), block, 0, stream,
                            params.programmatic_launch, params);
  }
}

}  // namespace

void MergeStates(const MergeStatesParams& params, cudaStream_t stream) {
  PREFIXD_CHECK_ARG(params.head_dim > 0 && params.head_dim % 4 == 0,
                    "MergeStates: head_dim " << params.head_dim << " must be a positive multiple of 4");
  PREFIXD_CHECK_ARG(params.run_indptr != nullptr || params.num_states >= 0,
                    "MergeStates: negative number of states " << params.num_states);
  PREFIXD_CHECK_ARG(params.num_heads > 0, "MergeStates: num_heads must be positive");
  PREFIXD_CHECK_ARG(params.rows_per_warp >= 0 && params.rows_per_warp <= 2,
                    "MergeStates: rows_per_warp " << params.rows_per_warp << " must be 0 (by the size), 1 or 2");
  PREFIXD_CHECK_ARG(params.run_indptr != nullptr || params.max_run_states == 0 || params.max_run_states >= params.num_states,
                    "MergeStates: max_run_states " << params.max_run_states << " below num_states " << params.num_states);
  PREFIXD_CHECK_ARG(params.uniform_run_states >= 0 && (params.uniform_run_states == 0 || params.run_indptr != nullptr),
                    "MergeStates: uniform_run_states " << params.uniform_run_states
                                                       << " needs runs mode (run_indptr) and must not be negative");
  PREFIXD_CHECK_ARG(params.uniform_run_states == 0 || params.max_run_states == 0 ||
                        params.max_run_states >= params.uniform_run_states,
                    "MergeStates: max_run_states " << params.max_run_states << " below uniform_run_states "
                                                   << params.uniform_run_states);
  PREFIXD_CHECK_ARG(params.empty_states == 0 ||
                        (params.uniform_run_states > 0 && params.num_kv_heads > 0 && params.num_heads % params.num_kv_heads == 0),
                    "MergeStates: empty_states needs uniform_run_states and num_kv_heads dividing num_heads (got "
                        << params.num_kv_heads << " KV heads of " << params.num_heads << ")");
  if (params.rows <= 0) return;
  if (!params.v_in_16bit) LaunchMerge<float>(params, stream);
  else if (params.out_dtype == DType::kFloat16) LaunchMerge<__half>(params, stream);
  else LaunchMerge<__nv_bfloat16>(params, stream);
}

void MergeStateInPlace(float* v, float* s, const float* v_other, const float* s_other, int rows,
                       int head_dim, cudaStream_t stream) {
  PREFIXD_CHECK_ARG(head_dim > 0 && head_dim % 4 == 0,
                    "MergeStateInPlace: head_dim " << head_dim << " must be a positive multiple of 4");
  if (rows <= 0) return;
  MergeStateInPlaceKernel<<<BlocksForRows(rows), kWarpsPerBlock * kWarpSize, 0, stream>>>(
      v, s, v_other, s_other, rows, head_dim);
  PREFIXD_CUDA_CHECK_LAUNCH();
}

void CastStates(const float* v, int64_t count, DType dtype, void* out, cudaStream_t stream) {
  if (count <= 0) return;
  constexpr int kThreads = 256;
  const int64_t blocks = std::min<int64_t>((count + kThreads - 1) / kThreads, 4096);
  CastStatesKernel<<<int(blocks), kThreads, 0, stream>>>(v, count, dtype, out);
  PREFIXD_CUDA_CHECK_LAUNCH();
}

}  // namespace prefixd::kernels::cuda
