// Which decode kernel the CUDA backend runs for a plan's suffix part: a pure CPU rule, shared by the
// backend's launcher (DecodeUsesTensorCores, kernels/cuda/decode_attention.cu) and the cost model
// (cost_model.cc), so that the planner predicts the kernel that will run.
//
// The tensor-core kernel (decode_attention_mma.cuh) puts a GQA group's g query heads in the M of
// mma.sync; with g heads per K/V byte the CUDA-core kernel becomes arithmetic-bound (~56% of the
// copy bandwidth at g = 4, ~33% at g = 8, head_dim 128; bench/RESULTS.md). It is built for g = 4
// and 8 at head_dim 64 and 128, and for g = 4 at head_dim 256 (at g = 8 there its accumulators and
// queries spill). At head_dim 256 it runs only for items longer than one 32-token step: there it
// streams at 77% of the copy bandwidth against the CUDA-core kernel's 60% (32/8 B256 S256: 163.8
// against 209.3 µs), but steps of items of ≤ 32 tokens ran 4-9 µs slower on it (255 registers,
// two CTAs per SM; H200, bench/RESULTS.md, session 27).
#pragma once

namespace prefixd::kernels {

// How the decode kernels serve a GQA group of g = H_qo / H_kv query heads. They are compiled for
// groups of 1, 2, 4 and 8 heads (`rows`). Any other g runs on the next compiled size, its extra
// rows computed on zero queries and never written (g = 3 on 4; 5-7 on 8: the K/V bytes are the
// same, the arithmetic is that of the larger group); a group of more than 8 heads (e.g. MQA) in
// `slices` of 8 heads, one CTA per slice of each work item (gridDim.y), each reading the item's K/V:
// a sliced group's suffix part takes 2-4 × its bytes' time (H200, bench/RESULTS.md, session 36).
struct DecodeGroupSlicing {
  int rows = 1;    // the compiled group size that runs: query heads per CTA
  int slices = 1;  // CTAs per work item
};

constexpr DecodeGroupSlicing DecodeSlicing(int gqa) {
  if (gqa <= 2) return {gqa < 1 ? 1 : gqa, 1};
  if (gqa <= 4) return {4, 1};
  return {8, (gqa + 7) / 8};
}

// Items of at most this many tokens stay on the CUDA-core kernel at head_dim 256.
inline constexpr int kTensorCoreDecodeShortItemTokens = 32;

// Whether the tensor-core decode kernel is built for gqa = H_qo / H_kv at head_dim (the launcher
// instantiates exactly these; decode_attention.cu).
constexpr bool TensorCoreDecodeBuilt(int gqa, int head_dim) {
  return ((gqa == 4 || gqa == 8) && (head_dim == 64 || head_dim == 128)) || (gqa == 4 && head_dim == 256);
}

// Whether the tensor-core decode kernel runs: gqa = H_qo / H_kv (served as DecodeSlicing says);
// max_item_tokens the plan's longest decode item (0: unknown); forced: the kernel was asked for by
// name (it then runs wherever it is built).
inline bool TensorCoreDecodeApplies(int gqa, int head_dim, int max_item_tokens, bool forced = false) {
  if (!TensorCoreDecodeBuilt(DecodeSlicing(gqa).rows, head_dim)) return false;
  if (head_dim != 256) return true;
  const bool short_items = max_item_tokens > 0 && max_item_tokens <= kTensorCoreDecodeShortItemTokens;
  return forced || !short_items;
}

}  // namespace prefixd::kernels
