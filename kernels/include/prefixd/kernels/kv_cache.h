// The paged KV pool: its shape, a view of its memory, and the host-side page allocator.
//
// K and V are two separate arrays, each laid out NHD with a layer dimension in front:
//   k, v: [num_layers][num_pages · page_size][num_kv_heads][head_dim]   (dtype fp16 or bf16)
// Page p holds token slots [p · page_size, (p + 1) · page_size) of every layer. A shared prefix
// shard is always one contiguous run of pages, so a prefix tile is a single strided box (TMA-able).
#pragma once

#include <cstdint>
#include <vector>

#include "prefixd/kernels/dtype.h"

namespace prefixd::kernels {

struct KvPoolShape {
  int num_layers = 1;
  int num_pages = 0;
  int page_size = 16;
  int num_kv_heads = 0;
  int head_dim = 128;
  DType dtype = DType::kFloat16;

  int64_t TokenStride() const { return int64_t(num_kv_heads) * head_dim; }  // elements per slot
  int64_t LayerStride() const { return int64_t(num_pages) * page_size * TokenStride(); }
  int64_t ElementsPerArray() const { return int64_t(num_layers) * LayerStride(); }
  int64_t BytesPerArray() const { return ElementsPerArray() * DTypeBytes(dtype); }
  // K and V of one page in every layer: what one more page of the pool costs.
  int64_t BytesPerPage() const { return 2 * int64_t(num_layers) * page_size * TokenStride() * DTypeBytes(dtype); }
  // Element offset of (layer, token slot = page · page_size + i, kv head, 0).
  int64_t Offset(int layer, int64_t slot, int kv_head) const {
    return layer * LayerStride() + slot * TokenStride() + int64_t(kv_head) * head_dim;
  }
  void Validate() const;  // throws kInvalidArgument (head_dim ∉ {64,128,256}, sizes ≤ 0, ...)
};

// Kernels index a pool's token slots with int32 (page · page_size + i): the most one pool holds.
inline constexpr int64_t kMaxPoolTokenSlots = 2147483647;  // 2^31 - 1

// The pages of a pool for one prefix group (the benchmarks' batches): the prefix's pages, each
// request's own suffix pages, one spare. Counted in 64 bits, so that a shape too large for a pool
// is refused by name (kInvalidArgument: more than kMaxPoolTokenSlots) before an int overflows.
int OneGroupPoolPages(int prefix_tokens, int requests, int suffix_tokens, int page_size);

// K/V memory as seen by one backend (host pointers for the CPU backend, device pointers for CUDA).
struct KvPoolView {
  KvPoolShape shape;
  void* k = nullptr;
  void* v = nullptr;
};

// Host-side bookkeeping of which pages are in use. Pages are reference-counted: a shared prefix
// page is returned to the free list only when its last user releases it.
class PageAllocator {
 public:
  explicit PageAllocator(int num_pages);

  int num_pages() const { return int(refcount_.size()); }
  int num_free() const { return num_free_; }
  int refcount(int32_t page) const;

  // n pages anywhere (suffix pages), each with refcount 1. Throws kOutOfMemory, taking nothing,
  // when fewer than n are free.
  std::vector<int32_t> Allocate(int n);
  // n contiguous pages (a prefix shard), first fit; returns the first page. Throws kOutOfMemory
  // when no free run of n pages exists (even if n pages are free in pieces).
  int32_t AllocateContiguous(int n);

  void AddRef(int32_t page);
  // Drops one reference; the page becomes free when the count reaches 0. Throws on a free page.
  void Release(int32_t page);
  void ReleaseRun(int32_t first_page, int n);
  void Release(const std::vector<int32_t>& pages);

 private:
  void CheckPage(int32_t page) const;
  std::vector<int32_t> refcount_;
  int num_free_ = 0;
  int32_t search_hint_ = 0;  // every page below it is in use (prefix runs: first fit upwards)
  int32_t top_hint_ = -1;    // every page above it is in use (suffix pages: taken downwards)
};

}  // namespace prefixd::kernels
