// The multi-query prefix attention kernel (FlashAttention-2 style, mma.sync tensor cores).
//
// One CTA per work item (prefix_attention.h): up to TILE_ROWS query rows of one prefix group and
// one KV head (GQA heads stacked into rows) against the item's token range of the group's
// contiguous prefix run. Per KV tile of BLOCK_N tokens:
//
//   S = Q·Kᵀ (fp32)  →  mask  →  m' = max(m, rowmax(S·c))  →  P = 2^(S·c − m'),  c = sm_scale·log2(e)
//   l = l·2^(m − m') + rowsum(P)     O = O·2^(m − m') + P·V
//
// and at the end v = O / l, s = m + log2(l) (base-2 LSE), or the empty state (0, −inf) for rows that
// saw no key. Each warp owns WARP_M_TILES·16 rows; P never leaves registers (the S accumulators are
// repacked as the A operand of P·V). Q, K and V live in XOR-swizzled shared memory, K/V double
// buffered with cp.async so that tile j+1 streams in while tile j is computed.
//
// Why 32 rows per warp for head_dim ≤ 128: every warp reads the whole K/V tile from shared memory,
// so rows per warp set the ratio of mma work to shared-memory traffic. At 16 rows per warp the
// ldmatrix traffic alone (32 KiB per 64×128 K/V tile per warp) would cap the SM near 2 kFLOP/clk,
// below the mma.sync rate; 32 rows halve it. The price is Q re-read from shared memory at every
// tile (it cannot also stay in registers next to 128 fp32 accumulators).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/attention_state.cuh"
#include "prefixd/common/cuda_check.h"
#include "kernels/cuda/mma_sm80.cuh"
#include "kernels/cuda/prefix_attention.h"
#include "kernels/cuda/smem_limit.cuh"

namespace prefixd::kernels::cuda {

template <typename T, int HEAD_DIM_, int WARP_M_TILES_, int NUM_WARPS_, int BLOCK_N_>
struct PrefixTileConfig {
  using Element = T;
  static constexpr int HEAD_DIM = HEAD_DIM_;
  static constexpr int WARP_M_TILES = WARP_M_TILES_;  // m16 tiles per warp
  static constexpr int NUM_WARPS = NUM_WARPS_;
  static constexpr int BLOCK_N = BLOCK_N_;            // tokens per K/V tile
  static constexpr int STAGES = 2;                    // K/V tiles in flight

  static constexpr int THREADS = NUM_WARPS * 32;
  static constexpr int WARP_ROWS = WARP_M_TILES * 16;
  static constexpr int TILE_ROWS = NUM_WARPS * WARP_ROWS;
  static constexpr int ROW_BYTES = HEAD_DIM * 2;      // one token (or query) row in shared memory
  static constexpr int ROW_CHUNKS = ROW_BYTES / 16;   // 16-byte cp.async / ldmatrix units per row
  static constexpr int Q_BYTES = TILE_ROWS * ROW_BYTES;
  static constexpr int KV_TILE_BYTES = BLOCK_N * ROW_BYTES;
  static constexpr int SMEM_BYTES = Q_BYTES + 2 * STAGES * KV_TILE_BYTES;

  static constexpr int D_STEPS = HEAD_DIM / 16;  // k16 steps of Q·Kᵀ
  static constexpr int N_TILES = BLOCK_N / 8;    // n8 tiles of S
  static constexpr int N_STEPS = BLOCK_N / 16;   // k16 steps of P·V
  static constexpr int D_TILES = HEAD_DIM / 8;   // n8 tiles of O

  static_assert(HEAD_DIM % 64 == 0 && BLOCK_N % 16 == 0, "tile shapes");
  static_assert((BLOCK_N * ROW_CHUNKS) % THREADS == 0, "every thread copies whole K/V chunks");
  static_assert(SMEM_BYTES <= 227 * 1024, "shared memory of one CTA on sm_90");
};

// The configuration PrefixAttention runs for each head_dim (PrefixAttentionTileRows reports its
// TILE_ROWS to the planner). head_dim 256: 16 rows per warp (the 32-row accumulators would need
// 256 registers) and 32-token tiles, so that two CTAs still fit in one SM's shared memory.
template <typename T, int HEAD_DIM>
struct DefaultPrefixConfig;
template <typename T>
struct DefaultPrefixConfig<T, 64> { using Type = PrefixTileConfig<T, 64, 2, 4, 64>; };
template <typename T>
struct DefaultPrefixConfig<T, 128> { using Type = PrefixTileConfig<T, 128, 2, 4, 64>; };
template <typename T>
struct DefaultPrefixConfig<T, 256> { using Type = PrefixTileConfig<T, 256, 1, 4, 32>; };

// The configuration for items of at most 64 rows (PrefixAttentionParams::max_item_rows): 16 rows
// per warp, so that a 64-row group fills all four warps (at 32 rows per warp it would leave two
// idle). Slower than the default on full tiles (shared-memory traffic per FLOP doubles).
constexpr int SMALL_TILE_ROWS = 64;
template <typename T, int HEAD_DIM>
struct SmallPrefixConfig {
  using Type = PrefixTileConfig<T, HEAD_DIM, 1, 4, HEAD_DIM == 256 ? 32 : 64>;
  static_assert(Type::TILE_ROWS == SMALL_TILE_ROWS, "small tile rows");
};

// Whether a launch takes the small-tile kernel (for head_dim 256 the default already is one).
inline bool UseSmallTile(int head_dim, int max_item_rows) {
  return head_dim <= 128 && max_item_rows > 0 && max_item_rows <= SMALL_TILE_ROWS;
}

// Where a group-local query row comes from and where its state goes.
struct RowTarget {
  int request;  // batch request index
  int qo_head;
};
__device__ __forceinline__ RowTarget MapRow(int group_row, int first_request, int kv_head, int gqa) {
  return {first_request + group_row / gqa, kv_head * gqa + group_row % gqa};
}

// Rows [row_begin, row_end) of one item (at most TILE_ROWS) through the whole KV range.
template <typename CFG>
__device__ __forceinline__ void PrefixRowTile(const PrefixAttentionParams& p,
                                              const PrefixWorkItem& item, const PrefixGroup& group,
                                              int row_begin, int row_end, uint8_t* smem) {
  using T = typename CFG::Element;
  using Mma = MmaOp<T>;
  constexpr int MT = CFG::WARP_M_TILES;
  constexpr int ROW_BYTES = CFG::ROW_BYTES;
  constexpr int BLOCK_N = CFG::BLOCK_N;

  const int gqa = p.num_qo_heads / p.num_kv_heads;
  const int num_rows = row_end - row_begin;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int warp_row0 = warp * CFG::WARP_ROWS;
  const bool warp_active = warp_row0 < num_rows;  // warp-uniform: idle warps only help copying

  // Causal: no row of this tile sees past the last row's position, so those tiles are skipped.
  int kv_end = item.kv_end;
  if (p.causal) kv_end = min(kv_end, p.q_offset + (row_end - 1) / gqa + 1);
  const int kv_len = max(kv_end - item.kv_begin, 0);
  const int num_tiles = (kv_len + BLOCK_N - 1) / BLOCK_N;

  // Tokens (relative to kv_begin) row `row` of the tile may see.
  auto row_limit = [&](int row) {
    return p.causal ? min(kv_len, p.q_offset + (row_begin + row) / gqa + 1 - item.kv_begin) : kv_len;
  };
  // Tokens (relative to kv_begin) below this are visible to every row: tiles under it skip masking.
  const int common_limit = row_limit(0);

  float o[MT][CFG::D_TILES][4];
  float row_max[MT][2], row_sum[MT][2];  // running max (scaled, base 2) and this lane's partial sum
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
    for (int dt = 0; dt < CFG::D_TILES; ++dt)
#pragma unroll
      for (int e = 0; e < 4; ++e) o[mt][dt][e] = 0.f;
#pragma unroll
    for (int h = 0; h < 2; ++h) row_max[mt][h] = -INFINITY, row_sum[mt][h] = 0.f;
  }

  const uint32_t q_smem = SmemAddress(smem);
  const uint32_t k_smem = q_smem + CFG::Q_BYTES;
  const uint32_t v_smem = k_smem + CFG::STAGES * CFG::KV_TILE_BYTES;

  // K/V copies: this thread moves chunk `copy_chunk` of rows copy_row + ROWS_PER_PASS·i of a tile.
  constexpr int ROWS_PER_PASS = CFG::THREADS / CFG::ROW_CHUNKS;
  const int copy_row = int(threadIdx.x) / CFG::ROW_CHUNKS, copy_chunk = int(threadIdx.x) % CFG::ROW_CHUNKS;
  // Element offset of this thread's first copy; p.k / p.v stay in the constant bank.
  const int64_t copy_offset = (int64_t(group.prefix.first_page) * p.page_size + item.kv_begin +
                               copy_row) * p.token_stride +
                              int64_t(item.kv_head) * CFG::HEAD_DIM + copy_chunk * 8;
  auto load_kv_tile = [&](int tile, int stage) {
    const int64_t tile_offset = int64_t(tile) * BLOCK_N * p.token_stride;
    const int64_t pass_step = ROWS_PER_PASS * p.token_stride;
    const int valid_rows = kv_len - tile * BLOCK_N;
#pragma unroll
    for (int i = 0; i < BLOCK_N / ROWS_PER_PASS; ++i) {
      const int row = copy_row + ROWS_PER_PASS * i;
      const bool valid = row < valid_rows;
      // Rows past the range are zero-filled from a harmless in-range address (row 0 of the tile).
      const int64_t offset = tile_offset + (valid ? i * pass_step : -int64_t(copy_row) * p.token_stride);
      const uint32_t dst = stage * CFG::KV_TILE_BYTES + SwizzledOffset<ROW_BYTES>(row, copy_chunk);
      CpAsync16(k_smem + dst, static_cast<const T*>(p.k) + copy_offset + offset, valid);
      CpAsync16(v_smem + dst, static_cast<const T*>(p.v) + copy_offset + offset, valid);
    }
  };

  if (num_tiles > 0) {
    // Q rows gathered through the GQA mapping; padding rows are zeros.
#pragma unroll 4
    for (int it = 0; it < CFG::TILE_ROWS * CFG::ROW_CHUNKS / CFG::THREADS; ++it) {
      const int i = it * CFG::THREADS + int(threadIdx.x);
      const int row = i / CFG::ROW_CHUNKS, chunk = i % CFG::ROW_CHUNKS;
      const bool valid = row < num_rows;
      const T* src = static_cast<const T*>(p.q);  // in range; not read for padding rows
      if (valid) {
        const RowTarget t = MapRow(row_begin + row, group.first_request, item.kv_head, gqa);
        src += (int64_t(t.request) * p.num_qo_heads + t.qo_head) * CFG::HEAD_DIM + chunk * 8;
      }
      CpAsync16(q_smem + SwizzledOffset<ROW_BYTES>(row, chunk), src, valid);
    }
    load_kv_tile(0, 0);
    CpAsyncCommit();
  }

  const float scale = p.sm_scale_log2;
  const LaneTileAddress<ROW_BYTES> q_lane(q_smem, warp_row0 + (lane & 15), lane / 16);
  for (int tile = 0; tile < num_tiles; ++tile) {
    const int stage = tile % CFG::STAGES;
    // Stage (tile+1)%2 held tile−1, which every warp finished before the barrier ending tile−1.
    if (tile + 1 < num_tiles) load_kv_tile(tile + 1, (tile + 1) % CFG::STAGES);
    CpAsyncCommit();
    CpAsyncWait<1>();  // everything but the copy just issued has landed
    __syncthreads();

    if (warp_active) {
      const uint32_t k_stage = k_smem + stage * CFG::KV_TILE_BYTES;
      const uint32_t v_stage = v_smem + stage * CFG::KV_TILE_BYTES;

      // S = Q·Kᵀ. ldmatrix lane roles: A (Q) lanes give rows lane&15 at k-half lane/16;
      // B (K, n-major) lanes give n rows (lane&7) + 8·(lane/16) at k-half (lane/8)&1.
      const LaneTileAddress<ROW_BYTES> k_lane(k_stage, (lane & 7) + 8 * (lane / 16), (lane / 8) % 2);
      float s[MT][CFG::N_TILES][4];
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int nt = 0; nt < CFG::N_TILES; ++nt)
#pragma unroll
          for (int e = 0; e < 4; ++e) s[mt][nt][e] = 0.f;
#pragma unroll
      for (int ks = 0; ks < CFG::D_STEPS; ++ks) {
        uint32_t a[MT][4];
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) LdMatrixX4(a[mt], q_lane.At(ks, 16 * mt));
#pragma unroll
        for (int np = 0; np < CFG::N_TILES / 2; ++np) {
          uint32_t b[4];
          LdMatrixX4(b, k_lane.At(ks, 16 * np));
#pragma unroll
          for (int mt = 0; mt < MT; ++mt) {
            Mma::Run(s[mt][2 * np], a[mt], b[0], b[1]);
            Mma::Run(s[mt][2 * np + 1], a[mt], b[2], b[3]);
          }
        }
      }

      // Mask keys past the range (tail tile) or in a row's causal future.
      const int tile_first = tile * BLOCK_N;
      if (tile_first + BLOCK_N > common_limit) {
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            // This thread's rows: (mt, h) ↦ warp_row0 + 16·mt + 8·h + lane/4 (C fragment layout).
            const int limit = row_limit(warp_row0 + 16 * mt + 8 * h + lane / 4) - tile_first;
#pragma unroll
            for (int nt = 0; nt < CFG::N_TILES; ++nt)
#pragma unroll
              for (int e = 0; e < 2; ++e)
                if (8 * nt + 2 * (lane % 4) + e >= limit) s[mt][nt][2 * h + e] = -INFINITY;
          }
      }

      // Online softmax in base 2; scale > 0, so the max of raw scores gives the max of scaled ones.
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          float tile_max = -INFINITY;
#pragma unroll
          for (int nt = 0; nt < CFG::N_TILES; ++nt)
            tile_max = fmaxf(tile_max, fmaxf(s[mt][nt][2 * h], s[mt][nt][2 * h + 1]));
          const float new_max = fmaxf(row_max[mt][h], QuadMax(tile_max) * scale);
          const float subtract = SafeMax(new_max);
          const float rescale = FastExp2(row_max[mt][h] - subtract);
          row_max[mt][h] = new_max;
          row_sum[mt][h] *= rescale;
#pragma unroll
          for (int dt = 0; dt < CFG::D_TILES; ++dt) {
            o[mt][dt][2 * h] *= rescale;
            o[mt][dt][2 * h + 1] *= rescale;
          }
#pragma unroll
          for (int nt = 0; nt < CFG::N_TILES; ++nt)
#pragma unroll
            for (int e = 2 * h; e < 2 * h + 2; ++e) {
              s[mt][nt][e] = FastExp2(fmaf(s[mt][nt][e], scale, -subtract));
              row_sum[mt][h] += s[mt][nt][e];
            }
        }

      // O += P·V: the C fragments of S tiles 2ks, 2ks+1 are exactly the A fragment of k-step ks.
      // V is token-major ([k][n]), so ldmatrix.trans; lanes give token rows lane&15 at d-half lane/16.
      const LaneTileAddress<ROW_BYTES> v_lane(v_stage, lane & 15, lane / 16);
#pragma unroll
      for (int ks = 0; ks < CFG::N_STEPS; ++ks) {
        uint32_t a[MT][4];
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          a[mt][0] = Mma::Pack(s[mt][2 * ks][0], s[mt][2 * ks][1]);
          a[mt][1] = Mma::Pack(s[mt][2 * ks][2], s[mt][2 * ks][3]);
          a[mt][2] = Mma::Pack(s[mt][2 * ks + 1][0], s[mt][2 * ks + 1][1]);
          a[mt][3] = Mma::Pack(s[mt][2 * ks + 1][2], s[mt][2 * ks + 1][3]);
        }
#pragma unroll
        for (int dp = 0; dp < CFG::D_TILES / 2; ++dp) {
          uint32_t b[4];
          LdMatrixX4Trans(b, v_lane.At(dp, 16 * ks));
#pragma unroll
          for (int mt = 0; mt < MT; ++mt) {
            Mma::Run(o[mt][2 * dp], a[mt], b[0], b[1]);
            Mma::Run(o[mt][2 * dp + 1], a[mt], b[2], b[3]);
          }
        }
      }
    }
    __syncthreads();  // stage `stage` is refilled at the next iteration
  }

  // Epilogue: normalise and write each valid row's state (v fp32, s base 2).
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const float sum = QuadSum(row_sum[mt][h]);  // all lanes: shuffles before any branch
      const int row = warp_row0 + 16 * mt + 8 * h + lane / 4;
      if (row >= num_rows) continue;
      const RowTarget t = MapRow(row_begin + row, group.first_request, item.kv_head, gqa);
      const int64_t state = int64_t(p.state_indptr[t.request] + item.chunk) * p.num_qo_heads +
                            t.qo_head;
      float* v_out = p.partial_v + state * CFG::HEAD_DIM + 2 * (lane % 4);
      const float inv = sum > 0.f ? 1.f / sum : 0.f;
#pragma unroll
      for (int dt = 0; dt < CFG::D_TILES; ++dt)
        *reinterpret_cast<float2*>(v_out + 8 * dt) =
            make_float2(o[mt][dt][2 * h] * inv, o[mt][dt][2 * h + 1] * inv);
      if (lane % 4 == 0) p.partial_s[state] = FinalLse(row_max[mt][h], sum);
    }
}

template <typename CFG>
__global__ void __launch_bounds__(CFG::THREADS, 2)
    PrefixAttentionKernel(const PrefixAttentionParams params) {
  extern __shared__ __align__(128) uint8_t smem[];
  const PrefixWorkItem item = params.items[blockIdx.x];
  const PrefixGroup group = params.groups[item.group];
  // An item is meant to fit one tile; a larger one (a planner with other tile rows) is still
  // computed correctly, one row tile after the other.
  for (int row = item.row_begin; row < item.row_end; row += CFG::TILE_ROWS) {
    if (row != item.row_begin) __syncthreads();  // shared memory is reused by the next row tile
    PrefixRowTile<CFG>(params, item, group, row, min(row + CFG::TILE_ROWS, item.row_end), smem);
  }
}

// Launches one configuration (checks of the arguments are the caller's).
template <typename CFG>
void LaunchPrefixAttentionConfig(const PrefixAttentionParams& params, cudaStream_t stream) {
  if (params.num_items == 0) return;
  RaiseDynamicSmemLimitOnce<PrefixAttentionKernel<CFG>>(CFG::SMEM_BYTES);
  PrefixAttentionKernel<CFG><<<params.num_items, CFG::THREADS, CFG::SMEM_BYTES, stream>>>(params);
  PREFIXD_CUDA_CHECK_LAUNCH();
}

// CTAs of one configuration resident per SM of the current device.
template <typename CFG>
int PrefixAttentionConfigCtasPerSm() {
  PREFIXD_CUDA_CHECK(cudaFuncSetAttribute(PrefixAttentionKernel<CFG>,
                                          cudaFuncAttributeMaxDynamicSharedMemorySize,
                                          CFG::SMEM_BYTES));
  int ctas = 0;
  PREFIXD_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
      &ctas, PrefixAttentionKernel<CFG>, CFG::THREADS, CFG::SMEM_BYTES));
  return ctas;
}

// The entry points instantiated once per (dtype, head_dim) in kernels/cuda/inst/.
template <typename T, int HEAD_DIM>
void RunPrefixAttention(const PrefixAttentionParams& params, cudaStream_t stream) {
  if constexpr (HEAD_DIM <= 128) {
    if (UseSmallTile(HEAD_DIM, params.max_item_rows))
      return LaunchPrefixAttentionConfig<typename SmallPrefixConfig<T, HEAD_DIM>::Type>(params, stream);
  }
  LaunchPrefixAttentionConfig<typename DefaultPrefixConfig<T, HEAD_DIM>::Type>(params, stream);
}
template <typename T, int HEAD_DIM>
int RunPrefixAttentionCtasPerSm(int max_item_rows) {
  if constexpr (HEAD_DIM <= 128) {
    if (UseSmallTile(HEAD_DIM, max_item_rows))
      return PrefixAttentionConfigCtasPerSm<typename SmallPrefixConfig<T, HEAD_DIM>::Type>();
  }
  return PrefixAttentionConfigCtasPerSm<typename DefaultPrefixConfig<T, HEAD_DIM>::Type>();
}

}  // namespace prefixd::kernels::cuda
