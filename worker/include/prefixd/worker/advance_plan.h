// Advancing a kept cascade plan by one decoded token per request (the worker's steady step), as a
// free function so that it can be tested on its own.
#pragma once

#include <cstdint>
#include <vector>

#include "prefixd/kernels/plan.h"
#include "prefixd/worker/worker.h"

namespace prefixd::worker {

// Advances `plan` in place when every non-null row's request grew by exactly one token since the
// plan was made (rows[i]: the request of plan suffix row i, or null for a row with no suffix here,
// which is left alone). Only the page table and the decode items ending at the old length change:
// last_page_len + 1, or, entering a new page, rows[i]->pages[old_len / page_size] appended with
// last_page_len 1; decode items with kv_end == old_len get kv_end + 1. *old_len gets each row's
// length before the advance (0 for null rows; it may be overwritten even when false is returned);
// *scratch is reused as a page-index buffer.
// Returns false, with the plan unchanged, when the row count does not match the plan, a non-null
// row did not grow by exactly one token, or a non-null row's suffix was empty (no decode item to
// extend: plan again).
bool AdvanceCascadePlan(kernels::CascadePlan* plan, const std::vector<const RequestInfo*>& rows, int page_size,
                        std::vector<int32_t>* old_len, std::vector<int32_t>* scratch);

}  // namespace prefixd::worker
