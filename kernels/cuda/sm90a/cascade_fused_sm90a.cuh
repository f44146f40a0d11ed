// The one-launch fused cascade kernel for sm_90a (contract: kernels/cuda/cascade_fused.h).
//
// One CTA per SM, three warpgroups, two halves running side by side on every SM:
//   - the prefix half is the prefix kernel's (prefix_attention_sm90a.cuh): warp 0's lane 0 loads the
//     CTA's prefix items' K/V tiles by TMA into the ring, warpgroups 1 and 2 compute them with wgmma;
//     after an item's states are written, each consumer warpgroup counts one arrival per request of
//     its rows that is finished in this kernel (CountArrivals);
//   - the suffix half (suffix_warps_sm90a.cuh): warps 1-3 stream the CTA's decode items through
//     their own ring, write each item's partial state, and finish the requests: wait for the
//     prefix arrivals of their (request, KV head), ⊕ the slots, write the outputs.
// The finishing warps wait for prefix items of other CTAs, so the grid must be co-resident: it is a
// cooperative launch (one CTA per SM, at most the SM count), and no prefix item ever waits for a
// suffix item, so every wait ends.
// Registers: 168 per thread at launch (384 threads); setmaxnreg gives the producer warpgroup 56 (the
// suffix warps' accumulators) and the consumers 224 (16 fewer than the prefix kernel's 240).
#pragma once

#include "kernels/cuda/cascade_fused.h"
#include "kernels/cuda/sm90a/prefix_attention_sm90a.cuh"
#include "kernels/cuda/sm90a/suffix_warps_sm90a.cuh"

namespace prefixd::kernels::cuda::sm90a {

// 128-token K/V tiles at every head_dim (the launcher's K/V boxes, FusedCascade), whatever the
// prefix kernel's own tile.
template <typename T, int HEAD_DIM>
struct FusedConfig : WgmmaPrefixConfig<T, HEAD_DIM, 2, true, 2, 128> {
  using Base = WgmmaPrefixConfig<T, HEAD_DIM, 2, true, 2, 128>;
  using Suffix = SuffixWarpsConfig<HEAD_DIM>;
  static constexpr int PRODUCER_REGS = 56, CONSUMER_REGS = 224;  // 128·56 + 256·224 = 168 · 384
  static constexpr int SUFFIX_OFFSET = (Base::BAR_OFFSET + 8 * Base::BARRIERS + 1023) / 1024 * 1024;
  static constexpr int SMEM_BYTES = 1024 + SUFFIX_OFFSET + Suffix::BYTES;
  static_assert(128 * PRODUCER_REGS + 256 * CONSUMER_REGS <= 168 * Base::THREADS, "register budget of the CTA");
  static_assert(SMEM_BYTES <= 227 * 1024, "shared memory of one CTA on sm_90");
};

// Prefix entries come first in a CTA's list (FusedSchedule); decode entries are negative.
template <typename CFG>
__device__ __forceinline__ void FusedProducerLoop(const FusedCascadeParams& f, const CUtensorMap* tmap_k,
                                                  const CUtensorMap* tmap_v, uint32_t smem, Ring<CFG> ring) {
  PrefetchTensorMap(tmap_k);
  PrefetchTensorMap(tmap_v);
  RingPosition<CFG::STAGES> pos;
  uint32_t no_gate = 0;  // one thread issues both streams
  for (int e = f.cta_indptr[blockIdx.x]; e < f.cta_indptr[blockIdx.x + 1] && f.cta_items[e] >= 0; ++e)
    ProducePrefixItem<CFG>(f.attn, f.attn.items[f.cta_items[e]], tmap_k, tmap_v, smem, ring, pos, false, 0, no_gate);
}

// After a consumer warpgroup wrote the states of rows [wg_row0, wg_row0 + wg_rows) (whole requests:
// row = local request · g + head, and a warpgroup's 64 rows start at a multiple of g, which
// FusedCascadeSupportsShape makes sure of by g dividing 64): one arrival
// per request finished in this kernel, after every thread's stores are visible device-wide.
template <typename CFG>
__device__ __forceinline__ void CountArrivals(const FusedCascadeParams& f, const Consumer<CFG>& c, int first_request,
                                              int kv_head, int wg_row0, int wg_rows, int gqa) {
  if (f.counters == nullptr) return;
  __threadfence();
  NamedBarrierSync(c.barrier_id, 128);
  if (c.tid < wg_rows / gqa) {
    const int request = first_request + wg_row0 / gqa + c.tid;
    if (f.request_finished[request]) atomicAdd(f.counters + int64_t(request) * f.attn.num_kv_heads + kv_head, 1);
  }
}

template <typename CFG>
__device__ __forceinline__ void FusedConsumerRun(const FusedCascadeParams& f, Consumer<CFG>& c) {
  const PrefixAttentionParams& p = f.attn;
  const int gqa = p.num_qo_heads / p.num_kv_heads;
  RingPosition<CFG::STAGES> pos;
  if constexpr (CFG::OVERLAP) {
    if (c.wg == 1) c.TurnEnd();
  }  // warpgroup 0 takes the first turn
  for (int e = f.cta_indptr[blockIdx.x]; e < f.cta_indptr[blockIdx.x + 1] && f.cta_items[e] >= 0; ++e)
    c.PrefixItem(p.items[f.cta_items[e]], gqa, pos, [&](int first_request, int kv_head, int wg_row0, int wg_rows) {
      CountArrivals<CFG>(f, c, first_request, kv_head, wg_row0, wg_rows, gqa);
    });
  if constexpr (CFG::OVERLAP) {
    if (c.wg == 0) c.TurnBegin();  // consumes warpgroup 1's up-front arrival
  }
}

template <typename CFG>
__global__ void __launch_bounds__(CFG::THREADS, 1)
    FusedCascadeKernel(const __grid_constant__ FusedCascadeParams params, const __grid_constant__ CUtensorMap tmap_k,
                       const __grid_constant__ CUtensorMap tmap_v, const __grid_constant__ CUtensorMap page_k,
                       const __grid_constant__ CUtensorMap page_v) {
  using Suffix = SuffixWarps<typename CFG::Element, CFG::HEAD_DIM>;
  extern __shared__ __align__(1024) uint8_t smem_raw[];
  const uint32_t smem = (SmemAddress(smem_raw) + 1023u) & ~1023u;
  const uint32_t suffix_smem = smem + CFG::SUFFIX_OFFSET;
  const Ring<CFG> ring{smem + CFG::BAR_OFFSET};
  if (threadIdx.x == 0) Suffix::InitBarriers(suffix_smem);  // made visible by InitRing's fence
  InitRing<CFG>(ring);
  const int wg = int(threadIdx.x) / 128, warp = int(threadIdx.x) / 32;
  if (wg == 0) {
    WarpgroupRegDealloc<CFG::PRODUCER_REGS>();
    if (threadIdx.x == 0) FusedProducerLoop<CFG>(params, &tmap_k, &tmap_v, smem, ring);
    if (warp >= CFG::Suffix::FIRST_WARP) Suffix(params, suffix_smem, warp - CFG::Suffix::FIRST_WARP).Run(&page_k, &page_v);
  } else {
    WarpgroupRegAlloc<CFG::CONSUMER_REGS>();
    Consumer<CFG> consumer(params.attn, ring, nullptr, false, smem, wg - 1);  // Q by cp.async
    FusedConsumerRun<CFG>(params, consumer);
  }
}

struct FusedLaunch {
  FusedCascadeParams params;
  CUtensorMap tmap_k, tmap_v;  // 128-token boxes (prefix tiles)
  CUtensorMap page_k, page_v;  // boxes of min(page_size, 16) rows (suffix subtiles)
};

// A cooperative launch: the finishing suffix warps wait for other CTAs' prefix items (above).
template <typename CFG>
void LaunchFusedConfig(const FusedLaunch& l, cudaStream_t stream) {
  RaiseDynamicSmemLimitOnce<FusedCascadeKernel<CFG>>(CFG::SMEM_BYTES);
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(unsigned(l.params.num_ctas));
  config.blockDim = dim3(CFG::THREADS);
  config.dynamicSmemBytes = CFG::SMEM_BYTES;
  config.stream = stream;
  cudaLaunchAttribute cooperative[1];
  cooperative[0].id = cudaLaunchAttributeCooperative;
  cooperative[0].val.cooperative = 1;
  config.attrs = cooperative;
  config.numAttrs = 1;
  PREFIXD_CUDA_CHECK(cudaLaunchKernelEx(&config, FusedCascadeKernel<CFG>, l.params, l.tmap_k, l.tmap_v, l.page_k, l.page_v));
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

// Entry points instantiated once per (dtype, head_dim) in kernels/cuda/sm90a/inst/.
template <typename T, int HEAD_DIM>
void RunFusedCascade(const FusedLaunch& l, cudaStream_t stream) {
  LaunchFusedConfig<FusedConfig<T, HEAD_DIM>>(l, stream);
}
template <typename T, int HEAD_DIM>
bool FusedCascadeLoads() {
  return FusedConfigLoads<FusedConfig<T, HEAD_DIM>>();
}

}  // namespace prefixd::kernels::cuda::sm90a
