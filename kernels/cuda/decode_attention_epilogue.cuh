// The end of a decode work item, shared by the CUDA-core and tensor-core decode kernels (included
// only through decode_attention.cuh), and their common launch path.
//
// On entry the CTA's NPART partial online-softmax states per query head j of the GQA group sit in
// shared memory, unnormalised: acc[part][j][d] = Σ 2^(x − m) v[d] and l[part][j] = Σ 2^(x − m),
// relative to m[part][j] (base-2 logits; m = −inf and l = 0 for a part that saw no token).
// FinishDecodeItem ⊕-merges the parts, then either
//  - writes the item's partial state to its slot (item.finish = 0), or
//  - ⊕-merges it with the request's prefix-chunk states (slots [state_indptr[r], + slot_offset))
//    and writes the final o / v_out / s_out rows of the group's heads (item.finish = 1).
// Work is split over the CTA's threads by float4 of the output (GQA · HEAD_DIM / 4 of them); the
// prefix states are staged in shared memory (the drained K/V stages) by cp.async, as many chunks
// at a time as fit, so a pass costs one memory latency and no registers.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>

#include "prefixd/common/cuda_check.h"
#include "kernels/cuda/decode_attention.h"
#include "kernels/cuda/programmatic_launch.cuh"
#include "kernels/cuda/resident_ctas.cuh"
#include "kernels/cuda/smem_limit.cuh"

namespace prefixd::kernels::cuda {
namespace decode {

// The prefix grid this one programmatically depends on (DecodeAttentionParams::overlap_prefix).
__device__ __forceinline__ void WaitForPrefixGrid() { WaitForPrimaryGrid(); }

// L2 cache policy for the streamed K/V (DecodeAttentionParams::evict_first).
__device__ __forceinline__ uint64_t KvStreamPolicy(bool evict_first) {
  uint64_t policy;
  if (evict_first) asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(policy));
  else asm volatile("createpolicy.fractional.L2::evict_normal.b64 %0, 1.0;\n" : "=l"(policy));
  return policy;
}

// 16-byte cp.async global → shared (L2 only) with an L2 cache policy; src_bytes = 0 writes zeros
// without reading (src must still be a mapped address).
__device__ __forceinline__ void CopyAsync16Policy(uint32_t dst, const void* src, int src_bytes, uint64_t policy) {
  asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2, %3;\n" ::"r"(dst), "l"(src),
               "r"(src_bytes), "l"(policy));
}

// The query heads a CTA computes for a work item: GQA rows from head `first`. Where g is the
// compiled size, all GQA heads of the item's KV head; otherwise (DecodeSlicing) the CTA's slice
// (blockIdx.y) of the group, whose `rows` ≤ GQA are heads: the rows past them are computed on zero
// queries and never written. group_size 0 (not set) means the compiled size. Groups of 1 and 2 run
// only at their own size, so there rows is a compile-time constant and every guard on it folds
// away (a runtime rows cost the GQA 1 short-item decode ~0.8 µs per step at 32/32 B256 S32;
// bench/RESULTS.md, session 36).
struct GroupHeads {
  int first = 0;
  int rows = 0;
  // Whether some of the GQA rows are not heads of the item.
  template <int GQA>
  __device__ __forceinline__ bool Partial() const { return GQA > 2 && rows != GQA; }
};

template <int GQA>
__device__ __forceinline__ GroupHeads ItemHeads(const DecodeAttentionParams& p, int kv_head) {
  if (GQA <= 2 || p.group_size <= 0 || p.group_size == GQA) return {kv_head * GQA, GQA};
  const int row0 = int(blockIdx.y) * GQA;
  return {kv_head * p.group_size + row0, min(GQA, p.group_size - row0)};
}

// {page_indptr[request], state_indptr[request]} of item `index` (DecodeAttentionParams::item_bases).
__device__ __forceinline__ int2 ItemBases(const DecodeAttentionParams& p, const DecodeWorkItem& item, int index) {
  if (p.item_bases != nullptr) return p.item_bases[index];
  return make_int2(p.page_indptr[item.request], p.state_indptr[item.request]);
}

// The items of this CTA: one per CTA, or (DecodeAttentionParams::max_sms) every gridDim.x-th, the
// shared memory free again between two (the last item's epilogue has read it).
template <typename RunItem>
__device__ __forceinline__ void ForEachDecodeItem(const DecodeAttentionParams& p, RunItem run_item) {
  if (p.early_chain) AllowDependentLaunch();  // DecodeAttentionParams::early_chain
  for (int i = blockIdx.x; i < p.num_items; i += gridDim.x) {
    if (i != int(blockIdx.x)) __syncthreads();
    run_item(i);
  }
  if (p.early_chain) WaitForPrefixGrid();  // this grid completes after the prefix grid
}

// A finishing item's prefix-chunk states, slots [run_begin, + slot_offset) of its GQA heads, into
// L2 (evict-last), spread over the CTA's threads. A prefetch is only a hint: issued before the
// prefix grid has finished writing them (programmatic launch), it still cannot return stale
// data, since L2 is where the writes land (nothing is brought into L1).
template <int HEAD_DIM, int THREADS>
__device__ __forceinline__ void PrefetchPrefixStates(const DecodeAttentionParams& p, const DecodeWorkItem& item,
                                                     GroupHeads heads, int run_begin) {
  if (!item.finish || !p.prefetch_prefix_states) return;
  constexpr int LINE_FLOATS = 32;                                                 // 128-byte lines
  const int v_lines = (heads.rows * HEAD_DIM + LINE_FLOATS - 1) / LINE_FLOATS;  // per chunk (contiguous)
  const int64_t first = int64_t(run_begin) * p.num_qo_heads + heads.first;
  for (int idx = threadIdx.x; idx < item.slot_offset * (v_lines + 1); idx += THREADS) {
    const int c = idx / (v_lines + 1), line = idx % (v_lines + 1);
    const int64_t state = first + int64_t(c) * p.num_qo_heads;
    const float* addr = line < v_lines ? p.partial_v + state * HEAD_DIM + line * LINE_FLOATS : p.partial_s + state;
    asm volatile("prefetch.global.L2::evict_last [%0];\n" ::"l"(addr));
  }
}

// The item one wave later (DecodeAttentionParams::next_wave_items), read by thread 0 at the CTA's
// start: plain loads whose latency the CTA's own wait for its first K/V covers; the fields are
// first used by PrefetchNextWave, issued after that wait. The load itself leaves the item's
// descriptor line in L2. Without item_bases there is no page-table base to read in parallel, so
// only the queries are prefetched.
struct NextWaveItem {
  int request = -1, kv_head = 0, kv_begin = 0, page_base = -1;
};

__device__ __forceinline__ NextWaveItem LoadNextWaveItem(const DecodeAttentionParams& p, int index) {
  NextWaveItem n;
  const int next = index + p.next_wave_items;
  if (threadIdx.x != 0 || p.next_wave_items == 0 || next >= p.num_items) return n;
  const DecodeWorkItem& item = p.items[next];
  n.request = item.request;
  n.kv_head = item.kv_head;
  n.kv_begin = item.kv_begin;
  if (p.item_bases != nullptr) n.page_base = p.item_bases[next].x;
  return n;
}

// Its first page-table line and its GQA group's query rows into L2 (thread 0; a no-op elsewhere).
template <typename T, int HEAD_DIM, int GQA>
__device__ __forceinline__ void PrefetchNextWave(const DecodeAttentionParams& p, const NextWaveItem& n) {
  if (n.request < 0) return;
  if (n.page_base >= 0) asm volatile("prefetch.global.L2 [%0];\n" ::"l"(p.page_indices + n.page_base + n.kv_begin / p.page_size));
  const GroupHeads heads = ItemHeads<GQA>(p, n.kv_head);
  const char* q = reinterpret_cast<const char*>(static_cast<const T*>(p.q) +
                                                (int64_t(n.request) * p.num_qo_heads + heads.first) * HEAD_DIM);
  const int query_bytes = heads.rows * HEAD_DIM * int(sizeof(T));
  for (int at = 0; at < query_bytes; at += 128) asm volatile("prefetch.global.L2 [%0];\n" ::"l"(q + at));
}

template <typename T>
__device__ __forceinline__ void StoreOut4(T* out, float4 x);

template <>
__device__ __forceinline__ void StoreOut4<__half>(__half* out, float4 x) {
  __half2 h[2] = {__floats2half2_rn(x.x, x.y), __floats2half2_rn(x.z, x.w)};
  *reinterpret_cast<uint2*>(out) = *reinterpret_cast<const uint2*>(h);
}

template <>
__device__ __forceinline__ void StoreOut4<__nv_bfloat16>(__nv_bfloat16* out, float4 x) {
  __nv_bfloat162 h[2] = {__floats2bfloat162_rn(x.x, x.y), __floats2bfloat162_rn(x.z, x.w)};
  *reinterpret_cast<uint2*>(out) = *reinterpret_cast<const uint2*>(h);
}

__device__ __forceinline__ float4 Scale4(float4 a, float w) { return make_float4(a.x * w, a.y * w, a.z * w, a.w * w); }
__device__ __forceinline__ float4 Fma4(float w, float4 x, float4 acc) {
  return make_float4(fmaf(w, x.x, acc.x), fmaf(w, x.y, acc.y), fmaf(w, x.z, acc.z), fmaf(w, x.w, acc.w));
}

// Shared memory the epilogue needs: the parts' states, 16-byte aligned ...
template <int HEAD_DIM, int GQA, int NPART>
constexpr int PartStateBytes() { return (NPART * GQA * (HEAD_DIM + 2) * 4 + 15) / 16 * 16; }
// ... and, after them, room for the v and s of at least one prefix chunk (GQA heads) at a time.
template <int HEAD_DIM, int GQA>
constexpr int PrefixChunkBytes() { return GQA * (HEAD_DIM + 1) * 4; }
// The kernel's dynamic shared memory: its K/V stages, or the epilogue's minimum if larger.
template <int HEAD_DIM, int GQA, int NPART>
constexpr int EpilogueSmemBytes(int stage_bytes) {
  constexpr int need = PartStateBytes<HEAD_DIM, GQA, NPART>() + PrefixChunkBytes<HEAD_DIM, GQA>();
  return stage_bytes > need ? stage_bytes : need;
}

// 16- and 4-byte asynchronous copies global → shared (the prefix states are read once).
__device__ __forceinline__ void StageAsync16(void* smem, const void* gmem) {
  const uint32_t dst = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(gmem));
}
__device__ __forceinline__ void StageAsync4(void* smem, const void* gmem) {
  const uint32_t dst = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(dst), "l"(gmem));
}
__device__ __forceinline__ void StageAsyncWaitAll() {
  asm volatile("cp.async.commit_group;\ncp.async.wait_group 0;\n" ::: "memory");
}

// smem: the kernel's dynamic shared memory of SMEM_BYTES (EpilogueSmemBytes), starting with the
// parts' states: acc [NPART][GQA][HEAD_DIM], m [NPART][GQA], l [NPART][GQA] (fp32). Everything
// after PartStateBytes is free (the K/V stages are drained) and stages prefix chunks.
// run_begin: state_indptr[item.request] (ItemBases); heads: the CTA's query heads (ItemHeads), of
// which only rows [0, heads.rows) are read from or written to global memory.
// SMEM_BYTES = 0: nothing after the parts' states is free (the streaming kernel's K/V ring stays in
// flight there): the prefix chunks' states are read straight from global memory (L2), a few chunks'
// loads in flight at a time, instead of staged with cp.async (whose wait would also wait for the
// ring's copies).
template <typename T, int HEAD_DIM, int GQA, int NPART, int THREADS, int SMEM_BYTES>
__device__ __forceinline__ void FinishDecodeItem(const DecodeAttentionParams& p, const DecodeWorkItem& item,
                                                 GroupHeads heads, int run_begin, uint8_t* smem) {
  constexpr int D4 = HEAD_DIM / 4;
  constexpr int OUT4 = GQA * D4;  // float4s of the group's output
  constexpr int PER_THREAD = (OUT4 + THREADS - 1) / THREADS;
  constexpr bool STAGED = SMEM_BYTES > 0;
  constexpr int STAGE_OFFSET = PartStateBytes<HEAD_DIM, GQA, NPART>();
  constexpr int CHUNKS_PER_PASS = STAGED ? (SMEM_BYTES - STAGE_OFFSET) / PrefixChunkBytes<HEAD_DIM, GQA>() : 4;
  static_assert(HEAD_DIM % 4 == 0 && CHUNKS_PER_PASS >= 1, "room for one prefix chunk");
  const float* part_acc = reinterpret_cast<const float*>(smem);
  const float* part_m = part_acc + NPART * GQA * HEAD_DIM;
  const float* part_l = part_m + NPART * GQA;
  const int first_head = heads.first;
  const int out4 = heads.rows * D4;  // float4s that are heads' outputs (the first ones)

  // The item's own state per float4 of the output: ⊕ of the parts, normalised.
  float s_own[PER_THREAD];
  float4 v_own[PER_THREAD];
#pragma unroll
  for (int i = 0; i < PER_THREAD; ++i) {
    const int idx = threadIdx.x + i * THREADS;
    s_own[i] = -INFINITY;
    v_own[i] = make_float4(0.f, 0.f, 0.f, 0.f);
    if ((OUT4 % THREADS != 0 || heads.Partial<GQA>()) && idx >= out4) continue;  // past the heads
    const int j = idx / D4, d4 = idx % D4;
    float m_all = -INFINITY;
#pragma unroll
    for (int w = 0; w < NPART; ++w) m_all = fmaxf(m_all, part_m[w * GQA + j]);
    if (m_all == -INFINITY) continue;  // no part saw a token: the empty state
    float l_all = 0.f;
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
    for (int w = 0; w < NPART; ++w) {
      const float wt = exp2f(part_m[w * GQA + j] - m_all);  // 0 for a part that saw no token
      l_all = fmaf(wt, part_l[w * GQA + j], l_all);
      acc = Fma4(wt, reinterpret_cast<const float4*>(part_acc + (w * GQA + j) * HEAD_DIM)[d4], acc);
    }
    if (l_all > 0.f) {
      s_own[i] = m_all + log2f(l_all);
      v_own[i] = Scale4(acc, 1.f / l_all);
    }
  }

  // With a programmatic launch the prefix grid may still be running: wait before reading its
  // states, and in every CTA (finishing or not), so that this grid completes only after it. Early
  // items (none finishing) wait once, at their CTA's exit (ForEachDecodeItem).
  if (!p.early_chain) WaitForPrefixGrid();

  if (!item.finish) {
    const int64_t slot_state = int64_t(run_begin + item.slot_offset) * p.num_qo_heads + first_head;
#pragma unroll
    for (int i = 0; i < PER_THREAD; ++i) {
      const int idx = threadIdx.x + i * THREADS;
      if ((OUT4 % THREADS != 0 || heads.Partial<GQA>()) && idx >= out4) continue;  // past the heads
      const int j = idx / D4, d4 = idx % D4;
      reinterpret_cast<float4*>(p.partial_v + (slot_state + j) * HEAD_DIM)[d4] = v_own[i];
      if (d4 == 0) p.partial_s[slot_state + j] = s_own[i];
    }
    return;
  }

  // Finishing (uniform over the CTA): online n-ary ⊕ of the own state and the prefix chunks'
  // states, CHUNKS_PER_PASS chunks at a time staged in shared memory (all their copies in flight
  // together: one memory latency per pass). (M, W, acc): the running max LSE, the weights' sum and
  // the weighted v, both relative to 2^M. A state with s = −inf has weight 0 and its v (possibly
  // poison) is never read into the sum.
  float run_m[PER_THREAD], run_w[PER_THREAD];
  float4 run_acc[PER_THREAD];
#pragma unroll
  for (int i = 0; i < PER_THREAD; ++i) {
    run_m[i] = s_own[i];
    run_w[i] = s_own[i] == -INFINITY ? 0.f : 1.f;
    run_acc[i] = v_own[i];
  }
  // One prefix chunk's state (s, v) into the running ⊕ of output float4 i.
  auto accumulate = [&](int i, float s, float4 v) {
    if (s == -INFINITY) return;  // empty: weight 0
    if (s > run_m[i]) {          // new max: rescale what was summed (2^−inf = 0 at the start)
      const float rescale = exp2f(run_m[i] - s);
      run_w[i] *= rescale;
      run_acc[i] = Scale4(run_acc[i], rescale);
      run_m[i] = s;
    }
    const float w = exp2f(s - run_m[i]);
    run_w[i] += w;
    run_acc[i] = Fma4(w, v, run_acc[i]);
  };
  const int num_prefix = item.slot_offset;
  // The g heads of one slot are adjacent rows: chunk c's v is GQA · HEAD_DIM contiguous floats.
  const int64_t prefix_state = int64_t(run_begin) * p.num_qo_heads + first_head;
  if constexpr (!STAGED) {
    // Straight from L2 (ld.global.cg: the prefix grid wrote them; nothing stale can sit in L1).
#pragma unroll
    for (int i = 0; i < PER_THREAD; ++i) {
      const int idx = threadIdx.x + i * THREADS;
      if ((OUT4 % THREADS != 0 || heads.Partial<GQA>()) && idx >= out4) continue;  // past the heads
      const int j = idx / D4;
      for (int c0 = 0; c0 < num_prefix; c0 += CHUNKS_PER_PASS) {
        float s[CHUNKS_PER_PASS];
        float4 v[CHUNKS_PER_PASS];
#pragma unroll
        for (int u = 0; u < CHUNKS_PER_PASS; ++u) {
          const int64_t state = prefix_state + int64_t(c0 + u) * p.num_qo_heads;
          const bool in = c0 + u < num_prefix;
          s[u] = in ? __ldcg(p.partial_s + state + j) : -INFINITY;
          v[u] = in ? __ldcg(reinterpret_cast<const float4*>(p.partial_v + state * HEAD_DIM) + idx)
                    : make_float4(0.f, 0.f, 0.f, 0.f);
        }
#pragma unroll
        for (int u = 0; u < CHUNKS_PER_PASS; ++u) accumulate(i, s[u], v[u]);
      }
    }
  }
  float* stage_v = reinterpret_cast<float*>(smem + STAGE_OFFSET);  // [CHUNKS_PER_PASS][GQA][HEAD_DIM]
  float* stage_s = stage_v + CHUNKS_PER_PASS * GQA * HEAD_DIM;     // [CHUNKS_PER_PASS][GQA]
  for (int c0 = 0; STAGED && c0 < num_prefix; c0 += CHUNKS_PER_PASS) {
    const int chunks = min(CHUNKS_PER_PASS, num_prefix - c0);
    for (int idx = threadIdx.x; idx < chunks * OUT4; idx += THREADS) {
      const int c = idx / OUT4, rest = idx % OUT4;
      if (heads.Partial<GQA>() && rest >= out4) continue;  // not a head of this item
      StageAsync16(stage_v + 4 * idx, p.partial_v + (prefix_state + int64_t(c0 + c) * p.num_qo_heads) * HEAD_DIM + 4 * rest);
    }
    for (int idx = threadIdx.x; idx < chunks * GQA; idx += THREADS) {
      const int c = idx / GQA, j = idx % GQA;
      if (heads.Partial<GQA>() && j >= heads.rows) continue;
      StageAsync4(stage_s + idx, p.partial_s + prefix_state + int64_t(c0 + c) * p.num_qo_heads + j);
    }
    StageAsyncWaitAll();
    __syncthreads();  // every thread's copies are visible to all
#pragma unroll
    for (int i = 0; i < PER_THREAD; ++i) {
      const int idx = threadIdx.x + i * THREADS;
      if ((OUT4 % THREADS != 0 || heads.Partial<GQA>()) && idx >= out4) continue;  // past the heads
      const int j = idx / D4;
      for (int c = 0; c < chunks; ++c)
        accumulate(i, stage_s[c * GQA + j], reinterpret_cast<const float4*>(stage_v)[c * OUT4 + idx]);
    }
    __syncthreads();  // the stage is read before the next pass overwrites it
  }

  const int64_t out_row = int64_t(item.request) * p.num_qo_heads + first_head;
#pragma unroll
  for (int i = 0; i < PER_THREAD; ++i) {
    const int idx = threadIdx.x + i * THREADS;
    if ((OUT4 % THREADS != 0 || heads.Partial<GQA>()) && idx >= out4) continue;  // past the heads
    const int j = idx / D4, d4 = idx % D4;
    const bool empty = run_w[i] == 0.f;  // every state empty: (0, −inf), never NaN
    const float4 v = empty ? make_float4(0.f, 0.f, 0.f, 0.f) : Scale4(run_acc[i], 1.f / run_w[i]);
    const int64_t out = (out_row + j) * HEAD_DIM + 4 * d4;
    if (p.v_out != nullptr) *reinterpret_cast<float4*>(p.v_out + out) = v;
    if (p.o != nullptr) StoreOut4<T>(static_cast<T*>(p.o) + out, v);
    if (p.s_out != nullptr && d4 == 0) p.s_out[out_row + j] = empty ? -INFINITY : run_m[i] + log2f(run_w[i]);
  }
}

// Shared memory per CTA that keeps a second CTA off its SM (DecodeAttentionParams::max_sms), and
// the most one CTA may ask for, on the current device.
struct SmemLimits {
  int one_per_sm = 0, max_per_block = 0;
};
SmemLimits DecodeSmemLimits();

// Launches KERNEL<<<grid, threads, smem, stream>>>(p): one CTA per item, or at most p.max_sms CTAs
// with one per SM, times p.group_slices along y (ItemHeads); as a programmatic dependent launch
// when p.overlap_prefix (DecodeAttentionParams says why that is safe). Above 48 KiB the kernel's
// dynamic shared-memory limit is raised to the device's maximum, once per kernel and device.
template <auto KERNEL>
void LaunchDecodeKernel(int threads, int smem_bytes, const DecodeAttentionParams& p, cudaStream_t stream) {
  int grid = p.num_items, smem = smem_bytes;
  if (p.early_sms > 0) {  // DecodeAttentionParams::early_chain: the SMs' resident CTAs, looping
    if (smem > 48 * 1024) RaiseDynamicSmemLimitOnce<KERNEL>(DecodeSmemLimits().max_per_block);
    grid = std::min(grid, p.early_sms * ResidentCtasPerSmOnce<KERNEL>(threads, smem));
  } else if (p.max_sms > 0 || smem > 48 * 1024) {  // the device's limits: one query per launch
    const SmemLimits limits = DecodeSmemLimits();
    if (p.max_sms > 0) {
      grid = std::min(grid, p.max_sms);
      smem = std::max(smem, limits.one_per_sm);
    }
    if (smem > 48 * 1024) RaiseDynamicSmemLimitOnce<KERNEL>(limits.max_per_block);
  }
  DecodeAttentionParams launch = p;
  launch.next_wave_items = 0;
  // The CTA one wave later runs item index + resident only in a grid without slices.
  if (p.max_sms == 0 && p.early_sms == 0 && p.prefetch_next_wave && p.group_slices == 1) {
    const int resident = ResidentCtasOnce<KERNEL>(threads, smem);
    if (grid > resident) launch.next_wave_items = resident;
  }
  LaunchMaybeProgrammatic(KERNEL, dim3(unsigned(grid), unsigned(std::max(1, p.group_slices))), dim3(unsigned(threads)),
                          size_t(smem), stream, p.overlap_prefix, launch);
}

}  // namespace decode
}  // namespace prefixd::kernels::cuda
