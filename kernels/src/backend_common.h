// Backend-independent helpers (internal to kernels/): argument checks that every backend runs
// before touching memory, so that the CPU and CUDA backends reject the same bad inputs with the
// same messages.
#pragma once

#include <cstddef>

#include "prefixd/kernels/backend.h"

namespace prefixd::kernels {

// 1/sqrt(head_dim) when sm_scale is 0; throws kInvalidArgument for a non-finite or negative scale.
float ResolveSmScale(float sm_scale, int head_dim);

// Throws kInvalidArgument when the plan (serialised into plan_ints int32) exceeds the limits.
void CheckPlanFitsWorkspace(const CascadePlan& plan, size_t plan_ints, const WorkspaceLimits& limits);

// The pool view is usable: valid shape, both arrays present, layer in range.
void CheckKvView(const KvPoolView& kv, int layer, const char* what);

// RunCascade's arguments agree with the loaded plan (pool shape, pointers, layer). Reads only the
// plan's shape fields (num_requests, heads, head_dim, page_size, num_pages), never its arrays, so a
// backend that keeps the arrays on the device may pass a header-only copy.
void CheckCascadeArgs(const CascadePlan& plan, const CascadeArgs& args);

// RunPrefixAttention's arguments are consistent (run inside the pool, GQA, pointers, q_offset).
void CheckPrefixAttentionArgs(const PrefixAttentionArgs& args);

}  // namespace prefixd::kernels
