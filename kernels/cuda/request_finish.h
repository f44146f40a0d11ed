// The last arrival finishes the request: the concurrent step's ⊕ inside its prefix and decode
// kernels, instead of in a merge kernel after them (internal to kernels/; CUDA types allowed).
//
// Why: the chained concurrent step (cuda_backend.h) ends with the merge kernel, whose CTAs can only
// start their ⊕ once the prefix grid has completed; its ~7-8 µs of loads and stores then follow
// the prefix grid's end (a CUPTI trace on an H100, bench/NOTES-fused.md, session 92). Here the ⊕
// of each request runs as soon as its last state is written, on the SM that wrote it.
//
// How: every item that writes states of (request, KV head) counts one arrival on
// counters[request · num_kv_heads + kv_head] once its stores are visible device-wide: a prefix
// kernel's consumer warpgroup per request of its rows, a decode warp per decode item. The arrival
// that brings the count to the request's run length (state_indptr[request + 1] − state_indptr
// [request]: one slot per prefix chunk and per suffix chunk, each written by exactly one item)
// resets the counter to 0 and ⊕-merges the run into the request's outputs for the KV head's g
// query heads. Nothing waits for anything, so the grids need not be co-resident, and the array is
// zero between steps without a memset (a step stays capturable in a CUDA graph). A plan runs this
// way only where its items count exactly so (ArrivalsFinishEveryRequest, in_kernel_finish.h).
#pragma once

#include <cstdint>

#include "prefixd/kernels/dtype.h"

namespace prefixd::kernels::cuda {

struct RequestFinish {
  // [num_requests][num_kv_heads] int32, zero before the launches and after them. Null: off (the
  // kernels write partial states only; the merge kernel finishes the requests).
  int32_t* counters = nullptr;
  // The final outputs, each optional (null: not written): o [num_requests][num_qo_heads][head_dim]
  // in out_dtype, v_out (same, fp32), s_out [num_requests][num_qo_heads] (base-2 LSE).
  void* o = nullptr;
  float* v_out = nullptr;
  float* s_out = nullptr;
  DType out_dtype = DType::kFloat16;
  // Diagnostics (PREFIXD_CONCURRENT_FINISH_DIAG; WRONG results on purpose): 1 counts the arrivals
  // but never merges (no outputs written), so that the arrivals' own cost can be timed.
  int diag = 0;
};

}  // namespace prefixd::kernels::cuda
