// Whether a plan's items can finish every request themselves: a pure CPU check of planning, for
// the CUDA backend's finishing concurrent step (PREFIXD_CONCURRENT_FINISH; the device side is
// kernels/cuda/request_finish.h).
//
// There every item that writes states of (request, KV head) counts one arrival, and the arrival
// that brings the count to the request's run length ⊕-merges the run. That is right only where
// the arrivals of each (request, KV head) are exactly its run's slots: each prefix item's rows are
// whole requests in every one of the kernel's warpgroups (so that one warpgroup counts a request
// once), each decode item writes one slot and finishes nothing itself, and the merge step was to
// finish every request. Any other plan keeps the merge kernel.
#pragma once

#include "prefixd/kernels/plan.h"

namespace prefixd::kernels {

// True when, with prefix items computed by warpgroups of warpgroup_rows rows (the sm_90a kernel's
// 64), counting one arrival per (request, KV head) per prefix item warpgroup and per decode item
// gives every request's run length (≥ 1) for every KV head: the GQA group g divides warpgroup_rows
// and every prefix item's rows start and end at multiples of g; no decode item finishes its
// request (DecodeWorkItem::finish); merge_requests lists every request.
bool ArrivalsFinishEveryRequest(const CascadePlan& plan, int warpgroup_rows);

}  // namespace prefixd::kernels
