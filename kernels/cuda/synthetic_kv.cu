// Synthetic K/V and queries generated on the device (see prefixd/kernels/synthetic_kv.h).
// One block per (token, layer) row; each thread makes one 64-bit word = 8 elements and stores them
// as one 16-byte vector, so consecutive threads write consecutive bytes of the token's
// [H_kv][head_dim] slab.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>

#include "kernels/cuda/programmatic_launch.cuh"
#include "kernels/cuda/upload_batch.h"
#include "prefixd/common/cuda_check.h"
#include "prefixd/kernels/synthetic_kv.h"

namespace prefixd::kernels::cuda {
namespace {

constexpr int kThreads = 128;
constexpr int64_t kMaxBlocks = int64_t(1) << 20;

template <bool BF16>
__device__ __forceinline__ uint16_t Bits(float x) {
  if constexpr (BF16) return __bfloat16_as_ushort(__float2bfloat16_rn(x));
  else return __half_as_ushort(__float2half_rn(x));
}

// The 8 values of one word, converted (exactly) and packed into 16 bytes.
template <bool BF16>
__device__ __forceinline__ uint4 PackWord(uint64_t word) {
  uint32_t out[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const uint32_t lo = Bits<BF16>(float(SyntheticInt(word, 2 * i)) * (1.0f / 128.0f));
    const uint32_t hi = Bits<BF16>(float(SyntheticInt(word, 2 * i + 1)) * (1.0f / 128.0f));
    out[i] = lo | (hi << 16);
  }
  return make_uint4(out[0], out[1], out[2], out[3]);
}

template <bool BF16>
__global__ void FillSyntheticKvKernel(uint16_t* __restrict__ k, uint16_t* __restrict__ v, KvPoolShape shape,
                                      SyntheticKvTokens t) {
  const int words_per_head = shape.head_dim / 8;
  const int words = shape.num_kv_heads * words_per_head;
  const int64_t rows = t.n * shape.num_layers;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const int64_t i = row / shape.num_layers;
    const int layer = int(row - i * shape.num_layers);
    const uint64_t hash = t.hashes[i];
    const int64_t pos = t.positions ? t.positions[i] : t.pos_begin + i;
    const int64_t slot = t.slots ? t.slots[i] : t.slot_begin + i;
    // KvPoolShape::Offset(layer, slot, 0), spelled out (host-only member).
    const int64_t token_stride = int64_t(shape.num_kv_heads) * shape.head_dim;
    const int64_t base = (int64_t(layer) * shape.num_pages * shape.page_size + slot) * token_stride;
    for (int w = threadIdx.x; w < words; w += blockDim.x) {
      const int h = w / words_per_head;
      const int d = (w - h * words_per_head) * 8;
      const int synthetic_layer = t.first_layer + layer;
      const int64_t off = base + int64_t(h) * shape.head_dim + d;
      *reinterpret_cast<uint4*>(k + off) =
          PackWord<BF16>(SyntheticWord(hash, pos, synthetic_layer, h, d, SyntheticTensor::kKey));
      *reinterpret_cast<uint4*>(v + off) =
          PackWord<BF16>(SyntheticWord(hash, pos, synthetic_layer, h, d, SyntheticTensor::kValue));
    }
  }
}

// A programmatic dependent launch (LaunchFillSyntheticQueries): it reads the step's upload.
template <bool BF16>
__global__ void FillSyntheticQueriesKernel(uint16_t* __restrict__ q, SyntheticQueries s) {
  WaitForPrimaryGrid();
  const int words_per_head = s.head_dim / 8;
  const int words = s.num_heads * words_per_head;
  for (int64_t r = blockIdx.x; r < s.n; r += gridDim.x) {
    const uint64_t hash = s.hashes[r];
    const int64_t pos = s.positions[r];
    for (int w = threadIdx.x; w < words; w += blockDim.x) {
      const int h = w / words_per_head;
      const int d = (w - h * words_per_head) * 8;
      *reinterpret_cast<uint4*>(q + (r * s.num_heads + h) * s.head_dim + d) =
          PackWord<BF16>(SyntheticWord(hash, pos, s.layer, h, d, SyntheticTensor::kQuery));
    }
  }
}

int Blocks(int64_t rows) { return int(std::max<int64_t>(1, std::min(rows, kMaxBlocks))); }

}  // namespace

void LaunchFillSyntheticKv(const KvPoolView& kv, const SyntheticKvTokens& tokens, void* stream) {
  auto* k = static_cast<uint16_t*>(kv.k);
  auto* v = static_cast<uint16_t*>(kv.v);
  const int blocks = Blocks(tokens.n * kv.shape.num_layers);
  auto s = static_cast<cudaStream_t>(stream);
  if (kv.shape.dtype == DType::kBFloat16)
    FillSyntheticKvKernel<true><<<blocks, kThreads, 0, s>>>(k, v, kv.shape, tokens);
  else
    FillSyntheticKvKernel<false><<<blocks, kThreads, 0, s>>>(k, v, kv.shape, tokens);
  PREFIXD_CUDA_CHECK_LAUNCH();
}

void LaunchFillSyntheticQueries(const SyntheticQueries& queries, void* stream) {
  // The step's queries follow its upload (cuda_backend.h, PREFIXD_STEP_PDL): as a programmatic
  // dependent launch, their CTAs wait on the SMs instead of being launched after it.
  static const bool programmatic = StepPdlEnabled();
  auto* q = static_cast<uint16_t*>(queries.q);
  auto s = static_cast<cudaStream_t>(stream);
  const dim3 grid(Blocks(queries.n)), block(kThreads);
  if (queries.dtype == DType::kBFloat16)
    LaunchMaybeProgrammatic(FillSyntheticQueriesKernel<true>, grid, block, 0, s, programmatic, q, queries);
  else
    LaunchMaybeProgrammatic(FillSyntheticQueriesKernel<false>, grid, block, 0, s, programmatic, q, queries);
}

}  // namespace prefixd::kernels::cuda
