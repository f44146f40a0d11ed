// The sm_90a prefix attention kernel: the launcher contract of kernels/cuda/prefix_attention.h
// (same work items, same partial states), computed FlashAttention-3 style with wgmma and TMA.
//
// CTA = 3 warpgroups, persistent over the work items (item = blockIdx.x + k · gridDim.x, or in a
// balanced grid item blockIdx.x and its cta_next chain: FirstItemOfCta / NextItemOfCta):
//   warpgroup 0, two threads: the producers, one for K tiles and one for V tiles. Per KV tile of
//     BLOCK_N tokens each waits until its stage of the shared-memory ring is free (empty barrier),
//     then has TMA copy its tile (two 64-column panels for head_dim 128) into it; the copies
//     complete on the stage's full barriers. Each runs ahead across tiles, row tiles and items,
//     bounded by STAGES, K's no longer behind V's releases (ProducerLoop).
//   warpgroups 1, 2: consumers, 64 query rows each (128 rows = one row tile of an item). Per tile:
//     S = Q·Kᵀ (wgmma, Q and K from shared memory) → release K → mask, base-2 online softmax in
//     registers → P (fp16/bf16 registers) → O += P·V (wgmma, A = P from registers, V MN-major
//     from shared memory) → release V. At the end v = O / l, s = m + log2(l).
// Q rows follow the GQA mapping (row r of a group → request first_request + r / g, head
// kv_head · g + r % g). A warpgroup's rows (whole requests) come by TMA: one box of a 3D map over q
// {64 columns, g heads, 64 / g requests} per 64-column panel. The CTA's first row tile's boxes are
// issued by the producer ahead of its first K/V tiles (IssueFirstQueries: issued later, they queued
// behind 128 KiB of K/V in the SM's TMA unit and Q landed ~4 µs after the first K tile;
// bench/NOTES-prefix.md, sessions 11 and 33); a later row tile's by its warpgroup once the previous
// row tile is done with Q. A partial warpgroup (fewer than 64 rows: a small group, or a group's
// last rows) does the same where the map's request extent is q's own (q_partial): its box's rows
// past its own are the next requests' queries, or zeros past q's end, and are computed but never
// written (each row's softmax and output are its own). Otherwise (extent unknown, or g not
// dividing 64) it gathers its rows with cp.async into the same swizzled layout, the padding rows
// zero, then fence.proxy.async.
//
// K/V tile placement. The TMA box of tile t covers item tokens [b, b + BLOCK_N) with
//   b = min(kv_begin + t · BLOCK_N, prefix_tokens − BLOCK_N),
// i.e. the last tile is shifted back so that no box reaches past the group's prefix run: a read
// never leaves the pool, whatever its size (the tensor map's slot extent is not known here).
// Columns of the tile outside [kv_begin + t · BLOCK_N, kv_end) (a shifted tail re-reads tokens of
// the previous tile; a chunk may end before the prefix does) get score −inf. Only a prefix shorter
// than BLOCK_N makes b < 0: those rows come from before the run (other pages, possibly garbage or
// NaN; negative slots are zero-filled by TMA), so their V rows are zeroed in shared memory before
// P·V — P = 0 there, but 0 · NaN would still be NaN.
//
// Non-causal only (decode); the launcher keeps causal launches on the mma.sync kernel.
#pragma once

#include <cuda.h>  // CUtensorMap (a plain struct; no driver library is linked)
#include <cuda_runtime.h>

#include <climits>
#include <cstdint>
#include <type_traits>

#include "kernels/cuda/attention_state.cuh"
#include "prefixd/common/cuda_check.h"
#include "kernels/cuda/prefix_attention.h"
#include "kernels/cuda/programmatic_launch.cuh"
#include "kernels/cuda/sm90a/prefix_attention_sm90a.h"
#include "kernels/cuda/sm90a/sm90a_primitives.cuh"
#include "kernels/cuda/smem_limit.cuh"
#include "prefixd/kernels/prefix_kv_tile.h"

namespace prefixd::kernels::cuda::sm90a {

// CONSUMER_WGS_ = 1 is the narrow CTA (PrefixKernelSettings::consumer_wgs): for items of at most
// 64 rows, where the second consumer warpgroup of the wide CTA would only wait and release stages.
// It launches with half the register file (launch bounds of 2 CTAs per SM: 256 threads × 128
// registers, moved by setmaxnreg to 24 for the producer warpgroup and 232 for the consumer) and
// ~145 KiB of shared memory, so that the decode kernel's CTAs (a programmatic dependent launch,
// scheduled as soon as every prefix CTA starts its last item) fit on the same SM and stream their
// suffix K/V beside the prefix instead of after it: the wide CTA holds all 65536 registers, and
// no decode CTA ever co-resided with it (bench/NOTES-fused.md). Plain schedule only: FA3's
// ping-pong needs two consumer warpgroups.
// BLOCK_N_: tokens per K/V tile (the N of S = Q·Kᵀ), 0 for the head_dim's default
// (DefaultPrefixKvTileTokens, prefixd/kernels/prefix_kv_tile.h: why 64 / 128 / 192); 128 for the
// fused kernel and for head_dim 64's plans of short items, 160 for head_dim 128's plans of long
// items in wide CTAs (ChoosePrefixKvTileTokens, WgmmaLaunch::tile_tokens).
// STATES16_: PrefixAttentionParams::states_16bit, as a template constant so that the fp32 states'
// kernels keep their code: a runtime branch moved the headline kernel's spills and its prefix part
// timed up to 2 us slower on an H100 (bench/RESULTS.md, session 99). Built for head_dim 64 and 128
// only, where the TMA decode (the other writer of 16-bit states) exists.
template <typename T, int HEAD_DIM_, int STAGES_, bool OVERLAP_, int CONSUMER_WGS_ = 2, int BLOCK_N_ = 0,
          bool STATES16_ = false>
struct WgmmaPrefixConfig {
  using Element = T;
  static constexpr int HEAD_DIM = HEAD_DIM_;
  static constexpr int STAGES = STAGES_;    // K (and V) tiles in the ring
  static constexpr bool OVERLAP = OVERLAP_;  // FA3 schedule (Consumer::RowTileOverlapped)
  static constexpr int BLOCK_N = BLOCK_N_ > 0 ? BLOCK_N_ : DefaultPrefixKvTileTokens(HEAD_DIM);
  static constexpr int WG_ROWS = kWarpgroupRows;  // query rows per consumer warpgroup (wgmma M)
  static constexpr int CONSUMER_WGS = CONSUMER_WGS_;
  static constexpr bool STATES16 = STATES16_;
  static constexpr int TILE_ROWS = WG_ROWS * CONSUMER_WGS;
  static constexpr int THREADS = 128 * (1 + CONSUMER_WGS);
  // Launch bounds' minimum CTAs per SM: the registers reserved per thread at launch are
  // 65536 / (THREADS · this), rounded down to 8 (168 wide, 128 narrow); setmaxnreg then moves
  // them within the CTA, so 128 · PRODUCER_REGS + 128 · CONSUMER_WGS · CONSUMER_REGS must fit.
  static constexpr int MIN_CTAS_PER_SM = CONSUMER_WGS == 1 ? 2 : 1;
  static constexpr int PRODUCER_REGS = 24, CONSUMER_REGS = CONSUMER_WGS == 1 ? 232 : 240;
  static constexpr int LAUNCH_REGS = (65536 / (THREADS * MIN_CTAS_PER_SM)) / 8 * 8;
  static_assert(128 * PRODUCER_REGS + 128 * CONSUMER_WGS * CONSUMER_REGS <= LAUNCH_REGS * THREADS,
                "setmaxnreg cannot hand out more registers than the launch reserved");
  static_assert(CONSUMER_WGS == 2 || (CONSUMER_WGS == 1 && !OVERLAP),
                "the FA3 schedule's ping-pong needs two consumer warpgroups");

  static constexpr int PANELS = HEAD_DIM / 64;         // 128-byte column panels per row
  static constexpr int Q_PANEL_BYTES = WG_ROWS * 128;
  static constexpr int Q_WG_BYTES = PANELS * Q_PANEL_BYTES;
  static constexpr int KV_PANEL_BYTES = BLOCK_N * 128;
  static constexpr int KV_TILE_BYTES = PANELS * KV_PANEL_BYTES;
  // The row sums of P by the tensor cores: per k16 step of P·V one more wgmma, m64n8k16, of the
  // same P fragments against a 16 × 8 tile of ones in shared memory, into 4 accumulators per thread
  // that are rescaled with O. The softmax then adds no P values of its own (one FADD per score
  // fewer, and no quad shuffles at the end) for 1/32 more tensor work in P·V at head_dim 256.
  // Measured on the H200 (bench/RESULTS.md), B256 P32768 prefix parts: head_dim 256 ~1% faster
  // (session 41); head_dim 64 3-4% faster with 128-token tiles (session 41) but 3% slower than the
  // FADDs with its 192-token tiles (session 42); head_dim 128 (compute-bound, 83% of the GEMM rate)
  // 1.3-1.5% slower (session 41). The sum is then of P as rounded for P·V (as O always was), so
  // the LSE carries P's rounding: relative 2^-11 per value in fp16, which on random keys averages
  // out (every oracle case passes the tests' 2e-4 · max(1, |s|)) but in the worst case (every value
  // rounded the same way) reaches ~7e-4 in s, at the fp16 output's own resolution: the GPU tests'
  // RoundAllPUp cases build it and hold it under 8e-4 (6.05e-4 measured, session 42). bf16's 2^-8
  // would be 8 × that, so bf16 keeps the FADDs.
  static constexpr bool ROWSUM_BY_MMA = HEAD_DIM == 256 && std::is_same_v<T, __half>;
  // Shared memory, from a 1024-byte aligned base: Q of each consumer, K ring, V ring, the tiles of
  // ones (ROWSUM_BY_MMA: 16 rows of 128 bytes per consumer warpgroup, as an MN-major operand of one
  // 128-byte swizzle panel), barriers.
  static constexpr int K_OFFSET = CONSUMER_WGS * Q_WG_BYTES;
  static constexpr int V_OFFSET = K_OFFSET + STAGES * KV_TILE_BYTES;
  static constexpr int ONES_WG_BYTES = 16 * 128;
  static constexpr int ONES_OFFSET = V_OFFSET + STAGES * KV_TILE_BYTES;
  static constexpr int BAR_OFFSET = ONES_OFFSET + (ROWSUM_BY_MMA ? CONSUMER_WGS * ONES_WG_BYTES : 0);
  // The ring's, one Q barrier per consumer, and the split producers' first-tile gate (Ring::FirstK).
  static constexpr int BARRIERS = 4 * STAGES + CONSUMER_WGS + 1;
  static constexpr int SMEM_BYTES = 1024 + BAR_OFFSET + 8 * BARRIERS;

  // FlashAttention-4's conditional softmax rescaling (Consumer::Softmax): O is rescaled only on
  // the tiles where a row's max grows by more than 2^8, not on every tile. At head_dim 256 that
  // spares 128 multiplies per thread on most tiles: prefix parts 3-4% faster at B256 P32768. At
  // head_dim 64 / 128 (32 / 64 multiplies) the warp vote and branch cost more than they spare:
  // 1-5% slower (bench/RESULTS.md, session 28).
  static constexpr bool CONDITIONAL_RESCALE = HEAD_DIM == 256;
  // The speculative softmax (Consumer::Softmax): once every row of a warp has a finite running
  // max, a tile's exponentials are taken against that max as it stands, with no max pass over the
  // tile. The tile's P sums per thread and row, which the row sums need anyway, tell whether any P
  // grew past kSpeculativeSumLimit; only then (rare: a row's max rising by more than ~log2 of the
  // limit within one tile) does the warp move its max, by a power of two from its largest P, or,
  // where a 2^x overflowed, recompute the tile's scores and take the exact path. That spares per
  // score the max pass's FMNMX and per tile the quad shuffles and O's rescale, all on the chain
  // between S's arrival and P·V's issue, which bounds head_dim 64's tile (bench/NOTES-prefix.md,
  // session 42). Not at 256, whose conditional rescaling already skips O's rescale on most tiles.
  // Measured on H100s only (bench/RESULTS.md, session 85 run 2 and session 86 run 1, A/B against
  // the exact softmax): prefix parts −3 to −9% on long head_dim-128 walks (items of 16384 tokens,
  // the concurrent steps), −0.5 to −1.5% at 64, but +1 to +4% on items of 1024-4096 tokens, cause
  // not found; P·V's wait written above the exponentials was slower everywhere (session 86).
  static constexpr bool SPECULATIVE_SOFTMAX = !CONDITIONAL_RESCALE && !ROWSUM_BY_MMA;
  // The wgmma descriptors of a tile's k-steps as one descriptor per tile plus an add each
  // (DescriptorPlus), not the whole descriptor per step: ~40 fewer instructions in the turn the
  // other consumer warpgroup waits for. Prefix parts 1.3% faster at head_dim 128 and 2.5% at 256
  // on the compute-bound shapes, but 1.5-3% slower at 64 (B256 P32768; bench/RESULTS.md,
  // session 39), where the softmax, not the turn, bounds the tile.
  static constexpr bool DESCRIPTORS_BY_ADD = HEAD_DIM != 64;
  // Values every lane of a warp holds alike, taken through a shuffle from lane 0 (WarpUniform) so
  // that ptxas keeps them, and the wgmma descriptors built from them, in uniform registers instead
  // of moving each descriptor over by R2UR inside the turn (CUTLASS's canonical_warp_group_idx
  // does this for the warpgroup index). UNIFORM_STAGES: the ring stages of a turn's two wgmma
  // groups (K's and V's descriptors); UNIFORM_BASE: the warpgroup index and the shared-memory base
  // (Q's). Measured on the H200 (bench/RESULTS.md, sessions 40-41), compute-bound prefix parts: at
  // head_dim 128 the warpgroup index alone -0.2-0.4%, then the shared-memory base and the stages
  // another -2%; at 256 the stages -2.6-3.3%, the base another -3%; at 64 (softmax-bound) the
  // stages +6% (+5% with the 192-token tiles, session 43; not used), the base -3% with bf16 but
  // +0-1% with fp16's ROWSUM_BY_MMA (not used then; fp16 64 has summed by FADD since session 43,
  // and has the base hint with it, as measured with the 192-token tiles).
  static constexpr bool UNIFORM_STAGES = HEAD_DIM != 64;
  static constexpr bool UNIFORM_BASE = HEAD_DIM != 64 || !ROWSUM_BY_MMA;
  static constexpr int S_REGS = BLOCK_N / 2;   // S accumulators per thread (64 × BLOCK_N / 128)
  static constexpr int O_REGS = HEAD_DIM / 2;  // O accumulators per thread
  static constexpr int D_STEPS = HEAD_DIM / 16;
  static constexpr int N_STEPS = BLOCK_N / 16;

  static_assert(HEAD_DIM == 64 || HEAD_DIM == 128 || HEAD_DIM == 256, "wgmma N of O·V is head_dim: 64, 128 or 256");
  static_assert(SMEM_BYTES <= 227 * 1024, "shared memory of one CTA on sm_90");
};

// The barriers of the ring: full = "the tile has landed" (1 arrival + TMA bytes), empty = "every
// consumer warp is done with the stage" (one arrival per consumer warp); and per consumer
// warpgroup "its Q rows have landed" (1 arrival + TMA bytes; used only by TMA loads of Q); and
// "the K producer has issued the CTA's first K tile" (1 arrival; ProducePrefixItem's gate).
template <typename CFG>
struct Ring {
  uint32_t bars;
  __device__ uint32_t FullK(int s) const { return bars + 8 * s; }
  __device__ uint32_t FullV(int s) const { return bars + 8 * (CFG::STAGES + s); }
  __device__ uint32_t EmptyK(int s) const { return bars + 8 * (2 * CFG::STAGES + s); }
  __device__ uint32_t EmptyV(int s) const { return bars + 8 * (3 * CFG::STAGES + s); }
  __device__ uint32_t FullQ(int wg) const { return bars + 8 * (4 * CFG::STAGES + wg); }
  __device__ uint32_t FirstK() const { return bars + 8 * (4 * CFG::STAGES + CFG::CONSUMER_WGS); }
};

// Thread 0 initialises every barrier of the ring; visible to the whole CTA (and TMA) on return.
template <typename CFG>
__device__ __forceinline__ void InitRing(Ring<CFG> ring) {
  if (threadIdx.x == 0) {
    for (int s = 0; s < CFG::STAGES; ++s) {
      MbarrierInit(ring.FullK(s), 1);
      MbarrierInit(ring.FullV(s), 1);
      MbarrierInit(ring.EmptyK(s), 4 * CFG::CONSUMER_WGS);
      MbarrierInit(ring.EmptyV(s), 4 * CFG::CONSUMER_WGS);
    }
    for (int wg = 0; wg < CFG::CONSUMER_WGS; ++wg) MbarrierInit(ring.FullQ(wg), 1);
    MbarrierInit(ring.FirstK(), 1);
    FenceBarrierInit();
  }
  __syncthreads();
}

// Stage and phase parity of the ring position, advanced identically by producer and consumers.
template <int STAGES>
struct RingPosition {
  int stage = 0;
  uint32_t phase = 0;
  __device__ void Advance() {
    if (++stage == STAGES) stage = 0, phase ^= 1;
  }
};

// The KV tiles of one item: tokens [kv_begin, kv_end) of a prefix run (prefix items) or of a
// request's suffix pages (the fused kernel's decode items, cascade_fused_sm90a.cuh).
template <int BLOCK_N>
struct KvWalk {
  int kv_begin, kv_end, prefix_tokens, num_tiles;
  // Suffix walks: a tile's box is never shifted back (its pages are loaded one by one, only those
  // holding tokens of the item), so the rows past kv_end of the last tile hold stale shared memory
  // or page rows past the sequence end: their V rows are zeroed before P·V (ZeroInvalidRows).
  bool zero_tail;
  __device__ KvWalk(const PrefixWorkItem& item, const PrefixGroup& group)
      : kv_begin(item.kv_begin), kv_end(item.kv_end), prefix_tokens(group.prefix.num_tokens), zero_tail(false) {
    num_tiles = kv_end > kv_begin ? (kv_end - kv_begin + BLOCK_N - 1) / BLOCK_N : 0;
  }
  __device__ KvWalk(int suffix_begin, int suffix_end)
      : kv_begin(suffix_begin), kv_end(suffix_end), prefix_tokens(INT_MAX / 2), zero_tail(true) {
    num_tiles = kv_end > kv_begin ? (kv_end - kv_begin + BLOCK_N - 1) / BLOCK_N : 0;
  }
  // First token of tile t's box (see the header comment); negative only for short prefixes.
  __device__ int BoxBegin(int t) const { return min(kv_begin + t * BLOCK_N, prefix_tokens - BLOCK_N); }
};

// The speculative softmax's bound on one thread's P sum of a row in a tile (SPECULATIVE_SOFTMAX):
// every P is then at most 2^12, far inside fp16's range for P·V's operand and fp32's for the sums.
constexpr float kSpeculativeSumLimit = 4096.f;

struct RowTarget {
  int request, qo_head;
};
__device__ __forceinline__ RowTarget MapGroupRow(int group_row, int first_request, int kv_head, int gqa) {
  return {first_request + group_row / gqa, kv_head * gqa + group_row % gqa};
}

// The CTA's items: round-robin, item blockIdx.x + k · gridDim.x; or, where the grid is the plan's
// balanced one (PrefixAttentionParams::balanced_ctas), item blockIdx.x and then the chain of
// PrefixWorkItem::cta_next (prefixd/kernels/prefix_balance.h). −1: no more. The next item's index
// is read from the current item's line, which its reader has just loaded: no extra round trip.
__device__ __forceinline__ int FirstItemOfCta(const PrefixAttentionParams& p) {
  return int(blockIdx.x) < p.num_items ? int(blockIdx.x) : -1;
}
__device__ __forceinline__ int NextItemOfCta(const PrefixAttentionParams& p, int item) {
  if (p.balanced_ctas == int(gridDim.x)) return p.items[item].cta_next;
  const int next = item + int(gridDim.x);
  return next < p.num_items ? next : -1;
}

// Programmatic dependent launch (PREFIXD_PREFIX_PDL_TRIGGER): a thread of a CTA that starts its
// last item signals that the dependent grid (the decode kernel, launched with programmatic stream
// serialisation) may be scheduled; it launches once every CTA of this grid has signalled or
// exited, i.e. once every CTA works on its last item, so decode CTAs fill SMs as prefix CTAs
// retire instead of after the last one. Only scheduling moves: the decode kernel still waits
// (griddepcontrol.wait) for this grid's completion and memory flush before it reads a prefix state
// or exits. No deadlock: all CTAs of this grid are resident when the trigger completes.
__device__ __forceinline__ void MaybeTriggerDependents(bool trigger, int next_item) {
  if (trigger && next_item < 0) asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
}

// PrefixAttentionParams::timeline: one globaltimer stamp per phase and CTA, by one thread.
enum TimelineSlot {
  kEntry,
  kRingReady,
  kProducerStart,
  kQueryLoaded,
  kFirstKTile,  // the CTA's first K tile has landed (watched by an idle producer-warpgroup lane)
  kTilesDone,
  kEpilogueDone,
  kExit,
  kTimelineSlots
};
__device__ __forceinline__ void Stamp(const PrefixAttentionParams& p, TimelineSlot slot) {
  if (p.timeline != nullptr) p.timeline[blockIdx.x * kTimelineSlots + slot] = GlobalTimerNs();
}

// ---- queries by TMA ----------------------------------------------------------------------------

// Whether a warpgroup's Q rows [wg_row0, + wg_rows) of a group come by TMA: a map over q, all 64
// rows real or the map's extent q's own (partial), and whole requests (wg_row0 a multiple of g).
template <typename CFG>
__device__ __forceinline__ bool QByTma(const CUtensorMap* tmap_q, bool partial, int wg_row0, int wg_rows, int gqa) {
  return tmap_q != nullptr && (wg_rows == CFG::WG_ROWS || partial) && wg_row0 % gqa == 0;
}
// Issues those rows' boxes (one per 64-column panel: 64 columns × g heads × 64 / g requests, rows
// in group order) into q_smem; they complete on full_q (one arrival + the bytes).
template <typename CFG>
__device__ __forceinline__ void IssueQTma(const CUtensorMap* tmap_q, uint32_t q_smem, uint32_t full_q, int group_row0,
                                          int first_request, int kv_head, int gqa) {
  MbarrierArriveExpectTx(full_q, CFG::Q_WG_BYTES);
#pragma unroll
  for (int h = 0; h < CFG::PANELS; ++h)
    TmaLoad3d(q_smem + h * CFG::Q_PANEL_BYTES, tmap_q, 64 * h, kv_head * gqa, first_request + group_row0 / gqa, full_q);
}

// ---- producer ----------------------------------------------------------------------------------

// The queries of the CTA's first row tile, issued by the producer before its first K/V tiles, so
// that they lead the SM's TMA queue instead of trailing 128 KiB of K/V (issued by the consumers,
// they landed ~4 µs after the first K tile: bench/NOTES-prefix.md, session 11). Later row tiles'
// queries are issued by their consumers (LoadQTma), once the previous row tile is done with Q.
template <typename CFG>
__device__ __forceinline__ void IssueFirstQueries(const PrefixAttentionParams& p, const CUtensorMap* tmap_q,
                                                  bool q_partial, uint32_t smem, Ring<CFG> ring) {
  if (tmap_q == nullptr || int(blockIdx.x) >= p.num_items) return;
  const PrefixWorkItem item = p.items[blockIdx.x];
  const PrefixGroup group = p.groups[item.group];
  if (KvWalk<CFG::BLOCK_N>(item, group).num_tiles == 0) return;  // its consumers load no Q for it
  const int gqa = p.num_qo_heads / p.num_kv_heads;
  for (int wg = 0; wg < CFG::CONSUMER_WGS; ++wg) {
    const int wg_row0 = item.row_begin + wg * CFG::WG_ROWS;
    const int wg_rows = min(item.row_end - wg_row0, CFG::WG_ROWS);
    if (wg_rows > 0 && QByTma<CFG>(tmap_q, q_partial, wg_row0, wg_rows, gqa))
      IssueQTma<CFG>(tmap_q, smem + wg * CFG::Q_WG_BYTES, ring.FullQ(wg), wg_row0, group.first_request, item.kv_head,
                     gqa);
  }
}

// One TMA box of the map per 64-column panel of a row block: rows [y, y + box rows) of the map,
// columns [x0, x0 + HEAD_DIM), to dst (panel h at dst + h · KV_PANEL_BYTES), completing on `bar`.
template <typename CFG>
__device__ __forceinline__ void LoadPanels(uint32_t dst, const CUtensorMap* tmap, int x0, int y, uint32_t bar, bool hint,
                                           uint64_t policy) {
#pragma unroll
  for (int h = 0; h < CFG::PANELS; ++h) {
    if (hint) TmaLoad2dHint(dst + h * CFG::KV_PANEL_BYTES, tmap, x0 + 64 * h, y, bar, policy);
    else TmaLoad2d(dst + h * CFG::KV_PANEL_BYTES, tmap, x0 + 64 * h, y, bar);
  }
}

// Which of an item's tile streams a producer thread issues: both, K then V per tile (one producer
// thread: the fused kernel), or only K's or only V's (the prefix kernel's two producer threads,
// ProducerLoop).
enum class KvStream { kBoth, kK, kV };

// Every K (and/or V) tile of one prefix item (each row tile walks the item's KV range once) into
// the ring. gate (0: none) orders the CTA's first tiles across the two producer threads of the split
// streams: the K thread arrives on it once it has issued its first K tile (after the first row
// tile's queries), the V thread waits on it before its first V tile, so that the SM's TMA queue
// holds Q, then K, then V, as one thread issued them (a V tile ahead of Q delayed Q: session 11);
// both then clear it.
template <typename CFG, KvStream STREAM = KvStream::kBoth>
__device__ __forceinline__ void ProducePrefixItem(const PrefixAttentionParams& p, const PrefixWorkItem& item,
                                                  const CUtensorMap* tmap_k, const CUtensorMap* tmap_v, uint32_t smem,
                                                  Ring<CFG> ring, RingPosition<CFG::STAGES>& pos, bool hint,
                                                  uint64_t policy, uint32_t& gate) {
  const PrefixGroup group = p.groups[item.group];
  const KvWalk<CFG::BLOCK_N> walk(item, group);
  const int slot0 = group.prefix.first_page * p.page_size;
  const int x0 = item.kv_head * CFG::HEAD_DIM;
  for (int row = item.row_begin; row < item.row_end; row += CFG::TILE_ROWS) {
    for (int t = 0; t < walk.num_tiles; ++t, pos.Advance()) {
      const int y = slot0 + walk.BoxBegin(t);
      if constexpr (STREAM != KvStream::kV) {
        const uint32_t k_dst = smem + CFG::K_OFFSET + pos.stage * CFG::KV_TILE_BYTES;
        MbarrierWait<true>(ring.EmptyK(pos.stage), pos.phase ^ 1);
        MbarrierArriveExpectTx(ring.FullK(pos.stage), CFG::KV_TILE_BYTES);
        LoadPanels<CFG>(k_dst, tmap_k, x0, y, ring.FullK(pos.stage), hint, policy);
        if (STREAM == KvStream::kK && gate != 0) MbarrierArrive(gate), gate = 0;
      }
      if constexpr (STREAM != KvStream::kK) {
        const uint32_t v_dst = smem + CFG::V_OFFSET + pos.stage * CFG::KV_TILE_BYTES;
        if (STREAM == KvStream::kV && gate != 0) MbarrierWait<true>(gate, 0), gate = 0;
        MbarrierWait<true>(ring.EmptyV(pos.stage), pos.phase ^ 1);
        MbarrierArriveExpectTx(ring.FullV(pos.stage), CFG::KV_TILE_BYTES);
        LoadPanels<CFG>(v_dst, tmap_v, x0, y, ring.FullV(pos.stage), hint, policy);
      }
    }
  }
}

// One producer thread's stream of the CTA's items: the K tiles (thread 0, which also issues the
// first row tile's queries and signals the dependent grid) or the V tiles (thread 64). Two threads
// so that K's stream does not queue behind V's releases: with one thread issuing K then V per
// tile, tile t + STAGES's K waited for tile t's V stage to empty, i.e. for tile t's P·V, although
// its own stage was free after tile t's S (bench/NOTES-prefix.md, session 72).
template <typename CFG, KvStream STREAM>
__device__ __forceinline__ void ProducerLoop(const PrefixAttentionParams& p, const CUtensorMap* tmap_k,
                                             const CUtensorMap* tmap_v, const CUtensorMap* tmap_q, bool q_partial,
                                             uint32_t smem, Ring<CFG> ring, bool trigger, L2Evict kv_evict) {
  if constexpr (STREAM == KvStream::kK) {
    Stamp(p, kProducerStart);
    IssueFirstQueries<CFG>(p, tmap_q, q_partial, smem, ring);
  }
  // An L2 eviction priority for the streamed K/V tiles (kNone: no hint; WgmmaLaunch::kv_evict).
  const bool hint = kv_evict != L2Evict::kNone;
  const uint64_t policy = hint ? CreateL2Policy(kv_evict) : 0;
  RingPosition<CFG::STAGES> pos;
  uint32_t gate = ring.FirstK();
  for (int i = FirstItemOfCta(p); i >= 0;) {
    const int next = NextItemOfCta(p, i);
    if constexpr (STREAM == KvStream::kK) MaybeTriggerDependents(trigger, next);
    ProducePrefixItem<CFG, STREAM>(p, p.items[i], tmap_k, tmap_v, smem, ring, pos, hint, policy, gate);
    i = next;
  }
}

// What the producer thread reads first, fetched at the kernel's entry, before the ring's set-up:
// the first K/V tile waits for the CTA's first item, then its group (two dependent reads, each a
// DRAM round trip after the benchmark's L2 flush), then the tensor maps. The three maps go into
// the TMA unit (the consumers' later Q loads use the same one); the item's line and the group
// array's first line (a plan's first items name one of its first groups) into L2, as prefetches,
// which hold no register and stall nothing (a load here made ptxas spill the item around the
// producer's 24 registers). Measured: first K tile 0.2-0.4 µs earlier (bench/NOTES-prefix.md,
// session 38); the set-up it overlaps is only ~0.4 µs.
__device__ __forceinline__ void PrefetchFirstReads(const PrefixAttentionParams& p, const CUtensorMap* tmap_k,
                                                   const CUtensorMap* tmap_v, const CUtensorMap* tmap_q) {
  PrefetchTensorMap(tmap_k);
  PrefetchTensorMap(tmap_v);
  if (tmap_q != nullptr) PrefetchTensorMap(tmap_q);
  if (int(blockIdx.x) >= p.num_items) return;
  PrefetchLineL2(p.items + blockIdx.x);
  PrefetchLineL2(p.groups);
}

// The decode kernel's start into L2 (PrefixAttentionParams::decode_warmup), by the V producer's
// warp as soon as its lane 0 has issued the CTA's last V tile (its last K/V tile): the prefetches
// queue behind that tile's loads in the SM's TMA unit, so no tile waits for them, and they have the
// CTA's last tiles of compute to be taken (issued once the last tile had landed instead, they held
// the CTA's exit back more: bench/RESULTS.md, session 12).
// 1. Items blockIdx.x + gridDim.x · lane, ...: each one's descriptor and bases are read and the
//    page-table line of its first tokens prefetched, so that the decode CTA's dependent start
//    (item → page table → first tile) finds them in L2.
// 2. Runs: the planner emits a (request, suffix chunk)'s items consecutively, one per KV head
//    (plan.cc), and they read the same token rows. Per run, its request's query rows, and with
//    tokens > 0 its first `tokens` K/V rows for all the view's heads, one bulk prefetch per page
//    segment for K and for V (the first two segments' pages from DecodeL2Warmup::item_pages where
//    passed: one dependent load fewer before the CTA can exit). The (run, segment) units go round
//    the CTAs so that each CTA takes few bytes: a CTA cannot exit before its prefetches are taken,
//    and a CTA that took hundreds of KiB (or hundreds of small TMA ops) held the prefix grid's end
//    back by microseconds.
template <typename CFG>
__device__ __forceinline__ void WarmDecodeStart(const PrefixAttentionParams& p) {
  using T = typename CFG::Element;
  const DecodeL2Warmup& w = p.decode_warmup;
  const int lane = int(threadIdx.x) % 32;
  const int ps = p.page_size;
  const int stride = int(gridDim.x) * 32;
  // Where item i's request's pages start in the page table (the decode kernel's ItemBases).
  auto page_base = [&](int i, const DecodeWorkItem& item) {
    return w.item_bases != nullptr ? w.item_bases[i].x : w.page_indptr[item.request];
  };
  for (int i = int(blockIdx.x) + int(gridDim.x) * lane; i < w.num_items; i += stride) {
    const DecodeWorkItem item = w.items[i];
    if (item.kv_end > item.kv_begin) PrefetchLineL2(w.page_indices + page_base(i, item) + item.kv_begin / ps);
  }
  const int heads = p.num_kv_heads;
  const int runs = (w.num_items + heads - 1) / heads;
  const int segments = w.tokens > 0 ? (w.tokens + ps - 1) / ps + 1 : 1;  // page segments of `tokens` rows at any offset
  for (int u = int(blockIdx.x) + int(gridDim.x) * lane; u < runs * segments; u += stride) {
    const int first_item = (u / segments) * heads, seg = u % segments;
    const DecodeWorkItem item = w.items[first_item];
    if (seg == 0)
      BulkPrefetchL2(static_cast<const T*>(p.q) + int64_t(item.request) * p.num_qo_heads * CFG::HEAD_DIM,
                     uint32_t(p.num_qo_heads * CFG::HEAD_DIM * int(sizeof(T))));
    const int first = item.kv_begin, last = item.kv_begin + min(w.tokens, item.kv_end - item.kv_begin);
    const int seg_begin = seg == 0 ? first : (first / ps + seg) * ps;
    const int seg_end = min(last, (first / ps + seg + 1) * ps);
    if (seg_begin >= seg_end) continue;
    // Segment seg is in the item's page slot kv_begin / ps + seg: its first two from the item's
    // pages where the plan passed them (a load beside the item's, not after it), else the table.
    const int page = w.item_pages != nullptr && seg < 2 ? reinterpret_cast<const int*>(w.item_pages + first_item)[seg]
                                                         : w.page_indices[page_base(first_item, item) + seg_begin / ps];
    const int64_t at = (int64_t(page) * ps + seg_begin % ps) * p.token_stride;
    // From the view's first head in the first row to its last head in the last row (inside the pool).
    const uint32_t bytes =
        uint32_t((int64_t(seg_end - seg_begin - 1) * p.token_stride + int64_t(heads) * CFG::HEAD_DIM) *
                 int64_t(sizeof(T)));
    BulkPrefetchL2(static_cast<const T*>(p.k) + at, bytes);
    BulkPrefetchL2(static_cast<const T*>(p.v) + at, bytes);
  }
}

// ---- consumers ---------------------------------------------------------------------------------

// The 64 Q rows of one consumer warpgroup (rows ≥ num_rows are zeros), gathered with cp.async
// into its swizzled panels; visible to wgmma when this returns.
template <typename CFG>
__device__ __forceinline__ void LoadQ(const PrefixAttentionParams& p, uint32_t q_smem, int tid, int barrier_id,
                                      int group_row0, int num_rows, int first_request, int kv_head, int gqa) {
  using T = typename CFG::Element;
  constexpr int CHUNKS = CFG::HEAD_DIM / 8;  // 16-byte chunks per row
  NamedBarrierSync(barrier_id, 128);         // the previous row tile's S = Q·Kᵀ is done everywhere
#pragma unroll
  for (int it = 0; it < CFG::WG_ROWS * CHUNKS / 128; ++it) {
    const int i = it * 128 + tid;
    const int r = i / CHUNKS, c = i % CHUNKS;
    const bool valid = r < num_rows;
    const T* src = static_cast<const T*>(p.q);  // mapped; not read for padding rows
    if (valid) {
      const RowTarget t = MapGroupRow(group_row0 + r, first_request, kv_head, gqa);
      src += (int64_t(t.request) * p.num_qo_heads + t.qo_head) * CFG::HEAD_DIM + c * 8;
    }
    CpAsync16(q_smem + (c / 8) * CFG::Q_PANEL_BYTES + r * 128 + (((c % 8) ^ (r % 8)) << 4), src, valid);
  }
  CpAsyncCommit();
  CpAsyncWait<0>();
  FenceProxyAsync();
  NamedBarrierSync(barrier_id, 128);
}

// The same for a warpgroup whose rows come by TMA (QByTma): issued here by one thread once the
// previous row tile's S is done, unless the producer already issued them (the CTA's first row
// tile, IssueFirstQueries); completing on full_q. `phase` is the parity of this warpgroup's next
// TMA load of Q (flipped here). Visible to wgmma when this returns.
template <typename CFG>
__device__ __forceinline__ void LoadQTma(const CUtensorMap* tmap_q, uint32_t q_smem, int tid, int barrier_id,
                                         uint32_t full_q, uint32_t& phase, bool issued, int group_row0,
                                         int first_request, int kv_head, int gqa) {
  if (!issued) {
    NamedBarrierSync(barrier_id, 128);  // the previous row tile's S = Q·Kᵀ is done everywhere
    if (tid == 0) IssueQTma<CFG>(tmap_q, q_smem, full_q, group_row0, first_request, kv_head, gqa);
  }
  MbarrierWait(full_q, phase);
  phase ^= 1;
}

// One consumer warpgroup: 64 rows of each row tile, its registers and the steps of a KV tile.
// Every step that computes is skipped by an idle warpgroup (an item with ≤ 64 rows left for it),
// which still waits for and releases every stage in the same order, so that the ring's empty
// barriers see all 8 consumer warps on every tile.
template <typename CFG>
struct Consumer {
  using T = typename CFG::Element;
  using MmaS = Wgmma<T, CFG::BLOCK_N>;
  using MmaO = Wgmma<T, CFG::HEAD_DIM>;
  using MmaSum = Wgmma<T, 8>;  // ROWSUM_BY_MMA
  static constexpr int BLOCK_N = CFG::BLOCK_N;

  const PrefixAttentionParams& p;
  const Ring<CFG> ring;
  const CUtensorMap* const tmap_q;  // the 3D map over q for LoadQTma; null: Q always by cp.async
  const bool q_partial;             // partial warpgroups' rows by TMA too (QByTma)
  uint32_t q_phase = 0;             // parity of this warpgroup's next TMA load of Q
  bool first_q_by_producer = false; // the producer issues the first row tile's Q (IssueFirstQueries)
  const uint32_t smem, q_smem;
  const int wg, tid, lane, barrier_id;
  const int row_in_wg;  // this thread's rows in the warpgroup: row_in_wg and row_in_wg + 8
  const int col0;       // this thread's first column in an n8 block
  float s[CFG::S_REGS];         // S of the current tile, then P in fp32
  float o[CFG::O_REGS];         // O, unnormalised, at the scale of row_max
  uint32_t pa[CFG::N_STEPS][4];  // P as the A fragments of P·V
  float row_max[2], row_sum[2];  // running max (scaled, base 2) and this lane's partial sum
  // SPECULATIVE_SOFTMAX: whether every row of this warp has a finite running max, i.e. the next
  // tile may take the speculative path (warp-uniform); whether the last softmax moved a max, i.e.
  // O must be rescaled before its P·V (RescaleO); and K of the item's prefix run at its KV head,
  // for RecomputeScores.
  bool speculate = false, rescale_pending = true;
  const T* k_run = nullptr;
  // ROWSUM_BY_MMA: the m64n8 accumulators of P · ones, every column the row's whole sum (c[0], c[1]:
  // row_in_wg; c[2], c[3]: row_in_wg + 8), at the scale of row_max like O.
  float sum_acc[4];

  __device__ Consumer(const PrefixAttentionParams& params, Ring<CFG> r, const CUtensorMap* q_map, bool q_map_partial,
                      uint32_t smem_base, int warpgroup)
      : p(params),
        ring(r),
        tmap_q(q_map),
        q_partial(q_map_partial),
        smem(smem_base),
        q_smem(smem_base + warpgroup * CFG::Q_WG_BYTES),
        wg(warpgroup),
        tid(int(threadIdx.x) - 128 * (1 + warpgroup)),
        lane(int(threadIdx.x) % 32),
        barrier_id(1 + warpgroup),
        row_in_wg((tid / 32) * 16 + lane / 4),
        col0(2 * (lane % 4)) {
#pragma unroll
    for (int i = 0; i < CFG::S_REGS; ++i) s[i] = 0.f;
    if constexpr (CFG::ROWSUM_BY_MMA) {
      // This warpgroup's tile of ones, written once; visible to wgmma (the async proxy) after the fence.
      const uint32_t one2 = MmaOp<T>::Pack(1.f, 1.f);
      for (int i = tid; i < CFG::ONES_WG_BYTES / 16; i += 128)
        asm volatile("st.shared.v4.u32 [%0], {%1, %1, %1, %1};\n" ::"r"(OnesTile() + 16 * i), "r"(one2) : "memory");
      FenceProxyAsync();
      NamedBarrierSync(barrier_id, 128);
    }
  }
  __device__ uint32_t OnesTile() const { return smem + CFG::ONES_OFFSET + wg * CFG::ONES_WG_BYTES; }

  __device__ uint32_t KTile(int stage) const { return smem + CFG::K_OFFSET + stage * CFG::KV_TILE_BYTES; }
  __device__ uint32_t VTile(int stage) const { return smem + CFG::V_OFFSET + stage * CFG::KV_TILE_BYTES; }

  // Issues S = Q·Kᵀ for the K tile of `stage` (one wgmma group).
  __device__ void IssueS(int stage) {
    WgmmaFence();
#pragma unroll
    for (int ks = 0; ks < CFG::D_STEPS; ++ks)
      MmaS::SS(s, KMajorDescriptor<CFG::DESCRIPTORS_BY_ADD>(q_smem, ks, CFG::Q_PANEL_BYTES),
               KMajorDescriptor<CFG::DESCRIPTORS_BY_ADD>(KTile(stage), ks, CFG::KV_PANEL_BYTES),
               ks > 0);
    WgmmaCommit();
  }
  // Issues O += P·V for the V tile of `stage` (one wgmma group).
  __device__ void IssuePV(int stage) {
    WgmmaFence();
#pragma unroll
    for (int ks = 0; ks < CFG::N_STEPS; ++ks)
      MmaO::RS(o, pa[ks], MnMajorDescriptor<CFG::DESCRIPTORS_BY_ADD>(VTile(stage), ks, CFG::KV_PANEL_BYTES), 1);
    if constexpr (CFG::ROWSUM_BY_MMA) {
      // Every k16 step against the same 16 rows of ones (any layout of ones reads as ones).
      const uint64_t ones = SmemDescriptor(OnesTile(), CFG::KV_PANEL_BYTES, 1024);
#pragma unroll
      for (int ks = 0; ks < CFG::N_STEPS; ++ks) MmaSum::RS(sum_acc, pa[ks], ones, 1);
    }
    WgmmaCommit();
  }
  // V rows of a tile that must not meet P·V even with P = 0 (0 · NaN is NaN): rows [0, −box) of a
  // box that starts before the prefix run (whatever precedes the run), and, for a suffix walk, the
  // rows from kv_end on (stale shared memory, page rows past the sequence end). Every active
  // warpgroup writes the same zeros, so the two need no ordering between them.
  __device__ void ZeroInvalidRows(int stage, const KvWalk<BLOCK_N>& walk, int box) {
    const int lo = max(0, -box), hi = walk.zero_tail ? min(BLOCK_N, walk.kv_end - box) : BLOCK_N;
    if (lo == 0 && hi >= BLOCK_N) return;
    const uint32_t v_tile = VTile(stage);
    for (int z = tid; z < (lo + BLOCK_N - hi) * CFG::PANELS * 8; z += 128) {
      const int i = z / (CFG::PANELS * 8), c = z % (CFG::PANELS * 8);
      const int r = i < lo ? i : hi + (i - lo);
      const uint32_t addr = v_tile + (c / 8) * CFG::KV_PANEL_BYTES + r * 128 + (((c % 8) ^ (r % 8)) << 4);
      asm volatile("st.shared.v4.u32 [%0], {%1, %1, %1, %1};\n" ::"r"(addr), "r"(0) : "memory");
    }
    FenceProxyAsync();
    NamedBarrierSync(barrier_id, 128);
  }
  // Masks columns outside [lo, hi), then the base-2 online softmax of S in place: row_max and
  // row_sum move to the new max, s becomes P = 2^(S·c − max). Returns in `rescale` the factor O
  // must be multiplied by before P·V of this tile is added (where rescale_pending). box: the
  // tile's first token in the prefix run (KvWalk::BoxBegin), for RecomputeScores.
  __device__ void Softmax(int lo, int hi, int box, float (&rescale)[2]) {
    const float scale = p.sm_scale_log2;
    if (lo > 0 || hi < BLOCK_N) {
#pragma unroll
      for (int j = 0; j < CFG::S_REGS; ++j) {
        const int col = 8 * (j / 4) + col0 + (j % 2);
        if (col < lo || col >= hi) s[j] = -INFINITY;
      }
    }
    if constexpr (CFG::SPECULATIVE_SOFTMAX) {
      if (speculate) {
        if (SoftmaxSpeculative(scale, rescale)) return;
        RecomputeScores(lo, hi, box);  // a 2^x overflowed: the exact path below, on S again
      }
    }
    // scale > 0, so the max of raw scores gives the max of scaled ones. Both rows side by side
    // and ACC independent partial maxima per row (as Exponentiate's sums): only two consumer warps
    // share a scheduler, so serial dependency chains over 64 values would be exposed latency.
    constexpr int ACC = 4;
    float part[2][ACC];
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int a = 0; a < ACC; ++a) part[h][a] = -INFINITY;
#pragma unroll
    for (int j = 0; j < CFG::S_REGS / 4; ++j)
#pragma unroll
      for (int h = 0; h < 2; ++h)
        part[h][j % ACC] = fmaxf(part[h][j % ACC], fmaxf(s[4 * j + 2 * h], s[4 * j + 2 * h + 1]));
    float subtract[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float tile_max = part[h][0];
#pragma unroll
      for (int a = 1; a < ACC; ++a) tile_max = fmaxf(tile_max, part[h][a]);
      tile_max = QuadMax(tile_max) * scale;
      if constexpr (CFG::CONDITIONAL_RESCALE) {
        // The running max moves only where the tile's exceeds it by more than kMaxGrowth, so
        // that most tiles leave O as it is (RescaleO skips). Any max gives exact states (o and
        // row_sum are kept at its scale, s = max + log2(sum)) as long as P = 2^(S·c − max) ≤
        // 2^kMaxGrowth, far from overflowing P's fp16 / bf16 or the sums.
        constexpr float kMaxGrowth = 8.f;
        if (tile_max > row_max[h] + kMaxGrowth) {  // also the row's first finite tile (max −∞)
          rescale[h] = FastExp2(row_max[h] - tile_max);
          row_max[h] = tile_max;
        } else {
          rescale[h] = 1.f;
        }
        subtract[h] = SafeMax(row_max[h]);
      } else {
        const float new_max = fmaxf(row_max[h], tile_max);
        subtract[h] = SafeMax(new_max);
        rescale[h] = FastExp2(row_max[h] - subtract[h]);
        row_max[h] = new_max;
      }
    }
    float tile_sum[2];
    Exponentiate(scale, subtract, tile_sum);
    if constexpr (!CFG::ROWSUM_BY_MMA) {
#pragma unroll
      for (int h = 0; h < 2; ++h) row_sum[h] = row_sum[h] * rescale[h] + tile_sum[h];
    }
    if constexpr (CFG::SPECULATIVE_SOFTMAX) {
      rescale_pending = true;
      speculate = __all_sync(0xffffffffu, row_max[0] != -INFINITY && row_max[1] != -INFINITY);
    }
  }
  // The speculative path (SPECULATIVE_SOFTMAX; every running max finite): P = 2^(S·c − row_max)
  // with the max as it stands. Where no thread's P sum of a row passed kSpeculativeSumLimit (the
  // common case: one vote), the sums grow and O keeps its scale. Returns false, with s no longer
  // holding S, where a 2^x overflowed (MoveMaxAfterSpeculation).
  __device__ bool SoftmaxSpeculative(float scale, float (&rescale)[2]) {
    const float subtract[2] = {row_max[0], row_max[1]};
    float tile_sum[2];
    Exponentiate(scale, subtract, tile_sum);
    // NaN compares false: a NaN score stays on this path and reaches the state as on the exact one.
    const bool over = tile_sum[0] > kSpeculativeSumLimit || tile_sum[1] > kSpeculativeSumLimit;
    if (!__any_sync(0xffffffffu, over)) {
      row_sum[0] += tile_sum[0];
      row_sum[1] += tile_sum[1];
      rescale_pending = false;
      return true;
    }
    return MoveMaxAfterSpeculation(tile_sum, rescale);
  }
  // The speculative path's rare end: some row's P grew past the limit. Per row, the tile's largest
  // P (over the quad) sets how far the max moves: by delta, the power of two just above it, so
  // that P, O and the sum are rescaled exactly (2^−delta) and every P ends below 1. Returns false
  // where a P is +inf: its S is lost, and RecomputeScores must bring it back.
  __device__ bool MoveMaxAfterSpeculation(const float (&tile_sum)[2], float (&rescale)[2]) {
    float p_max[2] = {0.f, 0.f};
#pragma unroll
    for (int j = 0; j < CFG::S_REGS / 4; ++j)
#pragma unroll
      for (int h = 0; h < 2; ++h) p_max[h] = fmaxf(p_max[h], fmaxf(s[4 * j + 2 * h], s[4 * j + 2 * h + 1]));
#pragma unroll
    for (int h = 0; h < 2; ++h) p_max[h] = QuadMax(p_max[h]);
    if (__any_sync(0xffffffffu, isinf(p_max[0]) || isinf(p_max[1]))) return false;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      // p_max in [2^(b − 127), 2^(b − 126)) for biased exponent b: delta = b − 126, at most 126 so
      // that 2^−delta stays a normal float (P < 4 then, still far inside the limit).
      const int biased = (__float_as_int(p_max[h]) >> 23) & 0xff;
      const int delta = p_max[h] > 1.f ? min(biased - 126, 126) : 0;
      rescale[h] = __int_as_float((127 - delta) << 23);
      row_max[h] += float(delta);
      row_sum[h] = (row_sum[h] + tile_sum[h]) * rescale[h];
    }
#pragma unroll
    for (int j = 0; j < CFG::S_REGS; ++j) s[j] *= rescale[(j % 4) / 2];
    rescale_pending = true;
    return true;
  }
  // S of the tile again, for the one case the speculative path cannot finish from P (a 2^x that
  // overflowed: a row's score more than 2^7 above its running max, base 2): Q from this
  // warpgroup's shared memory, K from global memory (its ring stage may hold the next tile by
  // now), one score at a time on the CUDA cores; columns outside [lo, hi) −inf as in Softmax. Slow,
  // and rolled loops so that it adds little code to the tile loop; each score is placed by a
  // compare per register, so that s stays in registers.
  __device__ void RecomputeScores(int lo, int hi, int box) {
#pragma unroll 1
    for (int j = 0; j < CFG::S_REGS; ++j) {
      const int row = row_in_wg + 8 * ((j % 4) / 2), col = 8 * (j / 4) + col0 + (j % 2);
      float score = -INFINITY;
      if (col >= lo && col < hi) {
        const T* k = k_run + int64_t(box + col) * p.token_stride;
        score = 0.f;
#pragma unroll 1
        for (int c = 0; c < CFG::HEAD_DIM / 8; ++c) {
          const uint32_t q_chunk = q_smem + (c / 8) * CFG::Q_PANEL_BYTES + row * 128 + (((c % 8) ^ (row % 8)) << 4);
          float kf[8], qf[8];
          Unpack8<T>(*reinterpret_cast<const uint4*>(k + 8 * c), kf);
          Unpack8<T>(LoadShared16(q_chunk), qf);
#pragma unroll
          for (int i = 0; i < 8; ++i) score = fmaf(qf[i], kf[i], score);
        }
      }
#pragma unroll
      for (int i = 0; i < CFG::S_REGS; ++i)
        if (i == j) s[i] = score;
    }
  }
  // s ← P = 2^(S·c − subtract[row half]) in place, and (unless the tensor cores sum the rows,
  // ROWSUM_BY_MMA) this thread's P sum of each row in tile_sum, as ACC independent partial sums
  // per row on the way (one serial chain of FADDs would be exposed latency).
  __device__ void Exponentiate(float scale, const float (&subtract)[2], float (&tile_sum)[2]) {
    constexpr int ACC = 4;
    float part[2][ACC];
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int a = 0; a < ACC; ++a) part[h][a] = 0.f;
#pragma unroll
    for (int j = 0; j < CFG::S_REGS / 4; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int h = e / 2;
        s[4 * j + e] = FastExp2(fmaf(s[4 * j + e], scale, -subtract[h]));
        if constexpr (!CFG::ROWSUM_BY_MMA) part[h][j % ACC] += s[4 * j + e];
      }
#pragma unroll
    for (int h = 0; h < 2; ++h) tile_sum[h] = (part[h][0] + part[h][1]) + (part[h][2] + part[h][3]);
  }
  __device__ void RescaleO(const float (&rescale)[2]) {
    if constexpr (CFG::SPECULATIVE_SOFTMAX) {
      if (!rescale_pending) return;  // the speculative softmax kept every max (warp-uniform)
    }
    // With conditional rescaling, skipped by the whole warp where none of its rows' max moved
    // (Softmax): most tiles.
    if constexpr (CFG::CONDITIONAL_RESCALE) {
      if (!__any_sync(0xffffffffu, rescale[0] != 1.f || rescale[1] != 1.f)) return;
    }
#pragma unroll
    for (int j = 0; j < CFG::O_REGS / 4; ++j) {
      o[4 * j + 0] *= rescale[0];
      o[4 * j + 1] *= rescale[0];
      o[4 * j + 2] *= rescale[1];
      o[4 * j + 3] *= rescale[1];
    }
    if constexpr (CFG::ROWSUM_BY_MMA) {
      sum_acc[0] *= rescale[0];
      sum_acc[1] *= rescale[0];
      sum_acc[2] *= rescale[1];
      sum_acc[3] *= rescale[1];
    }
  }
  // After the wait for P·V: its accumulators (O, and the row sums with ROWSUM_BY_MMA) are final.
  __device__ void FenceAccumulators() {
    FenceRegisters(o);
    if constexpr (CFG::ROWSUM_BY_MMA) FenceRegisters(sum_acc);
  }
  // P as the A fragments of the k16 steps of P·V: n8 blocks 2ks and 2ks + 1 of S.
  __device__ void PackP() {
#pragma unroll
    for (int ks = 0; ks < CFG::N_STEPS; ++ks) {
      pa[ks][0] = MmaOp<T>::Pack(s[8 * ks + 0], s[8 * ks + 1]);
      pa[ks][1] = MmaOp<T>::Pack(s[8 * ks + 2], s[8 * ks + 3]);
      pa[ks][2] = MmaOp<T>::Pack(s[8 * ks + 4], s[8 * ks + 5]);
      pa[ks][3] = MmaOp<T>::Pack(s[8 * ks + 6], s[8 * ks + 7]);
    }
  }
  __device__ void Release(uint32_t bar) {
    __syncwarp();
    if (lane == 0) MbarrierArrive(bar);
  }

  // Ping-pong between the two consumer warpgroups (FA3's "warp scheduler barriers"): each issue
  // block of one warpgroup starts after the other's previous one was issued, so that one's
  // softmax runs while the other's wgmma keeps the tensor cores busy. Warpgroup 1 arrives once
  // up front (warpgroup 0 goes first) and warpgroup 0 consumes that extra arrival at the very end.
  __device__ void TurnBegin() const { NamedBarrierSync(3 + wg, 256); }
  __device__ void TurnEnd() const { asm volatile("bar.arrive %0, 256;\n" ::"r"(3 + (1 - wg)) : "memory"); }

  // The simple schedule: per tile S, wait, softmax, P·V, wait. ACTIVE = false: an idle
  // warpgroup's walk (waits and releases only). ACTIVE is a template constant so that no wgmma is
  // issued or waited in a branch the compiler must treat as divergent (that serialises wgmma).
  template <bool ACTIVE>
  __device__ void RowTilePlain(const KvWalk<BLOCK_N>& walk, RingPosition<CFG::STAGES>& pos) {
    for (int t = 0; t < walk.num_tiles; ++t, pos.Advance()) {
      const int box = walk.BoxBegin(t);
      MbarrierWait(ring.FullK(pos.stage), pos.phase);
      if constexpr (ACTIVE) {
        IssueS(pos.stage);
        WgmmaWait<0>();
        FenceRegisters(s);
      }
      Release(ring.EmptyK(pos.stage));
      if constexpr (ACTIVE) {
        float rescale[2];
        Softmax(walk.kv_begin + t * BLOCK_N - box, min(BLOCK_N, walk.kv_end - box), box, rescale);
        RescaleO(rescale);
        PackP();
      }
      MbarrierWait(ring.FullV(pos.stage), pos.phase);
      if constexpr (ACTIVE) {
        ZeroInvalidRows(pos.stage, walk, box);
        IssuePV(pos.stage);
        WgmmaWait<0>();
        FenceAccumulators();
        FenceRegisters(pa);
      }
      Release(ring.EmptyV(pos.stage));
    }
  }

  // FA3's schedule: S of tile t is issued together with P·V of tile t − 1, and the softmax of
  // tile t runs while that P·V is still in flight; issue blocks alternate between the two
  // warpgroups (TurnBegin / TurnEnd). Per row tile: n + 1 issue blocks for n ≥ 1 tiles.
  template <bool ACTIVE>
  __device__ void RowTileOverlapped(const KvWalk<BLOCK_N>& walk, RingPosition<CFG::STAGES>& pos) {
    if (walk.num_tiles == 0) return;
    float rescale[2];
    // Tile 0: S only.
    int prev_box = walk.BoxBegin(0), prev_stage = pos.stage;
    uint32_t prev_phase = pos.phase;
    MbarrierWait(ring.FullK(pos.stage), pos.phase);
    TurnBegin();
    if constexpr (ACTIVE) IssueS(pos.stage);
    TurnEnd();
    if constexpr (ACTIVE) {
      WgmmaWait<0>();
      FenceRegisters(s);
    }
    Release(ring.EmptyK(pos.stage));
    if constexpr (ACTIVE) {
      Softmax(walk.kv_begin - prev_box, min(BLOCK_N, walk.kv_end - prev_box), prev_box, rescale);
      PackP();
    }
    pos.Advance();
    // Tiles 1..n−1: S of this tile with P·V of the previous one.
    for (int t = 1; t < walk.num_tiles; ++t, pos.Advance()) {
      const int box = walk.BoxBegin(t);
      MbarrierWait(ring.FullK(pos.stage), pos.phase);
      MbarrierWait(ring.FullV(prev_stage), prev_phase);
      // Before the turn, so that the shuffles' latency is not in it.
      const int s_stage = WarpUniform<CFG::UNIFORM_STAGES>(pos.stage);
      const int v_stage = WarpUniform<CFG::UNIFORM_STAGES>(prev_stage);
      TurnBegin();
      if constexpr (ACTIVE) {
        IssueS(s_stage);
        RescaleO(rescale);
        ZeroInvalidRows(prev_stage, walk, prev_box);
        IssuePV(v_stage);
      }
      TurnEnd();
      if constexpr (ACTIVE) {
        WgmmaWait<1>();  // S done, P·V may still run
        FenceRegisters(s);
      }
      Release(ring.EmptyK(pos.stage));
      if constexpr (ACTIVE) {
        Softmax(walk.kv_begin + t * BLOCK_N - box, min(BLOCK_N, walk.kv_end - box), box, rescale);
        WgmmaWait<0>();
        FenceAccumulators();
        FenceRegisters(pa);
      }
      Release(ring.EmptyV(prev_stage));
      if constexpr (ACTIVE) PackP();
      prev_stage = pos.stage;
      prev_phase = pos.phase;
      prev_box = box;
    }
    // The last tile's P·V.
    MbarrierWait(ring.FullV(prev_stage), prev_phase);
    TurnBegin();
    if constexpr (ACTIVE) {
      RescaleO(rescale);
      ZeroInvalidRows(prev_stage, walk, prev_box);
      IssuePV(prev_stage);
    }
    TurnEnd();
    if constexpr (ACTIVE) {
      WgmmaWait<0>();
      FenceAccumulators();
      FenceRegisters(pa);
    }
    Release(ring.EmptyV(prev_stage));
  }

  // The state rows this thread's two rows (row_in_wg, + 8) will be written to (slot
  // state_indptr[request] + chunk, head; rows map to requests from first_request, MapGroupRow),
  // −1 for rows past wg_rows. Called before the KV walk, so that the epilogue does not start with a
  // dependent global load.
  __device__ void StateRows(int first_request, int kv_head, int chunk, int wg_row0, int wg_rows, int gqa,
                            int64_t (&state)[2]) const {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = row_in_wg + 8 * h;
      state[h] = -1;
      if (r >= wg_rows) continue;
      const RowTarget tg = MapGroupRow(wg_row0 + r, first_request, kv_head, gqa);
      state[h] = int64_t(p.state_indptr[tg.request] + chunk) * p.num_qo_heads + tg.qo_head;
    }
  }
  // Normalises and writes each valid row's state (v fp32, or T with CFG::STATES16; s base 2) to its
  // state row (StateRows).
  __device__ void Epilogue(const int64_t (&state_rows)[2]) {
    if constexpr (CFG::STATES16) {
      EpilogueStates16(state_rows);
    } else {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        // All lanes: shuffles before any branch. With ROWSUM_BY_MMA the tensor cores summed the whole row.
        const float sum = CFG::ROWSUM_BY_MMA ? sum_acc[2 * h] : QuadSum(row_sum[h]);
        const int64_t state = state_rows[h];
        if (state < 0) continue;
        float* v_out = p.partial_v + state * CFG::HEAD_DIM + col0;
        const float inv = sum > 0.f ? 1.f / sum : 0.f;
#pragma unroll
        for (int j = 0; j < CFG::O_REGS / 4; ++j)
          *reinterpret_cast<float2*>(v_out + 8 * j) = make_float2(o[4 * j + 2 * h] * inv, o[4 * j + 2 * h + 1] * inv);
        if (lane % 4 == 0) p.partial_s[state] = FinalLse(row_max[h], sum);
      }
    }
  }
  // Epilogue with v in T (the same layout in elements). Lanes q and q ^ 1 of a quad trade one packed
  // pair per two n8 blocks (all lanes, before the row test), so that each lane stores 8 bytes and
  // each quad a whole 32-byte sector per store: with its own pairs alone (4 bytes a lane, half a
  // sector a quad per store) session 99 timed the prefix part 1-4 us slower than with fp32 states
  // at most 32/8 S256 shapes (an H100).
  __device__ void EpilogueStates16(const int64_t (&state_rows)[2]) {
    static_assert(CFG::O_REGS % 8 == 0, "pairs of n8 blocks");
    const bool even = lane % 2 == 0;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const float sum = CFG::ROWSUM_BY_MMA ? sum_acc[2 * h] : QuadSum(row_sum[h]);
      const int64_t state = state_rows[h];
      const float inv = sum > 0.f ? 1.f / sum : 0.f;
      T* v_row = reinterpret_cast<T*>(p.partial_v) + state * CFG::HEAD_DIM;
#pragma unroll
      for (int j = 0; j < CFG::O_REGS / 4; j += 2) {
        const uint32_t a = MmaOp<T>::Pack(o[4 * j + 2 * h] * inv, o[4 * j + 2 * h + 1] * inv);
        const uint32_t b = MmaOp<T>::Pack(o[4 * j + 4 + 2 * h] * inv, o[4 * j + 4 + 2 * h + 1] * inv);
        const uint32_t other = __shfl_xor_sync(0xffffffffu, even ? b : a, 1);
        if (state < 0) continue;
        // Even q: columns 8j + 2q .. + 3 (its pair, then q + 1's); odd q: 8(j + 1) + 2(q − 1) .. + 3.
        if (even) *reinterpret_cast<uint2*>(v_row + 8 * j + col0) = make_uint2(a, other);
        else *reinterpret_cast<uint2*>(v_row + 8 * j + 8 + col0 - 2) = make_uint2(other, b);
      }
      if (state >= 0 && lane % 4 == 0) p.partial_s[state] = FinalLse(row_max[h], sum);
    }
  }

  // A new row tile: no key seen yet.
  __device__ void ResetRows() {
    row_max[0] = row_max[1] = -INFINITY;
    speculate = false;
    row_sum[0] = row_sum[1] = 0.f;
    if constexpr (CFG::ROWSUM_BY_MMA) {
#pragma unroll
      for (int j = 0; j < 4; ++j) sum_acc[j] = 0.f;
    }
#pragma unroll
    for (int j = 0; j < CFG::O_REGS; ++j) o[j] = 0.f;
  }
  // One row tile's walk over the KV tiles with CFG's schedule (ACTIVE a template constant, above).
  __device__ void WalkTiles(bool active, const KvWalk<BLOCK_N>& walk, RingPosition<CFG::STAGES>& pos) {
    if constexpr (CFG::OVERLAP) {
      if (active) RowTileOverlapped<true>(walk, pos);
      else RowTileOverlapped<false>(walk, pos);
    } else {
      if (active) RowTilePlain<true>(walk, pos);
      else RowTilePlain<false>(walk, pos);
    }
  }
  // One prefix item: per row tile, this warpgroup's Q rows, the KV walk, the epilogue, then
  // after_rows(first_request, kv_head, wg_row0, wg_rows) for the rows it wrote.
  template <typename AfterRows>
  __device__ void PrefixItem(const PrefixWorkItem& item, int gqa, RingPosition<CFG::STAGES>& pos, AfterRows after_rows) {
    const PrefixGroup group = p.groups[item.group];
    const KvWalk<BLOCK_N> walk(item, group);
    if constexpr (CFG::SPECULATIVE_SOFTMAX)
      k_run = static_cast<const T*>(p.k) + int64_t(group.prefix.first_page) * p.page_size * p.token_stride +
              item.kv_head * CFG::HEAD_DIM;
    for (int row = item.row_begin; row < item.row_end; row += CFG::TILE_ROWS) {
      const int wg_row0 = row + wg * CFG::WG_ROWS;  // group-local row of this warpgroup's row 0
      const int wg_rows = min(item.row_end - wg_row0, CFG::WG_ROWS);
      const bool active = wg_rows > 0;  // warpgroup-uniform
      int64_t state_rows[2];
      if (active) StateRows(group.first_request, item.kv_head, item.chunk, wg_row0, wg_rows, gqa, state_rows);
      if (active && walk.num_tiles > 0) {
        if (QByTma<CFG>(tmap_q, q_partial, wg_row0, wg_rows, gqa))
          LoadQTma<CFG>(tmap_q, q_smem, tid, barrier_id, ring.FullQ(wg), q_phase,
                        first_q_by_producer && row == item.row_begin, wg_row0, group.first_request, item.kv_head,
                        gqa);
        else
          LoadQ<CFG>(p, q_smem, tid, barrier_id, wg_row0, wg_rows, group.first_request, item.kv_head, gqa);
      }
      if (tid == 0 && wg == 0) Stamp(p, kQueryLoaded);
      ResetRows();
      WalkTiles(active, walk, pos);
      if (tid == 0 && wg == 0) Stamp(p, kTilesDone);
      if (active) {
        Epilogue(state_rows);
        after_rows(group.first_request, item.kv_head, wg_row0, wg_rows);
        if (tid == 0 && wg == 0) Stamp(p, kEpilogueDone);
      }
    }
    first_q_by_producer = false;  // only ever the first row tile of the CTA's first item
  }

  __device__ void Run(bool trigger) {
    const int gqa = p.num_qo_heads / p.num_kv_heads;
    RingPosition<CFG::STAGES> pos;
    first_q_by_producer = tmap_q != nullptr;  // this kernel's producer runs IssueFirstQueries
    if constexpr (CFG::OVERLAP) {
      if (wg == 1) TurnEnd();
    }  // warpgroup 0 takes the first turn
    for (int i = FirstItemOfCta(p); i >= 0;) {
      const int next = NextItemOfCta(p, i);
      MaybeTriggerDependents(trigger, next);
      PrefixItem(p.items[i], gqa, pos, [](int, int, int, int) {});
      i = next;
    }
    if constexpr (CFG::OVERLAP) {
      if (wg == 0) TurnBegin();  // consumes warpgroup 1's up-front arrival
    }
  }
};

template <typename CFG>
__global__ void __launch_bounds__(CFG::THREADS, CFG::MIN_CTAS_PER_SM)
    PrefixAttentionWgmmaKernel(const PrefixAttentionParams params, const __grid_constant__ CUtensorMap tmap_k,
                               const __grid_constant__ CUtensorMap tmap_v, const __grid_constant__ CUtensorMap tmap_q,
                               const int q_tma, const int trigger_dependents, const int kv_evict) {
  // q_tma: 0 every Q row by cp.async, 1 whole warpgroups' by TMA, 2 every warpgroup's (QByTma).
  // trigger_dependents: 0 never (a dependent grid launches as the last CTA exits), 1 as each CTA
  // starts its last item (MaybeTriggerDependents), 2 at its entry, every thread (WgmmaLaunch::
  // trigger_at_start: a dependent that runs beside the whole grid).
  if (trigger_dependents == 2) AllowDependentLaunch();
  const CUtensorMap* const q_map = q_tma != 0 ? &tmap_q : nullptr;
  const bool q_partial = q_tma == 2;
  extern __shared__ __align__(1024) uint8_t smem_raw[];
  if (threadIdx.x == 0) {
    Stamp(params, kEntry);
    PrefetchFirstReads(params, &tmap_k, &tmap_v, q_map);
  }
  const uint32_t smem = WarpUniform<CFG::UNIFORM_BASE>((SmemAddress(smem_raw) + 1023u) & ~1023u);
  const Ring<CFG> ring{smem + CFG::BAR_OFFSET};
  InitRing<CFG>(ring);
  if (threadIdx.x == 0) Stamp(params, kRingReady);
  const int wg = WarpUniform<CFG::UNIFORM_BASE>(int(threadIdx.x) / 128);
  if (wg == 0) {
    WarpgroupRegDealloc<CFG::PRODUCER_REGS>();
    if (threadIdx.x == 0)
      ProducerLoop<CFG, KvStream::kK>(params, &tmap_k, &tmap_v, q_map, q_partial, smem, ring, trigger_dependents == 1,
                                      static_cast<L2Evict>(kv_evict));
    if (threadIdx.x >= 64 && threadIdx.x < 96) {
      // The V stream's warp: the CTA's last tile issued is a V tile, so the decode's warm-up
      // prefetches still queue behind it (WarmDecodeStart).
      if (threadIdx.x == 64)
        ProducerLoop<CFG, KvStream::kV>(params, &tmap_k, &tmap_v, q_map, q_partial, smem, ring, trigger_dependents == 1,
                                        static_cast<L2Evict>(kv_evict));
      __syncwarp();
      if (params.decode_warmup.num_items > 0) WarmDecodeStart<CFG>(params);
    }
    if (threadIdx.x == 32 && params.timeline != nullptr && int(blockIdx.x) < params.num_items) {
      // Waiting consumes nothing (the consumers still see the phase). It starts long before the first
      // tile lands; the watchdog ends the grid rather than hang should the ring ever have lapped it.
      MbarrierWait<true>(ring.FullK(0), 0);
      Stamp(params, kFirstKTile);
    }
  } else {
    WarpgroupRegAlloc<CFG::CONSUMER_REGS>();
    Consumer<CFG>(params, ring, q_map, q_partial, smem, wg - 1).Run(trigger_dependents == 1);
    if (threadIdx.x == 128) Stamp(params, kExit);
  }
}

// What the host side hands to one (dtype, head_dim) instantiation.
struct WgmmaLaunch {
  PrefixAttentionParams params;
  CUtensorMap tmap_k, tmap_v;
  // The 3D map over q for TMA loads of Q (LoadQTma), when q_tma; otherwise Q is gathered by cp.async.
  CUtensorMap tmap_q;
  bool q_tma = false;
  // Warpgroups of fewer than 64 rows by TMA too (the map's extent is q's: QByTma).
  bool q_tma_partial = false;
  int grid = 0;         // persistent CTAs (≤ items)
  int stages = 2;       // ring depth: 2, or > 2 for the deeper ring (3 at head_dim 128, 4 at 64)
  bool overlap = true;  // FA3 schedule (ping-pong + S/P·V overlap) or the plain one
  // griddepcontrol.launch_dependents when a CTA starts its last item (MaybeTriggerDependents;
  // on unless PREFIXD_PREFIX_PDL_TRIGGER=0). Off: the dependent decode grid launches as the last
  // CTA exits.
  bool trigger_dependents = true;
  // With trigger_dependents, signal at each CTA's entry instead
  // (PrefixAttentionParams::trigger_at_start).
  bool trigger_at_start = false;
  // L2 eviction priority of the prefix K/V tile loads (PrefixKernelSettings::kv_l2_hint, or the
  // plan's PrefixAttentionParams::kv_evict_first; kNone: no cache hint).
  L2Evict kv_evict = L2Evict::kNone;
  // The narrow CTA (one consumer warpgroup, 2 stages, plain schedule; WgmmaPrefixConfig): stages
  // and overlap are then ignored.
  bool narrow = false;
  // Tokens per K/V tile: the configuration's BLOCK_N and the rows of tmap_k / tmap_v's boxes. The
  // head_dim's default or its alternate (AlternatePrefixKvTileTokens: 128 at head_dim 64, 160 at
  // 128), which always takes the 2-stage ring.
  int tile_tokens = 0;
};

template <typename CFG>
void LaunchWgmmaConfig(const WgmmaLaunch& l, cudaStream_t stream) {
  PREFIXD_CHECK_INTERNAL(l.tile_tokens == CFG::BLOCK_N, "sm_90a prefix launch: K/V boxes of " << l.tile_tokens
                                                           << " rows for a kernel of " << CFG::BLOCK_N << "-token tiles");
  // The narrow CTA leaves room for decode CTAs only under the largest carveout.
  RaiseDynamicSmemLimitOnce<PrefixAttentionWgmmaKernel<CFG>>(CFG::SMEM_BYTES, CFG::CONSUMER_WGS == 1);
  const int q_tma = l.q_tma ? (l.q_tma_partial ? 2 : 1) : 0;
  const int trigger = l.trigger_dependents ? (l.trigger_at_start ? 2 : 1) : 0;  // the kernel's trigger_dependents
  PrefixAttentionWgmmaKernel<CFG><<<l.grid, CFG::THREADS, CFG::SMEM_BYTES, stream>>>(
      l.params, l.tmap_k, l.tmap_v, l.tmap_q, q_tma, trigger, static_cast<int>(l.kv_evict));
  PREFIXD_CUDA_CHECK_LAUNCH();
}

// Whether this (dtype, head_dim)'s kernel has an image for the current device (sm_90a code only
// loads on compute capability 9.0).
template <typename CFG>
bool WgmmaConfigLoads() {
  cudaFuncAttributes attr;
  const cudaError_t err = cudaFuncGetAttributes(&attr, PrefixAttentionWgmmaKernel<CFG>);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();  // clear the non-sticky error
    return false;
  }
  return true;
}

// Entry points instantiated once per (dtype, head_dim) in kernels/cuda/sm90a/inst/.
// Deeper rings: 3 stages for head_dim 128 (Q + K/V: 224 KiB), 4 for head_dim 64; none for head_dim
// 256, whose 2 stages and Q already take 192 KiB.
template <typename T, int HEAD_DIM>
constexpr int kDeepStages = HEAD_DIM == 64 ? 4 : HEAD_DIM == 128 ? 3 : 2;

// The configurations of one tile length (BLOCK_N_, 0 for the head_dim's default), by the launch's
// CTA width, ring depth and schedule.
template <typename T, int HEAD_DIM, int BLOCK_N_, bool STATES16>
void RunWgmmaTiles(const WgmmaLaunch& l, cudaStream_t stream) {
  constexpr int DEEP = kDeepStages<T, HEAD_DIM>;
  // No narrow CTA at head_dim 256: its 160 KiB of shared memory leave no room for decode CTAs,
  // and its 128 launch registers cannot hold the m64n256 accumulators (UsesNarrowCta).
  if constexpr (HEAD_DIM != 256) {
    if (l.narrow)
      return LaunchWgmmaConfig<WgmmaPrefixConfig<T, HEAD_DIM, 2, false, 1, BLOCK_N_, STATES16>>(l, stream);
  }
  // The deeper ring only with the default tile (the short-item tiles' items are a tile or two).
  if constexpr (BLOCK_N_ == 0) {
    if (l.stages > 2 && DEEP > 2) {
      if (l.overlap) return LaunchWgmmaConfig<WgmmaPrefixConfig<T, HEAD_DIM, DEEP, true, 2, 0, STATES16>>(l, stream);
      return LaunchWgmmaConfig<WgmmaPrefixConfig<T, HEAD_DIM, DEEP, false, 2, 0, STATES16>>(l, stream);
    }
  }
  if (l.overlap) return LaunchWgmmaConfig<WgmmaPrefixConfig<T, HEAD_DIM, 2, true, 2, BLOCK_N_, STATES16>>(l, stream);
  LaunchWgmmaConfig<WgmmaPrefixConfig<T, HEAD_DIM, 2, false, 2, BLOCK_N_, STATES16>>(l, stream);
}
template <typename T, int HEAD_DIM, bool STATES16>
void RunWgmmaTileLengths(const WgmmaLaunch& l, cudaStream_t stream) {
  if constexpr (HEAD_DIM == 64) {
    if (l.tile_tokens == 128) return RunWgmmaTiles<T, 64, 128, STATES16>(l, stream);
  }
  if constexpr (HEAD_DIM == 128) {
    constexpr int kLong = AlternatePrefixKvTileTokens(128);  // 160: no more spills than 128 (prefix_kv_tile.h)
    if (l.tile_tokens == kLong) return RunWgmmaTiles<T, 128, kLong, STATES16>(l, stream);
  }
  RunWgmmaTiles<T, HEAD_DIM, 0, STATES16>(l, stream);
}
template <typename T, int HEAD_DIM>
void RunWgmmaPrefixAttention(const WgmmaLaunch& l, cudaStream_t stream) {
  if constexpr (HEAD_DIM <= 128) {
    if (l.params.states_16bit) return RunWgmmaTileLengths<T, HEAD_DIM, true>(l, stream);
  }
  PREFIXD_CHECK_INTERNAL(!l.params.states_16bit, "sm_90a prefix launch: 16-bit states at head_dim " << HEAD_DIM);
  RunWgmmaTileLengths<T, HEAD_DIM, false>(l, stream);
}
template <typename T, int HEAD_DIM>
bool WgmmaPrefixAttentionLoads() {
  return WgmmaConfigLoads<WgmmaPrefixConfig<T, HEAD_DIM, 2, true>>();
}

}  // namespace prefixd::kernels::cuda::sm90a
