// The streaming tensor-core decode kernel (decode_attention_mma_stream.cuh) with its K/V tiles
// copied by the tensor memory accelerator (TMA) instead of per-lane cp.async: for a decode that
// runs on a few SMs beside a busy prefix grid (the CUDA backend's concurrent prefix/decode), where
// each SM must pull several times its even share of the DRAM bandwidth. Included only by
// kernels/cuda/sm90a/inst/decode_stream_tma_sm90a_*.cu (sm_90a).
//
// Why: a decode on k SMs must stream at up to ~90 GB/s per SM (one SM's port limit, measured by
// bench/l2_probe.cu with bulk copies: 88 GB/s each on 36 SMs, bench/RESULTS.md session 25). The
// cp.async kernel, with the same 128 KiB in flight per SM, reached 38 GB/s per SM there: every
// 16-byte copy is one of the SM's outstanding L1 requests. A TMA box is one request per 2 KiB.
//
// Layout and schedule: one CTA of 12 warps (DecodeAttentionParams::tma_warps; 8 with the heads as
// the mma's M, 4 with mma_warps = 4) per SM (at most max_sms CTAs); each WARP takes whole items
// (blockIdx.x + (warp + WARPS·i) · gridDim.x) and walks their 16-token tiles through its own ring of
// tiles (K and V; 192 KiB per CTA in all, tma_decode::Stages) in shared memory, copies
// running all but one stage ahead of its arithmetic and across item boundaries, the next item's
// queries loaded during the current one.
// No barrier ties the warps: the first version split each item over the CTA's warps, as the
// cp.async streaming kernel does, and at S = 256 (two tiles per warp per item) the CTA-wide ⊕ and
// query load at every item held it to ~30 GB/s per SM (bench/RESULTS.md, session 25). What else
// differs from the cp.async kernels:
//  - a tile lands in the TMA's 128-byte swizzled layout: head_dim / 64 panels of 16 rows × 128
//    bytes (16-byte chunk c of row r at (c ^ (r mod 8)) · 16), K's panels then V's. The ldmatrix
//    addresses follow it; the arithmetic is SwapAbDecodeTile's (below: the heads as the mma's N;
//    since session 51) or, with DecodeAttentionParams::tma_swap_ab off, MmaDecodeTile's
//    (TmaLaneOffsets);
//  - each stage has a transaction barrier; lane 0 arms it and issues the boxes (one 16-row box
//    per panel of K and of V, from tensor maps over the pool, evict-first), and the warp waits on
//    it instead of on cp.async groups;
//  - a tile the TMA cannot copy as one box (its 16 tokens not in one page: page size or item start
//    not a multiple of 16) is copied by the lanes with cp.async into the same layout, tracked by
//    the same barrier (cp.async.mbarrier.arrive);
//  - rows of a box past the item's end are zeroed after the barrier (they are other tokens' K/V,
//    or never written: a 0-probability row must not bring a NaN into P·V);
//  - the warp writes its item's state from registers (FinishWarpItem): to the item's slot, or for
//    a finishing item ⊕ the request's prefix-chunk states from L2 into the outputs.
#pragma once

#include <cuda.h>

#include <type_traits>

#include "kernels/cuda/decode_attention_mma.cuh"
#include "kernels/cuda/sm90a/sm90a_primitives.cuh"
#include "kernels/cuda/sm90a/swap_ab_softmax.cuh"
#include "kernels/cuda/smem_limit.cuh"

namespace prefixd::kernels::cuda::sm90a {

namespace tma_decode {

// One CTA per SM of WARPS warps (TmaDecodeWarps, decode_attention.h: 12, 8 or 4),
// each with a ring of Stages() tiles: 192 KiB of K/V per SM, split over the warps (at head_dim 128:
// 12 warps × 2 tiles, one in flight while one is computed; 8 × 3; 4 × 6). 12 × 2 streams faster
// than 8 × 3 (bench/RESULTS.md, sessions 51-52): the warps' arithmetic is latency-bound, and a
// third warp per scheduler hides more of it than the third stage per warp did.
constexpr int kRingBudget = 192 * 1024;
constexpr int kTileRows = decode::kMmaWarpTokens;  // 16 tokens: one box per panel
constexpr int kPanelBytes = kTileRows * 128;

template <int HEAD_DIM>
constexpr int TileBytes() { return HEAD_DIM / 64 * kPanelBytes; }  // K (or V) of one tile
template <int HEAD_DIM, int WARPS>
constexpr int Stages() {
  const int fit = kRingBudget / (WARPS * 2 * TileBytes<HEAD_DIM>());
  return fit < 8 ? fit : 8;
}
template <int HEAD_DIM, int WARPS>
constexpr int RingBytes() { return WARPS * Stages<HEAD_DIM, WARPS>() * 2 * TileBytes<HEAD_DIM>(); }
// The dynamic shared memory: 1024 bytes of alignment slack (the swizzle period), the ring, the
// barriers; at least half an SM's, so that no second CTA shares the SM.
template <int HEAD_DIM, int WARPS>
constexpr int SmemBytes() {
  const int need = 1024 + RingBytes<HEAD_DIM, WARPS>() + WARPS * Stages<HEAD_DIM, WARPS>() * 8;
  return need > 120 * 1024 ? need : 120 * 1024;
}

// Offset of 16-byte chunk `chunk` of row `row` in a tile of panels (TMA SWIZZLE_128B).
__device__ __forceinline__ uint32_t PanelOffset(int row, int chunk) {
  return uint32_t((chunk / 8) * kPanelBytes + row * 128 + (((chunk % 8) ^ (row & 7)) << 4));
}

// The ldmatrix addresses of one lane in a panel tile (cf. LaneTileAddress, mma_sm80.cuh): row
// `row`, chunks 2·pair + half; pairs 4.. are in the next panel.
struct PanelTileAddress {
  uint32_t pair_address[4];
  __device__ __forceinline__ PanelTileAddress(int row, int half) {
#pragma unroll
    for (int j = 0; j < 4; ++j) pair_address[j] = PanelOffset(row, 2 * j + half);
  }
  __device__ __forceinline__ uint32_t At(int pair, int extra_rows) const {
    return pair_address[pair % 4] + (pair / 4) * kPanelBytes + extra_rows * 128;
  }
};

// MmaDecodeTile's lane offsets (decode::MmaLaneOffsets) for the panel layout.
struct TmaLaneOffsets {
  PanelTileAddress k_lane, v_lane;
  __device__ __forceinline__ explicit TmaLaneOffsets(int lane)
      : k_lane((lane & 7) + 8 * (lane / 16), (lane / 8) % 2), v_lane(lane & 15, lane / 16) {}
};

// cp.async.mbarrier.arrive: the barrier's current phase also waits for this thread's earlier
// cp.async copies (its pending count is raised now and lowered when they land).
__device__ __forceinline__ void CpAsyncArriveOnBarrier(uint32_t bar) {
  asm volatile("cp.async.mbarrier.arrive.shared::cta.b64 [%0];\n" ::"r"(bar) : "memory");
}

// ---- The tile's arithmetic with the query heads as the N of the mma ("swap AB")
//
// Why: MmaDecodeTile puts the g ≤ 8 query heads in the M = 16 rows of m16n8k16, so at g = 4 three
// quarters of its 32 mma per 16 tokens are padding, and its Q·Kᵀ is two chains of 8 dependent mma.
// This kernel's warps are bound by that arithmetic, not by their copies (Nsight Compute, session
// 51: ~350 instructions per 16-token tile, 0.37 issued per cycle per scheduler; copies alone 1.7 ×
// faster than the whole). With the heads as N = 8 (the fused kernel's suffix warps do the same,
// suffix_warps_sm90a.cuh): Sᵀ = K·qᵀ is 16 tokens × 8 heads, Oᵀ += Vᵀ·Pᵀ is head_dim × 8 heads, 16
// mma per tile instead of 32, half the O accumulators, and Pᵀ goes from Sᵀ's C layout to the B
// operand by two movmatrix transposes. Sᵀ runs as two chains of HEAD_DIM / 32 mma (even and odd k
// steps) added at the end.

// One warp's state: Oᵀ's m tiles (o[mt]: dims 16·mt + lane/4 (+ 8) × heads 2·(lane % 4) + {0, 1},
// the C fragment), and per head column c of the lane (head 2·(lane % 4) + c) the running max
// (scaled, base 2) and this lane's part of the running sum (its tokens only; summed over the lanes
// at the item's end).
template <int HEAD_DIM>
struct SwapAbState {
  float o[HEAD_DIM / 16][4];
  float m[2], l[2];
  __device__ __forceinline__ void Reset() {
#pragma unroll
    for (int mt = 0; mt < HEAD_DIM / 16; ++mt)
#pragma unroll
      for (int e = 0; e < 4; ++e) o[mt][e] = 0.f;
    m[0] = m[1] = -INFINITY;
    l[0] = l[1] = 0.f;
  }
};

// q as the B operand of Sᵀ = K·qᵀ (k = head_dim, n = 8 heads): q_b[ks] holds head lane / 4's dims
// 16·ks + 2·(lane % 4) + {0, 1} and + 8; zeros for heads past heads.rows.
template <typename T, int HEAD_DIM>
__device__ __forceinline__ void LoadSwapAbQueries(const DecodeAttentionParams& p, const DecodeWorkItem& item,
                                                  decode::GroupHeads heads, int lane, uint32_t (&q_b)[HEAD_DIM / 16][2]) {
  const int head = lane / 4;
  const T* q = static_cast<const T*>(p.q) + (int64_t(item.request) * p.num_qo_heads + heads.first + head) * HEAD_DIM +
               2 * (lane % 4);
#pragma unroll
  for (int ks = 0; ks < HEAD_DIM / 16; ++ks) {
    q_b[ks][0] = head < heads.rows ? *reinterpret_cast<const uint32_t*>(q + 16 * ks) : 0u;
    q_b[ks][1] = head < heads.rows ? *reinterpret_cast<const uint32_t*>(q + 16 * ks + 8) : 0u;
  }
}

// One 16-token tile (K at k_tile, V one tile after it, in the panel layout; tokens [tile_first,
// + 16), those at or past kv_end masked; their V rows are zeros): Sᵀ → online softmax per head →
// Oᵀ += Vᵀ·Pᵀ.
template <typename T, int HEAD_DIM>
__device__ __forceinline__ void SwapAbDecodeTile(const uint32_t (&q_b)[HEAD_DIM / 16][2], uint32_t k_tile, int tile_first,
                                                 int kv_end, float scale, int lane, SwapAbState<HEAD_DIM>& st) {
  using Mma = MmaOp<T>;
  constexpr int KSTEPS = HEAD_DIM / 16, MTILES = HEAD_DIM / 16;
  const uint32_t v_tile = k_tile + TileBytes<HEAD_DIM>();
  // Sᵀ = K·qᵀ: A = K rows lane % 16, 16-byte chunk 2·ks + lane / 16 (ldmatrix's four 8×8 blocks).
  float s[1][4] = {{0.f, 0.f, 0.f, 0.f}}, s_odd[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
  for (int ks = 0; ks < KSTEPS; ++ks) {
    uint32_t a[4];
    LdMatrixX4(a, k_tile + PanelOffset(lane % 16, 2 * ks + lane / 16));
    Mma::Run(ks % 2 == 0 ? s[0] : s_odd, a, q_b[ks][0], q_b[ks][1]);
  }
#pragma unroll
  for (int e = 0; e < 4; ++e) s[0][e] += s_odd[e];
  // Elements: 0 (token lane/4, head h), 1 (lane/4, h + 1), 2 (lane/4 + 8, h), 3 (lane/4 + 8, h + 1).
  if (tile_first + 16 > kv_end) {  // the item's last tile: mask the tokens past its end
    const int token = tile_first + lane / 4;
    if (token >= kv_end) s[0][0] = s[0][1] = -INFINITY;
    if (token + 8 >= kv_end) s[0][2] = s[0][3] = -INFINITY;
  }
  float rescale[2];
  uint32_t b[1][2];  // Pᵀ (k = tokens, n = heads) as the B operand
  SwapAbSoftmax<T, 1>(s, scale, st.m, st.l, rescale, b);
  // Oᵀ += Vᵀ·Pᵀ: A = Vᵀ by transposed ldmatrix, V rows lane % 8 + 8·(lane / 16), chunk 2·mt + (lane / 8) % 2.
#pragma unroll
  for (int mt = 0; mt < MTILES; ++mt) {
    st.o[mt][0] *= rescale[0];
    st.o[mt][1] *= rescale[1];
    st.o[mt][2] *= rescale[0];
    st.o[mt][3] *= rescale[1];
    uint32_t a[4];
    LdMatrixX4Trans(a, v_tile + PanelOffset(lane % 8 + 8 * (lane / 16), 2 * mt + (lane / 8) % 2));
    Mma::Run(st.o[mt], a, b[0][0], b[0][1]);
  }
}

}  // namespace tma_decode

// One lane's part of one query head's normalised state: N groups of VEC consecutive values (group
// j at dim DimOf(j) of the head) and the head's LSE s; the empty state is (0, −inf).
template <int N, int VEC>
struct HeadPart {
  float v[N][VEC];
  float s;
};

template <int VEC>
__device__ __forceinline__ void LoadValues(const float* src, float (&x)[VEC]) {
  if constexpr (VEC == 2) {
    const float2 t = __ldcg(reinterpret_cast<const float2*>(src));
    x[0] = t.x, x[1] = t.y;
  } else {
    x[0] = __ldcg(src);
  }
}
template <int VEC>
__device__ __forceinline__ void StoreValues(float* dst, const float (&x)[VEC]) {
  if constexpr (VEC == 2) *reinterpret_cast<float2*>(dst) = make_float2(x[0], x[1]);
  else *dst = x[0];
}
template <typename T, int VEC>
__device__ __forceinline__ void StoreOutput(T* dst, const float (&x)[VEC]) {
  if constexpr (VEC == 2) {
    if constexpr (std::is_same_v<T, __half>) *reinterpret_cast<__half2*>(dst) = __floats2half2_rn(x[0], x[1]);
    else *reinterpret_cast<__nv_bfloat162*>(dst) = __floats2bfloat162_rn(x[0], x[1]);
  } else {
    *dst = T(x[0]);
  }
}

// The end of one warp's item for one query head `head` (of all num_qo_heads): the lane's part of
// its state to the item's slot, or (item.finish) ⊕ the request's prefix-chunk states (slots
// [run_begin, + slot_offset), read from L2 after the prefix grid) into o / v_out / s_out. The lane
// with writes_lse writes the LSE. STATES16 (DecodeAttentionParams::states_16bit) is a template
// constant, not a branch on p: the runtime branch moved the default kernel's registers by up to 8
// and its suffix part timed up to 2.3 us (~1%) slower on an H100 (bench/RESULTS.md, session 99).
template <typename T, int HEAD_DIM, bool STATES16, int N, int VEC, typename DimOf>
__device__ __forceinline__ void FinishHead(const DecodeAttentionParams& p, const DecodeWorkItem& item, int run_begin,
                                           int head, HeadPart<N, VEC>& own, DimOf dim_of, bool writes_lse) {
  if (!item.finish) {
    const int64_t row = int64_t(run_begin + item.slot_offset) * p.num_qo_heads + head;
    if constexpr (STATES16) {  // v in T, the same layout in elements
#pragma unroll
      for (int j = 0; j < N; ++j)
        StoreOutput<T, VEC>(reinterpret_cast<T*>(p.partial_v) + row * HEAD_DIM + dim_of(j), own.v[j]);
    } else {
#pragma unroll
      for (int j = 0; j < N; ++j) StoreValues<VEC>(p.partial_v + row * HEAD_DIM + dim_of(j), own.v[j]);
    }
    if (writes_lse) p.partial_s[row] = own.s;
    return;
  }
  if constexpr (STATES16) __trap();  // a finishing item would read 16-bit prefix states as fp32
  // Running (M, W, acc): max LSE, sum of weights and weighted v relative to 2^M; an empty state
  // has weight 0 and its v (possibly poison) is never read into the sum.
  float run_m = own.s, run_w = own.s == -INFINITY ? 0.f : 1.f;
  for (int c = 0; c < item.slot_offset; ++c) {
    const int64_t row = int64_t(run_begin + c) * p.num_qo_heads + head;
    const float s = __ldcg(p.partial_s + row);
    if (s == -INFINITY) continue;
    if (s > run_m) {  // new max: rescale what was summed (2^−inf = 0 at the start)
      const float rescale = exp2f(run_m - s);
      run_w *= rescale;
#pragma unroll
      for (int j = 0; j < N; ++j)
#pragma unroll
        for (int e = 0; e < VEC; ++e) own.v[j][e] *= rescale;
      run_m = s;
    }
    const float w = exp2f(s - run_m);
    run_w += w;
#pragma unroll
    for (int j = 0; j < N; ++j) {
      float v[VEC];
      LoadValues<VEC>(p.partial_v + row * HEAD_DIM + dim_of(j), v);
#pragma unroll
      for (int e = 0; e < VEC; ++e) own.v[j][e] = fmaf(w, v[e], own.v[j][e]);
    }
  }
  const bool empty = run_w == 0.f;
  const float inv = empty ? 0.f : 1.f / run_w;
  const int64_t out_row = int64_t(item.request) * p.num_qo_heads + head;
#pragma unroll
  for (int j = 0; j < N; ++j) {
    float v[VEC];
#pragma unroll
    for (int e = 0; e < VEC; ++e) v[e] = own.v[j][e] * inv;
    const int64_t out = out_row * HEAD_DIM + dim_of(j);
    if (p.v_out != nullptr) StoreValues<VEC>(p.v_out + out, v);
    if (p.o != nullptr) StoreOutput<T, VEC>(static_cast<T*>(p.o) + out, v);
  }
  if (p.s_out != nullptr && writes_lse) p.s_out[out_row] = empty ? -INFINITY : run_m + log2f(run_w);
}

// A finished MmaDecodeTile state: row quad_row < GQA of the lane is its head (columns 8·dt +
// quad_col + {0, 1}); lanes of rows ≥ GQA (the m16 tile's padding) write nothing.
template <typename T, int HEAD_DIM, int GQA, bool STATES16>
__device__ __forceinline__ void FinishWarpItem(const DecodeAttentionParams& p, const DecodeWorkItem& item, int run_begin,
                                               const decode::MmaWarpState<HEAD_DIM>& st, int lane) {
  constexpr int DT = HEAD_DIM / 8;
  const int quad_row = lane / 4, quad_col = 2 * (lane % 4);
  const float sum = QuadSum(st.row_sum[0]);  // groups of ≤ 8 heads: one row half (MmaRowHalves)
  if (quad_row >= GQA) return;
  const bool empty = !(sum > 0.f);
  const float inv = empty ? 0.f : 1.f / sum;
  HeadPart<DT, 2> own;
#pragma unroll
  for (int dt = 0; dt < DT; ++dt) own.v[dt][0] = st.o[dt][0] * inv, own.v[dt][1] = st.o[dt][1] * inv;
  own.s = empty ? -INFINITY : st.row_max[0] + log2f(sum);
  FinishHead<T, HEAD_DIM, STATES16>(p, item, run_begin, item.kv_head * GQA + quad_row, own,
                                    [&](int dt) { return 8 * dt + quad_col; }, lane % 4 == 0);
}

// A finished SwapAbDecodeTile state: the lane's columns c = 0, 1 are heads 2·(lane % 4) + c (those
// < GQA write), its values dims 16·mt + lane / 4 (+ 8).
template <typename T, int HEAD_DIM, int GQA, bool STATES16>
__device__ __forceinline__ void FinishSwapAbItem(const DecodeAttentionParams& p, const DecodeWorkItem& item, int run_begin,
                                                 tma_decode::SwapAbState<HEAD_DIM>& st, int lane) {
  constexpr int MTILES = HEAD_DIM / 16;
#pragma unroll
  for (int c = 0; c < 2; ++c)
#pragma unroll
    for (int x = 4; x < 32; x *= 2) st.l[c] += __shfl_xor_sync(0xffffffffu, st.l[c], x);
  const int r0 = lane / 4;
#pragma unroll
  for (int c = 0; c < 2; ++c) {
    const int head = 2 * (lane % 4) + c;
    if (head >= GQA) continue;
    const bool empty = !(st.l[c] > 0.f);
    const float inv = empty ? 0.f : 1.f / st.l[c];
    HeadPart<2 * MTILES, 1> own;
#pragma unroll
    for (int j = 0; j < 2 * MTILES; ++j) own.v[j][0] = st.o[j / 2][c + 2 * (j % 2)] * inv;
    own.s = empty ? -INFINITY : st.m[c] + log2f(st.l[c]);
    FinishHead<T, HEAD_DIM, STATES16>(p, item, run_begin, item.kv_head * GQA + head, own,
                                      [&](int j) { return 16 * (j / 2) + r0 + 8 * (j % 2); }, r0 == 0);
  }
}

template <typename T, int HEAD_DIM, int GQA, int WARPS, bool SWAP_AB, bool STATES16>
__global__ void __launch_bounds__(32 * WARPS, 1)
    DecodeStreamTmaKernel(const __grid_constant__ DecodeAttentionParams p, const __grid_constant__ CUtensorMap k_map,
                          const __grid_constant__ CUtensorMap v_map) {
  using namespace tma_decode;
  static_assert(GQA <= 8 && (HEAD_DIM == 64 || HEAD_DIM == 128), "as the tensor-core kernel");
  static_assert(TileBytes<HEAD_DIM>() == decode::MmaTileBytes<HEAD_DIM>(), "V follows K in a stage");
  constexpr int TILE = TileBytes<HEAD_DIM>();
  constexpr int PANELS = HEAD_DIM / 64;
  constexpr int kWarps = WARPS, kStages = Stages<HEAD_DIM, WARPS>();
  static_assert(kStages >= 2, "a tile in flight while one is computed");
  extern __shared__ uint8_t decode_tma_smem[];
  const uint32_t base = (SmemAddress(decode_tma_smem) + 1023u) & ~1023u;  // the swizzle period
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const uint32_t warp_ring = base + warp * kStages * 2 * TILE;
  const uint32_t warp_bars = base + RingBytes<HEAD_DIM, WARPS>() + warp * kStages * 8;
  const uint64_t kv_policy = CreateL2Policy(p.evict_first ? L2Evict::kFirst : L2Evict::kNormal);
  // This warp's items: blockIdx.x + (warp + kWarps · i) · gridDim.x, i = 0, 1, ...
  const int first_item = blockIdx.x + warp * gridDim.x, item_stride = kWarps * gridDim.x;
  const T* k_pool = static_cast<const T*>(p.k);
  const T* v_pool = static_cast<const T*>(p.v);
  auto tiles_of = [](const DecodeWorkItem& it) { return (it.kv_end - it.kv_begin + kTileRows - 1) / kTileRows; };

  // An early grid (DecodeAttentionParams::early_chain): the late decode may launch once every CTA
  // of this one is resident; the wait for the prefix grid is at the end (no early item finishes).
  if (p.early_chain) AllowDependentLaunch();
  // Each warp's barriers are its own: lane 0 sets them up, the warp waits for that.
  if (lane == 0) {
    for (int s = 0; s < kStages; ++s) MbarrierInit(warp_bars + 8 * s, 1);
    FenceBarrierInit();
    PrefetchTensorMap(&k_map);
    PrefetchTensorMap(&v_map);
  }
  __syncwarp();

  // ---- Issue side: the position (item, tile) of this warp's next copy, running kStages − 1
  // tiles ahead of the arithmetic and across item boundaries (items without tokens are skipped).
  // Nothing on it waits for a load issued just before: an item's tile slots (page-contiguous
  // items: lane i holds the pool slot of tile 32·c + i, one round of page-table loads per 32
  // tiles) are loaded one item ahead, and item descriptors two items ahead. (With a page-table
  // load per tile, each warp's tiles waited on its DRAM latency: ~47 GB/s per SM, session 25.)
  struct Ahead {
    int index = 0, page_base = 0;
    DecodeWorkItem item{};
  };
  auto load_ahead = [&](int index) {
    Ahead a;
    a.index = index;
    if (index < p.num_items) {
      a.item = p.items[index];
      a.page_base = decode::ItemBases(p, a.item, index).x;
    }
    return a;
  };
  // Slot of tile 32·chunk + lane of a page-contiguous item (−1 past its end).
  auto load_slots = [&](const Ahead& a, int chunk) {
    const int tok = a.item.kv_begin + (32 * chunk + lane) * kTileRows;
    if (a.index >= p.num_items || tok >= a.item.kv_end || !decode::MmaTilesArePageContiguous(p, a.item)) return -1;
    return p.page_indices[a.page_base + tok / p.page_size] * p.page_size + tok % p.page_size;
  };
  Ahead is_a, nx_a = load_ahead(first_item), nn_a = load_ahead(first_item + item_stride);
  int is_tile = 0, is_tiles = 0, is_slots = -1, nx_slots = load_slots(nx_a, 0);
  bool is_contiguous = false;
  auto advance_item = [&] {
    do {
      is_a = nx_a;
      is_slots = nx_slots;
      nx_a = nn_a;
      nx_slots = load_slots(nx_a, 0);
      nn_a = load_ahead(nn_a.index + item_stride);
      is_tiles = tiles_of(is_a.item);
    } while (is_a.index < p.num_items && is_tiles == 0);
    is_tile = 0;
    is_contiguous = decode::MmaTilesArePageContiguous(p, is_a.item);
  };
  advance_item();
  int issue_stage = 0;
  // Stages written through the generic proxy (rows zeroed by the compute side, lane copies): a
  // proxy fence before the TMA refills them.
  uint32_t zeroed_stages = 0;
  const int first_row = lane / (HEAD_DIM / 8), chunk = lane % (HEAD_DIM / 8);  // cp.async path
  constexpr int ROWS_PER_COPY = 32 / (HEAD_DIM / 8), COPIES = kTileRows / ROWS_PER_COPY;
  auto issue = [&] {
    if (is_a.index >= p.num_items) return;
    const DecodeWorkItem& it = is_a.item;
    const uint32_t k_dst = warp_ring + issue_stage * 2 * TILE, v_dst = k_dst + TILE;
    const uint32_t bar = warp_bars + 8 * issue_stage;
    if (zeroed_stages & (1u << issue_stage)) {  // those stores before the refill (async proxy)
      FenceProxyAsync();
      __syncwarp();
      zeroed_stages &= ~(1u << issue_stage);
    }
    if (p.tma_diag == 2) {  // arithmetic only: the phase completes without copies
      if (lane == 0) MbarrierArrive(bar);
    } else if (is_contiguous) {
      if (is_tile > 0 && is_tile % 32 == 0) is_slots = load_slots(is_a, is_tile / 32);  // items > 512 tokens
      const int slot = __shfl_sync(0xffffffffu, is_slots, is_tile % 32);
      if (lane == 0) {
        const int x0 = it.kv_head * HEAD_DIM;
        MbarrierArriveExpectTx(bar, uint32_t(2 * TILE));
#pragma unroll
        for (int h = 0; h < PANELS; ++h) {
          TmaLoad2dHint(k_dst + h * kPanelBytes, &k_map, x0 + 64 * h, slot, bar, kv_policy);
          TmaLoad2dHint(v_dst + h * kPanelBytes, &v_map, x0 + 64 * h, slot, bar, kv_policy);
        }
      }
    } else {
      // Lane r (mod 16) looks up token r's element offset (−1 past the end); the copying lanes
      // take theirs by shuffle.
      const decode::MmaTileSource src =
          decode::LookupMmaTile(p, false, is_a.page_base, it.kv_begin + is_tile * kTileRows, it.kv_end, lane);
      const T* k_head = k_pool + it.kv_head * HEAD_DIM;
      const T* v_head = v_pool + it.kv_head * HEAD_DIM;
#pragma unroll
      for (int i = 0; i < COPIES; ++i) {
        const int row = first_row + i * ROWS_PER_COPY;
        const int64_t offset = __shfl_sync(0xffffffffu, src.offset, row);
        const bool valid = offset >= 0;
        const int64_t at = valid ? offset + chunk * 8 : 0;
        const uint32_t dst = PanelOffset(row, chunk);
        decode::CopyAsync16Policy(k_dst + dst, k_head + at, valid ? 16 : 0, kv_policy);
        decode::CopyAsync16Policy(v_dst + dst, v_head + at, valid ? 16 : 0, kv_policy);
      }
      CpAsyncArriveOnBarrier(bar);
      __syncwarp();  // every lane's tracking is on the barrier before lane 0's arrival
      if (lane == 0) MbarrierArrive(bar);
      zeroed_stages |= 1u << issue_stage;
    }
    issue_stage = issue_stage + 1 == kStages ? 0 : issue_stage + 1;
    if (++is_tile == is_tiles) advance_item();
  };
  for (int s = 0; s < kStages - 1; ++s) issue();

  // ---- Compute side: the same items, tile by tile from the ring; the next item's descriptor and
  // queries are loaded while the current one runs.
  const TmaLaneOffsets lane_offsets(lane);
  int compute_stage = 0;
  uint32_t compute_phase = 0;
  int index = first_item;
  DecodeWorkItem item{};
  int2 bases{};
  // The queries as the A operand of MmaDecodeTile (4 registers per k step) or the B operand of
  // SwapAbDecodeTile (2), and the matching state.
  constexpr int Q_REGS = SWAP_AB ? 2 : 4;
  using State = std::conditional_t<SWAP_AB, SwapAbState<HEAD_DIM>, decode::MmaWarpState<HEAD_DIM>>;
  auto load_queries = [&](const DecodeWorkItem& it, uint32_t (&q)[HEAD_DIM / 16][Q_REGS]) {
    const decode::GroupHeads heads = decode::ItemHeads<GQA>(p, it.kv_head);
    if constexpr (SWAP_AB) LoadSwapAbQueries<T, HEAD_DIM>(p, it, heads, lane, q);
    else decode::LoadMmaQueries<T, HEAD_DIM>(p, it, heads, lane, q);
  };
  uint32_t q_frag[HEAD_DIM / 16][Q_REGS];
  if (index < p.num_items) {
    item = p.items[index];
    bases = decode::ItemBases(p, item, index);  // {page_indptr, state_indptr}[item.request]
    load_queries(item, q_frag);
  }
  while (index < p.num_items) {
    const int next_index = index + item_stride;
    DecodeWorkItem next_item{};
    int2 next_bases{};
    uint32_t q_next[HEAD_DIM / 16][Q_REGS];
    if (next_index < p.num_items) {
      next_item = p.items[next_index];
      next_bases = decode::ItemBases(p, next_item, next_index);
      load_queries(next_item, q_next);
    }
    State state;
    state.Reset();
    const int num_tiles = tiles_of(item);
    for (int t = 0; t < num_tiles; ++t) {
      issue();
      const int tile_first = item.kv_begin + t * kTileRows;
      const int rows = min(kTileRows, item.kv_end - tile_first);
      const uint32_t k_tile = warp_ring + compute_stage * 2 * TILE;
      MbarrierWait(warp_bars + 8 * compute_stage, compute_phase);
      if (rows < kTileRows) {  // zero the rows past the item's end, K and V
        zeroed_stages |= 1u << compute_stage;
        for (int e = lane; e < (kTileRows - rows) * (HEAD_DIM / 8); e += 32) {
          const int row = rows + e / (HEAD_DIM / 8), c = e % (HEAD_DIM / 8);
          const uint32_t at = k_tile + PanelOffset(row, c);
          asm volatile("st.shared.v4.u32 [%0], {%1, %1, %1, %1};\n" ::"r"(at), "r"(0u) : "memory");
          asm volatile("st.shared.v4.u32 [%0], {%1, %1, %1, %1};\n" ::"r"(at + TILE), "r"(0u) : "memory");
        }
      }
      __syncwarp();  // the tile (and its zeroed rows) is visible to the whole warp
      if (p.tma_diag != 1) {  // 1: copies only
        if constexpr (SWAP_AB)
          SwapAbDecodeTile<T, HEAD_DIM>(q_frag, k_tile, tile_first, item.kv_end, p.sm_scale_log2, lane, state);
        else
          decode::MmaDecodeTile<T, HEAD_DIM, GQA>(q_frag, k_tile, tile_first, item.kv_end, p.sm_scale_log2,
                                                  lane_offsets, lane, state);
      }
      __syncwarp();  // all reads of this stage are done before a later issue refills it
      if (++compute_stage == kStages) compute_stage = 0, compute_phase ^= 1;
    }
    // With a programmatic launch the prefix grid may still run: a finishing item reads its states.
    if (item.finish) decode::WaitForPrefixGrid();
    if constexpr (SWAP_AB) FinishSwapAbItem<T, HEAD_DIM, GQA, STATES16>(p, item, bases.y, state, lane);
    else FinishWarpItem<T, HEAD_DIM, GQA, STATES16>(p, item, bases.y, state, lane);
    index = next_index;
    item = next_item;
    bases = next_bases;
#pragma unroll
    for (int ks = 0; ks < HEAD_DIM / 16; ++ks)
#pragma unroll
      for (int e = 0; e < Q_REGS; ++e) q_frag[ks][e] = q_next[ks][e];
  }
  // This grid completes only after the prefix grid it may overlap (decode_attention.h).
  decode::WaitForPrefixGrid();
}

// Launch: one CTA per SM on at most max_sms SMs (the shared memory keeps a second one out).
template <typename T, int HEAD_DIM, int GQA, int WARPS, bool SWAP_AB, bool STATES16>
void LaunchDecodeStreamTmaKernel(const DecodeAttentionParams& p, const CUtensorMap& k_map, const CUtensorMap& v_map,
                                 cudaStream_t stream) {
  constexpr int smem = tma_decode::SmemBytes<HEAD_DIM, WARPS>();
  // Once per device and kernel.
  RaiseDynamicSmemLimitOnce<DecodeStreamTmaKernel<T, HEAD_DIM, GQA, WARPS, SWAP_AB, STATES16>>(smem);
  // Each warp takes whole items, round-robin over the CTAs: as many CTAs as give every warp one, or
  // each CTA tma_items_per_cta of them (at most max_sms).
  const int per_cta = p.tma_items_per_cta > 0 ? std::min(p.tma_items_per_cta, WARPS) : WARPS;
  const int ctas = std::min(p.max_sms, (p.num_items + per_cta - 1) / per_cta);
  LaunchMaybeProgrammatic(DecodeStreamTmaKernel<T, HEAD_DIM, GQA, WARPS, SWAP_AB, STATES16>,
                          dim3(unsigned(std::max(ctas, 1))), dim3(32 * WARPS), size_t(smem), stream, p.overlap_prefix,
                          p, k_map, v_map);
}

template <typename T, int HEAD_DIM, int GQA, int WARPS, bool SWAP_AB>
void LaunchDecodeStreamTmaWarps(const DecodeAttentionParams& p, const CUtensorMap& k_map, const CUtensorMap& v_map,
                                cudaStream_t stream) {
  if (p.states_16bit)
    return LaunchDecodeStreamTmaKernel<T, HEAD_DIM, GQA, WARPS, SWAP_AB, true>(p, k_map, v_map, stream);
  LaunchDecodeStreamTmaKernel<T, HEAD_DIM, GQA, WARPS, SWAP_AB, false>(p, k_map, v_map, stream);
}

template <typename T, int HEAD_DIM, int GQA>
void LaunchDecodeStreamTma(const DecodeAttentionParams& p, const CUtensorMap& k_map, const CUtensorMap& v_map,
                           cudaStream_t stream) {
  if constexpr (GQA <= 2) {  // the heads as the mma's N only: MmaDecodeTile is built for 4 and 8
    switch (TmaDecodeWarps(true, p.mma_warps, p.tma_warps)) {
      case 4: return LaunchDecodeStreamTmaWarps<T, HEAD_DIM, GQA, 4, true>(p, k_map, v_map, stream);
      case 12: return LaunchDecodeStreamTmaWarps<T, HEAD_DIM, GQA, 12, true>(p, k_map, v_map, stream);
      default: return LaunchDecodeStreamTmaWarps<T, HEAD_DIM, GQA, 8, true>(p, k_map, v_map, stream);
    }
  }
  switch (TmaDecodeWarps(p.tma_swap_ab, p.mma_warps, p.tma_warps)) {
    case 4:
      if (p.tma_swap_ab) return LaunchDecodeStreamTmaWarps<T, HEAD_DIM, GQA, 4, true>(p, k_map, v_map, stream);
      return LaunchDecodeStreamTmaWarps<T, HEAD_DIM, GQA, 4, false>(p, k_map, v_map, stream);
    case 12:
      return LaunchDecodeStreamTmaWarps<T, HEAD_DIM, GQA, 12, true>(p, k_map, v_map, stream);
    default:
      if (p.tma_swap_ab) return LaunchDecodeStreamTmaWarps<T, HEAD_DIM, GQA, 8, true>(p, k_map, v_map, stream);
      return LaunchDecodeStreamTmaWarps<T, HEAD_DIM, GQA, 8, false>(p, k_map, v_map, stream);
  }
}

}  // namespace prefixd::kernels::cuda::sm90a

#define PREFIXD_INSTANTIATE_DECODE_STREAM_TMA(T, HEAD_DIM)                                                  \
  namespace prefixd::kernels::cuda::sm90a {                                                                 \
  template void LaunchDecodeStreamTma<T, HEAD_DIM, 1>(const DecodeAttentionParams&, const CUtensorMap&,     \
                                                      const CUtensorMap&, cudaStream_t);                    \
  template void LaunchDecodeStreamTma<T, HEAD_DIM, 2>(const DecodeAttentionParams&, const CUtensorMap&,     \
                                                      const CUtensorMap&, cudaStream_t);                    \
  template void LaunchDecodeStreamTma<T, HEAD_DIM, 4>(const DecodeAttentionParams&, const CUtensorMap&,     \
                                                      const CUtensorMap&, cudaStream_t);                    \
  template void LaunchDecodeStreamTma<T, HEAD_DIM, 8>(const DecodeAttentionParams&, const CUtensorMap&,     \
                                                      const CUtensorMap&, cudaStream_t);                    \
  }
