// Where a decode item's suffix tokens lie in the KV pool: a token's page slot and row, the pages
// of the item's first two slots when the plan passed them (DecodeAttentionParams::item_pages), and
// the token's element offset. Included by the decode kernels (through decode_attention_epilogue.cuh).
//
// Why item pages: a short item's start is a chain of dependent loads — its descriptor, its
// request's page-table entry, its first K/V — and the host, which builds the plan with the page
// table in hand, can pass the first pages beside the descriptor (WriteDecodeItemPages,
// prefixd/kernels/decode_item_pages.h). The first step's tokens in those slots then skip the
// page-table load; later steps look theirs up one step ahead, off the critical path, so the kernels
// pass the known pages to the first step's lookups only (no register held past it).
#pragma once

#include <cstdint>

#include "kernels/cuda/decode_attention.h"

namespace prefixd::kernels::cuda {
namespace decode {

// {page slot, row} of suffix token t. A power-of-two page size (the default 16) takes shifts
// instead of a ~40-instruction division.
__device__ __forceinline__ int2 PageSlotAndRow(const DecodeAttentionParams& p, int t) {
  if ((p.page_size & (p.page_size - 1)) == 0) return make_int2(t >> (__ffs(p.page_size) - 1), t & (p.page_size - 1));
  return make_int2(t / p.page_size, t % p.page_size);
}

// The pages of an item's slots first_slot and first_slot + 1 (−1 where its request has none). The
// default (first_slot −2) knows no page: every token goes through the page table.
struct ItemPages {
  int first_slot = -2;
  int2 pages = make_int2(-1, -1);
};

__device__ __forceinline__ ItemPages LoadItemPages(const DecodeAttentionParams& p, const DecodeWorkItem& item,
                                                   int index) {
  ItemPages known;
  if (p.item_pages == nullptr) return known;
  known.first_slot = PageSlotAndRow(p, item.kv_begin).x;
  known.pages = p.item_pages[index];
  return known;
}

// The page of `slot`, one of the item's two known slots (known.first_slot or the one after it).
__device__ __forceinline__ int KnownSlotPage(const ItemPages& known, int slot) {
  return slot == known.first_slot ? known.pages.x : known.pages.y;
}

// Element offset of a token at `row` of `page` in one layer's K (or V) array, at head 0.
__device__ __forceinline__ int64_t PageRowOffset(const DecodeAttentionParams& p, int page, int row) {
  return (int64_t(page) * p.page_size + row) * p.token_stride;
}

// Element offset of suffix token t of the request whose pages start at page_base, at head 0: from
// `known` where t is in one of its slots, else through the page table.
__device__ __forceinline__ int64_t TokenOffset(const DecodeAttentionParams& p, int page_base, int t,
                                               const ItemPages& known = ItemPages()) {
  const int2 slot_row = PageSlotAndRow(p, t);
  const bool in_known = slot_row.x == known.first_slot || slot_row.x == known.first_slot + 1;
  const int page = in_known ? KnownSlotPage(known, slot_row.x) : p.page_indices[page_base + slot_row.x];
  return PageRowOffset(p, page, slot_row.y);
}

}  // namespace decode
}  // namespace prefixd::kernels::cuda
