// The one-launch fused cascade kernel for sm_90a (contract: kernels/cuda/cascade_fused.h).
//
// The CTA is the prefix kernel's (prefix_attention_sm90a.cuh): a TMA producer thread, two wgmma
// consumer warpgroups, one K/V ring. What is new here:
//   - the work list: each CTA walks its own list of prefix items and decode items
//     (FusedCascadeParams::cta_items), producer and consumers in the same order;
//   - suffix tiles: the producer fills a ring stage with 128 suffix tokens, one TMA box of
//     page_size rows per page (its own tensor maps, box = one page), each at the stage offset of
//     its first token, so that the stage has the layout of a prefix tile; one consumer warpgroup
//     (alternating per decode item) computes it with the request's g query heads as rows 0..g−1
//     of its 64-row tile;
//   - the in-kernel ⊕ (FinishArrivals): after an item's states are written, one arrival per
//     (request, query head) row; the last one merges the row's slots.
#pragma once

#include "kernels/cuda/cascade_fused.h"
#include "kernels/cuda/sm90a/prefix_attention_sm90a.cuh"

namespace prefixd::kernels::cuda::sm90a {

// A work-list entry: e ≥ 0 is prefix item e, e < 0 decode item −e − 1 (cascade_fused.h).
__device__ __forceinline__ bool IsDecodeEntry(int32_t e) { return e < 0; }
__device__ __forceinline__ int DecodeIndex(int32_t e) { return -e - 1; }

// ---- producer ----------------------------------------------------------------------------------

template <typename CFG>
__device__ __forceinline__ void FusedProducerLoop(const FusedCascadeParams& f, const CUtensorMap* tmap_k,
                                                  const CUtensorMap* tmap_v, const CUtensorMap* page_k,
                                                  const CUtensorMap* page_v, uint32_t smem, Ring<CFG> ring) {
  const PrefixAttentionParams& p = f.attn;
  PrefetchTensorMap(tmap_k);
  PrefetchTensorMap(tmap_v);
  PrefetchTensorMap(page_k);
  PrefetchTensorMap(page_v);
  const int ps = p.page_size;
  constexpr int kPageBatch = 8;
  RingPosition<CFG::STAGES> pos;
  for (int e = f.cta_indptr[blockIdx.x]; e < f.cta_indptr[blockIdx.x + 1]; ++e) {
    const int32_t entry = f.cta_items[e];
    if (!IsDecodeEntry(entry)) {
      ProducePrefixItem<CFG>(p, p.items[entry], tmap_k, tmap_v, smem, ring, pos, false, 0);
      continue;
    }
    const DecodeWorkItem item = f.decode_items[DecodeIndex(entry)];
    const KvWalk<CFG::BLOCK_N> walk(item.kv_begin, item.kv_end);
    const int32_t* pages = f.page_indices + f.page_indptr[item.request];
    const int x0 = item.kv_head * CFG::HEAD_DIM;
    for (int t = 0; t < walk.num_tiles; ++t, pos.Advance()) {
      const int box = walk.BoxBegin(t);  // a multiple of the page size (checked on the host)
      const int num_pages = (min(CFG::BLOCK_N, walk.kv_end - box) + ps - 1) / ps;
      const uint32_t bytes = uint32_t(num_pages) * ps * 128 * CFG::PANELS;
      const uint32_t k_dst = smem + CFG::K_OFFSET + pos.stage * CFG::KV_TILE_BYTES;
      const uint32_t v_dst = smem + CFG::V_OFFSET + pos.stage * CFG::KV_TILE_BYTES;
      // Page ids in batches of 8 (this thread has 24 registers; 2 batches at page_size 8), every
      // load of a batch issued together, the first batch BEFORE waiting for the stage: the
      // page-table latency then overlaps the consumers' work instead of delaying the copies.
      int page[kPageBatch];
#pragma unroll
      for (int j = 0; j < kPageBatch; ++j) page[j] = j < num_pages ? pages[box / ps + j] : 0;
      MbarrierWait<true>(ring.EmptyK(pos.stage), pos.phase ^ 1);
      MbarrierWait<true>(ring.EmptyV(pos.stage), pos.phase ^ 1);
      MbarrierArriveExpectTx(ring.FullK(pos.stage), bytes);
      MbarrierArriveExpectTx(ring.FullV(pos.stage), bytes);
      for (int j0 = 0; j0 < num_pages; j0 += kPageBatch) {
        if (j0 > 0) {
#pragma unroll
          for (int j = 0; j < kPageBatch; ++j) page[j] = j0 + j < num_pages ? pages[box / ps + j0 + j] : 0;
        }
#pragma unroll
        for (int j = 0; j < kPageBatch; ++j) {
          if (j0 + j >= num_pages) break;
          const uint32_t offset = uint32_t(j0 + j) * ps * 128;
          LoadPanels<CFG>(k_dst + offset, page_k, x0, page[j] * ps, ring.FullK(pos.stage), false, 0);
          LoadPanels<CFG>(v_dst + offset, page_v, x0, page[j] * ps, ring.FullV(pos.stage), false, 0);
        }
      }
    }
  }
}

// ---- the ⊕ inside ------------------------------------------------------------------------------

// The quad of lanes that owns row `tg` (each lane its columns col0 + 8j, + 1) merges the row's
// slots [state_indptr[request], state_indptr[request + 1]) and writes the final outputs. The slots
// were written by other CTAs: read through L2 (ld.global.cg), after the caller's fence.
template <typename CFG>
__device__ __forceinline__ void MergeRowSlots(const FusedCascadeParams& f, RowTarget tg, int col0, int lane) {
  using T = typename CFG::Element;
  const PrefixAttentionParams& p = f.attn;
  const int first = p.state_indptr[tg.request], n = p.state_indptr[tg.request + 1] - first;
  const int64_t heads = p.num_qo_heads;
  // Every load of a batch of slots is issued before the first is used: the slots live in L2, and
  // one dependent round trip per slot would cost more than the item that finishes the row.
  constexpr int kSlotBatch = 4;
  float m = -INFINITY;
  for (int i0 = 0; i0 < n; i0 += kSlotBatch) {
    float s[kSlotBatch];
#pragma unroll
    for (int k = 0; k < kSlotBatch; ++k) s[k] = i0 + k < n ? __ldcg(p.partial_s + (first + i0 + k) * heads + tg.qo_head) : -INFINITY;
#pragma unroll
    for (int k = 0; k < kSlotBatch; ++k) m = fmaxf(m, s[k]);
  }
  float acc[CFG::HEAD_DIM / 4];
#pragma unroll
  for (int j = 0; j < CFG::HEAD_DIM / 4; ++j) acc[j] = 0.f;
  float total = 0.f;
  if (m != -INFINITY) {
    constexpr int kVecBatch = 2;
    for (int i0 = 0; i0 < n; i0 += kVecBatch) {
      float w[kVecBatch];
      float2 x[kVecBatch][CFG::HEAD_DIM / 8];
#pragma unroll
      for (int k = 0; k < kVecBatch; ++k) {
        const bool valid = i0 + k < n;
        const int64_t slot = (first + i0 + k) * heads + tg.qo_head;
        w[k] = valid ? FastExp2(__ldcg(p.partial_s + slot) - m) : 0.f;
        const float* v = p.partial_v + (valid ? slot : 0) * CFG::HEAD_DIM + col0;
#pragma unroll
        for (int j = 0; j < CFG::HEAD_DIM / 8; ++j)
          x[k][j] = valid ? __ldcg(reinterpret_cast<const float2*>(v + 8 * j)) : make_float2(0.f, 0.f);
      }
#pragma unroll
      for (int k = 0; k < kVecBatch; ++k) {
        total += w[k];
#pragma unroll
        for (int j = 0; j < CFG::HEAD_DIM / 8; ++j) {
          acc[2 * j] = fmaf(w[k], x[k][j].x, acc[2 * j]);
          acc[2 * j + 1] = fmaf(w[k], x[k][j].y, acc[2 * j + 1]);
        }
      }
    }
  }
  const float inv = total > 0.f ? 1.f / total : 0.f;
  const int64_t row = int64_t(tg.request) * heads + tg.qo_head;
  if (f.o != nullptr) {
    T* o = static_cast<T*>(f.o) + row * CFG::HEAD_DIM + col0;
#pragma unroll
    for (int j = 0; j < CFG::HEAD_DIM / 8; ++j)
      *reinterpret_cast<uint32_t*>(o + 8 * j) = MmaOp<T>::Pack(acc[2 * j] * inv, acc[2 * j + 1] * inv);
  }
  if (f.v_out != nullptr) {
    float* v_out = f.v_out + row * CFG::HEAD_DIM + col0;
#pragma unroll
    for (int j = 0; j < CFG::HEAD_DIM / 8; ++j)
      *reinterpret_cast<float2*>(v_out + 8 * j) = make_float2(acc[2 * j] * inv, acc[2 * j + 1] * inv);
  }
  if (f.s_out != nullptr && lane % 4 == 0) f.s_out[row] = FinalLse(m, total);
}

// After a consumer warpgroup's Epilogue wrote the states of its rows [0, wg_rows) (mapped from
// wg_row0 through MapGroupRow): one arrival per row; the row's last arrival merges it.
template <typename CFG>
__device__ __forceinline__ void FinishArrivals(const FusedCascadeParams& f, const Consumer<CFG>& c, int first_request,
                                               int kv_head, int wg_row0, int wg_rows, int gqa) {
  // Every lane's state stores are visible device-wide before its quad's arrival is counted
  // (fence, then the warp barrier orders the lanes before lane 4i's atomic).
  __threadfence();
  __syncwarp();
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int r = c.row_in_wg + 8 * h;
    const bool valid = r < wg_rows;  // the same for the 4 lanes of a quad
    const RowTarget tg = valid ? MapGroupRow(wg_row0 + r, first_request, kv_head, gqa) : RowTarget{0, 0};
    int32_t* counter = f.counters + int64_t(tg.request) * f.attn.num_qo_heads + tg.qo_head;
    int last = 0;
    if (valid && c.lane % 4 == 0) {
      const int expected = f.attn.state_indptr[tg.request + 1] - f.attn.state_indptr[tg.request];
      last = atomicAdd(counter, 1) == expected - 1;
    }
    last = __shfl_sync(0xffffffffu, last, c.lane & ~3);
    if (last) {
      __threadfence();  // the other items' states, counted before our arrival, are visible now
      MergeRowSlots<CFG>(f, tg, c.col0, c.lane);
      if (c.lane % 4 == 0) atomicExch(counter, 0);  // ready for the next launch
    }
  }
}

// ---- consumers ---------------------------------------------------------------------------------

template <typename CFG>
__device__ __forceinline__ void FusedConsumerRun(const FusedCascadeParams& f, Consumer<CFG>& c) {
  const PrefixAttentionParams& p = f.attn;
  const int gqa = p.num_qo_heads / p.num_kv_heads;
  const bool merge = f.counters != nullptr;
  int decode_items_seen = 0;
  RingPosition<CFG::STAGES> pos;
  if constexpr (CFG::OVERLAP) {
    if (c.wg == 1) c.TurnEnd();
  }  // warpgroup 0 takes the first turn
  for (int e = f.cta_indptr[blockIdx.x]; e < f.cta_indptr[blockIdx.x + 1]; ++e) {
    const int32_t entry = f.cta_items[e];
    if (!IsDecodeEntry(entry)) {
      c.PrefixItem(p.items[entry], gqa, pos, [&](int first_request, int kv_head, int wg_row0, int wg_rows) {
        if (merge) FinishArrivals<CFG>(f, c, first_request, kv_head, wg_row0, wg_rows, gqa);
      });
      continue;
    }
    // A decode item: the request's g query heads are rows 0..g−1 of one warpgroup's tile.
    const DecodeWorkItem item = f.decode_items[DecodeIndex(entry)];
    const KvWalk<CFG::BLOCK_N> walk(item.kv_begin, item.kv_end);
    // Decode items alternate between the two warpgroups: one loads its next item's queries while
    // the other still computes the previous item's last tile. Both walk every tile (the ring's
    // full barriers are waited by phase parity, so no warpgroup may skip a phase; and the turns
    // keep them in step). Letting the idle one skip the tiles deadlocked (session 9, run 3: a
    // warpgroup two phases behind waits for a later phase of the same parity).
    const bool active = c.wg == (decode_items_seen++ & 1);
    if (active && walk.num_tiles > 0) LoadQ<CFG>(p, c.q_smem, c.tid, c.barrier_id, 0, gqa, item.request, item.kv_head, gqa);
    c.ResetRows();
    c.WalkTiles(active, walk, pos);
    if (active) {
      c.Epilogue(item.request, item.kv_head, item.slot_offset, 0, gqa, gqa);
      if (merge) FinishArrivals<CFG>(f, c, item.request, item.kv_head, 0, gqa, gqa);
    }
  }
  if constexpr (CFG::OVERLAP) {
    if (c.wg == 0) c.TurnBegin();  // consumes warpgroup 1's up-front arrival
  }
}

template <typename CFG>
__global__ void __launch_bounds__(CFG::THREADS, 1)
    FusedCascadeKernel(const __grid_constant__ FusedCascadeParams params, const __grid_constant__ CUtensorMap tmap_k,
                       const __grid_constant__ CUtensorMap tmap_v, const __grid_constant__ CUtensorMap page_k,
                       const __grid_constant__ CUtensorMap page_v) {
  extern __shared__ __align__(1024) uint8_t smem_raw[];
  const uint32_t smem = (SmemAddress(smem_raw) + 1023u) & ~1023u;
  const Ring<CFG> ring{smem + CFG::BAR_OFFSET};
  InitRing<CFG>(ring);
  const int wg = int(threadIdx.x) / 128;
  if (wg == 0) {
    WarpgroupRegDealloc<CFG::PRODUCER_REGS>();
    if (threadIdx.x == 0) FusedProducerLoop<CFG>(params, &tmap_k, &tmap_v, &page_k, &page_v, smem, ring);
  } else {
    WarpgroupRegAlloc<CFG::CONSUMER_REGS>();
    Consumer<CFG> consumer(params.attn, ring, smem, wg - 1);
    FusedConsumerRun<CFG>(params, consumer);
  }
}

struct FusedLaunch {
  FusedCascadeParams params;
  CUtensorMap tmap_k, tmap_v;  // 128-token boxes (prefix tiles)
  CUtensorMap page_k, page_v;  // one-page boxes (suffix tiles)
};

template <typename CFG>
void LaunchFusedConfig(const FusedLaunch& l, cudaStream_t stream) {
  RaiseDynamicSmemLimitOnce<FusedCascadeKernel<CFG>>(CFG::SMEM_BYTES);
  FusedCascadeKernel<CFG><<<l.params.num_ctas, CFG::THREADS, CFG::SMEM_BYTES, stream>>>(l.params, l.tmap_k, l.tmap_v,
                                                                                      l.page_k, l.page_v);
  PREFIXD_CUDA_CHECK_LAUNCH();
}

template <typename CFG>
bool FusedConfigLoads() {
  cudaFuncAttributes attr;
  if (cudaFuncGetAttributes(&attr, FusedCascadeKernel<CFG>) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return true;
}

// Entry points instantiated once per (dtype, head_dim) in kernels/cuda/sm90a/inst/ (the FA3
// schedule; 2 stages, or the deeper ring of the prefix kernel).
template <typename T, int HEAD_DIM>
void RunFusedCascade(const FusedLaunch& l, cudaStream_t stream) {
  if (l.params.stages > 2)
    return LaunchFusedConfig<WgmmaPrefixConfig<T, HEAD_DIM, kDeepStages<T, HEAD_DIM>, true>>(l, stream);
  LaunchFusedConfig<WgmmaPrefixConfig<T, HEAD_DIM, 2, true>>(l, stream);
}
template <typename T, int HEAD_DIM>
bool FusedCascadeLoads() {
  return FusedConfigLoads<WgmmaPrefixConfig<T, HEAD_DIM, 2, true>>();
}

}  // namespace prefixd::kernels::cuda::sm90a
