// CUDA twins of worker/src/worker_ops.cc: one block per row, threads over the row's elements.
// All of this is data movement next to the attention kernels (a few MiB per layer), so the
// kernels stay plain: coalesced loads and stores, no shared memory.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "prefixd/common/cuda_check.h"
#include "prefixd/common/error.h"

namespace prefixd::worker::cuda {
namespace {

constexpr int kThreads = 256;

int Blocks(int64_t rows) { return int(std::max<int64_t>(1, std::min<int64_t>(rows, 1 << 20))); }

__global__ void GatherRowsKernel(uint32_t* __restrict__ dst, const uint32_t* __restrict__ remote,
                                 const uint32_t* __restrict__ local, const int32_t* __restrict__ idx, int rows,
                                 int row_words, uint32_t fill) {
  for (int r = blockIdx.x; r < rows; r += gridDim.x) {
    const int32_t i = idx[r];
    uint32_t* o = dst + int64_t(r) * row_words;
    if (i == -1) {
      for (int w = threadIdx.x; w < row_words; w += blockDim.x) o[w] = fill;
      continue;
    }
    const uint32_t* src = i >= 0 ? remote + int64_t(i) * row_words : local + int64_t(-2 - i) * row_words;
    if ((row_words & 3) == 0) {  // 16-byte vectors when the row allows (buffers are 256-byte aligned)
      const int vecs = row_words / 4;
      for (int w = threadIdx.x; w < vecs; w += blockDim.x)
        reinterpret_cast<uint4*>(o)[w] = reinterpret_cast<const uint4*>(src)[w];
    } else {
      for (int w = threadIdx.x; w < row_words; w += blockDim.x) o[w] = src[w];
    }
  }
}

// Pack and unpack move ~1-2 MiB per layer between [rows][heads·D] + [rows][heads] and the packed
// [rows][heads·D + heads] rows: one thread per float4 of v (and per float of s) over all rows, so
// that every load is independent (the first version, a block per row looping over it, ran at
// ~0.2 TB/s: 9 µs per call on an H200, longer than the state exchange it feeds). VEC needs
// 16-byte aligned rows on both sides: heads % 4 == 0 (head_dim is a multiple of 4).
template <bool VEC>
__global__ void PackStatesKernel(const float* __restrict__ v, const float* __restrict__ s,
                                 const int32_t* __restrict__ idx, int rows, int heads, int head_dim,
                                 float* __restrict__ out) {
  constexpr int W = VEC ? 4 : 1;
  const int64_t vw = int64_t(heads) * head_dim, row = vw + heads, units = vw / W + heads;
  const int64_t total = int64_t(rows) * units;
  for (int64_t t = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; t < total; t += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = t / units, e = t % units, i = idx[r];
    if (e < vw / W) {
      if constexpr (VEC) reinterpret_cast<float4*>(out + r * row)[e] = reinterpret_cast<const float4*>(v + i * vw)[e];
      else out[r * row + e] = v[i * vw + e];
    } else {
      out[r * row + vw + (e - vw / W)] = s[i * heads + (e - vw / W)];
    }
  }
}

template <bool VEC>
__global__ void UnpackStatesKernel(const float* __restrict__ packed, const float* __restrict__ v_local,
                                   const float* __restrict__ s_local, const int32_t* __restrict__ idx, int64_t n_rows,
                                   int heads, int head_dim, float* __restrict__ v_in, float* __restrict__ s_in) {
  constexpr int W = VEC ? 4 : 1;
  const int64_t vw = int64_t(heads) * head_dim, row = vw + heads, units = vw / W + heads;
  const int64_t total = n_rows * units;
  for (int64_t t = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; t < total; t += int64_t(gridDim.x) * blockDim.x) {
    const int64_t kj = t / units, e = t % units;
    const int32_t i = idx[kj];  // ≥ 0: packed row; −1: the empty state; ≤ −2: local row −2 − i
    if (e < vw / W) {
      const float* vs = i >= 0 ? packed + i * row : v_local + int64_t(-2 - i) * vw;
      if constexpr (VEC) {
        reinterpret_cast<float4*>(v_in + kj * vw)[e] =
            i == -1 ? make_float4(0.f, 0.f, 0.f, 0.f) : reinterpret_cast<const float4*>(vs)[e];
      } else {
        v_in[kj * vw + e] = i == -1 ? 0.f : vs[e];
      }
    } else {
      const int64_t h = e - vw / W;
      const float* ss = i >= 0 ? packed + i * row + vw : s_local + int64_t(-2 - i) * heads;
      s_in[kj * heads + h] = i == -1 ? -INFINITY : ss[h];
    }
  }
}

// One warp per (own row, head). Each lane holds one of the n contributions (32 at a time): its
// source index, its LSE and, once the max is known, its weight; the weighted v sum then takes
// each contribution's source and weight from that lane by shuffle, so the n v rows are loaded
// independently (unrolled), not behind a serial chain of index → LSE loads per contribution (the
// first version, which re-read both per contribution and per v unit: 5.5-6.3 µs per call at 4-8
// GPUs in the step's trace, bench/scaling/README.md, session 15). W floats per lane over head_dim
// (W = 4 where every row is 16-byte aligned), in PARTS = ceil(head_dim / W / 32) units per lane.
// Sources as in UnpackStates; the arithmetic of kernels::MergeStates (max LSE first, then the
// weighted sum; an empty or negligible state, whose weight is 0, is never read).
template <int W, int PARTS>
__global__ void MergeExchangedStatesKernel(const float* __restrict__ packed, const float* __restrict__ v_local,
                                           const float* __restrict__ s_local, const int32_t* __restrict__ idx, int n,
                                           int rows, int heads, int head_dim, float* __restrict__ v_out,
                                           float* __restrict__ s_out) {
  // The last kernel of a layer: the next step's upload (kernels/cuda/upload_batch.cu), a
  // programmatic dependent launch, may be scheduled now to start its host loads; it waits for
  // this grid's completion before it writes (griddepcontrol.launch_dependents; sm_90+).
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
  using Vec = std::conditional_t<W == 4, float4, float>;
  constexpr unsigned kAll = 0xffffffffu;
  const int lane = threadIdx.x % 32;
  const int64_t warp = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  if (warp >= int64_t(rows) * heads) return;
  const int j = int(warp / heads), h = int(warp % heads);
  const int64_t vw = int64_t(heads) * head_dim, row = vw + heads;
  // This lane's contribution k = k0 + lane: its source (−1 past n: the empty state) and LSE.
  auto source = [&](int k0) { return k0 + lane < n ? idx[int64_t(k0 + lane) * rows + j] : -1; };
  auto lse = [&](int32_t i) {
    return i == -1 ? -INFINITY : i >= 0 ? packed[i * row + vw + h] : s_local[int64_t(-2 - i) * heads + h];
  };
  auto warp_max = [&](float x) {
#pragma unroll
    for (int o = 16; o > 0; o /= 2) x = fmaxf(x, __shfl_xor_sync(kAll, x, o));
    return x;
  };
  // Contributions 0-31 stay in registers; more (n > 32: more than 32 ranks) are read again below.
  const int32_t first_i = source(0);
  const float first_s = lse(first_i);
  float m = warp_max(first_s);
  for (int k0 = 32; k0 < n; k0 += 32) m = fmaxf(m, warp_max(lse(source(k0))));
  float* vo = v_out + warp * head_dim;
  const int units = head_dim / W;
  if (m == -INFINITY) {
    for (int u = lane; u < units; u += 32) reinterpret_cast<Vec*>(vo)[u] = Vec{};
    if (lane == 0) s_out[warp] = -INFINITY;
    return;
  }
  float sum_w = 0.f;  // this lane's contributions' weights; summed over the warp at the end
  Vec acc[PARTS] = {};  // units lane, lane + 32, ...
  for (int k0 = 0; k0 < n; k0 += 32) {
    const int32_t i = k0 == 0 ? first_i : source(k0);
    const float w = exp2f((k0 == 0 ? first_s : lse(i)) - m);  // the empty state: 2^−inf = 0
    sum_w += w;
    // Lane-local row base of this contribution's head h (null where its weight is 0).
    const float* base = w == 0.f                 ? nullptr
                        : i >= 0                 ? packed + i * row + int64_t(h) * head_dim
                                                 : v_local + int64_t(-2 - i) * vw + int64_t(h) * head_dim;
    const int count = min(32, n - k0);
#pragma unroll 4
    for (int c = 0; c < count; ++c) {
      const float wc = __shfl_sync(kAll, w, c);
      const float* vc = reinterpret_cast<const float*>(__shfl_sync(kAll, reinterpret_cast<uintptr_t>(base), c));
      if (wc == 0.f) continue;  // warp-uniform
#pragma unroll
      for (int part = 0; part < PARTS; ++part) {
        const int u = lane + 32 * part;
        if (u < units) {
          const Vec x = reinterpret_cast<const Vec*>(vc)[u];
          const float* xs = reinterpret_cast<const float*>(&x);
          float* as = reinterpret_cast<float*>(&acc[part]);
#pragma unroll
          for (int e = 0; e < W; ++e) as[e] += wc * xs[e];
        }
      }
    }
  }
#pragma unroll
  for (int o = 16; o > 0; o /= 2) sum_w += __shfl_xor_sync(kAll, sum_w, o);
  const float inv = 1.f / sum_w;
#pragma unroll
  for (int part = 0; part < PARTS; ++part) {
    const int u = lane + 32 * part;
    if (u >= units) continue;
    float* as = reinterpret_cast<float*>(&acc[part]);
#pragma unroll
    for (int e = 0; e < W; ++e) as[e] *= inv;
    reinterpret_cast<Vec*>(vo)[u] = acc[part];
  }
  if (lane == 0) s_out[warp] = m + log2f(sum_w);
}

// Threads for `units` independent elements: 256 per block, at most 8 blocks per SM of an H200-sized
// GPU (the grid-stride loops take the rest).
int ElementBlocks(int64_t units) {
  return int(std::max<int64_t>(1, std::min<int64_t>((units + kThreads - 1) / kThreads, 132 * 8)));
}
bool Aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

__global__ void TreeScaleStatesKernel(const float* __restrict__ v, const float* __restrict__ s,
                                      const float* __restrict__ s_max, const int32_t* __restrict__ m_pos,
                                      const int32_t* __restrict__ dst, int rows, int heads, int head_dim,
                                      float* __restrict__ out) {
  const int64_t vw = int64_t(heads) * head_dim, row = vw + heads;
  for (int r = blockIdx.x; r < rows; r += gridDim.x) {
    float* o = out + int64_t(dst[r]) * row;
    for (int64_t e = threadIdx.x; e < vw + heads; e += blockDim.x) {
      const int h = e < vw ? int(e / head_dim) : int(e - vw);
      const float x = s[int64_t(r) * heads + h], m = s_max[int64_t(m_pos[r]) * heads + h];
      const float w = x == -INFINITY ? 0.f : exp2f(x - m);
      o[e] = e < vw ? w * v[r * vw + e] : w;
    }
  }
}

__global__ void TreeFinishStatesKernel(const float* __restrict__ sums, const float* __restrict__ s_max,
                                       const int32_t* __restrict__ m_pos, int rows, int heads, int head_dim,
                                       float* __restrict__ v_out, float* __restrict__ s_out) {
  const int64_t vw = int64_t(heads) * head_dim, row = vw + heads;
  for (int r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* in = sums + r * row;
    for (int64_t e = threadIdx.x; e < vw; e += blockDim.x) {
      const float den = in[vw + e / head_dim];
      v_out[r * vw + e] = den > 0.f ? in[e] / den : 0.f;
    }
    for (int h = threadIdx.x; h < heads; h += blockDim.x) {
      const float den = in[vw + h];
      s_out[int64_t(r) * heads + h] = den > 0.f ? s_max[int64_t(m_pos[r]) * heads + h] + log2f(den) : -INFINITY;
    }
  }
}

cudaStream_t S(void* stream) { return static_cast<cudaStream_t>(stream); }

// MergeExchangedStatesKernel<W, PARTS> for this head_dim: the fewest parts of 32 units that cover it.
template <int W>
void LaunchMergeExchangedStates(cudaStream_t stream, int blocks, const float* packed, const float* v_local,
                                const float* s_local, const int32_t* idx, int n, int rows, int heads, int head_dim,
                                float* v_out, float* s_out) {
  const int parts = (head_dim / W + 31) / 32;
  auto launch = [&](auto kernel) {
    kernel<<<blocks, kThreads, 0, stream>>>(packed, v_local, s_local, idx, n, rows, heads, head_dim, v_out, s_out);
  };
  if (parts <= 1) launch(MergeExchangedStatesKernel<W, 1>);
  else if (parts <= 2) launch(MergeExchangedStatesKernel<W, 2>);
  else if (parts <= 4) launch(MergeExchangedStatesKernel<W, 4>);
  else if (parts <= 8) launch(MergeExchangedStatesKernel<W, 8>);
  else PREFIXD_CHECK_ARG(false, "MergeExchangedStates: head_dim " << head_dim << " is over " << 256 * W);
}

}  // namespace

void GatherRows(void* stream, void* dst, const void* remote, const void* local, const int32_t* idx, int rows,
                int row_words, uint32_t fill) {
  GatherRowsKernel<<<Blocks(rows), kThreads, 0, S(stream)>>>(static_cast<uint32_t*>(dst),
                                                              static_cast<const uint32_t*>(remote),
                                                              static_cast<const uint32_t*>(local), idx, rows,
                                                              row_words, fill);
  PREFIXD_CUDA_CHECK_LAUNCH();
}

void PackStates(void* stream, const float* v, const float* s, const int32_t* idx, int rows, int heads, int head_dim,
                float* out) {
  if (rows <= 0) return;
  const int64_t vw = int64_t(heads) * head_dim;
  if (heads % 4 == 0 && head_dim % 4 == 0 && Aligned16(v) && Aligned16(out)) {
    PackStatesKernel<true><<<ElementBlocks(rows * (vw / 4 + heads)), kThreads, 0, S(stream)>>>(v, s, idx, rows, heads,
                                                                                              head_dim, out);
  } else {
    PackStatesKernel<false><<<ElementBlocks(rows * (vw + heads)), kThreads, 0, S(stream)>>>(v, s, idx, rows, heads,
                                                                                           head_dim, out);
  }
  PREFIXD_CUDA_CHECK_LAUNCH();
}

void UnpackStates(void* stream, const float* packed, const float* v_local, const float* s_local, const int32_t* idx,
                  int n, int rows, int heads, int head_dim, float* v_in, float* s_in) {
  const int64_t n_rows = int64_t(n) * rows, vw = int64_t(heads) * head_dim;
  if (n_rows <= 0) return;
  if (heads % 4 == 0 && head_dim % 4 == 0 && Aligned16(packed) && Aligned16(v_local) && Aligned16(v_in)) {
    UnpackStatesKernel<true><<<ElementBlocks(n_rows * (vw / 4 + heads)), kThreads, 0, S(stream)>>>(
        packed, v_local, s_local, idx, n_rows, heads, head_dim, v_in, s_in);
  } else {
    UnpackStatesKernel<false><<<ElementBlocks(n_rows * (vw + heads)), kThreads, 0, S(stream)>>>(
        packed, v_local, s_local, idx, n_rows, heads, head_dim, v_in, s_in);
  }
  PREFIXD_CUDA_CHECK_LAUNCH();
}

void MergeExchangedStates(void* stream, const float* packed, const float* v_local, const float* s_local,
                          const int32_t* idx, int n, int rows, int heads, int head_dim, float* v_out, float* s_out) {
  const int64_t threads = int64_t(rows) * heads * 32;
  const int blocks = int((threads + kThreads - 1) / kThreads);
  const bool vec = head_dim % 4 == 0 && heads % 4 == 0 && Aligned16(packed) && Aligned16(v_local) && Aligned16(v_out);
  (vec ? LaunchMergeExchangedStates<4> : LaunchMergeExchangedStates<1>)(S(stream), blocks, packed, v_local, s_local,
                                                                       idx, n, rows, heads, head_dim, v_out, s_out);
  PREFIXD_CUDA_CHECK_LAUNCH();
}

void TreeScaleStates(void* stream, const float* v, const float* s, const float* s_max, const int32_t* m_pos,
                     const int32_t* dst, int rows, int heads, int head_dim, float* out) {
  TreeScaleStatesKernel<<<Blocks(rows), kThreads, 0, S(stream)>>>(v, s, s_max, m_pos, dst, rows, heads, head_dim,
                                                                    out);
  PREFIXD_CUDA_CHECK_LAUNCH();
}

void TreeFinishStates(void* stream, const float* sums, const float* s_max, const int32_t* m_pos, int rows, int heads,
                      int head_dim, float* v_out, float* s_out) {
  TreeFinishStatesKernel<<<Blocks(rows), kThreads, 0, S(stream)>>>(sums, s_max, m_pos, rows, heads, head_dim, v_out,
                                                                    s_out);
  PREFIXD_CUDA_CHECK_LAUNCH();
}

void* CreateStream(bool highest_priority) {
  cudaStream_t s = nullptr;
  int least = 0, greatest = 0;
  if (highest_priority) PREFIXD_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  PREFIXD_CUDA_CHECK(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, highest_priority ? greatest : 0));
  return s;
}

void DestroyStream(void* stream) noexcept {
  cudaStreamSynchronize(S(stream));
  cudaStreamDestroy(S(stream));
}

void* CreateEvent() {
  cudaEvent_t e = nullptr;
  PREFIXD_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  return e;
}

void DestroyEvent(void* event) noexcept { cudaEventDestroy(static_cast<cudaEvent_t>(event)); }

void RecordWait(void* event, void* producer, void* waiter) {
  auto e = static_cast<cudaEvent_t>(event);
  PREFIXD_CUDA_CHECK(cudaEventRecord(e, S(producer)));
  PREFIXD_CUDA_CHECK(cudaStreamWaitEvent(S(waiter), e, 0));
}

void RecordEvent(void* event, void* stream) {
  PREFIXD_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(event), S(stream)));
}

void StreamWaitEvent(void* waiter, void* event) {
  PREFIXD_CUDA_CHECK(cudaStreamWaitEvent(S(waiter), static_cast<cudaEvent_t>(event), 0));
}

void SynchronizeStream(void* stream) { PREFIXD_CUDA_CHECK(cudaStreamSynchronize(S(stream))); }

void SynchronizeEvent(void* event) { PREFIXD_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(event))); }

void* AllocPinned(size_t bytes) {
  void* p = nullptr;
  PREFIXD_CUDA_CHECK(cudaHostAlloc(&p, bytes, cudaHostAllocDefault));
  return p;
}

void FreePinned(void* p) noexcept { cudaFreeHost(p); }

}  // namespace prefixd::worker::cuda
