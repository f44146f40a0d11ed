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
// Layout and schedule: one CTA of 8 warps (4 with mma_warps = 4) per SM (at most max_sms CTAs);
// each WARP takes whole
// items (blockIdx.x + (warp + WARPS·i) · gridDim.x) and walks their 16-token tiles through its own
// ring of tiles (K and V; 192 KiB per CTA in all, tma_decode::Stages) in shared memory, copies
// running all but one stage ahead of its arithmetic and across item boundaries, the next item's
// queries loaded during the current one.
// No barrier ties the warps: the first version split each item over the CTA's warps, as the
// cp.async streaming kernel does, and at S = 256 (two tiles per warp per item) the CTA-wide ⊕ and
// query load at every item held it to ~30 GB/s per SM (bench/RESULTS.md, session 25). What else
// differs from the cp.async kernels:
//  - a tile lands in the TMA's 128-byte swizzled layout: head_dim / 64 panels of 16 rows × 128
//    bytes (16-byte chunk c of row r at (c ^ (r mod 8)) · 16), K's panels then V's. The ldmatrix
//    addresses (TmaLaneOffsets) follow it; the arithmetic is MmaDecodeTile's;
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
#include "kernels/cuda/smem_limit.cuh"

namespace prefixd::kernels::cuda::sm90a {

namespace tma_decode {

// One CTA per SM of WARPS warps (8, or 4 with DecodeAttentionParams::mma_warps = 4), each with a
// ring of Stages() tiles: 192 KiB of K/V per SM, split over the warps (at head_dim 128: 8 warps × 3
// tiles, 2 in flight while one is computed, or 4 × 6).
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

}  // namespace tma_decode

// A finished warp state (row quad_row < GQA of the lane, columns 8·dt + quad_col + {0, 1}) as a
// normalised state (v, s); the empty state is (0, −inf).
template <int HEAD_DIM>
struct LaneState {
  float2 v[HEAD_DIM / 8];
  float s;
};

template <int HEAD_DIM>
__device__ __forceinline__ LaneState<HEAD_DIM> NormaliseWarpState(const decode::MmaWarpState<HEAD_DIM>& st) {
  LaneState<HEAD_DIM> out;
  const float sum = QuadSum(st.row_sum[0]);  // groups of ≤ 8 heads: one row half (MmaRowHalves)
  const bool empty = !(sum > 0.f);
  const float inv = empty ? 0.f : 1.f / sum;
#pragma unroll
  for (int dt = 0; dt < HEAD_DIM / 8; ++dt) out.v[dt] = make_float2(st.o[dt][0] * inv, st.o[dt][1] * inv);
  out.s = empty ? -INFINITY : st.row_max[0] + log2f(sum);
  return out;
}

// The end of one warp's item: its state to the item's slot, or (item.finish) ⊕ the request's
// prefix-chunk states (slots [run_begin, + slot_offset), read from L2 after the prefix grid) into
// o / v_out / s_out. Lanes of rows ≥ GQA (the m16 tile's padding) write nothing.
template <typename T, int HEAD_DIM, int GQA>
__device__ __forceinline__ void FinishWarpItem(const DecodeAttentionParams& p, const DecodeWorkItem& item, int run_begin,
                                               const decode::MmaWarpState<HEAD_DIM>& st, int lane) {
  constexpr int DT = HEAD_DIM / 8;
  const int quad_row = lane / 4, quad_col = 2 * (lane % 4);
  LaneState<HEAD_DIM> own = NormaliseWarpState(st);
  if (quad_row >= GQA) return;
  const int head = item.kv_head * GQA + quad_row;
  if (!item.finish) {
    const int64_t row = int64_t(run_begin + item.slot_offset) * p.num_qo_heads + head;
#pragma unroll
    for (int dt = 0; dt < DT; ++dt) *reinterpret_cast<float2*>(p.partial_v + row * HEAD_DIM + 8 * dt + quad_col) = own.v[dt];
    if (lane % 4 == 0) p.partial_s[row] = own.s;
    return;
  }
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
      for (int dt = 0; dt < DT; ++dt) own.v[dt] = make_float2(own.v[dt].x * rescale, own.v[dt].y * rescale);
      run_m = s;
    }
    const float w = exp2f(s - run_m);
    run_w += w;
#pragma unroll
    for (int dt = 0; dt < DT; ++dt) {
      const float2 v = __ldcg(reinterpret_cast<const float2*>(p.partial_v + row * HEAD_DIM + 8 * dt + quad_col));
      own.v[dt] = make_float2(fmaf(w, v.x, own.v[dt].x), fmaf(w, v.y, own.v[dt].y));
    }
  }
  const bool empty = run_w == 0.f;
  const float inv = empty ? 0.f : 1.f / run_w;
  const int64_t out_row = int64_t(item.request) * p.num_qo_heads + head;
#pragma unroll
  for (int dt = 0; dt < DT; ++dt) {
    const float2 v = make_float2(own.v[dt].x * inv, own.v[dt].y * inv);
    const int64_t out = out_row * HEAD_DIM + 8 * dt + quad_col;
    if (p.v_out != nullptr) *reinterpret_cast<float2*>(p.v_out + out) = v;
    if (p.o != nullptr) {
      if constexpr (std::is_same_v<T, __half>) *reinterpret_cast<__half2*>(static_cast<T*>(p.o) + out) = __floats2half2_rn(v.x, v.y);
      else *reinterpret_cast<__nv_bfloat162*>(static_cast<T*>(p.o) + out) = __floats2bfloat162_rn(v.x, v.y);
    }
  }
  if (p.s_out != nullptr && lane % 4 == 0) p.s_out[out_row] = empty ? -INFINITY : run_m + log2f(run_w);
}

template <typename T, int HEAD_DIM, int GQA, int WARPS>
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
  uint32_t q_frag[HEAD_DIM / 16][4];
  if (index < p.num_items) {
    item = p.items[index];
    bases = decode::ItemBases(p, item, index);  // {page_indptr, state_indptr}[item.request]
    decode::LoadMmaQueries<T, HEAD_DIM>(p, item, decode::ItemHeads<GQA>(p, item.kv_head), lane, q_frag);
  }
  while (index < p.num_items) {
    const int next_index = index + item_stride;
    DecodeWorkItem next_item{};
    int2 next_bases{};
    uint32_t q_next[HEAD_DIM / 16][4];
    if (next_index < p.num_items) {
      next_item = p.items[next_index];
      next_bases = decode::ItemBases(p, next_item, next_index);
      decode::LoadMmaQueries<T, HEAD_DIM>(p, next_item, decode::ItemHeads<GQA>(p, next_item.kv_head), lane, q_next);
    }
    decode::MmaWarpState<HEAD_DIM> state;
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
      if (p.tma_diag != 1)  // 1: copies only
        decode::MmaDecodeTile<T, HEAD_DIM, GQA>(q_frag, k_tile, tile_first, item.kv_end, p.sm_scale_log2, lane_offsets,
                                                lane, state);
      __syncwarp();  // all reads of this stage are done before a later issue refills it
      if (++compute_stage == kStages) compute_stage = 0, compute_phase ^= 1;
    }
    // With a programmatic launch the prefix grid may still run: a finishing item reads its states.
    if (item.finish) decode::WaitForPrefixGrid();
    FinishWarpItem<T, HEAD_DIM, GQA>(p, item, bases.y, state, lane);
    index = next_index;
    item = next_item;
    bases = next_bases;
#pragma unroll
    for (int ks = 0; ks < HEAD_DIM / 16; ++ks)
#pragma unroll
      for (int e = 0; e < 4; ++e) q_frag[ks][e] = q_next[ks][e];
  }
  // This grid completes only after the prefix grid it may overlap (decode_attention.h).
  decode::WaitForPrefixGrid();
}

// Launch: one CTA per SM on at most max_sms SMs (the shared memory keeps a second one out).
template <typename T, int HEAD_DIM, int GQA, int WARPS>
void LaunchDecodeStreamTmaWarps(const DecodeAttentionParams& p, const CUtensorMap& k_map, const CUtensorMap& v_map,
                                cudaStream_t stream) {
  constexpr int smem = tma_decode::SmemBytes<HEAD_DIM, WARPS>();
  RaiseDynamicSmemLimitOnce<DecodeStreamTmaKernel<T, HEAD_DIM, GQA, WARPS>>(smem);  // once per device
  cudaLaunchConfig_t config{};
  // Each warp takes whole items: as many CTAs as give every warp one (at most max_sms).
  const int ctas = std::min(p.max_sms, (p.num_items + WARPS - 1) / WARPS);
  config.gridDim = dim3(unsigned(std::max(ctas, 1)));
  config.blockDim = dim3(32 * WARPS);
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  cudaLaunchAttribute attribute[1];
  attribute[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute[0].val.programmaticStreamSerializationAllowed = p.overlap_prefix ? 1 : 0;
  config.attrs = attribute;
  config.numAttrs = 1;
  PREFIXD_CUDA_CHECK(cudaLaunchKernelEx(&config, DecodeStreamTmaKernel<T, HEAD_DIM, GQA, WARPS>, p, k_map, v_map));
}

template <typename T, int HEAD_DIM, int GQA>
void LaunchDecodeStreamTma(const DecodeAttentionParams& p, const CUtensorMap& k_map, const CUtensorMap& v_map,
                           cudaStream_t stream) {
  if (p.mma_warps == 4) return LaunchDecodeStreamTmaWarps<T, HEAD_DIM, GQA, 4>(p, k_map, v_map, stream);
  LaunchDecodeStreamTmaWarps<T, HEAD_DIM, GQA, 8>(p, k_map, v_map, stream);
}

}  // namespace prefixd::kernels::cuda::sm90a

#define PREFIXD_INSTANTIATE_DECODE_STREAM_TMA(T, HEAD_DIM)                                                  \
  namespace prefixd::kernels::cuda::sm90a {                                                                 \
  template void LaunchDecodeStreamTma<T, HEAD_DIM, 4>(const DecodeAttentionParams&, const CUtensorMap&,     \
                                                      const CUtensorMap&, cudaStream_t);                    \
  template void LaunchDecodeStreamTma<T, HEAD_DIM, 8>(const DecodeAttentionParams&, const CUtensorMap&,     \
                                                      const CUtensorMap&, cudaStream_t);                    \
  }
