// The tensor-core variant of the batch decode kernel, for GQA groups of 4, 8 and 16 query heads at
// head_dim 64 and 128, and of 4 at head_dim 256 (at most 4 warps per CTA there: their tiles take
// 192 KiB), included only by the instantiation files kernels/cuda/inst/decode_attention_*.cu.
//
// Why: with g query heads per KV head the CUDA-core kernel (decode_attention.cuh) does g dot
// products and g weighted sums per K/V byte, plus shuffle reductions; at g = 4 it streamed at only
// ~56% of copy bandwidth and at g = 8 at ~33% (measured on an H200, bench/RESULTS.md). Here the g
// query rows are the M dimension of mma.sync m16n8k16 (padded to 16 rows with zeros), so the
// arithmetic per byte costs tensor-core instructions only and the kernel is bound by memory again.
// Groups of up to 8 take the tile's upper 8 rows (one softmax row per lane quad); the group of 16
// takes all 16 (two rows per quad: the C fragment's elements 0-1 and 2-3), so that a GQA group of
// 9-16 heads (or a 16-head slice of a larger one) reads each K/V byte once instead of once per
// slice of 8 — at no more registers for O, which the m16 tile holds whole either way.
//
// Layout: one CTA of WARPS warps (1, 2, 4 or 8) per work item (or looping over items one at a time,
// DecodeAttentionParams::max_sms; decode_attention_mma_stream.cuh is the variant that keeps the
// copies in flight across items). Each warp owns its own token stream —
// tokens [16·warp + 16·WARPS·i, +16) of the item — and copies, computes and keeps an online-softmax
// state for it alone: its K/V tiles go through its own region of shared memory with cp.async,
// STAGES deep, and since a warp reads only what its own lanes copied, a __syncwarp orders the
// copies and the reads (no block barrier until the end). The warps' states are ⊕-merged through
// shared memory by FinishDecodeItem (decode_attention_epilogue.cuh), which also finishes the
// request for a finishing item. WARPS trades CTA size for CTAs per SM (DecodeMmaWarps): with
// 3 stages a warp needs 24 KiB of shared memory at head_dim 128, so 4 warps fit 2 CTAs per SM,
// 2 warps 4, 1 warp 9; 8 warps (192 KiB) are for one CTA per SM.
//
// Per 16-token tile: S = Q·Kᵀ (16×16, fp32) → mask → online softmax (base 2) → O += P·V, with P
// rounded to the input dtype for the mma (as in the prefix kernel). Only the first g rows are real.
#pragma once

#include "kernels/cuda/attention_state.cuh"
#include "kernels/cuda/decode_attention.cuh"
#include "prefixd/kernels/decode_kernel_choice.h"
#include "kernels/cuda/mma_sm80.cuh"

namespace prefixd::kernels::cuda {
namespace decode {

constexpr int kMmaWarpTokens = 16;  // tokens per warp per step (the k of the P·V mma)
constexpr int kMmaStages = 3;       // tiles per warp in shared memory (kMmaStages − 1 in flight)
// The shallow pipeline of the 2-warp kernel (DecodeShallowPipeline): where every item is one step
// (≤ 32 tokens), one tile per warp in flight is all of it, and 2 stages instead of 3 let 6 CTAs
// share an SM instead of 4 (registers then bound it), i.e. more items' starts overlapped.
constexpr int kMmaShallowStages = 2;
constexpr int kMmaShallowWarps = 2;
// The single-step pipeline (DecodePipeline::kSingle): where every item is one step of the 2-warp
// CTA, the second stage above is never filled, so 1 stage holds the same copies in half the shared
// memory (16 KiB at head_dim 128), and the registers, capped for it (a few bytes of spill), are
// then what bounds the CTAs per SM: 8 instead of 6, i.e. more items' dependent starts overlapped.
// Measured on the H200 (bench/RESULTS.md, session 77, runs 3-4, A/B in one process): at GQA 4,
// head_dim 128, items of 4-24 tokens steps −0.4 to −3.1 µs (B128-256); at 32 tokens, where each
// item's copies are twice as many, even at B256 and +2.3 to +2.8 µs at B64; at head_dim 64 even to
// +0.7; at GQA 8 mixed (−1.3 to +0.2 µs; its spill is larger). So the length rule takes it at GQA 4,
// head_dim 128, for items of at most kMmaSingleStepMaxTokens; PREFIXD_DECODE_PIPELINE=single forces
// it wherever the 2-warp shallow CTA runs at head_dim ≤ 128.
constexpr int kMmaSingleStepStages = 1;
constexpr int kMmaSingleStepCtasPerSm = 8;
constexpr int kMmaSingleStepMaxTokens = 24;
// The shallow 2-warp CTA had ptxas's own register counts of 128 at head_dim 64 and 168 at 128,
// i.e. 8 and 6 CTAs per SM (6 is also what its 32 KiB of shared memory allow at 128). The
// epilogue's prefix states in registers (session 78) took GQA 4 to ~161 and ~180 (6 and 5 CTAs
// per SM), so the launch bounds hold the old counts there (spill at 128: 32 bytes, 12 since s79).
// Measured on the H200 (bench/RESULTS.md, session 78, runs 2-3, builds in turn): at GQA 4 the cap is the
// faster at B256 (32/8 P1024 / P8192 S32 steps 34.1 / 75.7 µs against 35.8 / 77.6 uncapped) and
// at head_dim 64, uncapped faster only at B64 P8192 S32 (30.6 against 31.8); at GQA 8, head_dim
// 128, uncapped (181 registers, 5 CTAs per SM, no spill) was 1.8-2.8 µs faster at B64-128 than
// held at 168 (72 bytes of spill) and even at B256, so GQA 8 and the group of 16 keep ptxas's counts
// at head_dim 128. At head_dim 64 every group is held at 8 CTAs per SM (session 79): GQA 8 had 136
// registers uncapped after s78 (7 CTAs per SM, its steps +0.2 to +1.0 µs against s77's 119) and 168
// with the item pages' code, GQA 16 165 (126 before); held, 128 with no spill. Timed in session
// 81 (run 1, A/B against session 78's build): the head_dim-64 rows −1.9 to −2.4 µs each at 64/8,
// +0.2 to +0.9 at 32/8.
template <int HEAD_DIM>
constexpr int MmaShallowCtasPerSm() { return HEAD_DIM == 64 ? 8 : HEAD_DIM == 128 ? 6 : 0; }
// __launch_bounds__'s minimum CTAs per SM: the caps above for the single-step and the shallow
// kernel (GQA ≤ 4, and every group at head_dim 64); 0 (none) elsewhere, whose registers ptxas chooses
// freely (shared memory bounds them).
template <int HEAD_DIM, int GQA, int WARPS, int STAGES>
constexpr int MmaMinCtasPerSm() {
  if (WARPS != kMmaShallowWarps) return 0;
  if (STAGES == kMmaSingleStepStages) return kMmaSingleStepCtasPerSm;
  const bool capped = GQA <= 4 || HEAD_DIM == 64;
  return STAGES == kMmaShallowStages && capped ? MmaShallowCtasPerSm<HEAD_DIM>() : 0;
}

template <int HEAD_DIM>
constexpr int MmaTileBytes() { return kMmaWarpTokens * HEAD_DIM * 2; }  // one K (or V) tile

template <int HEAD_DIM, int GQA, int WARPS, int STAGES = kMmaStages>
constexpr int DecodeMmaSmemBytes() {
  return EpilogueSmemBytes<HEAD_DIM, GQA, WARPS>(WARPS * STAGES * 2 * MmaTileBytes<HEAD_DIM>());
}

// ---- The pieces of one warp's work, shared with the streaming kernel (decode_attention_mma_stream.cuh)

// Softmax rows per lane in the m16 tile: 1 (row quad_row) for groups of up to 8 heads, 2 (rows
// quad_row and quad_row + 8) for the group of 16.
template <int GQA>
constexpr int MmaRowHalves() { return GQA > 8 ? 2 : 1; }

// One warp's online-softmax state of rows quad_row + 8·h (h < HALVES; rows < g) of the m16 tile:
// unnormalised O (C fragments of the HEAD_DIM / 8 n-tiles: elements 2h and 2h + 1 are row half h),
// the running max (scaled, base 2) and this lane's part of the running sum.
template <int HEAD_DIM, int HALVES = 1>
struct MmaWarpState {
  float o[HEAD_DIM / 8][4];
  float row_max[HALVES], row_sum[HALVES];

  __device__ __forceinline__ void Reset() {
#pragma unroll
    for (int dt = 0; dt < HEAD_DIM / 8; ++dt)
#pragma unroll
      for (int e = 0; e < 4; ++e) o[dt][e] = 0.f;
#pragma unroll
    for (int h = 0; h < HALVES; ++h) row_max[h] = -INFINITY, row_sum[h] = 0.f;
  }
};

// Q as the A operand, straight from global memory: rows quad_row + 8·h (h < HALVES, rows <
// heads.rows ≤ g) at columns quad_col and quad_col + 8 of each k-step (a0, a2 for h = 0; a1, a3 for
// h = 1); the padding rows (8..15 for HALVES = 1, and heads.rows..15) are zeros, kept in the
// fragment so that no mma needs zeros moved into place.
template <typename T, int HEAD_DIM, int HALVES = 1>
__device__ __forceinline__ void LoadMmaQueries(const DecodeAttentionParams& p, const DecodeWorkItem& item,
                                               GroupHeads heads, int lane, uint32_t (&q_frag)[HEAD_DIM / 16][4]) {
  const int quad_row = lane / 4, quad_col = 2 * (lane % 4);
  const T* q_row = static_cast<const T*>(p.q) + (int64_t(item.request) * p.num_qo_heads + heads.first + quad_row) * HEAD_DIM;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const bool head = h < HALVES && quad_row + 8 * h < heads.rows;
    const T* q = q_row + 8 * h * HEAD_DIM;
#pragma unroll
    for (int ks = 0; ks < HEAD_DIM / 16; ++ks) {
      q_frag[ks][h] = head ? *reinterpret_cast<const uint32_t*>(q + 16 * ks + quad_col) : 0u;
      q_frag[ks][2 + h] = head ? *reinterpret_cast<const uint32_t*>(q + 16 * ks + 8 + quad_col) : 0u;
    }
  }
}

// Where one warp's 16-token tile [tile_first, + 16) comes from. Two ways to find its rows:
//  - page-contiguous (MmaTilesArePageContiguous: the page size and the item's first token are
//    multiples of 16, so every tile lies in one page): one page-table lookup per tile, the same
//    in every lane; `offset` is the pool element offset of the tile's first row (head 0) and
//    `rows` how many of its 16 rows are before kv_end (≤ 0: none);
//  - per row: lane r (mod 16) looks up token r's own offset (−1 past kv_end), and the copying
//    lanes get it by shuffle.
// The first needs a fraction of the instructions: with per-row offsets the copies took ~240 of
// the ~460 instructions of a tile (SASS of the 2-warp kernel: shuffles and 64-bit address
// arithmetic per 16-byte copy); without them a tile takes ~300. Measured, that made the kernel
// only 2% faster (it is not issue-bound; bench/RESULTS.md, session 7), at no cost.
struct MmaTileSource {
  int64_t offset = -1;
  int rows = 0;
};

__device__ __forceinline__ bool MmaTilesArePageContiguous(const DecodeAttentionParams& p, const DecodeWorkItem& item) {
  return p.page_size % kMmaWarpTokens == 0 && item.kv_begin % kMmaWarpTokens == 0;
}

// The source of the tile that starts at tile_first (its lanes' token: tile_first + lane mod 16);
// tokens in the slots of `known` need no page-table load.
__device__ __forceinline__ MmaTileSource LookupMmaTile(const DecodeAttentionParams& p, bool contiguous, int page_base,
                                                       int tile_first, int kv_end, int lane,
                                                       const ItemPages& known = ItemPages()) {
  MmaTileSource src;
  if (contiguous) {
    src.rows = min(kMmaWarpTokens, kv_end - tile_first);
    if (src.rows > 0) src.offset = TokenOffset(p, page_base, tile_first, known);
    return src;
  }
  const int t = tile_first + lane % 16;
  if (t < kv_end) src.offset = TokenOffset(p, page_base, t, known);
  return src;
}

// A lane's shared-memory offsets inside a tile, the same for every tile: where its copies land
// (rows lane / ROW_CHUNKS + i · 32 / ROW_CHUNKS, chunk lane mod ROW_CHUNKS, XOR-swizzled) and its
// ldmatrix row addresses for K (B operand of Q·Kᵀ) and V (ldmatrix.trans for P·V). Computed once
// per kernel: per tile only the stage's base is added.
template <int HEAD_DIM>
struct MmaLaneOffsets {
  static constexpr int ROW_BYTES = HEAD_DIM * 2;
  static constexpr int ROW_CHUNKS = HEAD_DIM / 8;                 // 16-byte chunks per token row
  static constexpr int ROWS_PER_COPY = 32 / ROW_CHUNKS;           // rows one warp-wide copy covers
  static constexpr int COPIES = kMmaWarpTokens * ROW_CHUNKS / 32;  // chunks per lane per tile
  uint32_t copy[COPIES];
  LaneTileAddress<ROW_BYTES> k_lane, v_lane;

  __device__ __forceinline__ explicit MmaLaneOffsets(int lane)
      : k_lane(0, (lane & 7) + 8 * (lane / 16), (lane / 8) % 2), v_lane(0, lane & 15, lane / 16) {
#pragma unroll
    for (int i = 0; i < COPIES; ++i)
      copy[i] = SwizzledOffset<ROW_BYTES>(lane / ROW_CHUNKS + i * ROWS_PER_COPY, lane % ROW_CHUNKS);
  }
};

// The copies of one warp's 16-token tile: K into k_tile, V into k_tile + one tile, rows past
// kv_end zero-filled (so they can never inject NaN into P·V). Each row is read by consecutive
// lanes, 16 bytes each (coalesced). A page-contiguous tile with all 16 rows (the common case)
// is a base pointer stepped by a fixed stride, no per-copy test.
template <typename T, int HEAD_DIM>
__device__ __forceinline__ void IssueMmaTileCopies(uint32_t k_tile, const T* k_head, const T* v_head, bool contiguous,
                                                   const MmaTileSource& src, int64_t token_stride,
                                                   const MmaLaneOffsets<HEAD_DIM>& lo, int lane, uint64_t kv_policy) {
  using LO = MmaLaneOffsets<HEAD_DIM>;
  const uint32_t v_tile = k_tile + MmaTileBytes<HEAD_DIM>();
  const int first_row = lane / LO::ROW_CHUNKS, chunk = lane % LO::ROW_CHUNKS;
  if (contiguous) {
    const int64_t base = src.rows > 0 ? src.offset + first_row * token_stride + chunk * 8 : 0;
    const T* k_src = k_head + base;
    const T* v_src = v_head + base;
    const int64_t step = LO::ROWS_PER_COPY * token_stride;
    if (src.rows == kMmaWarpTokens) {
#pragma unroll
      for (int i = 0; i < LO::COPIES; ++i) {
        CopyAsync16Policy(k_tile + lo.copy[i], k_src + i * step, 16, kv_policy);
        CopyAsync16Policy(v_tile + lo.copy[i], v_src + i * step, 16, kv_policy);
      }
      return;
    }
#pragma unroll
    for (int i = 0; i < LO::COPIES; ++i) {
      const bool valid = first_row + i * LO::ROWS_PER_COPY < src.rows;
      CopyAsync16Policy(k_tile + lo.copy[i], valid ? k_src + i * step : k_head, valid ? 16 : 0, kv_policy);
      CopyAsync16Policy(v_tile + lo.copy[i], valid ? v_src + i * step : v_head, valid ? 16 : 0, kv_policy);
    }
    return;
  }
#pragma unroll
  for (int i = 0; i < LO::COPIES; ++i) {
    const int64_t offset = __shfl_sync(0xffffffffu, src.offset, first_row + i * LO::ROWS_PER_COPY);
    const bool valid = offset >= 0;
    const int64_t at = valid ? offset + chunk * 8 : 0;
    CopyAsync16Policy(k_tile + lo.copy[i], k_head + at, valid ? 16 : 0, kv_policy);
    CopyAsync16Policy(v_tile + lo.copy[i], v_head + at, valid ? 16 : 0, kv_policy);
  }
}

// One 16-token tile (K at k_tile, V right after it, tokens [tile_first, + 16), those at or past
// kv_end masked): S = Q·Kᵀ → online softmax (base 2) → O += P·V. LaneOffsets: the lane's ldmatrix
// addresses in the tile's layout (MmaLaneOffsets; the TMA kernel's panel layout has its own).
template <typename T, int HEAD_DIM, int GQA, typename LaneOffsets>
__device__ __forceinline__ void MmaDecodeTile(const uint32_t (&q_frag)[HEAD_DIM / 16][4], uint32_t k_tile,
                                              int tile_first, int kv_end, float scale,
                                              const LaneOffsets& lo, int lane,
                                              MmaWarpState<HEAD_DIM, MmaRowHalves<GQA>()>& st) {
  using Mma = MmaOp<T>;
  constexpr int HALVES = MmaRowHalves<GQA>();
  constexpr int D_STEPS = HEAD_DIM / 16;  // k-steps of Q·Kᵀ, d-pairs of P·V
  constexpr int D_TILES = HEAD_DIM / 8;   // n-tiles of O
  const int quad_col = 2 * (lane % 4);
  const uint32_t v_tile = k_tile + MmaTileBytes<HEAD_DIM>();

  // S = Q·Kᵀ over 16 tokens: two n-tiles of 8. K rows are tokens (the col-major B operand).
  float s[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
#pragma unroll
  for (int ks = 0; ks < D_STEPS; ++ks) {
    uint32_t b[4];
    LdMatrixX4(b, k_tile + lo.k_lane.At(ks, 0));
    Mma::Run(s[0], q_frag[ks], b[0], b[1]);
    Mma::Run(s[1], q_frag[ks], b[2], b[3]);
  }

  // Mask tokens past the item; then the online softmax of row half h = row quad_row + 8·h
  // (elements 2h, 2h + 1 of each n-tile; with one half, elements 2, 3 belong to the zero padding
  // rows 8..15 and are ignored).
#pragma unroll
  for (int h = 0; h < HALVES; ++h) {
    float tile_max = -INFINITY;
#pragma unroll
    for (int nt = 0; nt < 2; ++nt)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        if (tile_first + 8 * nt + quad_col + e >= kv_end) s[nt][2 * h + e] = -INFINITY;
        tile_max = fmaxf(tile_max, s[nt][2 * h + e]);
      }
    const float new_max = fmaxf(st.row_max[h], QuadMax(tile_max) * scale);
    const float subtract = SafeMax(new_max);
    const float rescale = FastExp2(st.row_max[h] - subtract);
    st.row_max[h] = new_max;
    st.row_sum[h] *= rescale;
#pragma unroll
    for (int dt = 0; dt < D_TILES; ++dt) {
      st.o[dt][2 * h] *= rescale;
      st.o[dt][2 * h + 1] *= rescale;
    }
#pragma unroll
    for (int nt = 0; nt < 2; ++nt)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        s[nt][2 * h + e] = FastExp2(fmaf(s[nt][2 * h + e], scale, -subtract));
        st.row_sum[h] += s[nt][2 * h + e];
      }
  }

  // O += P·V: S's C fragments are P's A fragment (k = the 16 tokens; a1, a3 the second row half);
  // V via ldmatrix.trans.
  const uint32_t a[4] = {Mma::Pack(s[0][0], s[0][1]), HALVES == 2 ? Mma::Pack(s[0][2], s[0][3]) : 0u,
                         Mma::Pack(s[1][0], s[1][1]), HALVES == 2 ? Mma::Pack(s[1][2], s[1][3]) : 0u};
#pragma unroll
  for (int dp = 0; dp < D_STEPS; ++dp) {
    uint32_t b[4];
    LdMatrixX4Trans(b, v_tile + lo.v_lane.At(dp, 0));
    Mma::Run(st.o[2 * dp], a, b[0], b[1]);
    Mma::Run(st.o[2 * dp + 1], a, b[2], b[3]);
  }
}

// A warp's state into the parts area FinishDecodeItem reads (its layout: acc [WARPS][GQA][HEAD_DIM],
// m [WARPS][GQA], l [WARPS][GQA]): unnormalised O and sum relative to row_max.
template <int HEAD_DIM, int GQA, int WARPS>
__device__ __forceinline__ void StoreMmaWarpState(uint8_t* parts, int warp, int lane,
                                                  const MmaWarpState<HEAD_DIM, MmaRowHalves<GQA>()>& st) {
  auto& part_o = *reinterpret_cast<float(*)[WARPS][GQA][HEAD_DIM]>(parts);
  auto& part_m = *reinterpret_cast<float(*)[WARPS][GQA]>(parts + WARPS * GQA * HEAD_DIM * 4);
  auto& part_l = *reinterpret_cast<float(*)[WARPS][GQA]>(parts + WARPS * GQA * (HEAD_DIM + 1) * 4);
  const int quad_col = 2 * (lane % 4);
#pragma unroll
  for (int h = 0; h < MmaRowHalves<GQA>(); ++h) {
    const int row = lane / 4 + 8 * h;
    const float sum = QuadSum(st.row_sum[h]);  // all lanes: shuffles before the branch
    if (row < GQA) {
#pragma unroll
      for (int dt = 0; dt < HEAD_DIM / 8; ++dt) {
        part_o[warp][row][8 * dt + quad_col] = st.o[dt][2 * h];
        part_o[warp][row][8 * dt + quad_col + 1] = st.o[dt][2 * h + 1];
      }
      if (lane % 4 == 0) {
        part_m[warp][row] = st.row_max[h];
        part_l[warp][row] = sum;
      }
    }
  }
}

// ---- The kernel: one CTA per item (or looping over items, DecodeAttentionParams::max_sms)

template <typename T, int HEAD_DIM, int GQA, int WARPS, int STAGES>
__global__ void __launch_bounds__(32 * WARPS, MmaMinCtasPerSm<HEAD_DIM, GQA, WARPS, STAGES>())
    DecodeAttentionMmaKernel(const __grid_constant__ DecodeAttentionParams p) {
  static_assert(GQA <= 16, "the g query rows are the rows of one m16 tile");
  static_assert(TensorCoreDecodeBuilt(GQA, HEAD_DIM),
                "head_dim 256 only at g = 4: its 128 O accumulators fill the registers (ptxas: 255, a few bytes "
                "of spill at g = 4, hundreds at g = 8)");
  static_assert(WARPS == 1 || WARPS == 2 || WARPS == 4 || WARPS == 8, "warps per CTA");
  static_assert(DecodeMmaSmemBytes<HEAD_DIM, GQA, WARPS, STAGES>() <= 227 * 1024, "shared memory of one CTA");
  constexpr int TILE = MmaTileBytes<HEAD_DIM>();
  constexpr int STEP = WARPS * kMmaWarpTokens;  // tokens per CTA step

  extern __shared__ __align__(128) uint8_t decode_mma_smem[];
  uint8_t* smem = decode_mma_smem;
  ForEachDecodeItem(p, [&](int index) {
    const DecodeWorkItem item = p.items[index];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int2 bases = ItemBases(p, item, index);  // {page_indptr, state_indptr}[item.request]
    const int page_base = bases.x;
    const uint64_t kv_policy = KvStreamPolicy(p.evict_first);
    const NextWaveItem next_wave = LoadNextWaveItem(p, index);
    if constexpr (WARPS == 2) PrefetchNextWavePages(p, index);  // for PrefetchNextWaveKv below
    const GroupHeads heads = ItemHeads<GQA>(p, item.kv_head);
    uint32_t q_frag[HEAD_DIM / 16][4];
    LoadMmaQueries<T, HEAD_DIM, MmaRowHalves<GQA>()>(p, item, heads, lane, q_frag);

    // This warp's tiles: [STAGES][K, V][16 rows][ROW_BYTES].
    const uint32_t warp_smem = SmemAddress(smem) + warp * STAGES * 2 * TILE;
    const T* k_head = static_cast<const T*>(p.k) + item.kv_head * HEAD_DIM;
    const T* v_head = static_cast<const T*>(p.v) + item.kv_head * HEAD_DIM;
    const int num_steps = (item.kv_end - item.kv_begin + STEP - 1) / STEP;

    const MmaLaneOffsets<HEAD_DIM> lane_offsets(lane);
    // A tile's source is looked up one step ahead of its copy (the page-table load never stalls it);
    // the first step's from the item's pages where the plan passed them (no page-table load at all),
    // which then need no register past it.
    const bool contiguous = MmaTilesArePageContiguous(p, item);
    auto lookup = [&](int step, const ItemPages& known = ItemPages()) {
      return LookupMmaTile(p, contiguous, page_base, item.kv_begin + step * STEP + warp * kMmaWarpTokens, item.kv_end,
                           lane, known);
    };
    MmaTileSource next = lookup(0, LoadItemPages(p, item, index));
    auto issue = [&](int step) {
      if (step < num_steps) {
        IssueMmaTileCopies<T, HEAD_DIM>(warp_smem + (step % STAGES) * 2 * TILE, k_head, v_head, contiguous, next,
                                        p.token_stride, lane_offsets, lane, kv_policy);
        next = lookup(step + 1);
      }
      CpAsyncCommit();  // empty groups past the end keep the wait count uniform
    };
  #pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) issue(s);
    PrefetchPrefixStates<HEAD_DIM, GQA, 32 * WARPS>(p, item, heads, bases.y);
    if constexpr (WARPS == 2) PrefetchNextWaveKv<T, HEAD_DIM>(p, index);  // the CTA of many items

    MmaWarpState<HEAD_DIM, MmaRowHalves<GQA>()> state;
    state.Reset();
    for (int step = 0; step < num_steps; ++step) {
      issue(step + STAGES - 1);
      CpAsyncWait<STAGES - 1>();
      if (step == 0) PrefetchNextWave<T, HEAD_DIM, GQA>(p, next_wave);
      __syncwarp();  // every lane's copies of this tile are visible to the whole warp
      MmaDecodeTile<T, HEAD_DIM, GQA>(q_frag, warp_smem + (step % STAGES) * 2 * TILE,
                                      item.kv_begin + step * STEP + warp * kMmaWarpTokens, item.kv_end,
                                      p.sm_scale_log2, lane_offsets, lane, state);
      __syncwarp();  // all reads of this stage are done before a later issue refills it
    }
    CpAsyncWait<0>();
    __syncthreads();  // every warp is done with its tiles: the region becomes the exchange area
    StoreMmaWarpState<HEAD_DIM, GQA, WARPS>(smem, warp, lane, state);
    __syncthreads();
    FinishDecodeItem<T, HEAD_DIM, GQA, WARPS, 32 * WARPS>(p, item, heads, bases.y, smem);
  });
}

template <typename T, int HEAD_DIM, int GQA, int WARPS, int STAGES = kMmaStages>
void LaunchMmaWarps(const DecodeAttentionParams& params, cudaStream_t stream) {
  LaunchDecodeKernel<DecodeAttentionMmaKernel<T, HEAD_DIM, GQA, WARPS, STAGES>>(
      32 * WARPS, DecodeMmaSmemBytes<HEAD_DIM, GQA, WARPS, STAGES>(), params, stream);
}

template <typename T, int HEAD_DIM, int GQA>
void LaunchDecodeAttentionMma(const DecodeAttentionParams& params, cudaStream_t stream) {
  RequireFp32States(params, "tensor-core decode");
  switch (DecodeMmaWarps(params.mma_warps)) {
    case 1: return LaunchMmaWarps<T, HEAD_DIM, GQA, 1>(params, stream);
    case 2:
      if (DecodeShallowPipeline(params, kMmaShallowWarps * kMmaWarpTokens, kMmaShallowStages)) {
        // (Not at head_dim 256: its 128 O accumulators alone would take the capped registers.)
        if constexpr (HEAD_DIM <= 128) {
          const bool by_rule = HEAD_DIM == 128 && GQA == 4 && params.pipeline == DecodePipeline::kByItemLength &&
                               params.max_item_tokens > 0 &&
                               params.max_item_tokens <= kMmaSingleStepMaxTokens;
          if (params.pipeline == DecodePipeline::kSingle || by_rule)
            return LaunchMmaWarps<T, HEAD_DIM, GQA, 2, kMmaSingleStepStages>(params, stream);
        }
        return LaunchMmaWarps<T, HEAD_DIM, GQA, 2, kMmaShallowStages>(params, stream);
      }
      return LaunchMmaWarps<T, HEAD_DIM, GQA, 2>(params, stream);
    case 8:  // at head_dim 256 its tiles would take 384 KiB: 4 warps (192 KiB) are the most
      if constexpr (HEAD_DIM != 256) return LaunchMmaWarps<T, HEAD_DIM, GQA, 8>(params, stream);
      [[fallthrough]];
    default: return LaunchMmaWarps<T, HEAD_DIM, GQA, 4>(params, stream);
  }
}

}  // namespace decode
}  // namespace prefixd::kernels::cuda

#define PREFIXD_INSTANTIATE_DECODE_ATTENTION_MMA(T, HEAD_DIM)                                         \
  namespace prefixd::kernels::cuda::decode {                                                          \
  template void LaunchDecodeAttentionMma<T, HEAD_DIM, 4>(const DecodeAttentionParams&, cudaStream_t); \
  template void LaunchDecodeAttentionMma<T, HEAD_DIM, 8>(const DecodeAttentionParams&, cudaStream_t); \
  template void LaunchDecodeAttentionMma<T, HEAD_DIM, 16>(const DecodeAttentionParams&, cudaStream_t); \
  }
