// CUDA twins of worker/src/worker_ops.cc: one block per row, threads over the row's elements.
// All of this is data movement next to the attention kernels (a few MiB per layer), so the
// kernels stay plain: coalesced loads and stores, no shared memory.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>

#include "prefixd/common/cuda_check.h"

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

__global__ void PackStatesKernel(const float* __restrict__ v, const float* __restrict__ s,
                                 const int32_t* __restrict__ idx, int rows, int heads, int head_dim,
                                 float* __restrict__ out) {
  const int64_t vw = int64_t(heads) * head_dim, row = vw + heads;
  for (int r = blockIdx.x; r < rows; r += gridDim.x) {
    const int64_t i = idx[r];
    for (int64_t e = threadIdx.x; e < vw; e += blockDim.x) out[r * row + e] = v[i * vw + e];
    for (int h = threadIdx.x; h < heads; h += blockDim.x) out[r * row + vw + h] = s[i * heads + h];
  }
}

__global__ void UnpackStatesKernel(const float* __restrict__ packed, const float* __restrict__ v_local,
                                   const float* __restrict__ s_local, const int32_t* __restrict__ idx, int64_t n_rows,
                                   int heads, int head_dim, float* __restrict__ v_in, float* __restrict__ s_in) {
  const int64_t vw = int64_t(heads) * head_dim, row = vw + heads;
  for (int64_t kj = blockIdx.x; kj < n_rows; kj += gridDim.x) {
    const int32_t i = idx[kj];
    float* vo = v_in + kj * vw;
    float* so = s_in + kj * heads;
    const float* vs = i >= 0 ? packed + i * row : v_local + int64_t(-2 - i) * vw;
    const float* ss = i >= 0 ? packed + i * row + vw : s_local + int64_t(-2 - i) * heads;
    for (int64_t e = threadIdx.x; e < vw; e += blockDim.x) vo[e] = i == -1 ? 0.f : vs[e];
    for (int h = threadIdx.x; h < heads; h += blockDim.x) so[h] = i == -1 ? -INFINITY : ss[h];
  }
}

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
  PackStatesKernel<<<Blocks(rows), kThreads, 0, S(stream)>>>(v, s, idx, rows, heads, head_dim, out);
  PREFIXD_CUDA_CHECK_LAUNCH();
}

void UnpackStates(void* stream, const float* packed, const float* v_local, const float* s_local, const int32_t* idx,
                  int n, int rows, int heads, int head_dim, float* v_in, float* s_in) {
  const int64_t n_rows = int64_t(n) * rows;
  UnpackStatesKernel<<<Blocks(n_rows), kThreads, 0, S(stream)>>>(packed, v_local, s_local, idx, n_rows, heads,
                                                                  head_dim, v_in, s_in);
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
