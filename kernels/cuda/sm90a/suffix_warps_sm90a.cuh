// The suffix half of the fused cascade kernel (cascade_fused_sm90a.cuh): decode items run by the
// three spare warps of the producer warpgroup, on the same SM and at the same time as the prefix
// tiles of the two consumer warpgroups.
//
// Why these warps: the prefix CTA holds the whole register file and 160 KiB of shared memory, so no
// other CTA can share its SM (bench/NOTES-fused.md), and running decode items on the consumers
// (session 9) puts them in series with the prefix tiles. The producer warpgroup's warps 1-3 are
// idle in the prefix kernel; with 56 registers each (the consumers give up 16: 224 instead of
// 240) they stream the suffix pages with TMA into their own small ring and do the arithmetic on the
// tensor cores with mma.sync, so memory-bound suffix tiles overlap compute-bound prefix tiles.
//
// Register economy (56 per thread): the g ≤ 8 query heads of a request are the N = 8 side of
// m16n8k16 ("swap AB"): Sᵀ = K·qᵀ (16 tokens × 8 heads), Oᵀ += Vᵀ·Pᵀ (head_dim × 8), and Pᵀ goes
// from the C layout of Sᵀ to the B operand of Vᵀ·Pᵀ by two movmatrix transposes. Two compute
// warps work on the same step: each computes the whole Sᵀ and softmax (the same instructions on
// the same data: the same P, max and sum in both) but only its half of Oᵀ's m tiles (head_dim / 8
// accumulators per lane), so no ⊕ across warps is needed at an item's end. A step is 32 tokens:
// two subtiles, i.e. two independent mma chains, since one step's chain of dependent
// instructions (Sᵀ, max, exp2, transpose, P·V) and not memory is what bounds these warps.
//
// Work: each CTA's decode items (FusedSchedule: balanced by tokens over the CTAs), one after the
// other, through one ring of STAGES steps (K and V of 32 tokens in TMA boxes of min(page_size, 16)
// rows; K and V on one full barrier; an empty barrier with one arrival per compute warp). The
// third warp is the loader: per 32 steps of an item one round of page-table loads (one lane per
// step), then lane 0 issues each step's boxes as soon as its stage is free, across item
// boundaries; before an item's steps, the next l2_ahead_items items may be prefetched into L2.
// (Measured, session 10: cp.async by the loader's lanes instead of TMA streamed slower; neither
// the ring's depth nor the L2 prefetch raised the rate, bench/NOTES-fused.md.) At an item's end each
// compute warp writes its columns of the item's partial state to its slot. After the CTA's last
// item, the finishing items (DecodeWorkItem::finish) wait until every prefix chunk of their
// (request, KV head) has arrived (the consumers count them, cascade_fused.h) and merge the
// request's slots into the final outputs — off the consumers' path, so the tensor-core tiles
// never wait for an ⊕.
#pragma once

#include <cuda.h>

#include "kernels/cuda/attention_state.cuh"
#include "kernels/cuda/cascade_fused.h"
#include "kernels/cuda/mma_sm80.cuh"
#include "kernels/cuda/sm90a/sm90a_primitives.cuh"
#include "kernels/cuda/sm90a/swap_ab_softmax.cuh"

namespace prefixd::kernels::cuda::sm90a {

template <int HEAD_DIM_>
struct SuffixWarpsConfig {
  static constexpr int HEAD_DIM = HEAD_DIM_;
  static constexpr int FIRST_WARP = 1;                    // warps 1-3 of the producer warpgroup:
  static constexpr int WARPS = 3;                         // a loader warp, then two compute warps
  static constexpr int COMPUTE_WARPS = 2;
  static constexpr int ALL_BARRIER = 5;                   // named barriers (0-4: the prefix half)
  static constexpr int COMPUTE_BARRIER = 6;
  static constexpr int SUB = 16;                          // tokens of an mma tile (a subtile)
  static constexpr int TOKENS = 2 * SUB;                  // tokens of a ring stage: two subtiles,
                                                          // two independent Sᵀ chains per step
  static constexpr int MAX_GQA = 8;                       // query heads per KV head: the N of m16n8k16
  static constexpr int PANELS = HEAD_DIM / 64;            // 128-byte column panels, as the prefix tiles
  static constexpr int PANEL_BYTES = TOKENS * 128;
  static constexpr int KV_BYTES = PANELS * PANEL_BYTES;   // K (or V) of one subtile
  static constexpr int STAGE_BYTES = 2 * KV_BYTES;
  static constexpr int STAGES = 64 * 1024 / STAGE_BYTES;  // what shared memory leaves at head_dim 128
  static constexpr int KSTEPS = HEAD_DIM / 16;            // k steps of Sᵀ = K·qᵀ
  static constexpr int MTILES = HEAD_DIM / 16;            // m tiles of Oᵀ
  static constexpr int WARP_MTILES = MTILES / COMPUTE_WARPS;
  static constexpr int BAR_OFFSET = STAGES * STAGE_BYTES;
  static constexpr int BYTES = BAR_OFFSET + 2 * STAGES * 8;  // from a 1024-byte aligned base
  static_assert(HEAD_DIM == 64 || HEAD_DIM == 128, "suffix warps: head_dim 64 or 128");
};

template <typename T, int HEAD_DIM>
struct SuffixWarps {
  using SW = SuffixWarpsConfig<HEAD_DIM>;
  const FusedCascadeParams& f;
  const uint32_t ring, bars;  // the ring and its barriers: full[STAGES], then empty[STAGES]
  const int warp, lane;       // warp in [0, 3): 0 loads, 1 and 2 compute
  const int gqa;
  int e_begin = 0, e_end = 0;  // the CTA's decode entries [e_begin, e_end) of f.cta_items

  __device__ SuffixWarps(const FusedCascadeParams& params, uint32_t base, int w)
      : f(params),
        ring(base),
        bars(base + SW::BAR_OFFSET),
        warp(w),
        lane(int(threadIdx.x) % 32),
        gqa(params.attn.num_qo_heads / params.attn.num_kv_heads) {}

  // Thread 0 of the CTA, before the CTA's barrier-init fence.
  static __device__ void InitBarriers(uint32_t base) {
    for (int s = 0; s < SW::STAGES; ++s) {
      MbarrierInit(base + SW::BAR_OFFSET + 8 * s, 1);                                // full: loader + TMA bytes
      MbarrierInit(base + SW::BAR_OFFSET + 8 * (SW::STAGES + s), SW::COMPUTE_WARPS);  // empty: each compute warp
    }
  }
  __device__ uint32_t Full(int s) const { return bars + 8 * s; }
  __device__ uint32_t Empty(int s) const { return bars + 8 * (SW::STAGES + s); }
  __device__ DecodeWorkItem Item(int e) const { return f.decode_items[-f.cta_items[e] - 1]; }
  static __device__ int NumSteps(const DecodeWorkItem& it) { return (it.kv_end - it.kv_begin + SW::TOKENS - 1) / SW::TOKENS; }

  // ---- the loader warp ---------------------------------------------------------------------------

  // The slot (first token's row of the K/V map) of box b of step j of `it`, and the step's box count.
  __device__ int StepBoxes(const DecodeWorkItem& it, int j, int box_rows) const {
    return (min(SW::TOKENS, it.kv_end - it.kv_begin - j * SW::TOKENS) + box_rows - 1) / box_rows;
  }

  // Every box of item e into L2 (cp.async.bulk.prefetch: no shared memory, no completion), one lane
  // per step: bytes in flight beyond the ring, whose 48-56 KiB cover only ~2 µs of an SM's share of
  // the bandwidth against a loaded memory latency of several µs (bench/RESULTS.md, session 7).
  __device__ void PrefetchItem(int e, const CUtensorMap* page_k, const CUtensorMap* page_v) const {
    const DecodeWorkItem it = Item(e);
    const int ps = f.attn.page_size, box_rows = min(ps, SW::SUB), n_steps = NumSteps(it);
    const int32_t* pages = f.page_indices + f.page_indptr[it.request];
    for (int j = lane; j < n_steps; j += 32) {
      const int boxes = StepBoxes(it, j, box_rows);
      for (int b = 0; b < boxes; ++b) {
        const int tok = it.kv_begin + j * SW::TOKENS + b * box_rows;
        const int y = pages[tok / ps] * ps + tok % ps;
#pragma unroll
        for (int h = 0; h < SW::PANELS; ++h) {
          TmaPrefetch2d(page_k, it.kv_head * HEAD_DIM + 64 * h, y);
          TmaPrefetch2d(page_v, it.kv_head * HEAD_DIM + 64 * h, y);
        }
      }
    }
  }

  // Every step (32 tokens) of the CTA's items, in order, into the ring: per 32 steps of an item one
  // round of page-table loads (lane i: the slots of step chunk0 + i's boxes, min(page_size, 16)
  // rows each), then lane 0 issues each step's boxes as soon as its stage is free. Before an
  // item's steps, the items up to l2_ahead_items later may be prefetched into L2.
  __device__ void LoadAll(const CUtensorMap* page_k, const CUtensorMap* page_v) const {
    PrefetchTensorMap(page_k);
    PrefetchTensorMap(page_v);
    constexpr int MAX_BOXES = SW::TOKENS / 8;
    const int ps = f.attn.page_size, box_rows = min(ps, SW::SUB);
    int stage = 0;
    uint32_t phase = 0;
    int prefetched = e_begin;  // items [e_begin, prefetched) are prefetched
    for (int e = e_begin; e < e_end; ++e) {
      for (; f.l2_ahead_items > 0 && prefetched < e_end && prefetched <= e + f.l2_ahead_items; ++prefetched)
        PrefetchItem(prefetched, page_k, page_v);
      const DecodeWorkItem it = Item(e);
      const int n_steps = NumSteps(it), x0 = it.kv_head * HEAD_DIM;
      const int32_t* pages = f.page_indices + f.page_indptr[it.request];
      for (int chunk0 = 0; chunk0 < n_steps; chunk0 += 32) {
        const int count = min(32, n_steps - chunk0);
        int y[MAX_BOXES] = {}, boxes = 0;
        if (lane < count) {
          boxes = StepBoxes(it, chunk0 + lane, box_rows);
#pragma unroll
          for (int b = 0; b < MAX_BOXES; ++b) {
            const int tok = it.kv_begin + (chunk0 + lane) * SW::TOKENS + b * box_rows;
            if (b < boxes) y[b] = pages[tok / ps] * ps + tok % ps;
          }
        }
        for (int i = 0; i < count; ++i) {
          int yi[MAX_BOXES];
#pragma unroll
          for (int b = 0; b < MAX_BOXES; ++b) yi[b] = __shfl_sync(0xffffffffu, y[b], i);
          const int bi = __shfl_sync(0xffffffffu, boxes, i);
          if (lane == 0 && f.diag == 2) {
            MbarrierWait(Empty(stage), phase ^ 1);
            MbarrierArrive(Full(stage));
          } else if (lane == 0) {
            MbarrierWait(Empty(stage), phase ^ 1);
            const uint32_t k_dst = ring + stage * SW::STAGE_BYTES, v_dst = k_dst + SW::KV_BYTES;
            MbarrierArriveExpectTx(Full(stage), uint32_t(bi * box_rows * 128 * SW::PANELS * 2));
#pragma unroll
            for (int b = 0; b < MAX_BOXES; ++b) {
              if (b >= bi) break;
#pragma unroll
              for (int h = 0; h < SW::PANELS; ++h) {
                const uint32_t offset = h * SW::PANEL_BYTES + b * box_rows * 128;
                TmaLoad2d(k_dst + offset, page_k, x0 + 64 * h, yi[b], Full(stage));
                TmaLoad2d(v_dst + offset, page_v, x0 + 64 * h, yi[b], Full(stage));
              }
            }
          }
          if (++stage == SW::STAGES) stage = 0, phase ^= 1;
        }
      }
    }
  }

  // ---- the compute warps -------------------------------------------------------------------------

  // Online-softmax state of one item in one compute warp: its m tiles of Oᵀ (tile i: rows
  // d = 16·(mt0 + i) + lane/4 (+8), columns = heads 2·(lane%4), +1), per column the running max
  // (scaled, base 2) and this lane's part of the running sum (the same in both warps).
  struct State {
    float o[SW::WARP_MTILES][4];
    float m[2], l[2];
  };

  // This lane's part of the B fragments of qᵀ (head_dim × 8 heads): head lane / 4 at columns
  // 2·(lane % 4) (+1, +8, +9) of each k step; null for the heads ≥ g, whose columns are zeros. The
  // fragments are re-read from L1 at every step: 56 registers leave no room to keep them.
  __device__ const T* QueryLane(const DecodeWorkItem& it) const {
    const int head = lane / 4;
    if (head >= gqa) return nullptr;
    return static_cast<const T*>(f.attn.q) + (int64_t(it.request) * f.attn.num_qo_heads + it.kv_head * gqa + head) * HEAD_DIM +
           2 * (lane % 4);
  }

  // One step (two subtiles) from `stage`: `valid` of its 32 tokens are real; the others are masked,
  // and their V rows zeroed by the first compute warp (stale shared memory or page rows past the
  // sequence end, and 0 · NaN is NaN) before either warp's P·V. Only an item's last step is partial.
  //
  // The barrier before the stores: the ring's mbarriers already order the other warp's reads of
  // this stage's previous use before them (its empty arrival → the loader → the refill → this
  // full wait), but compute-sanitizer racecheck does not follow that chain through the loader and
  // reported the stores as races (session 50). Masking V in registers instead was measured 2-6%
  // slower on full steps (these warps have no registers to spare; bench/NOTES-fused.md).
  __device__ void Compute(State& st, int stage, int valid, const T* q_lane, int mt0) const {
    const uint32_t k_tile = ring + stage * SW::STAGE_BYTES, v_tile = k_tile + SW::KV_BYTES;
    if (valid < SW::TOKENS) {
      NamedBarrierSync(SW::COMPUTE_BARRIER, 32 * SW::COMPUTE_WARPS);
      if (warp == 1) {
        for (int z = lane; z < (SW::TOKENS - valid) * SW::PANELS * 8; z += 32) {
          const int r = valid + z / (SW::PANELS * 8), c = z % (SW::PANELS * 8);
          const uint32_t addr = v_tile + (c / 8) * SW::PANEL_BYTES + r * 128 + (((c % 8) ^ (r % 8)) << 4);
          asm volatile("st.shared.v4.u32 [%0], {%1, %1, %1, %1};\n" ::"r"(addr), "r"(0) : "memory");
        }
        FenceProxyAsync();  // before a later TMA rewrites these rows
      }
    }
    // Sᵀ = K·qᵀ per subtile u: A = K rows 16u + lane % 16 (chunk half lane / 16) of the swizzled
    // panels; the two subtiles are two independent mma chains.
    float s[2][4] = {};
    {
      const int half = lane / 16;
#pragma unroll
      for (int ks = 0; ks < SW::KSTEPS; ++ks) {
        const int chunk = (ks % 4) * 2 + half;
        const uint32_t q0 = q_lane != nullptr ? __ldg(reinterpret_cast<const unsigned int*>(q_lane + 16 * ks)) : 0u;
        const uint32_t q1 = q_lane != nullptr ? __ldg(reinterpret_cast<const unsigned int*>(q_lane + 16 * ks + 8)) : 0u;
#pragma unroll
        for (int u = 0; u < 2; ++u) {
          const int row = SW::SUB * u + lane % 16;
          uint32_t a[4];
          LdMatrixX4(a, k_tile + (ks / 4) * SW::PANEL_BYTES + row * 128 + ((chunk ^ (row % 8)) << 4));
          MmaOp<T>::Run(s[u], a, q0, q1);
        }
      }
    }
    // Mask, then the online softmax per column (head): rows 16u + lane/4 (+8) are tokens.
    const int r0 = lane / 4;
#pragma unroll
    for (int u = 0; u < 2; ++u)
#pragma unroll
      for (int i = 0; i < 4; ++i)
        if (SW::SUB * u + r0 + 8 * (i / 2) >= valid) s[u][i] = -INFINITY;
    float alpha[2];
    uint32_t b[2][2];  // Pᵀ per subtile as the B operand
    SwapAbSoftmax<T, 2>(s, f.attn.sm_scale_log2, st.m, st.l, alpha, b);
#pragma unroll
    for (int i = 0; i < SW::WARP_MTILES; ++i) {
      st.o[i][0] *= alpha[0];
      st.o[i][1] *= alpha[1];
      st.o[i][2] *= alpha[0];
      st.o[i][3] *= alpha[1];
    }
    if (valid < SW::TOKENS) NamedBarrierSync(SW::COMPUTE_BARRIER, 32 * SW::COMPUTE_WARPS);  // the zeroed V rows
    // Oᵀ += Vᵀ·Pᵀ on this warp's m tiles, k = the 32 tokens: A = Vᵀ by transposed ldmatrix.
    const int half = (lane / 8) % 2;
#pragma unroll
    for (int i = 0; i < SW::WARP_MTILES; ++i) {
      const int mt = mt0 + i, chunk = (mt % 4) * 2 + half;
#pragma unroll
      for (int u = 0; u < 2; ++u) {
        const int row = SW::SUB * u + lane % 8 + 8 * (lane / 16);
        uint32_t a[4];
        LdMatrixX4Trans(a, v_tile + (mt / 4) * SW::PANEL_BYTES + row * 128 + ((chunk ^ (row % 8)) << 4));
        MmaOp<T>::Run(st.o[i], a, b[u][0], b[u][1]);
      }
    }
  }

  // This warp's columns of item `it`'s partial state → its slot (the first compute warp also writes
  // the LSEs).
  __device__ void Store(State& st, const DecodeWorkItem& it, int mt0) const {
#pragma unroll
    for (int c = 0; c < 2; ++c) {
      st.l[c] += __shfl_xor_sync(0xffffffffu, st.l[c], 4);
      st.l[c] += __shfl_xor_sync(0xffffffffu, st.l[c], 8);
      st.l[c] += __shfl_xor_sync(0xffffffffu, st.l[c], 16);
    }
    const int head0 = 2 * (lane % 4), r0 = lane / 4;
    const int64_t state0 = int64_t(f.attn.state_indptr[it.request] + it.slot_offset) * f.attn.num_qo_heads +
                           int64_t(it.kv_head) * gqa;
#pragma unroll
    for (int c = 0; c < 2; ++c) {
      const int head = head0 + c;
      if (head >= gqa) continue;
      const float inv = st.l[c] > 0.f ? 1.f / st.l[c] : 0.f;
      float* v = f.attn.partial_v + (state0 + head) * HEAD_DIM;
#pragma unroll
      for (int i = 0; i < SW::WARP_MTILES; ++i) {
        const int d = 16 * (mt0 + i) + r0;
        v[d] = st.o[i][c] * inv;
        v[d + 8] = st.o[i][2 + c] * inv;
      }
      if (warp == 1 && r0 == 0) f.attn.partial_s[state0 + head] = FinalLse(st.m[c], st.l[c]);
    }
  }

  __device__ void ComputeAll() const {
    const int mt0 = (warp - 1) * SW::WARP_MTILES;
    int stage = 0;
    uint32_t phase = 0;
    for (int e = e_begin; e < e_end; ++e) {
      const DecodeWorkItem it = Item(e);
      const int n_steps = NumSteps(it);
      const T* q_lane = QueryLane(it);
      State st;
#pragma unroll
      for (int i = 0; i < SW::WARP_MTILES; ++i)
#pragma unroll
        for (int c = 0; c < 4; ++c) st.o[i][c] = 0.f;
      st.m[0] = st.m[1] = -INFINITY;
      st.l[0] = st.l[1] = 0.f;
      for (int j = 0; j < n_steps; ++j) {
        MbarrierWait(Full(stage), phase);
        if (f.diag != 1) Compute(st, stage, min(SW::TOKENS, it.kv_end - it.kv_begin - j * SW::TOKENS), q_lane, mt0);
        __syncwarp();  // every lane's reads of the stage are done
        if (lane == 0) MbarrierArrive(Empty(stage));
        if (++stage == SW::STAGES) stage = 0, phase ^= 1;
      }
      Store(st, it, mt0);
    }
  }

  // ---- the finishing ⊕ -----------------------------------------------------------------------------

  // Finishing item `it` (its own slot written): waits for its prefix chunks, merges the request's
  // slots for its g heads, writes o / v_out / s_out, and resets the counter for the next launch.
  __device__ void Finish(const DecodeWorkItem& it) const {
    const PrefixAttentionParams& p = f.attn;
    int32_t* counter = f.counters + int64_t(it.request) * p.num_kv_heads + it.kv_head;
    if (it.slot_offset > 0) {
      if (lane == 0) {
        while (LoadAcquire(counter) < it.slot_offset) __nanosleep(128);
      }
      __syncwarp();
    }
    constexpr int VEC = HEAD_DIM / 32;  // columns per lane
    const int first = p.state_indptr[it.request], n = it.slot_offset + 1;
    for (int head = 0; head < gqa; ++head) {
      const int qo = it.kv_head * gqa + head;
      // Slot LSEs: lane i holds slot i (then i + 32, ...); max and weights by warp reductions. The
      // first 32 are loaded once (the usual case: a request has fewer slots), the rest again below.
      const auto lse = [&](int i) { return i < n ? __ldcg(p.partial_s + int64_t(first + i) * p.num_qo_heads + qo) : -INFINITY; };
      const float lse_first = lse(lane);
      float big = lse_first;
      for (int i = lane + 32; i < n; i += 32) big = fmaxf(big, lse(i));
#pragma unroll
      for (int x = 16; x > 0; x >>= 1) big = fmaxf(big, __shfl_xor_sync(0xffffffffu, big, x));
      const float safe = SafeMax(big);
      float acc[VEC], sum = 0.f;
#pragma unroll
      for (int v = 0; v < VEC; ++v) acc[v] = 0.f;
      for (int i0 = 0; i0 < n; i0 += 32) {
        const float s_lane = i0 == 0 ? lse_first : lse(i0 + lane);
        const float w_lane = FastExp2(s_lane - safe);  // 0 for lanes past n (exp2(−inf))
        const int count = min(32, n - i0);
        constexpr int BATCH = 4;  // slot vectors in flight per lane (L2 round trips overlap)
        for (int k0 = 0; k0 < count; k0 += BATCH) {
          float x[BATCH][VEC], w[BATCH];
#pragma unroll
          for (int k = 0; k < BATCH; ++k) {
            w[k] = __shfl_sync(0xffffffffu, w_lane, min(k0 + k, 31));
            const bool real = k0 + k < count;
            const float* src = p.partial_v + (int64_t(first + i0 + (real ? k0 + k : 0)) * p.num_qo_heads + qo) * HEAD_DIM +
                               VEC * lane;
#pragma unroll
            for (int v = 0; v < VEC; ++v) x[k][v] = real ? __ldcg(src + v) : 0.f;
            if (!real) w[k] = 0.f;
          }
#pragma unroll
          for (int k = 0; k < BATCH; ++k) {
            sum += w[k];
#pragma unroll
            for (int v = 0; v < VEC; ++v) acc[v] = fmaf(w[k], x[k][v], acc[v]);
          }
        }
      }
      const float inv = sum > 0.f ? 1.f / sum : 0.f;
      const int64_t row = int64_t(it.request) * p.num_qo_heads + qo;
      if (f.o != nullptr) {
        T* out = static_cast<T*>(f.o) + row * HEAD_DIM + VEC * lane;
#pragma unroll
        for (int v = 0; v < VEC; v += 2)
          *reinterpret_cast<uint32_t*>(out + v) = MmaOp<T>::Pack(acc[v] * inv, acc[v + 1] * inv);
      }
      if (f.v_out != nullptr) {
#pragma unroll
        for (int v = 0; v < VEC; ++v) f.v_out[row * HEAD_DIM + VEC * lane + v] = acc[v] * inv;
      }
      if (f.s_out != nullptr && lane == 0) f.s_out[row] = FinalLse(big, sum);
    }
    if (lane == 0 && it.slot_offset > 0) atomicExch(counter, 0);  // zero for the next launch
  }

  // The whole suffix half of this CTA.
  __device__ void Run(const CUtensorMap* page_k, const CUtensorMap* page_v) {
    e_begin = f.cta_indptr[blockIdx.x];
    e_end = f.cta_indptr[blockIdx.x + 1];
    while (e_begin < e_end && f.cta_items[e_begin] >= 0) ++e_begin;  // prefix entries come first
    if (e_begin == e_end) return;
    if (warp == 0) LoadAll(page_k, page_v);
    else ComputeAll();
    if (f.counters == nullptr) return;  // items only (RunFusedItemsOnly): no ⊕ into the outputs
    __threadfence();
    NamedBarrierSync(SW::ALL_BARRIER, 32 * SW::WARPS);  // every slot of this CTA's items is written
    for (int e = e_begin + warp; e < e_end; e += SW::WARPS) {
      const DecodeWorkItem it = Item(e);
      if (it.finish) Finish(it);
    }
  }
};

}  // namespace prefixd::kernels::cuda::sm90a
