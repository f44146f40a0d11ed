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
// prefix states are loaded into registers, a few chunks' loads in flight at a time.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>

#include "kernels/cuda/attention_state.cuh"
#include "prefixd/common/cuda_check.h"
#include "kernels/cuda/decode_attention.h"
#include "kernels/cuda/decode_pages.cuh"
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
  // This grid completes after the prefix grid. A grid looping over items waits in every CTA; one of
  // a CTA per item only in its last CTA (one CTA's wait is enough for that), so that CTAs done
  // while the prefix grid runs leave their SM to the items after them.
  const bool looping = p.early_sms > 0 || p.max_sms > 0;
  if (p.early_chain && (looping || (blockIdx.x + 1 == gridDim.x && blockIdx.y + 1 == gridDim.y))) WaitForPrefixGrid();
}

// A finishing item's prefix-chunk states, slots [run_begin, + slot_offset) of its GQA heads, into
// L2 (evict-last), spread over the CTA's threads. A prefetch is only a hint: issued before the
// prefix grid has finished writing them (programmatic launch), it still cannot return stale
// data, since L2 is where the writes land (nothing is brought into L1).
template <int HEAD_DIM, int GQA, int THREADS>
__device__ __forceinline__ void PrefetchPrefixStates(const DecodeAttentionParams& p, const DecodeWorkItem& item,
                                                     GroupHeads heads, int run_begin) {
  if (!item.finish || !p.prefetch_prefix_states) return;
  constexpr int LINE_FLOATS = 32;  // 128-byte lines
  // Per chunk (its GQA heads' v contiguous): up to GQA_LINES lines of v, then one of s. The index
  // is split by this compile-time count (a runtime division had cost ~60 instructions per thread,
  // session 78); a slice of fewer heads skips the lines past its own.
  constexpr int GQA_LINES = (GQA * HEAD_DIM + LINE_FLOATS - 1) / LINE_FLOATS, LINES = GQA_LINES + 1;
  const int v_lines = (heads.rows * HEAD_DIM + LINE_FLOATS - 1) / LINE_FLOATS;
  const int64_t first = int64_t(run_begin) * p.num_qo_heads + heads.first;
  for (int idx = threadIdx.x; idx < item.slot_offset * LINES; idx += THREADS) {
    const int c = idx / LINES, line = idx % LINES;
    if (line >= v_lines && line < GQA_LINES) continue;
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

// Thread 0 at the CTA's start: the line of the next-wave item's pages into L1, so that
// PrefetchNextWaveKv, after the CTA's first copies, does not wait a DRAM round trip for them. (A
// separate call in the kernels that run PrefetchNextWaveKv: inside LoadNextWaveItem, ptxas had
// moved the registers of kernels without it, e.g. 12 bytes of spill at GQA 8 in the 4-warp CTA.)
__device__ __forceinline__ void PrefetchNextWavePages(const DecodeAttentionParams& p, int index) {
  const int next = index + p.next_wave_items;
  if (threadIdx.x == 0 && p.prefetch_next_wave_kv && p.item_pages != nullptr && p.next_wave_items > 0 &&
      next < p.num_items)
    asm volatile("prefetch.global.L1 [%0];\n" ::"l"(p.item_pages + next));
}

// With item pages (DecodeAttentionParams::prefetch_next_wave_kv): the first K and V rows of the
// item one wave later into L2 — tokens [kv_begin, + kNextWaveKvTokens) in its first two page
// slots (the 2-warp CTA's one step at page size 16, the first copies of a longer item) — spread
// over warp 0's lanes, so that the CTA which runs it finds its first copies in L2. Issued right
// after this CTA's own first copies, before its loop: its fields then need no register inside the
// loop (issued at the first step's wait, as PrefetchNextWave is, they had cost the loop 20-40
// registers, and spills at the capped CTAs).
constexpr int kNextWaveKvTokens = 32;

template <typename T, int HEAD_DIM>
__device__ __forceinline__ void PrefetchNextWaveKv(const DecodeAttentionParams& p, int index) {
  const int next = index + p.next_wave_items;
  if (!p.prefetch_next_wave_kv || p.item_pages == nullptr || threadIdx.x >= 32 || p.next_wave_items == 0 ||
      next >= p.num_items)
    return;
  constexpr int ROW_LINES = (HEAD_DIM * int(sizeof(T)) + 127) / 128;  // 128-byte lines of one head's row
  const DecodeWorkItem& item = p.items[next];
  const ItemPages known = LoadItemPages(p, item, next);
  const int known_end = (known.first_slot + 2) * p.page_size;  // past the item's second slot
  const int tokens = min(min(item.kv_end, known_end) - item.kv_begin, kNextWaveKvTokens);
#pragma unroll 1
  for (int idx = threadIdx.x; idx < tokens * 2 * ROW_LINES; idx += 32) {
    const int token = idx / (2 * ROW_LINES), kv = (idx / ROW_LINES) % 2, line = idx % ROW_LINES;
    const int2 slot_row = PageSlotAndRow(p, item.kv_begin + token);
    const int page = KnownSlotPage(known, slot_row.x);
    const T* row = static_cast<const T*>(kv == 0 ? p.k : p.v) + PageRowOffset(p, page, slot_row.y) +
                   item.kv_head * HEAD_DIM;
    asm volatile("prefetch.global.L2 [%0];\n" ::"l"(reinterpret_cast<const char*>(row) + 128 * line));
  }
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

// Shared memory the epilogue needs: the parts' states, 16-byte aligned.
template <int HEAD_DIM, int GQA, int NPART>
constexpr int PartStateBytes() { return (NPART * GQA * (HEAD_DIM + 2) * 4 + 15) / 16 * 16; }
// The kernel's dynamic shared memory: its K/V stages, or the parts' states if larger.
template <int HEAD_DIM, int GQA, int NPART>
constexpr int EpilogueSmemBytes(int stage_bytes) {
  constexpr int need = PartStateBytes<HEAD_DIM, GQA, NPART>();
  return stage_bytes > need ? stage_bytes : need;
}

// smem: the parts' states at its start: acc [NPART][GQA][HEAD_DIM], m [NPART][GQA], l [NPART][GQA]
// (fp32), as the kernel stored them. run_begin: state_indptr[item.request] (ItemBases); heads: the
// CTA's query heads (ItemHeads), of which only rows [0, heads.rows) are read from or written to
// global memory.
//
// Every state stays in registers in the (M, W, acc) form of an online n-ary ⊕: the running max
// LSE M, and the weights' sum W and the weighted v, both relative to 2^M. The item's own state
// enters it unnormalised (W = Σ_parts 2^(m − M)·l, acc = Σ_parts 2^(m − M)·acc_part: no division
// and no log before the prefix chunks are added). A finishing item's prefix-chunk states are read
// straight from L2 (ld.global.cg: the prefix grid wrote them, nothing stale can sit in L1), the
// loads of CHUNKS_PER_PASS chunks of every float4 a thread owns issued together (one memory latency
// per pass), and each pass rescales once to its new max instead of branching per chunk. A state
// with s = −inf has weight 0 and its v (possibly poison) is never read into the sum.
// Instruction counts (Nsight Compute, 32/8 B256 P1024 S32, the 2-warp CTA; bench/RESULTS.md,
// session 78): this epilogue had been ~1600 of an item's ~3000 warp instructions when it staged the
// chunks through shared memory with cp.async and rescaled per chunk in a branch, against ~350 for
// the item's tile math; the short-item decodes are bound by that instruction chain (session 77).
template <typename T, int HEAD_DIM, int GQA, int NPART, int THREADS>
__device__ __forceinline__ void FinishDecodeItem(const DecodeAttentionParams& p, const DecodeWorkItem& item,
                                                 GroupHeads heads, int run_begin, const uint8_t* smem) {
  constexpr int D4 = HEAD_DIM / 4;
  constexpr int OUT4 = GQA * D4;  // float4s of the group's output
  constexpr int PER_THREAD = (OUT4 + THREADS - 1) / THREADS;
  // At most 4 float4 loads (and their s) in flight per thread and pass, ~20 registers: the
  // registers of the short-item CTAs bound how many share an SM (decode_attention_mma.cuh,
  // MmaShallowCtasPerSm).
  constexpr int CHUNKS_PER_PASS = PER_THREAD >= 4 ? 1 : 4 / PER_THREAD;
  static_assert(HEAD_DIM % 4 == 0, "float4s of the output");
  const float* part_acc = reinterpret_cast<const float*>(smem);
  const float* part_m = part_acc + NPART * GQA * HEAD_DIM;
  const float* part_l = part_m + NPART * GQA;
  const int out4 = heads.rows * D4;  // float4s that are heads' outputs (the first ones)
  // Whether float4 i of this thread is a head's output (a compile-time true where every thread's are).
  auto owns = [&](int i) {
    return !(OUT4 % THREADS != 0 || heads.Partial<GQA>()) || int(threadIdx.x) + i * THREADS < out4;
  };

  float run_m[PER_THREAD], run_w[PER_THREAD];
  float4 run_acc[PER_THREAD];
#pragma unroll
  for (int i = 0; i < PER_THREAD; ++i) {
    const int idx = threadIdx.x + i * THREADS;
    run_m[i] = -INFINITY;
    run_w[i] = 0.f;
    run_acc[i] = make_float4(0.f, 0.f, 0.f, 0.f);
    if (!owns(i)) continue;
    const int j = idx / D4, d4 = idx % D4;
#pragma unroll
    for (int w = 0; w < NPART; ++w) run_m[i] = fmaxf(run_m[i], part_m[w * GQA + j]);
    const float safe = SafeMax(run_m[i]);  // no part saw a token: every weight below is 0
#pragma unroll
    for (int w = 0; w < NPART; ++w) {
      const float wt = FastExp2(part_m[w * GQA + j] - safe);  // 0 for a part that saw no token (acc 0)
      run_w[i] = fmaf(wt, part_l[w * GQA + j], run_w[i]);
      run_acc[i] = Fma4(wt, reinterpret_cast<const float4*>(part_acc + (w * GQA + j) * HEAD_DIM)[d4], run_acc[i]);
    }
  }

  // With a programmatic launch the prefix grid may still be running: wait before reading its
  // states, and in every CTA (finishing or not), so that this grid completes only after it. Early
  // items (none finishing) wait once, at their CTA's exit (ForEachDecodeItem).
  if (!p.early_chain) WaitForPrefixGrid();

  // Normalised (v, s = M + log2 W) of float4 i: the empty state (0, −inf) where W = 0, never NaN.
  auto state_of = [&](int i, float4& v, float& lse) {
    const bool empty = run_w[i] == 0.f;
    v = empty ? make_float4(0.f, 0.f, 0.f, 0.f) : Scale4(run_acc[i], FastRcp(run_w[i]));
    lse = empty ? -INFINITY : run_m[i] + FastLog2(run_w[i]);
  };
  if (!item.finish) {  // the item's state to its slot
    const int64_t slot_state = int64_t(run_begin + item.slot_offset) * p.num_qo_heads + heads.first;
#pragma unroll
    for (int i = 0; i < PER_THREAD; ++i) {
      const int idx = threadIdx.x + i * THREADS;
      if (!owns(i)) continue;
      const int j = idx / D4, d4 = idx % D4;
      float4 v;
      float lse;
      state_of(i, v, lse);
      reinterpret_cast<float4*>(p.partial_v + (slot_state + j) * HEAD_DIM)[d4] = v;
      if (d4 == 0) p.partial_s[slot_state + j] = lse;
    }
    return;
  }

  // Finishing (uniform over the CTA): ⊕ of the prefix chunks' states into the running state.
  const int num_prefix = item.slot_offset;
  // The g heads of one slot are adjacent rows: chunk c's v is GQA · HEAD_DIM contiguous floats.
  const int64_t prefix_state = int64_t(run_begin) * p.num_qo_heads + heads.first;
#pragma unroll 1  // one pass's loads in flight at a time
  for (int c0 = 0; c0 < num_prefix; c0 += CHUNKS_PER_PASS) {
    float s[PER_THREAD][CHUNKS_PER_PASS];
    float4 v[PER_THREAD][CHUNKS_PER_PASS];
#pragma unroll
    for (int i = 0; i < PER_THREAD; ++i) {
      const int idx = threadIdx.x + i * THREADS;
#pragma unroll
      for (int u = 0; u < CHUNKS_PER_PASS; ++u) {
        const int64_t state = prefix_state + int64_t(c0 + u) * p.num_qo_heads;
        const bool in = owns(i) && c0 + u < num_prefix;
        s[i][u] = in ? __ldcg(p.partial_s + state + idx / D4) : -INFINITY;
        v[i][u] = in ? __ldcg(reinterpret_cast<const float4*>(p.partial_v + state * HEAD_DIM) + idx)
                     : make_float4(0.f, 0.f, 0.f, 0.f);
      }
    }
#pragma unroll
    for (int i = 0; i < PER_THREAD; ++i) {
      float m = run_m[i];
#pragma unroll
      for (int u = 0; u < CHUNKS_PER_PASS; ++u) m = fmaxf(m, s[i][u]);
      const float safe = SafeMax(m);
      const float rescale = FastExp2(run_m[i] - safe);  // 0 while nothing was summed (W, acc 0)
      run_w[i] *= rescale;
      run_acc[i] = Scale4(run_acc[i], rescale);
#pragma unroll
      for (int u = 0; u < CHUNKS_PER_PASS; ++u) {
        if (s[i][u] == -INFINITY) continue;  // empty: weight 0, v never read
        const float w = FastExp2(s[i][u] - safe);
        run_w[i] += w;
        run_acc[i] = Fma4(w, v[i][u], run_acc[i]);
      }
      run_m[i] = m;
    }
  }

  const int64_t out_row = int64_t(item.request) * p.num_qo_heads + heads.first;
#pragma unroll
  for (int i = 0; i < PER_THREAD; ++i) {
    const int idx = threadIdx.x + i * THREADS;
    if (!owns(i)) continue;
    const int j = idx / D4, d4 = idx % D4;
    float4 v;
    float lse;
    state_of(i, v, lse);
    const int64_t out = (out_row + j) * HEAD_DIM + 4 * d4;
    if (p.v_out != nullptr) *reinterpret_cast<float4*>(p.v_out + out) = v;
    if (p.o != nullptr) StoreOut4<T>(static_cast<T*>(p.o) + out, v);
    if (p.s_out != nullptr && d4 == 0) p.s_out[out_row + j] = lse;
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
