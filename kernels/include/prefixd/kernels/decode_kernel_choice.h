// Which decode kernel the CUDA backend runs for a plan's suffix part: a pure CPU rule, shared by the
// backend's launcher (DecodeUsesTensorCores, kernels/cuda/decode_attention.cu) and the cost model
// (cost_model.cc), so that the planner predicts the kernel that will run.
//
// The tensor-core kernel (decode_attention_mma.cuh) puts a GQA group's g query heads in the M of
// mma.sync; with g heads per K/V byte the CUDA-core kernel becomes arithmetic-bound (~56% of the
// copy bandwidth at g = 4, ~33% at g = 8, head_dim 128; bench/RESULTS.md). It is built for g = 4
// and 8 at head_dim 64 and 128, and for g = 4 at head_dim 256 (at g = 8 there its accumulators and
// queries spill; groups of 5-8 run there as two slices of 4: SlicedOnTensorCores). At head_dim 256
// it runs only for items longer than one 32-token step: there it
// streams at 77% of the copy bandwidth against the CUDA-core kernel's 60% (32/8 B256 S256: 163.8
// against 209.3 µs), but steps of items of ≤ 32 tokens ran 4-9 µs slower on it (255 registers,
// two CTAs per SM; H200, bench/RESULTS.md, session 27).
#pragma once

namespace prefixd::kernels {

// How the decode kernels serve a GQA group of g = H_qo / H_kv query heads. They are compiled for
// groups of 1, 2, 4 and 8 heads (`rows`), and the tensor-core kernel also for 16 (the whole m16
// tile) at head_dim 64 and 128. Any other g runs on the next compiled size, its extra rows computed
// on zero queries and never written (g = 3 on 4; 5-7 on 8; 9-15 on 16: the K/V bytes are the same,
// the arithmetic is that of the larger group); a group larger than the largest compiled size (e.g.
// MQA) in `slices` of it, one CTA per slice of each work item (gridDim.y), each reading the item's
// K/V. In slices of 8, g = 16 and 32 took 2-4 × their bytes' time (session 36); in one CTA of 16
// rows (g = 12, 16) and in slices of 16 (g = 32) their B256 suffix parts take 0.51-0.71 × that
// (H200, bench/RESULTS.md, session 37).
struct DecodeGroupSlicing {
  int rows = 1;    // the compiled group size that runs: query heads per CTA
  int slices = 1;  // CTAs per work item
};

// The tensor-core kernel's 16-row group (one m16 tile of query heads) is built at these head_dims;
// at 256 its 128 O accumulators leave no registers for the second row half's queries.
constexpr bool SixteenRowDecodeBuilt(int head_dim) { return head_dim == 64 || head_dim == 128; }

// sixteen_rows: the kernel that runs has the 16-row group (the tensor-core kernel where
// SixteenRowDecodeBuilt); without it groups of more than 8 heads run in slices of 8.
constexpr DecodeGroupSlicing DecodeSlicing(int gqa, bool sixteen_rows = false) {
  if (gqa <= 2) return {gqa < 1 ? 1 : gqa, 1};
  if (gqa <= 4) return {4, 1};
  if (gqa <= 8 || !sixteen_rows) return {8, (gqa + 7) / 8};
  return {16, (gqa + 15) / 16};
}

// Items of at most this many tokens stay on the CUDA-core kernel at head_dim 256.
inline constexpr int kTensorCoreDecodeShortItemTokens = 32;

// Whether a group of 5-8 heads at head_dim 256 runs on the tensor-core kernel's 4-row group in two
// slices (two CTAs per item, each reading the item's K/V) instead of on the CUDA-core kernel, whose
// 8 heads' arithmetic held it to 1.4 TB/s (16/2 D256 B256 S1024). Measured on the H200
// (bench/RESULTS.md, session 75, run 8; g = 8, bf16 and fp16, two rounds): suffix parts of S1024
// −4 to −34% (16/2 B256 393.5 → 287.5 µs, 64/8 B256 1536 → 1031), steps −5 to −34%; S32 items stay
// on CUDA cores (kTensorCoreDecodeShortItemTokens), steps −3.0 to +2.6%.
constexpr bool SlicedOnTensorCores(int gqa, int head_dim) { return gqa > 4 && gqa <= 8 && head_dim == 256; }

// Whether the tensor-core decode kernel is built for gqa = H_qo / H_kv at head_dim (the launcher
// instantiates exactly these; decode_attention.cu).
constexpr bool TensorCoreDecodeBuilt(int gqa, int head_dim) {
  return ((gqa == 4 || gqa == 8) && (head_dim == 64 || head_dim == 128)) || (gqa == 4 && head_dim == 256) ||
         (gqa == 16 && SixteenRowDecodeBuilt(head_dim));
}

// Whether the tensor-core decode kernel runs: gqa = H_qo / H_kv (served as DecodeSlicing says);
// max_item_tokens the plan's longest decode item (0: unknown); forced: the kernel was asked for by
// name (it then runs wherever it is built).
inline bool TensorCoreDecodeApplies(int gqa, int head_dim, int max_item_tokens, bool forced = false) {
  const int rows = SlicedOnTensorCores(gqa, head_dim) ? 4 : DecodeSlicing(gqa).rows;
  if (!TensorCoreDecodeBuilt(rows, head_dim)) return false;
  if (head_dim != 256) return true;
  const bool short_items = max_item_tokens > 0 && max_item_tokens <= kTensorCoreDecodeShortItemTokens;
  return forced || !short_items;
}

// Whether the persistent TMA decode (kernels/cuda/decode_stream_tma.h, sm_90a) is built for
// gqa = H_qo / H_kv at head_dim: groups of exactly 1, 2, 4 or 8 heads (its finish writes the
// group's heads; its tiles put them in the mma's N of 8, so groups of 1 and 2 pad it as 4 does),
// head_dim 64 or 128, fp16 and bf16. The launcher adds the run-time conditions (the device, the
// pool's alignment, not forced to CUDA cores).
constexpr bool TmaDecodeBuilt(int gqa, int head_dim) {
  return (gqa == 1 || gqa == 2 || gqa == 4 || gqa == 8) && (head_dim == 64 || head_dim == 128);
}

// Where the planner offers the TMA decode for its concurrent mode (PlanOptions::
// concurrent_tma_candidate): groups of 4 and 8, the only ones whose rate beside the prefix the cost
// model was calibrated on (bench/RESULTS.md, sessions 51-52, 60).
constexpr bool TmaDecodeModeled(int gqa, int head_dim) { return (gqa == 4 || gqa == 8) && TmaDecodeBuilt(gqa, head_dim); }

// The warps per CTA of the persistent TMA decode (above) where it runs as a cascade's decode after
// the prefix grid, one CTA on every SM (the CUDA backend's sequential step; PREFIXD_SEQUENTIAL_TMA),
// or 0 where the one-CTA-per-item kernel runs: at GQA 1 and head_dim 128, on items of 128-512
// tokens, at most one per warp (12 warps up to 6 items per SM, 8 up to 8). There the step measured
// 1.0-3.6 µs faster (32/32 B16 S128-512: 12 warps −1.2 to −3.6 µs, 8 warps −0.6 to −3.2 but +1.5
// at S512; B32 S256: 8 warps −2.3 to −3.2, 12 warps −1.9 to +1.7), though its decode part alone
// is 2-3 µs slower: the gain is in how it follows the prefix grid. Slower at B64 (+3.9 to +6.3
// µs), B256 (+13 to +30), S32 (+0.2 to +3.9), GQA 2 at S128 (+6.6) and head_dim 64 (+2.2) (H200,
// bench/RESULTS.md, session 61). The cost model still prices the one-CTA-per-item kernel there.
constexpr int SequentialTmaDecodeWarps(int gqa, int head_dim, int num_items, int max_item_tokens, int num_sms) {
  if (gqa != 1 || head_dim != 128 || max_item_tokens < 128 || max_item_tokens > 512 || num_items <= 0) return 0;
  if (num_items <= 6 * num_sms) return 12;
  return num_items <= 8 * num_sms ? 8 : 0;
}

// How g is served by the kernel that runs (tensor_cores: TensorCoreDecodeApplies, or the launcher's
// forced choice): the 16-row group wherever the tensor-core kernel has it, groups of 5-8 at head_dim
// 256 in slices of its group of 4 (SlicedOnTensorCores).
constexpr DecodeGroupSlicing DecodeSlicingFor(int gqa, int head_dim, bool tensor_cores) {
  if (tensor_cores && SlicedOnTensorCores(gqa, head_dim)) return {4, (gqa + 3) / 4};
  return DecodeSlicing(gqa, tensor_cores && SixteenRowDecodeBuilt(head_dim));
}

}  // namespace prefixd::kernels
