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

// Items of at most this many tokens stay on the CUDA-core kernel at head_dim 256.
inline constexpr int kTensorCoreDecodeShortItemTokens = 32;

// Whether the tensor-core decode kernel is built for gqa = H_qo / H_kv at head_dim (the launcher
// instantiates exactly these; decode_attention.cu).
constexpr bool TensorCoreDecodeBuilt(int gqa, int head_dim) {
  return ((gqa == 4 || gqa == 8) && (head_dim == 64 || head_dim == 128)) || (gqa == 4 && head_dim == 256);
}

// Whether the tensor-core decode kernel runs: gqa = H_qo / H_kv; max_item_tokens the plan's longest
// decode item (0: unknown); forced: the kernel was asked for by name (it then runs wherever it is
// built).
inline bool TensorCoreDecodeApplies(int gqa, int head_dim, int max_item_tokens, bool forced = false) {
  if (!TensorCoreDecodeBuilt(gqa, head_dim)) return false;
  if (head_dim != 256) return true;
  const bool short_items = max_item_tokens > 0 && max_item_tokens <= kTensorCoreDecodeShortItemTokens;
  return forced || !short_items;
}

}  // namespace prefixd::kernels
