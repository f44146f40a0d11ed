// The suffix's arithmetic as swap-AB wgmma tiles: what it would cost a fused step's warpgroups.
//
//   prefixd_suffix_wgmma_probe [--dtype fp16|bf16] [--gqa G] [--items N] [--tiles T] [--ilp 1|2]
//                              [--part all|mma] [--schedule plain|staggered|fa3|split] [--ctas-per-sm 1|2] [--reps R]
//
// Why (bench/ISSUE4.md, "Levers still open"; bench/NOTES-fused.md, session 66): the headline row
// 32/8 B256 P32768 S256 runs its suffix on k SMs beside a prefix grid of 132 − k CTAs (the
// concurrent mode), which costs the prefix part ~25 µs and adds a merge of ~14 µs. A step whose
// prefix kernel ran the suffix tiles on its own consumer warpgroups (the suffix K/V through the same
// TMA ring: 268 MB over a ~210 µs prefix part is ~1.3 TB/s, far from the HBM's limit) would pay
// only the suffix's arithmetic on the tensor cores. That pays only if the arithmetic is cheap: the
// TMA decode's mma.sync tile takes ~39 µs of the whole GPU for it (session 52, arithmetic only),
// which would leave the step where it is.
//
// This probe times the wgmma form of the tile, the query heads of one KV head as the N = 8 of
// m64n8k16 (swap-AB, the heads past the GQA group zero): Sᵀ = K·Qᵀ (K K-major as A), the base-2
// softmax down each column's 64 tokens (the column maxima through shared memory: one named barrier
// per tile), Pᵀ to shared memory, Oᵀ += Vᵀ·Pᵀ (V as a transposed, MN-major A). Two consumer
// warpgroups per SM, as the prefix kernel has; each runs `items` items of `tiles` tiles (64 tokens
// each, head_dim 128) and writes every item's normalised state (v, lse) as a decode item would. The
// K/V tiles stay resident in shared memory (arithmetic only, as PREFIXD_DECODE_TMA_DIAG=2 times the
// mma.sync tile); --ilp 2 runs two items of a warpgroup side by side (one barrier for both, their
// wgmma chains overlapped), and --schedule staggered with it staggers the two items' chains so that
// one item's softmax runs while the other's wgmmas do (as FlashAttention-3 overlaps a warpgroup's
// softmax with its next wgmma); --schedule fa3 is FlashAttention-3's own schedule on one item (the
// tile's Sᵀ issued with the previous tile's Oᵀ, the softmax while that Oᵀ runs, the two warpgroups'
// issue blocks taking turns), as the prefix kernel runs its row tiles; --schedule split gives each
// warp's 16 tokens of a tile their own softmax state and Oᵀ accumulators (one barrier per tile).
//
// --part mma times the same launch with the tile's two wgmma chains alone (no softmax, no barrier,
// no Pᵀ written: WRONG results on purpose, reported as unchecked): what the tensor-core instructions
// themselves cost.
//
// Checked before timing (--part all): every item of every warpgroup against a float64 reference (the
// outputs poisoned with NaN first; NaN never passes). Each item's tiles alternate between two distinct
// tiles, so its attention is that over their 128 tokens, each taken tiles / 2 times.
// Exit status: 0 when every item is within tolerance, 1 when one is not, 2 on bad arguments.
//
// Measured on an H200 (bench/RESULTS.md, session 66): the wgmma chains alone ~290 clocks per tile
// per SM; the whole tile (plain schedule) on two warpgroups ~755 on items of 4 tiles, i.e. ~24 µs of
// the whole GPU for 32/8 B256 S256's 8192 tiles, ~1.5 × the mma.sync tile's rate; no other schedule
// faster on two warpgroups; --ctas-per-sm 2 (four warpgroups) ~31% faster than two.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/cuda/sm90a/sm90a_primitives.cuh"
#include "prefixd/common/cuda_check.h"
#include "prefixd/common/error.h"
#include "prefixd/common/tool_main.h"

namespace {

namespace sm90a = prefixd::kernels::cuda::sm90a;

constexpr int kHeadDim = 128;
constexpr int kTileTokens = 64;  // the wgmma M of Sᵀ
constexpr int kHeads = 8;        // the wgmma N: a GQA group's query heads, zero-padded
constexpr int kDistinctTiles = 2;
constexpr int kWarpgroups = 2;  // consumer warpgroups per CTA, as the prefix kernel's wide CTA
constexpr int kThreads = 128 * kWarpgroups;
constexpr int kMaxIlp = 2;

// Shared memory, from a 1024-byte aligned base: 128-byte swizzled panels of 64 columns (the layout
// TMA writes and wgmma reads, sm90a_primitives.cuh).
constexpr int kKvPanelBytes = kTileTokens * 128;               // 64 tokens × 64 columns
constexpr int kKvTileBytes = (kHeadDim / 64) * kKvPanelBytes;  // both panels of a K or V tile
constexpr int kQPanelBytes = kHeads * 128;                     // 8 heads × 64 columns: one atom
constexpr int kPBytes = kHeads * 128;                          // Pᵀ: 8 heads × 64 tokens: one atom
constexpr int kKOffset = 0;
constexpr int kVOffset = kKOffset + kDistinctTiles * kKvTileBytes;
constexpr int kQOffset = kVOffset + kDistinctTiles * kKvTileBytes;
constexpr int kPOffset = kQOffset + kWarpgroups * (kHeadDim / 64) * kQPanelBytes;
constexpr int kRedOffset = kPOffset + kWarpgroups * kMaxIlp * kPBytes;
constexpr int kRedFloats = kMaxIlp * 2 * 4 * kHeads;  // per warpgroup: [ilp][maxima, sums][warp][head]
constexpr int kSmemBytes = 1024 + kRedOffset + kWarpgroups * kRedFloats * 4;

// Byte offset of element `col` (0-63) of row `row` in a 128-byte swizzled panel.
__host__ __device__ constexpr uint32_t Swizzled(int row, int col) {
  return uint32_t(row * 128 + ((((col * 2) >> 4) ^ (row & 7)) << 4) + ((col * 2) & 15));
}

// m64n8k16 with A transposed (MN-major in shared memory: Vᵀ, whose M = head_dim runs along V's
// rows) and B K-major (Pᵀ: a head's 64 tokens in one 128-byte row); D += A·B.
template <typename T>
__device__ __forceinline__ void WgmmaN8TransposedA(float (&d)[4], uint64_t desc_a, uint64_t desc_b);
// (One specialisation per element type: the PTX type is part of the instruction's string.)
#define PREFIXD_PROBE_WGMMA_N8_TRANSPOSED_A(T, PTX_T)                                                                 \
  template <>                                                                                                         \
  __device__ __forceinline__ void WgmmaN8TransposedA<T>(float(&d)[4], uint64_t desc_a, uint64_t desc_b) {             \
    asm volatile(                                                                                                     \
        "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"                                                                    \
        "wgmma.mma_async.sync.aligned.m64n8k16.f32." PTX_T "." PTX_T " {%0, %1, %2, %3}, %4, %5, p, 1, 1, 1, 0;\n}\n" \
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])                                                              \
        : "l"(desc_a), "l"(desc_b));                                                                                  \
  }
PREFIXD_PROBE_WGMMA_N8_TRANSPOSED_A(__half, "f16")
PREFIXD_PROBE_WGMMA_N8_TRANSPOSED_A(__nv_bfloat16, "bf16")
#undef PREFIXD_PROBE_WGMMA_N8_TRANSPOSED_A

// k, v: [kDistinctTiles][kTileTokens][kHeadDim]; q: [kHeads][kHeadDim] (rows ≥ gqa ignored).
// out_v: [item][kHeads][kHeadDim]; out_lse: [item][kHeads] (base 2); heads ≥ gqa not written.
// MMA_ONLY: the two wgmma chains alone (--part mma). SCHEDULE: kPlain; kStaggered (ILP 2 only):
// the two items' chains staggered within the warpgroup, so that one item's softmax runs while the
// other's wgmmas do; kFa3 (ILP 1): FlashAttention-3's, Sᵀ of tile t issued with Oᵀ of tile t − 1
// and the softmax of t run while that Oᵀ does, the two warpgroups' issue blocks taking turns.
// kSplit (ILP 1): each warp's 16 tokens of a tile keep their own softmax state (its own column maxima,
// from shuffles only) and their own Oᵀ accumulators: the k16 step w of Oᵀ's wgmmas is exactly warp
// w's tokens, so the same 8 wgmmas accumulate into four sets; the rescale factors cross the warps
// with Pᵀ, under the one barrier Pᵀ needs anyway, and the four partial states are ⊕-merged at the
// item's end. One barrier per tile instead of two, no shared-memory round trip before the
// exponentials.
enum Schedule : int { kPlain = 0, kStaggered = 1, kFa3 = 2, kSplit = 3 };
template <typename T, int ILP, bool MMA_ONLY, int SCHEDULE = kPlain>
__global__ void __launch_bounds__(kThreads, 1)
    SwapAbTileProbe(const T* __restrict__ k, const T* __restrict__ v, const T* __restrict__ q, int gqa, int items,
                    int tiles, float scale_log2, float* __restrict__ out_v, float* __restrict__ out_lse) {
  extern __shared__ uint8_t smem_raw[];
  uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  const uint32_t base = static_cast<uint32_t>(__cvta_generic_to_shared(smem));

  // The inputs, staged by plain stores (generic proxy), then made visible to wgmma (async proxy).
  for (int i = threadIdx.x; i < kDistinctTiles * kTileTokens * kHeadDim; i += kThreads) {
    const int tile = i / (kTileTokens * kHeadDim), row = (i / kHeadDim) % kTileTokens, col = i % kHeadDim;
    const uint32_t at = tile * kKvTileBytes + (col / 64) * kKvPanelBytes + Swizzled(row, col % 64);
    *reinterpret_cast<T*>(smem + kKOffset + at) = k[i];
    *reinterpret_cast<T*>(smem + kVOffset + at) = v[i];
  }
  for (int i = threadIdx.x; i < kWarpgroups * kHeads * kHeadDim; i += kThreads) {
    const int wg = i / (kHeads * kHeadDim), head = (i / kHeadDim) % kHeads, col = i % kHeadDim;
    const uint32_t at = (wg * (kHeadDim / 64) + col / 64) * kQPanelBytes + Swizzled(head, col % 64);
    *reinterpret_cast<T*>(smem + kQOffset + at) = head < gqa ? q[head * kHeadDim + col] : T(0.f);
  }
  sm90a::FenceProxyAsync();
  __syncthreads();

  const int wg = threadIdx.x / 128, warp = (threadIdx.x % 128) / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;  // accumulator d[e]: row 16·warp + g + 8·(e / 2), column 2t + e % 2
  const uint32_t q_tile = base + kQOffset + wg * (kHeadDim / 64) * kQPanelBytes;
  float* red = reinterpret_cast<float*>(smem + kRedOffset) + wg * kRedFloats;
  const int barrier = 1 + wg;
  const int64_t first_item = (int64_t(blockIdx.x) * kWarpgroups + wg) * items;

  // One item's tile, in three parts: Sᵀ's wgmmas (issued, not waited for); the softmax from Sᵀ to Pᵀ
  // in shared memory (its column maxima through `red` block 2i: one barrier, then one after Pᵀ);
  // Oᵀ's wgmmas (issued, not waited for).
  auto issue_s = [&](float(&acc)[4], int tile) {  // acc's values are not read (the first step overwrites)
    const uint32_t k_tile = base + kKOffset + (tile % kDistinctTiles) * kKvTileBytes;
#pragma unroll
    for (int ks = 0; ks < kHeadDim / 16; ++ks)
      sm90a::Wgmma<T, 8>::SS(acc, sm90a::KMajorDescriptor(k_tile, ks, kKvPanelBytes),
                             sm90a::KMajorDescriptor(q_tile, ks, kQPanelBytes), ks > 0);
  };
  auto issue_o = [&](float(&acc)[2][4], int tile, int i) {
    const uint32_t v_tile = base + kVOffset + (tile % kDistinctTiles) * kKvTileBytes;
    const uint32_t p_tile = base + kPOffset + (wg * kMaxIlp + i) * kPBytes;
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int ks = 0; ks < kTileTokens / 16; ++ks)
        WgmmaN8TransposedA<T>(acc[h], sm90a::MnMajorDescriptor(v_tile + h * kKvPanelBytes, ks, kKvPanelBytes),
                              sm90a::KMajorDescriptor(p_tile, ks, kPBytes));
  };
  // Scales column j's two scores here to base-2 logits and returns their maximum over the warp's 16
  // tokens (the 8 lanes of a column: lane bits 2-4).
  auto scaled_warp_column_max = [&](float(&sc)[4], int j) {
    sc[j] *= scale_log2;
    sc[j + 2] *= scale_log2;
    float mx = fmaxf(sc[j], sc[j + 2]);
#pragma unroll
    for (int off = 4; off < 32; off *= 2) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, off));
    return mx;
  };
  // O *= c per column (the online softmax's rescale; a thread's columns are heads 2t, 2t + 1).
  auto rescale_o = [&](float(&oi)[2][4], const float(&c)[2]) {
#pragma unroll
    for (int j = 0; j < 2; ++j)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        oi[h][j] *= c[j];
        oi[h][j + 2] *= c[j];
      }
  };
  // After the wait for an Oᵀ group: its accumulators pinned below the wait (sm90a::FenceRegisters).
  auto fence_o = [&](float(&oi)[2][4]) {
    sm90a::FenceRegisters(oi[0]);
    sm90a::FenceRegisters(oi[1]);
  };
  // The softmax of a tile into Pᵀ slot i; with DEFER the running O is not rescaled here: the
  // factors are returned in `c` (the kFa3 schedule rescales just before its next Oᵀ issue).
  auto softmax_to_p = [&](float(&sc)[4], float(&mi)[2], float(&li)[2], float(&oi)[2][4], int i, float(&c)[2],
                          auto defer) {
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const float mx = scaled_warp_column_max(sc, j);
      if (g == 0) red[(i * 2 + 0) * 32 + warp * kHeads + 2 * t + j] = mx;
    }
    sm90a::NamedBarrierSync(barrier, 128);
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const float* maxima = red + (i * 2 + 0) * 32 + 2 * t + j;
      const float m_new = fmaxf(mi[j], fmaxf(fmaxf(maxima[0], maxima[8]), fmaxf(maxima[16], maxima[24])));
      c[j] = exp2f(mi[j] - m_new);
      mi[j] = m_new;
      li[j] *= c[j];
    }
    if constexpr (!decltype(defer)::value) rescale_o(oi, c);
    uint8_t* p_bytes = smem + kPOffset + (wg * kMaxIlp + i) * kPBytes;
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const float p = exp2f(sc[e] - mi[e % 2]);
      li[e % 2] += p;
      *reinterpret_cast<T*>(p_bytes + Swizzled(2 * t + e % 2, 16 * warp + g + 8 * (e / 2))) = T(p);
    }
    sm90a::FenceProxyAsync();
    sm90a::NamedBarrierSync(barrier, 128);
  };
  // Items A and B staggered: wgmma groups complete in order, so after each wait<1> the most recent
  // group (the other item's) is still running on the tensor cores while this item's softmax runs.
  //   per tile: wait<0> [S_A] [S_B] wait<1> softmax A [O_A] wait<1> softmax B [O_B]
  auto RunStaggeredTiles = [&](float(&mi)[ILP][2], float(&li)[ILP][2], float(&oi)[ILP][2][4], int num_tiles) {
    if constexpr (ILP == 2) {
      for (int tile = 0; tile < num_tiles; ++tile) {
        float s_a[4] = {}, s_b[4] = {};
        // The previous tile's O_A and O_B done before either softmax rescales them: a wait<1> would
        // also guarantee it (groups complete in order), but ptxas cannot count groups across the
        // loop and then serialises every wgmma (C7514).
        sm90a::WgmmaWait<0>();
        sm90a::WgmmaFence();
        issue_s(s_a, tile);
        sm90a::WgmmaCommit();
        issue_s(s_b, tile + 1);
        sm90a::WgmmaCommit();
        sm90a::WgmmaWait<1>();
        sm90a::FenceRegisters(s_a);
        fence_o(oi[0]);
        float c[2];
        softmax_to_p(s_a, mi[0], li[0], oi[0], 0, c, std::false_type{});
        sm90a::WgmmaFence();
        issue_o(oi[0], tile, 0);
        sm90a::WgmmaCommit();
        sm90a::WgmmaWait<1>();
        sm90a::FenceRegisters(s_b);
        fence_o(oi[1]);
        softmax_to_p(s_b, mi[1], li[1], oi[1], 1, c, std::false_type{});
        sm90a::WgmmaFence();
        issue_o(oi[1], tile + 1, 1);
        sm90a::WgmmaCommit();
      }
      sm90a::WgmmaWait<0>();
#pragma unroll
      for (int i = 0; i < 2; ++i) fence_o(oi[i]);
    }
  };

  // kFa3, one item: per tile t ≥ 1 one issue block (in the warpgroups' turn) of Sᵀ(t), the rescale
  // of O by tile t − 1's factors and Oᵀ(t − 1); then wait<1> (Sᵀ done, Oᵀ may still run), the
  // softmax of t into the other Pᵀ slot, wait<0>. Turns: barrier 3 + wg is this warpgroup's; the
  // other warpgroup arrives on it after its own issue block (warpgroup 1 arrives once up front, so
  // warpgroup 0 goes first, and warpgroup 0 consumes that arrival at the end).
  auto turn_begin = [&] { sm90a::NamedBarrierSync(3 + wg, 256); };
  auto turn_end = [&] { asm volatile("bar.arrive %0, 256;\n" ::"r"(3 + (1 - wg)) : "memory"); };
  auto RunFa3Tiles = [&](float(&mi)[2], float(&li)[2], float(&oi)[2][4], int num_tiles) {
    float s1[4] = {}, c[2];
    turn_begin();
    sm90a::WgmmaFence();
    issue_s(s1, 0);
    sm90a::WgmmaCommit();
    turn_end();
    sm90a::WgmmaWait<0>();
    sm90a::FenceRegisters(s1);
    softmax_to_p(s1, mi, li, oi, 0, c, std::true_type{});
    for (int tile = 1; tile < num_tiles; ++tile) {
      turn_begin();
      sm90a::WgmmaFence();
      issue_s(s1, tile);
      sm90a::WgmmaCommit();
      rescale_o(oi, c);
      sm90a::WgmmaFence();
      issue_o(oi, tile - 1, (tile - 1) % 2);
      sm90a::WgmmaCommit();
      turn_end();
      sm90a::WgmmaWait<1>();
      sm90a::FenceRegisters(s1);
      softmax_to_p(s1, mi, li, oi, tile % 2, c, std::true_type{});
      sm90a::WgmmaWait<0>();
      fence_o(oi);
    }
    turn_begin();
    rescale_o(oi, c);
    sm90a::WgmmaFence();
    issue_o(oi, num_tiles - 1, (num_tiles - 1) % 2);
    sm90a::WgmmaCommit();
    turn_end();
    sm90a::WgmmaWait<0>();
    fence_o(oi);
  };
  if constexpr (SCHEDULE == kFa3)
    if (wg == 1) turn_end();  // warpgroup 0's first turn

  if constexpr (SCHEDULE == kSplit) {
    static_assert(ILP == 1 && !MMA_ONLY, "the split schedule is of one item's whole tiles");
    // Pᵀ and the rescale factors alternate between two slots by tile parity: with one barrier per
    // tile, a warp may write tile t + 1's while another's Oᵀ of tile t still reads tile t's; it
    // cannot reach tile t + 2 before every warp has passed tile t + 1's barrier.
    float* red_m = red + 64;  // [warp][head]: the item's per-warp maxima, at its end
    float* red_l = red + 96;  // [warp][head]: and row sums
    for (int item = 0; item < items; ++item) {
      float m_w[2] = {-INFINITY, -INFINITY}, l_w[2] = {0.f, 0.f}, o4[4][2][4];
#pragma unroll
      for (int j = 0; j < 4; ++j)
#pragma unroll
        for (int h = 0; h < 2; ++h)
#pragma unroll
          for (int e = 0; e < 4; ++e) o4[j][h][e] = 0.f;
      for (int tile = 0; tile < tiles; ++tile) {
        float* red_c = red + (tile % 2) * 32;  // [warp][head]: this tile's rescale factors
        uint8_t* p_bytes = smem + kPOffset + (wg * kMaxIlp + tile % 2) * kPBytes;
        const uint32_t p_tile = base + kPOffset + (wg * kMaxIlp + tile % 2) * kPBytes;
        float sc[4] = {};
        sm90a::WgmmaFence();
        issue_s(sc, tile);
        sm90a::WgmmaCommit();
        sm90a::WgmmaWait<0>();
        sm90a::FenceRegisters(sc);
        float c[2];
#pragma unroll
        for (int j = 0; j < 2; ++j) {
          const float mx = scaled_warp_column_max(sc, j);
          const float m_new = fmaxf(m_w[j], mx);
          c[j] = exp2f(m_w[j] - m_new);
          m_w[j] = m_new;
          l_w[j] *= c[j];
        }
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const float p = exp2f(sc[e] - m_w[e % 2]);
          l_w[e % 2] += p;
          *reinterpret_cast<T*>(p_bytes + Swizzled(2 * t + e % 2, 16 * warp + g + 8 * (e / 2))) = T(p);
        }
        if (g == 0) {
          red_c[warp * kHeads + 2 * t] = c[0];
          red_c[warp * kHeads + 2 * t + 1] = c[1];
        }
        sm90a::FenceProxyAsync();
        sm90a::NamedBarrierSync(barrier, 128);
        // Every warp's factors: the accumulator set j holds warp j's tokens.
#pragma unroll
        for (int j = 0; j < 4; ++j)
#pragma unroll
          for (int jj = 0; jj < 2; ++jj) {
            const float cj = red_c[j * kHeads + 2 * t + jj];
#pragma unroll
            for (int h = 0; h < 2; ++h) {
              o4[j][h][jj] *= cj;
              o4[j][h][jj + 2] *= cj;
            }
          }
        const uint32_t v_tile = base + kVOffset + (tile % kDistinctTiles) * kKvTileBytes;
        sm90a::WgmmaFence();
#pragma unroll
        for (int h = 0; h < 2; ++h)
#pragma unroll
          for (int ks = 0; ks < kTileTokens / 16; ++ks)  // k16 step ks: warp ks's tokens
            WgmmaN8TransposedA<T>(o4[ks][h], sm90a::MnMajorDescriptor(v_tile + h * kKvPanelBytes, ks, kKvPanelBytes),
                                  sm90a::KMajorDescriptor(p_tile, ks, kPBytes));
        sm90a::WgmmaCommit();
        sm90a::WgmmaWait<0>();
#pragma unroll
        for (int j = 0; j < 4; ++j) fence_o(o4[j]);
      }
      // The item's end: the four warps' states ⊕-merged per column.
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        float sum = l_w[j];
#pragma unroll
        for (int off = 4; off < 32; off *= 2) sum += __shfl_xor_sync(0xffffffffu, sum, off);
        if (g == 0) {
          red_m[warp * kHeads + 2 * t + j] = m_w[j];
          red_l[warp * kHeads + 2 * t + j] = sum;
        }
      }
      sm90a::NamedBarrierSync(barrier, 128);
      float weight[4][2], inv_total[2];
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        float top = -INFINITY;
#pragma unroll
        for (int w = 0; w < 4; ++w) top = fmaxf(top, red_m[w * kHeads + 2 * t + j]);
        float total = 0.f;
#pragma unroll
        for (int w = 0; w < 4; ++w) {
          weight[w][j] = exp2f(red_m[w * kHeads + 2 * t + j] - top);
          total += weight[w][j] * red_l[w * kHeads + 2 * t + j];
        }
        inv_total[j] = 1.f / total;
        if (warp == 0 && g == 0 && 2 * t + j < gqa)
          out_lse[(first_item + item) * kHeads + 2 * t + j] = top + log2f(total);
      }
      sm90a::NamedBarrierSync(barrier, 128);  // red_m / red_l read before the next item's writes
#pragma unroll
      for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int head = 2 * t + e % 2, dim = 64 * h + 16 * warp + g + 8 * (e / 2);
          float v = 0.f;
#pragma unroll
          for (int w = 0; w < 4; ++w) v += o4[w][h][e] * weight[w][e % 2];
          if (head < gqa) out_v[((first_item + item) * kHeads + head) * kHeadDim + dim] = v * inv_total[e % 2];
        }
    }
    return;
  }

  for (int item = 0; item < items; item += ILP) {
    float m[ILP][2], l[ILP][2], o[ILP][2][4];
#pragma unroll
    for (int i = 0; i < ILP; ++i)
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        m[i][j] = -INFINITY;
        l[i][j] = 0.f;
#pragma unroll
        for (int e = 0; e < 4; ++e) o[i][j][e] = 0.f;
      }
    if constexpr (SCHEDULE == kStaggered) {
      static_assert(ILP == 2 && !MMA_ONLY, "the staggered schedule is of two items' whole tiles");
      RunStaggeredTiles(m, l, o, tiles);
    } else if constexpr (SCHEDULE == kFa3) {
      static_assert(ILP == 1 && !MMA_ONLY, "the FA3 schedule is of one item's whole tiles");
      RunFa3Tiles(m[0], l[0], o[0], tiles);
    } else {
      for (int tile = 0; tile < tiles; ++tile) {
        // Sᵀ = K·Qᵀ: M = 64 tokens, N = 8 heads, K = head_dim in 8 steps.
        float s[ILP][4] = {};
        sm90a::WgmmaFence();
#pragma unroll
        for (int i = 0; i < ILP; ++i) issue_s(s[i], tile + i);
        sm90a::WgmmaCommit();
        sm90a::WgmmaWait<0>();
#pragma unroll
        for (int i = 0; i < ILP; ++i) sm90a::FenceRegisters(s[i]);
        if constexpr (!MMA_ONLY) {
          // Each column's maximum over the tile: 2 rows here, 8 lanes (g), 4 warps (shared memory).
#pragma unroll
          for (int i = 0; i < ILP; ++i)
#pragma unroll
            for (int j = 0; j < 2; ++j) {
              const float mx = scaled_warp_column_max(s[i], j);
              if (g == 0) red[(i * 2 + 0) * 32 + warp * kHeads + 2 * t + j] = mx;
            }
          sm90a::NamedBarrierSync(barrier, 128);
          // Online softmax per column (head): rescale the running state, then this tile's P.
#pragma unroll
          for (int i = 0; i < ILP; ++i) {
            float c[2];
#pragma unroll
            for (int j = 0; j < 2; ++j) {
              const float* maxima = red + (i * 2 + 0) * 32 + 2 * t + j;
              const float tile_max = fmaxf(fmaxf(maxima[0], maxima[8]), fmaxf(maxima[16], maxima[24]));
              const float m_new = fmaxf(m[i][j], tile_max);
              c[j] = exp2f(m[i][j] - m_new);  // m = −inf on the first tile: 0
              m[i][j] = m_new;
              l[i][j] *= c[j];
            }
            rescale_o(o[i], c);
            uint8_t* p_bytes = smem + kPOffset + (wg * kMaxIlp + i) * kPBytes;
#pragma unroll
            for (int e = 0; e < 4; ++e) {
              const float p = exp2f(s[i][e] - m[i][e % 2]);
              l[i][e % 2] += p;
              const int token = 16 * warp + g + 8 * (e / 2), head = 2 * t + e % 2;
              *reinterpret_cast<T*>(p_bytes + Swizzled(head, token)) = T(p);
            }
          }
          sm90a::FenceProxyAsync();
          sm90a::NamedBarrierSync(barrier, 128);
        }

        // Oᵀ += Vᵀ·Pᵀ: M = head_dim in two halves of 64, N = 8 heads, K = 64 tokens in 4 steps.
        sm90a::WgmmaFence();
#pragma unroll
        for (int i = 0; i < ILP; ++i) issue_o(o[i], tile + i, i);
        sm90a::WgmmaCommit();
        sm90a::WgmmaWait<0>();
#pragma unroll
        for (int i = 0; i < ILP; ++i) fence_o(o[i]);
      }
    }

    // The item's end: each column's row sum (8 lanes, then 4 warps), v = O / l, lse = m + log2 l.
#pragma unroll
    for (int i = 0; i < ILP; ++i)
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        float sum = l[i][j];
#pragma unroll
        for (int off = 4; off < 32; off *= 2) sum += __shfl_xor_sync(0xffffffffu, sum, off);
        if (g == 0) red[(i * 2 + 1) * 32 + warp * kHeads + 2 * t + j] = sum;
      }
    sm90a::NamedBarrierSync(barrier, 128);
#pragma unroll
    for (int i = 0; i < ILP; ++i) {
      const int64_t it = first_item + item + i;
      float total[2], inv_total[2];  // one division per column, not one per value (runs 1-4 divided each)
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        const float* sums = red + (i * 2 + 1) * 32 + 2 * t + j;
        total[j] = sums[0] + sums[8] + sums[16] + sums[24];
        inv_total[j] = 1.f / total[j];
      }
#pragma unroll
      for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int head = 2 * t + e % 2, dim = 64 * h + 16 * warp + g + 8 * (e / 2);
          if (head < gqa) out_v[(it * kHeads + head) * kHeadDim + dim] = o[i][h][e] * inv_total[e % 2];
        }
      if (warp == 0 && g == 0)
#pragma unroll
        for (int j = 0; j < 2; ++j)
          if (2 * t + j < gqa) out_lse[it * kHeads + 2 * t + j] = m[i][j] + log2f(total[j]);
    }
  }
  if constexpr (SCHEDULE == kFa3)
    if (wg == 0) turn_begin();  // warpgroup 1's up-front arrival
}

const char* ScheduleLabel(int schedule) {
  return schedule == kStaggered ? " staggered" : schedule == kFa3 ? " fa3" : schedule == kSplit ? " split" : "";
}

struct Options {
  bool bf16 = false, mma_only = false;
  int schedule = kPlain;
  int gqa = 4, items = 8, tiles = 4, ilp = 1, reps = 20, ctas_per_sm = 1;
};

template <typename T>
void (*ProbeKernel(int ilp, bool mma_only, int schedule))(const T*, const T*, const T*, int, int, int, float, float*,
                                                          float*) {
  if (schedule == kStaggered) return SwapAbTileProbe<T, 2, false, kStaggered>;
  if (schedule == kFa3) return SwapAbTileProbe<T, 1, false, kFa3>;
  if (schedule == kSplit) return SwapAbTileProbe<T, 1, false, kSplit>;
  if (mma_only) return ilp == 2 ? SwapAbTileProbe<T, 2, true> : SwapAbTileProbe<T, 1, true>;
  return ilp == 2 ? SwapAbTileProbe<T, 2, false> : SwapAbTileProbe<T, 1, false>;
}

template <typename T>
int RunProbe(const Options& opt) {
  int devices = 0;
  const cudaError_t found = cudaGetDeviceCount(&devices);
  PREFIXD_CHECK_ARG(
      found == cudaSuccess && devices > 0,
      "no CUDA device to time on (" << (found == cudaSuccess ? "none found" : cudaGetErrorString(found)) << ")");
  int sms = 0, clock_khz = 0;
  PREFIXD_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  PREFIXD_CUDA_CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0));
  cudaDeviceProp prop{};
  PREFIXD_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  if (prop.major != 9 || prop.minor != 0) {
    std::printf("SKIPPED: the probe's wgmma needs compute capability 9.0 (this GPU: %d.%d)\n", prop.major, prop.minor);
    return 0;
  }

  // Fresh random inputs (never zeros), rounded to T; the reference uses the rounded values.
  std::mt19937 rng(std::random_device{}());
  std::normal_distribution<float> normal(0.f, 1.f);
  const int kv_elems = kDistinctTiles * kTileTokens * kHeadDim;
  std::vector<T> k(kv_elems), v(kv_elems), q(kHeads * kHeadDim);
  for (auto& x : k) x = T(normal(rng));
  for (auto& x : v) x = T(normal(rng));
  for (auto& x : q) x = T(normal(rng));
  const float scale_log2 = float(1.0 / std::sqrt(double(kHeadDim)) / std::log(2.0));

  const int grid = sms * opt.ctas_per_sm;
  const int64_t items_total = int64_t(grid) * kWarpgroups * opt.items;
  T *d_k = nullptr, *d_v = nullptr, *d_q = nullptr;
  float *d_out_v = nullptr, *d_out_lse = nullptr;
  PREFIXD_CUDA_CHECK(cudaMalloc(&d_k, kv_elems * sizeof(T)));
  PREFIXD_CUDA_CHECK(cudaMalloc(&d_v, kv_elems * sizeof(T)));
  PREFIXD_CUDA_CHECK(cudaMalloc(&d_q, q.size() * sizeof(T)));
  const size_t v_floats = size_t(items_total) * kHeads * kHeadDim, lse_floats = size_t(items_total) * kHeads;
  PREFIXD_CUDA_CHECK(cudaMalloc(&d_out_v, v_floats * sizeof(float)));
  PREFIXD_CUDA_CHECK(cudaMalloc(&d_out_lse, lse_floats * sizeof(float)));
  PREFIXD_CUDA_CHECK(cudaMemcpy(d_k, k.data(), kv_elems * sizeof(T), cudaMemcpyHostToDevice));
  PREFIXD_CUDA_CHECK(cudaMemcpy(d_v, v.data(), kv_elems * sizeof(T), cudaMemcpyHostToDevice));
  PREFIXD_CUDA_CHECK(cudaMemcpy(d_q, q.data(), q.size() * sizeof(T), cudaMemcpyHostToDevice));
  PREFIXD_CUDA_CHECK(cudaMemset(d_out_v, 0xff, v_floats * sizeof(float)));  // NaN: poison
  PREFIXD_CUDA_CHECK(cudaMemset(d_out_lse, 0xff, lse_floats * sizeof(float)));

  auto kernel = ProbeKernel<T>(opt.ilp, opt.mma_only, opt.schedule);
  PREFIXD_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes));
  auto launch = [&] {
    kernel<<<grid, kThreads, kSmemBytes>>>(d_k, d_v, d_q, opt.gqa, opt.items, opt.tiles, scale_log2, d_out_v,
                                           d_out_lse);
    PREFIXD_CUDA_CHECK_LAUNCH();
  };
  launch();
  PREFIXD_CUDA_CHECK(cudaDeviceSynchronize());

  // The reference: attention over the two tiles' 128 distinct tokens, each taken tiles / 2 times.
  std::vector<float> out_v(v_floats), out_lse(lse_floats);
  PREFIXD_CUDA_CHECK(cudaMemcpy(out_v.data(), d_out_v, v_floats * sizeof(float), cudaMemcpyDeviceToHost));
  PREFIXD_CUDA_CHECK(cudaMemcpy(out_lse.data(), d_out_lse, lse_floats * sizeof(float), cudaMemcpyDeviceToHost));
  const int tokens = kDistinctTiles * kTileTokens;
  double worst_v = 0.0, worst_lse = 0.0;
  int64_t wrong = 0;
  const double tol_v = opt.bf16 ? 1e-2 : 2e-3, tol_lse = 2e-3;
  for (int head = 0; head < opt.gqa; ++head) {
    std::vector<double> score(tokens);
    double max_score = -INFINITY;
    for (int tok = 0; tok < tokens; ++tok) {
      double dot = 0.0;
      for (int c = 0; c < kHeadDim; ++c)
        dot += double(static_cast<float>(q[head * kHeadDim + c])) *
               double(static_cast<float>(k[size_t(tok) * kHeadDim + c]));
      score[tok] = dot * double(scale_log2);
      max_score = std::max(max_score, score[tok]);
    }
    double sum = 0.0;
    std::vector<double> ref(kHeadDim, 0.0);
    for (int tok = 0; tok < tokens; ++tok) {
      const double w = std::exp2(score[tok] - max_score);
      sum += w;
      for (int c = 0; c < kHeadDim; ++c) ref[c] += w * double(static_cast<float>(v[size_t(tok) * kHeadDim + c]));
    }
    double ref_norm = 0.0;
    for (auto& x : ref) {
      x /= sum;
      ref_norm += x * x;
    }
    ref_norm = std::sqrt(ref_norm);
    const double ref_lse = max_score + std::log2(sum) + std::log2(double(opt.tiles) / kDistinctTiles);
    for (int64_t it = 0; it < items_total; ++it) {
      double err = 0.0;
      for (int c = 0; c < kHeadDim; ++c) {
        const double d = double(out_v[(it * kHeads + head) * kHeadDim + c]) - ref[c];
        err += d * d;
      }
      const double rel = std::sqrt(err) / ref_norm;
      const double lse_err =
          std::fabs(double(out_lse[it * kHeads + head]) - ref_lse) / std::max(1.0, std::fabs(ref_lse));
      if (opt.mma_only) continue;  // WRONG on purpose: not checked (and reported so)
      if (!(rel <= tol_v) || !(lse_err <= tol_lse)) ++wrong;
      worst_v = std::isnan(rel) ? rel : std::max(worst_v, rel);
      worst_lse = std::isnan(lse_err) ? lse_err : std::max(worst_lse, lse_err);
    }
  }

  // Timing: CUDA events around each launch, 3 warm-ups, the median of reps.
  cudaEvent_t start, stop;
  PREFIXD_CUDA_CHECK(cudaEventCreate(&start));
  PREFIXD_CUDA_CHECK(cudaEventCreate(&stop));
  for (int i = 0; i < 3; ++i) launch();
  std::vector<float> ms(size_t(opt.reps));
  for (auto& x : ms) {
    PREFIXD_CUDA_CHECK(cudaEventRecord(start));
    launch();
    PREFIXD_CUDA_CHECK(cudaEventRecord(stop));
    PREFIXD_CUDA_CHECK(cudaEventSynchronize(stop));
    PREFIXD_CUDA_CHECK(cudaEventElapsedTime(&x, start, stop));
  }
  std::sort(ms.begin(), ms.end());
  const double us = 1e3 * ms[ms.size() / 2];
  const int64_t tile_count = items_total * opt.tiles;
  // The 32/8 B256 S256 suffix: 256 requests × 8 KV heads × 256 tokens = 8192 tiles of 64 tokens.
  const double headline_tiles = 256.0 * 8 * 256 / kTileTokens;
  std::printf(
      "%-5s %s%s gqa %d ilp %d ctas/SM %d | %5d items/wg x %3d tiles | %8.1f us | %7.1f ns/tile/SM (%6.0f clocks at "
      "%4.0f MHz) "
      "| 8192 tiles (32/8 B256 S256) %6.1f us | v err %.1e lse err %.1e | %s\n",
      opt.bf16 ? "bf16" : "fp16", opt.mma_only ? "mma" : "all", ScheduleLabel(opt.schedule), opt.gqa, opt.ilp,
      opt.ctas_per_sm, opt.items, opt.tiles, us, 1e3 * us * sms / double(tile_count),
      1e3 * us * sms / double(tile_count) * clock_khz / 1e6, clock_khz / 1e3, us * headline_tiles / double(tile_count),
      worst_v, worst_lse,
      opt.mma_only ? "unchecked (wgmma only)"
      : wrong == 0 ? "OK"
                   : "WRONG");
  PREFIXD_CUDA_CHECK(cudaEventDestroy(start));
  PREFIXD_CUDA_CHECK(cudaEventDestroy(stop));
  cudaFree(d_k);
  cudaFree(d_v);
  cudaFree(d_q);
  cudaFree(d_out_v);
  cudaFree(d_out_lse);
  return wrong == 0 ? 0 : 1;
}

int Run(int argc, char** argv) {
  Options opt;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::printf(
          "usage: prefixd_suffix_wgmma_probe [--dtype fp16|bf16] [--gqa G] [--items N] [--tiles T] [--ilp 1|2] "
          "[--part all|mma] [--schedule plain|staggered|fa3|split] [--ctas-per-sm 1|2] [--reps R]\n"
          "  times the swap-AB wgmma decode tile (64 tokens, head_dim 128, heads as N = 8) on two warpgroups per SM,\n"
          "  arithmetic only, after checking every item against a float64 reference. Defaults: fp16, G 4, N 8\n"
          "  items per warpgroup, T 4 tiles per item (even), ILP 1, part all, 20 timed launches (median).\n"
          "  --part mma: the tile's wgmma chains alone (wrong results on purpose, not checked).\n"
          "  --schedule staggered (with --ilp 2): one item's softmax while the other's wgmmas run;\n"
          "  --schedule fa3 (--ilp 1): S of tile t with O of t - 1, the warpgroups' issues taking turns;\n"
          "  --schedule split (--ilp 1): each warp's tokens their own softmax state, one barrier a tile.\n"
          "  --ctas-per-sm 2: four warpgroups per SM instead of two (more latency hidden).\n");
      return 0;
    }
    PREFIXD_CHECK_ARG(i + 1 < argc, "option '" << a << "' needs a value (--help)");
    const std::string value = argv[++i];
    auto number = [&](int lo, int hi) {
      char* end = nullptr;
      const long n = std::strtol(value.c_str(), &end, 10);
      PREFIXD_CHECK_ARG(end != value.c_str() && *end == '\0' && n >= lo && n <= hi,
                        "option '" << a << "' takes an integer in [" << lo << ", " << hi << "], got '" << value << "'");
      return int(n);
    };
    if (a == "--dtype") {
      PREFIXD_CHECK_ARG(value == "fp16" || value == "bf16", "--dtype takes fp16 or bf16, got '" << value << "'");
      opt.bf16 = value == "bf16";
    } else if (a == "--gqa") {
      opt.gqa = number(1, kHeads);
    } else if (a == "--items") {
      opt.items = number(1, 1 << 16);
    } else if (a == "--tiles") {
      opt.tiles = number(2, 1 << 12);
    } else if (a == "--ilp") {
      opt.ilp = number(1, kMaxIlp);
    } else if (a == "--part") {
      PREFIXD_CHECK_ARG(value == "all" || value == "mma", "--part takes all or mma, got '" << value << "'");
      opt.mma_only = value == "mma";
    } else if (a == "--schedule") {
      PREFIXD_CHECK_ARG(value == "plain" || value == "staggered" || value == "fa3" || value == "split",
                        "--schedule takes plain, staggered, fa3 or split, got '" << value << "'");
      opt.schedule = value == "staggered" ? kStaggered : value == "fa3" ? kFa3 : value == "split" ? kSplit : kPlain;
    } else if (a == "--ctas-per-sm") {
      opt.ctas_per_sm = number(1, 2);
    } else if (a == "--reps") {
      opt.reps = number(1, 1000);
    } else {
      PREFIXD_CHECK_ARG(false, "unknown option '" << a << "' (--help)");
    }
  }
  PREFIXD_CHECK_ARG(opt.tiles % kDistinctTiles == 0, "--tiles must be even (the reference takes each tile alike)");
  PREFIXD_CHECK_ARG(opt.items % opt.ilp == 0, "--items must be a multiple of --ilp");
  PREFIXD_CHECK_ARG(opt.schedule != kStaggered || (opt.ilp == 2 && !opt.mma_only),
                    "--schedule staggered runs two items' whole tiles: it needs --ilp 2 and --part all");
  PREFIXD_CHECK_ARG((opt.schedule != kFa3 && opt.schedule != kSplit) || (opt.ilp == 1 && !opt.mma_only),
                    "--schedule fa3 and split run one item's whole tiles: they need --ilp 1 and --part all");
  return opt.bf16 ? RunProbe<__nv_bfloat16>(opt) : RunProbe<__half>(opt);
}

}  // namespace

int main(int argc, char** argv) { return prefixd::RunToolMain("prefixd_suffix_wgmma_probe", Run, argc, argv); }
