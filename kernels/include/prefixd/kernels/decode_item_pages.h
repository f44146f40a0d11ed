// The pages of each decode item's first two page slots, taken from the plan's suffix page table on
// the host, so that the CUDA decode kernels can issue an item's first K/V copies without loading
// the page table first (DecodeAttentionParams::item_pages; PREFIXD_DECODE_ITEM_PAGES).
//
// Why: a short item's life on the GPU starts with a chain of dependent loads — the item, its
// request's page-table entry, then its K/V — and the page-table step is one of them (6% of the
// GQA-4 S32 decode's stall samples, bench/RESULTS.md session 78). The host builds the plan with
// the page table in hand, so it can pass those pages with the item; the first two slots cover a
// 32-token item at the default page size of 16, the one-step item of the 2-warp CTA.
#pragma once

#include <cstdint>

#include "prefixd/kernels/plan.h"

namespace prefixd::kernels {

constexpr int kDecodeItemPageInts = 2;  // per decode item: the pages of its slots s0 and s0 + 1

// For each decode item i of `plan` (request r, first token kv_begin): with s0 = kv_begin /
// page_size, out[2i] = the page of r's suffix slot s0 and out[2i + 1] = that of slot s0 + 1, each
// −1 where r has no such slot. Writes kDecodeItemPageInts · plan.decode_items.size() ints.
void WriteDecodeItemPages(const CascadePlan& plan, int32_t* out);

}  // namespace prefixd::kernels
