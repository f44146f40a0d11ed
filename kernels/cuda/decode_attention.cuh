// The batch decode kernel (split-KV over paged suffix KV), included only by the instantiation
// files kernels/cuda/inst/decode_attention_<dtype>_d<D>.cu.
//
// One CTA per work item (request, KV head, token range). Thread layout: a token's head_dim values
// are read by TPR = HEAD_DIM / 8 consecutive threads with 16 bytes each (a "row group"), so a CTA
// of 128 threads covers GROUPS = 128 / TPR tokens side by side; each row group takes UNROLL
// consecutive tokens per step (STEP = GROUPS · UNROLL tokens per CTA step).
//
// Loads: K/V stream through shared memory with cp.async, STAGES steps deep. Every thread copies
// exactly the 16-byte pieces it later reads itself, so a thread only waits for its own copies
// (cp.async.wait_group) and the pipeline needs no block barrier; STAGES − 1 steps of K/V stay in
// flight while a step is computed, which is what lets a few CTAs per SM stream at HBM speed even
// when the GQA group makes the arithmetic per byte heavier. (A first version loading straight into
// registers reached 94% of copy bandwidth with g = 1 but only 51% with g = 4: its loads idled while
// the heavier compute ran.)
//
// Each row group keeps its own online-softmax state for the g query heads of the GQA group (every
// K/V byte is loaded once and used by all g heads); the row groups' states are ⊕-merged through
// shared memory at the end (decode_attention_epilogue.cuh, which also finishes the request when the
// item is a finishing one).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>

#include "prefixd/common/cuda_check.h"
#include "prefixd/common/error.h"
#include "kernels/cuda/decode_attention.h"
#include "kernels/cuda/decode_attention_epilogue.cuh"
#include "kernels/cuda/mma_sm80.cuh"

namespace prefixd::kernels::cuda {
namespace decode {

constexpr int kThreads = 128;
// The narrow CTA (DecodePipeline::kNarrow): half the row groups, so twice the CTAs per SM (16 at
// GQA 1) at the same registers per thread and half the shared memory per CTA: twice the items'
// dependent starts in flight per SM, each item's K/V in two rounds instead of one.
constexpr int kNarrowThreads = 64;
// The one-warp CTA (DecodePipeline::kWarp): every barrier of an item, the ⊕ epilogue's included,
// holds only this one warp. Its ring takes an item of kWarpItemTokens in
// DecodeAttentionParams::warp_rounds rounds: 1 (all its K/V in flight at once; 18 KiB of stages at
// head_dim 128, 12 CTAs per SM), 2 (10 KiB, 20 per SM) or 4 (6 KiB, 32 per SM: the most an SM
// holds), i.e. fewer items' chains per SM with more of each in flight, or more chains.
constexpr int kWarpThreads = 32;
constexpr int kWarpItemTokens = 32;
constexpr int kVec = 8;     // dtype elements per 16-byte load
constexpr int kUnroll = 2;  // tokens per row group per step
// Steps of K/V in shared memory (STAGES − 1 in flight): deep for long items; shallow where every
// item fits in STAGES − 1 steps anyway (DecodeShallowPipeline), so that the smaller footprint buys
// more CTAs per SM, i.e. more items' dependent starts (item → page table → K/V) overlapped.
constexpr int kStages = 4;
constexpr int kShallowStages = 3;

// Tokens one CTA step covers (the row groups side by side, kUnroll tokens each).
template <int HEAD_DIM, int THREADS = kThreads>
constexpr int DecodeStepTokens() { return THREADS / (HEAD_DIM / kVec) * kUnroll; }

// Shared memory of one CTA: the K/V stages, reused by the epilogue at the end.
template <int HEAD_DIM, int GQA, int STAGES, int THREADS = kThreads>
constexpr int DecodeSmemBytes() {
  constexpr int groups = THREADS / (HEAD_DIM / kVec);
  return EpilogueSmemBytes<HEAD_DIM, GQA, groups>(STAGES * 2 * groups * kUnroll * HEAD_DIM * 2);
}

// CTAs per SM the registers are bounded for. The shallow pipeline (24 KiB of stages at head_dim
// 128) fits 8 at GQA 1 (60-64 registers, no spill), the narrow CTA 16 with the same 64 registers
// per thread (12 KiB each); the deep one 6 at GQA ≤ 2, fewer for larger groups' per-head registers.
// The one-warp CTA (kWarpThreads): as many as its shared memory lets an SM hold (the SM's 228 KiB,
// 1 KiB reserved per CTA), at most the 32 CTAs an SM takes; at GQA 2 at most 24, so that its 80
// registers per thread (as the narrow CTA's there) fit.
template <int GQA, int STAGES, int THREADS = kThreads, int HEAD_DIM = 128>
constexpr int DecodeMinCtasPerSm() {
  if (THREADS == kWarpThreads) {
    constexpr int by_smem = 228 * 1024 / (DecodeSmemBytes<HEAD_DIM, GQA, STAGES, THREADS>() + 1024);
    return std::min(by_smem, GQA == 1 ? 32 : 24);
  }
  if (STAGES < kStages && GQA == 1) return 8 * kThreads / THREADS;
  if (THREADS < kThreads) return 12;  // the narrow CTA at GQA 2: 80 registers (as the deep CTA's)
  return GQA <= 2 ? 6 : GQA == 4 ? 4 : 2;
}

// 16-byte asynchronous copy global → shared, bypassing L1 (suffix K/V is read once per step);
// src_bytes = 0 writes zeros without reading (tokens past the item's range).
__device__ __forceinline__ void CopyAsync16(void* smem, const void* gmem, int src_bytes, uint64_t policy) {
  CopyAsync16Policy(static_cast<uint32_t>(__cvta_generic_to_shared(smem)), gmem, src_bytes, policy);
}
__device__ __forceinline__ void CopyAsyncCommit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void CopyAsyncWait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

// Sum over the TPR threads of a row group (consecutive, aligned lanes); every lane gets the sum.
template <int TPR>
__device__ __forceinline__ float RowGroupSum(float x) {
#pragma unroll
  for (int offset = TPR / 2; offset > 0; offset /= 2) x += __shfl_xor_sync(0xffffffffu, x, offset);
  return x;
}

template <typename T, int HEAD_DIM, int GQA, int STAGES, int THREADS>
__global__ void __launch_bounds__(THREADS, DecodeMinCtasPerSm<GQA, STAGES, THREADS, HEAD_DIM>())
    DecodeAttentionKernel(const __grid_constant__ DecodeAttentionParams p) {
  constexpr int TPR = HEAD_DIM / kVec;
  constexpr int GROUPS = THREADS / TPR;
  constexpr int STEP = DecodeStepTokens<HEAD_DIM, THREADS>();  // GROUPS · kUnroll tokens per CTA step
  static_assert(HEAD_DIM % kVec == 0 && TPR <= 32 && (TPR & (TPR - 1)) == 0, "row group = aligned lanes");

  extern __shared__ __align__(16) uint8_t smem[];
  ForEachDecodeItem(p, [&](int index) {
    const DecodeWorkItem item = p.items[index];
    const int group = threadIdx.x / TPR;
    const int lane = threadIdx.x % TPR;  // this thread's 8 elements: [lane · 8, lane · 8 + 8)
    const GroupHeads heads = ItemHeads<GQA>(p, item.kv_head);
    const int2 bases = ItemBases(p, item, index);  // {page_indptr, state_indptr}[item.request]
    const int page_base = bases.x;
    const uint64_t kv_policy = KvStreamPolicy(p.evict_first);
    const NextWaveItem next_wave = LoadNextWaveItem(p, index);
    PrefetchNextWavePages(p, index);  // for PrefetchNextWaveKv below

    // Queries of the GQA group, pre-scaled by sm_scale · log2(e) so scores are base-2 logits; rows
    // past the group's heads (ItemHeads) zero.
    float q[GQA][kVec];
  #pragma unroll
    for (int j = 0; j < GQA; ++j) {
      const int64_t row = int64_t(item.request) * p.num_qo_heads + heads.first + j;
      const uint4 raw = j < heads.rows
                            ? *reinterpret_cast<const uint4*>(static_cast<const T*>(p.q) + row * HEAD_DIM + lane * kVec)
                            : make_uint4(0u, 0u, 0u, 0u);
      Unpack8<T>(raw, q[j]);
  #pragma unroll
      for (int e = 0; e < kVec; ++e) q[j][e] *= p.sm_scale_log2;
    }

    float m[GQA], l[GQA], acc[GQA][kVec];
  #pragma unroll
    for (int j = 0; j < GQA; ++j) {
      m[j] = -INFINITY;
      l[j] = 0.f;
  #pragma unroll
      for (int e = 0; e < kVec; ++e) acc[j][e] = 0.f;
    }

    const T* k_head = static_cast<const T*>(p.k) + item.kv_head * HEAD_DIM + lane * kVec;
    const T* v_head = static_cast<const T*>(p.v) + item.kv_head * HEAD_DIM + lane * kVec;

    // Stage s holds K then V for the STEP tokens of one step: [STAGES][2][STEP][HEAD_DIM]. This
    // thread's pieces: rows group · kUnroll + u, elements [lane · 8, lane · 8 + 8).
    T* stages = reinterpret_cast<T*>(smem);
    auto piece = [&](int stage, int kv, int u) {
      return stages + ((stage * 2 + kv) * STEP + group * kUnroll + u) * HEAD_DIM + lane * kVec;
    };

    // Issues the copies of step `step` (zero-fill past kv_end). Its token offsets were looked up one
    // step earlier (`offset`), so the page-table load never stalls the issue; then looks up the
    // offsets of the step after it.
    const int num_steps = (item.kv_end - item.kv_begin + STEP - 1) / STEP;  // uniform over the CTA
    int64_t offset[kUnroll];
    auto lookup = [&](int step, const ItemPages& known = ItemPages()) {
  #pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int t = item.kv_begin + step * STEP + group * kUnroll + u;
        offset[u] = t < item.kv_end ? TokenOffset(p, page_base, t, known) : -1;
      }
    };
    auto issue = [&](int step) {
      if (step < num_steps) {
  #pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
          const bool valid = offset[u] >= 0;
          CopyAsync16(piece(step % STAGES, 0, u), valid ? k_head + offset[u] : k_head, valid ? 16 : 0, kv_policy);
          CopyAsync16(piece(step % STAGES, 1, u), valid ? v_head + offset[u] : v_head, valid ? 16 : 0, kv_policy);
        }
        lookup(step + 1);
      }
      CopyAsyncCommit();  // an empty group past the end keeps the wait count below uniform
    };

    lookup(0, LoadItemPages(p, item, index));  // the first step from the item's pages, if passed
  #pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) issue(s);
    PrefetchPrefixStates<HEAD_DIM, GQA, THREADS>(p, item, heads, bases.y);
    PrefetchNextWaveKv<T, HEAD_DIM>(p, index);

    for (int step = 0; step < num_steps; ++step) {
      issue(step + STAGES - 1);  // refills the stage this thread finished reading last step
      CopyAsyncWait<STAGES - 1>();  // this thread's copies of `step` have landed
      if (step == 0) PrefetchNextWave<T, HEAD_DIM, GQA>(p, next_wave);
      const int t0 = item.kv_begin + step * STEP + group * kUnroll;

      // Scores x[u][j] (base-2 logits); tokens past the range are −inf.
      float x[kUnroll][GQA];
      float v_f[kUnroll][kVec];
  #pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        float k_f[kVec];
        Unpack8<T>(*reinterpret_cast<const uint4*>(piece(step % STAGES, 0, u)), k_f);
        Unpack8<T>(*reinterpret_cast<const uint4*>(piece(step % STAGES, 1, u)), v_f[u]);
  #pragma unroll
        for (int j = 0; j < GQA; ++j) {
          float dot = 0.f;
  #pragma unroll
          for (int e = 0; e < kVec; ++e) dot = fmaf(q[j][e], k_f[e], dot);
          dot = RowGroupSum<TPR>(dot);
          x[u][j] = t0 + u < item.kv_end ? dot : -INFINITY;
        }
      }

      // Online softmax: rescale the running state to the new max, then add this step's tokens.
  #pragma unroll
      for (int j = 0; j < GQA; ++j) {
        float m_new = m[j];
  #pragma unroll
        for (int u = 0; u < kUnroll; ++u) m_new = fmaxf(m_new, x[u][j]);
        if (m_new == -INFINITY) continue;  // no valid token yet (uniform across the row group)
        const float scale = exp2f(m[j] - m_new);  // m[j] = −inf gives 0: nothing to rescale
        l[j] *= scale;
  #pragma unroll
        for (int e = 0; e < kVec; ++e) acc[j][e] *= scale;
  #pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
          const float w = exp2f(x[u][j] - m_new);
          l[j] += w;
  #pragma unroll
          for (int e = 0; e < kVec; ++e) acc[j][e] = fmaf(w, v_f[u][e], acc[j][e]);
        }
        m[j] = m_new;
      }
    }
    CopyAsyncWait<0>();
    __syncthreads();  // every thread is done with the stages: they become the state exchange area

    // ⊕ of the row groups' states: unnormalised (acc, l) relative to m, per group and head.
    auto& smem_acc = *reinterpret_cast<float(*)[GROUPS][GQA][HEAD_DIM]>(smem);
    auto& smem_m = *reinterpret_cast<float(*)[GROUPS][GQA]>(smem + GROUPS * GQA * HEAD_DIM * 4);
    auto& smem_l = *reinterpret_cast<float(*)[GROUPS][GQA]>(smem + GROUPS * GQA * (HEAD_DIM + 1) * 4);
  #pragma unroll
    for (int j = 0; j < GQA; ++j) {
      float4* dst = reinterpret_cast<float4*>(&smem_acc[group][j][lane * kVec]);
      dst[0] = make_float4(acc[j][0], acc[j][1], acc[j][2], acc[j][3]);
      dst[1] = make_float4(acc[j][4], acc[j][5], acc[j][6], acc[j][7]);
      if (lane == 0) {
        smem_m[group][j] = m[j];
        smem_l[group][j] = l[j];
      }
    }
    __syncthreads();
    FinishDecodeItem<T, HEAD_DIM, GQA, GROUPS, THREADS>(p, item, heads, bases.y, smem);
  });
}

template <typename T, int HEAD_DIM, int GQA, int STAGES, int THREADS = kThreads>
void LaunchDecodeStages(const DecodeAttentionParams& params, cudaStream_t stream) {
  constexpr int smem_bytes = DecodeSmemBytes<HEAD_DIM, GQA, STAGES, THREADS>();
  static_assert(smem_bytes <= 48 * 1024, "within the default dynamic shared-memory limit");
  LaunchDecodeKernel<DecodeAttentionKernel<T, HEAD_DIM, GQA, STAGES, THREADS>>(THREADS, smem_bytes, params, stream);
}

// The 128-thread shallow pipeline is compiled for GQA 1 only. At GQA 2 (7 CTAs per SM: at 8 it
// would spill) it was measured 1-2 µs slower per step at 32-128 requests and 1-4 µs faster at 512
// (H200, bench/RESULTS.md, session 20); groups of 4 and 8 run on tensor cores by default.
//
// The narrow CTA (kNarrow, or by the rule), measured on an H200 (bench/RESULTS.md, session 31):
//  - GQA 1, short items in more than one wave of the shallow CTAs: twice the CTAs per SM, so twice
//    the items' dependent starts in flight, each item's K/V in two rounds. 1-5 µs faster per step
//    at 32/32 B64-256 S32, up to 30 µs at B384 S8-24; within ±1 µs in one wave, where it is not
//    taken. Items of up to kNarrowMaxTokens too long for the shallow CTA (head_dim ≤ 128), in
//    more than one wave of the deep CTAs: 397.6 µs less over 36 shapes no rule was fitted on (8/8,
//    32/32, 48/48; B48-640; S40, 64; median −4.5, up to −62; worst +2.4).
//  - GQA 2, items of ≤ kNarrowMaxTokens, head_dim ≤ 128: 12 CTAs per SM against the deep CTA's 6.
//    0.6-27 µs faster per step at 16/8 and 32/16, B64-512, S8-64, head_dim 64 and 128 (+0.8 at
//    the worst of 26 shapes). Not at head_dim 256 (4-token steps): 1.4-10.8 µs slower at B64
//    (S8-64), 7.6-14.7 faster at B512.
constexpr int kNarrowMaxTokens = 64;

// Whether the rule may take the narrow CTA at all: the length rule is on (nothing forced), one CTA
// per item (not DecodeAttentionParams::max_sms), and every item is of at most kNarrowMaxTokens.
inline bool NarrowMayRun(const DecodeAttentionParams& p) {
  return p.pipeline == DecodePipeline::kByItemLength && p.max_sms == 0 && p.max_item_tokens > 0 &&
         p.max_item_tokens <= kNarrowMaxTokens;
}

// Whether the items are more than one wave of the 128-thread CTAs with STAGES stages (the
// occupancy API, asked once per kernel).
template <typename T, int HEAD_DIM, int GQA, int STAGES>
bool MoreThanOneWave(const DecodeAttentionParams& p) {
  return p.num_items > ResidentCtasOnce<DecodeAttentionKernel<T, HEAD_DIM, GQA, STAGES, kThreads>>(
                           kThreads, DecodeSmemBytes<HEAD_DIM, GQA, STAGES>());
}

// The narrow CTA; instantiated at GQA 1 and 2 only (called from their branches below).
template <typename T, int HEAD_DIM, int GQA>
void LaunchNarrow(const DecodeAttentionParams& params, cudaStream_t stream) {
  LaunchDecodeStages<T, HEAD_DIM, GQA, kShallowStages, kNarrowThreads>(params, stream);
}

// The one-warp CTA (kWarp; GQA 1 and 2, head_dim ≤ 128): stages for an item of kWarpItemTokens in
// `ROUNDS` rounds of copies.
template <int HEAD_DIM, int ROUNDS>
constexpr int WarpStages() { return kWarpItemTokens / (ROUNDS * DecodeStepTokens<HEAD_DIM, kWarpThreads>()) + 1; }

template <typename T, int HEAD_DIM, int GQA>
void LaunchWarp(const DecodeAttentionParams& params, int rounds, cudaStream_t stream) {
  switch (rounds) {
    case 1: return LaunchDecodeStages<T, HEAD_DIM, GQA, WarpStages<HEAD_DIM, 1>(), kWarpThreads>(params, stream);
    case 2: return LaunchDecodeStages<T, HEAD_DIM, GQA, WarpStages<HEAD_DIM, 2>(), kWarpThreads>(params, stream);
    case 4: return LaunchDecodeStages<T, HEAD_DIM, GQA, WarpStages<HEAD_DIM, 4>(), kWarpThreads>(params, stream);
  }
  PREFIXD_THROW(ErrorKind::kInvalidArgument, "decode: warp_rounds must be 1, 2 or 4, got " << rounds);
}

// Whether the length rule takes the one-warp CTA (DecodeAttentionParams::warp_min_items), measured on
// an H200 (bench/RESULTS.md, session 69) against the narrow CTA it replaces, 4 rounds (32 CTAs
// per SM against 16), at ≥ 8192 items of ≤ 32 tokens at GQA 1: −4.9 to −21.8 µs per step where an
// item is one 8-token step (64/64 B512 S8 142.8 → 121.0), −2.8 to −14.3 at head_dim 64, even at
// 32 tokens (−3.0 to +1.0); at 2048 items +3.4 to −1.7, in one wave up to +1.0. Not for looping
// grids (an early decode's, max_sms): not measured there.
inline bool WarpRuleRuns(const DecodeAttentionParams& p) {
  return p.pipeline == DecodePipeline::kByItemLength && p.warp_min_items > 0 && p.num_items >= p.warp_min_items &&
         p.max_sms == 0 && p.early_sms == 0 && !p.early_chain && p.max_item_tokens > 0 &&
         p.max_item_tokens <= kWarpItemTokens;
}

template <typename T, int HEAD_DIM, int GQA>
void LaunchDecodeAttention(const DecodeAttentionParams& params, cudaStream_t stream) {
  RequireFp32States(params, "CUDA-core decode");
  if constexpr ((GQA == 1 || GQA == 2) && HEAD_DIM <= 128) {
    if (params.pipeline == DecodePipeline::kWarp) return LaunchWarp<T, HEAD_DIM, GQA>(params, params.warp_rounds, stream);
  }
  if constexpr (GQA == 1 && HEAD_DIM <= 128) {
    if (WarpRuleRuns(params)) return LaunchWarp<T, HEAD_DIM, GQA>(params, kWarpRuleRounds, stream);
  }
  if constexpr (GQA == 2) {
    if (params.pipeline == DecodePipeline::kNarrow || (HEAD_DIM <= 128 && NarrowMayRun(params)))
      return LaunchNarrow<T, HEAD_DIM, GQA>(params, stream);
  }
  if constexpr (GQA == 1) {
    if (params.pipeline == DecodePipeline::kNarrow) return LaunchNarrow<T, HEAD_DIM, GQA>(params, stream);
    if (DecodeShallowPipeline(params, DecodeStepTokens<HEAD_DIM>(), kShallowStages)) {
      if (NarrowMayRun(params) && MoreThanOneWave<T, HEAD_DIM, GQA, kShallowStages>(params))
        return LaunchNarrow<T, HEAD_DIM, GQA>(params, stream);
      return LaunchDecodeStages<T, HEAD_DIM, GQA, kShallowStages>(params, stream);
    }
    if (HEAD_DIM <= 128 && NarrowMayRun(params) && MoreThanOneWave<T, HEAD_DIM, GQA, kStages>(params))
      return LaunchNarrow<T, HEAD_DIM, GQA>(params, stream);
  }
  LaunchDecodeStages<T, HEAD_DIM, GQA, kStages>(params, stream);
}

}  // namespace decode
}  // namespace prefixd::kernels::cuda

// Explicit instantiations for one (dtype, head_dim), all supported GQA group sizes.
#define PREFIXD_INSTANTIATE_DECODE_ATTENTION(T, HEAD_DIM)                                        \
  namespace prefixd::kernels::cuda::decode {                                                     \
  template void LaunchDecodeAttention<T, HEAD_DIM, 1>(const DecodeAttentionParams&, cudaStream_t); \
  template void LaunchDecodeAttention<T, HEAD_DIM, 2>(const DecodeAttentionParams&, cudaStream_t); \
  template void LaunchDecodeAttention<T, HEAD_DIM, 4>(const DecodeAttentionParams&, cudaStream_t); \
  template void LaunchDecodeAttention<T, HEAD_DIM, 8>(const DecodeAttentionParams&, cudaStream_t); \
  }
