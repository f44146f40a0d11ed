// Launchers of the state-merge kernels (internal to kernels/; CUDA types allowed).
//
// States are fp32 with BASE-2 LSE (state.h); an input v may instead be stored in the model's
// 16-bit dtype (MergeStatesParams::v_in_16bit). The empty state is (0, −inf); merging only empty
// states gives (0, −inf), never NaN, and a state with s = −inf contributes nothing even when its v
// holds garbage (e.g. the NaN poison of an unwritten slot is never read through a zero weight).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "prefixd/kernels/dtype.h"

namespace prefixd::kernels::cuda {

// n-ary ⊕ of runs of states into one state per row. Two ways to find row r's states:
//  - runs (cascade): rows = num_requests · num_heads, r = request · num_heads + head; the run of
//    request is slots [run_indptr[request], run_indptr[request + 1]) and state i of the run lives
//    at v_in[((run_indptr[request] + i) · num_heads + head) · head_dim], s_in[... · num_heads + head]
//    (the partial-state layout [num_slots][num_heads][head_dim]).
//    With `requests` set, only some requests are merged (the cascade's merge_requests, plan.h):
//    rows = count · num_heads, row r is (requests[r / num_heads], r % num_heads), and it reads and
//    writes that request's run and output rows; other output rows are left untouched.
//  - fixed n (MergeStates API): run_indptr == null; state i of row r at v_in[(i · rows + r) · head_dim],
//    s_in[i · rows + r] (layout [n][rows][head_dim]).
// Outputs, each optional (null = not written): o [rows][head_dim] in out_dtype, v_out
// [rows][head_dim] fp32, s_out [rows] fp32.
struct MergeStatesParams {
  const void* v_in = nullptr;  // fp32, or out_dtype with v_in_16bit
  const float* s_in = nullptr;
  const int32_t* run_indptr = nullptr;  // device, [num_requests + 1], or null
  const int32_t* requests = nullptr;    // device, [rows / num_heads], or null (run_indptr mode only)
  // Runs mode only (optional): n > 0 when every run has n states and request r's run starts at
  // slot r · n (run_indptr[r] = r · n, as the cascade's plan has it wherever every request has the
  // same number of prefix chunks and suffix chunks): the kernel takes a row's run bounds by
  // arithmetic instead of loading them, one dependent memory latency less before the states' loads
  // (with requests null, rows index the requests directly: two less). 0: loaded from run_indptr.
  int uniform_run_states = 0;
  // With uniform_run_states only (optional): bit i · num_kv_heads + kv_head set means state i of
  // every row of that KV head's query heads is empty (CascadePlan::EmptyPrefixStates: a stream
  // grid's padding items), so its v is not loaded. Its s still is, and must be −inf: a set bit
  // over a written state traps. num_kv_heads divides num_heads. 0: every state loaded.
  uint64_t empty_states = 0;
  int num_kv_heads = 0;
  int num_states = 0;                   // n, when run_indptr is null
  int rows = 0;
  int num_heads = 1;                    // heads per request, when run_indptr is set
  int head_dim = 0;                     // multiple of 4
  DType out_dtype = DType::kFloat16;
  void* o = nullptr;
  float* v_out = nullptr;
  float* s_out = nullptr;
  // Runs mode only (optional): request q with packed_row[q] ≥ 0 writes row packed_row[q] of
  // packed_out, [v: num_heads·head_dim | s: num_heads] fp32, instead of o / v_out / s_out
  // (CascadeArgs::merge_packed_row).
  const int32_t* packed_row = nullptr;
  float* packed_out = nullptr;
  // Launched as a programmatic dependent of the previous kernel on the stream (the prefix kernel,
  // which signals at its CTAs' last items): the merge grid is scheduled while that one drains and
  // waits (griddepcontrol.wait) for its completion and memory flush before reading any state. On
  // a normal launch the wait returns at once.
  bool programmatic_launch = false;
  // v_in holds out_dtype values (fp16 / bf16, rounded to nearest) instead of fp32: half the bytes
  // to load, for the concurrent step's states (CudaBackend, PREFIXD_CONCURRENT_STATES16). The
  // merge's arithmetic stays fp32; s_in is fp32 either way. (Beside programmatic_launch, in its
  // padding, so that the other fields keep their offsets in the kernels' parameter block.)
  bool v_in_16bit = false;
  // An upper bound on every row's number of states (runs mode: the longest run merged; fixed-n
  // mode: ≥ num_states), or 0 if unknown. Runs of at most 4 states at head_dim ≤ 128 may be merged
  // two rows per warp, runs of 5-8 with all their loads at once (merge_states.cu,
  // MergeShortRunsKernel), longer ones of few rows a block per row (MergeLongRunsKernel); a run
  // longer than the bound traps in the short-run kernels.
  int max_run_states = 0;
  // Rows per warp: 0 = by the size (two where one per warp would take more than one wave of
  // resident warps), 1, or 2 (consecutive rows: heads of one request in runs mode). Two only where
  // max_run_states allows it and, in runs mode, num_heads is even; else one.
  int rows_per_warp = 0;
  // The device's SM count, for that choice (0: asked of the runtime at each launch).
  int num_sms = 0;
};

void MergeStates(const MergeStatesParams& params, cudaStream_t stream);

// (v, s) ← (v, s) ⊕ (v_other, s_other), rows × head_dim (head_dim a multiple of 4).
void MergeStateInPlace(float* v, float* s, const float* v_other, const float* s_other, int rows,
                       int head_dim, cudaStream_t stream);

// out[i] = dtype(v[i]) for i < count, rounded to nearest even.
void CastStates(const float* v, int64_t count, DType dtype, void* out, cudaStream_t stream);

}  // namespace prefixd::kernels::cuda
