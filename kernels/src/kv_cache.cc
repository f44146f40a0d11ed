#include "prefixd/kernels/kv_cache.h"

#include <algorithm>
#include <unordered_map>

#include "prefixd/common/error.h"

namespace prefixd::kernels {

void KvPoolShape::Validate() const {
  PREFIXD_CHECK_ARG(head_dim == 64 || head_dim == 128 || head_dim == 256,
                    "KV pool: head_dim " << head_dim << " is not supported (use 64, 128 or 256)");
  PREFIXD_CHECK_ARG(num_layers > 0, "KV pool: num_layers must be positive, got " << num_layers);
  PREFIXD_CHECK_ARG(num_pages > 0, "KV pool: num_pages must be positive, got " << num_pages);
  PREFIXD_CHECK_ARG(page_size > 0, "KV pool: page_size must be positive, got " << page_size);
  PREFIXD_CHECK_ARG(num_kv_heads > 0, "KV pool: num_kv_heads must be positive, got " << num_kv_heads);
  // Kernels index token slots with int32 (page · page_size + i); keep every slot representable.
  PREFIXD_CHECK_ARG(int64_t(num_pages) * page_size <= kMaxPoolTokenSlots,
                    "KV pool: " << num_pages << " pages of " << page_size
                                << " tokens exceed 2^31 - 1 token slots");
}

int OneGroupPoolPages(int prefix_tokens, int requests, int suffix_tokens, int page_size) {
  PREFIXD_CHECK_ARG(page_size > 0 && prefix_tokens >= 0 && requests >= 0 && suffix_tokens >= 0,
                    "pool of " << requests << " requests, prefix " << prefix_tokens << ", suffix " << suffix_tokens
                               << ", page " << page_size << ": sizes must not be negative, the page positive");
  const int64_t ps = page_size;
  const int64_t suffix_pages = (suffix_tokens + ps - 1) / ps;
  // Every count is below 2^31, so the sum fits in 64 bits before the bound is checked.
  const int64_t pages = (prefix_tokens + ps - 1) / ps + requests * suffix_pages + 1;
  PREFIXD_CHECK_ARG(pages <= kMaxPoolTokenSlots / ps,
                    "batch " << requests << ", prefix " << prefix_tokens << ", suffix " << suffix_tokens << " needs "
                             << pages * ps << " KV token slots, more than one pool indexes (2^31 - 1)");
  return int(pages);
}

// Page bookkeeping is one refcount per page (0 = free). Suffix pages are taken from the top of the
// pool downwards and prefix runs first-fit from the bottom upwards, so that scattered one-page
// suffix allocations do not fragment the low region where contiguous prefix shards are placed.
// Two hints bound the scans: every page below search_hint_ and above top_hint_ is in use.
PageAllocator::PageAllocator(int num_pages) {
  PREFIXD_CHECK_ARG(num_pages > 0, "PageAllocator: num_pages must be positive, got " << num_pages);
  refcount_.assign(num_pages, 0);
  num_free_ = num_pages;
  search_hint_ = 0;
  top_hint_ = num_pages - 1;
}

void PageAllocator::CheckPage(int32_t page) const {
  PREFIXD_CHECK_ARG(page >= 0 && page < num_pages(),
                    "PageAllocator: page " << page << " is outside the pool [0, " << num_pages() << ")");
}

int PageAllocator::refcount(int32_t page) const {
  CheckPage(page);
  return refcount_[page];
}

std::vector<int32_t> PageAllocator::Allocate(int n) {
  PREFIXD_CHECK_ARG(n >= 0, "PageAllocator::Allocate: negative page count " << n);
  if (n > num_free_)
    PREFIXD_THROW(ErrorKind::kOutOfMemory, "KV pool out of pages: " << n << " requested, "
                                                                    << num_free_ << " of " << num_pages() << " free");
  std::vector<int32_t> pages;
  pages.reserve(n);
  // num_free_ ≥ n guarantees the downward scan finds n free pages at or below top_hint_.
  int32_t p = top_hint_;
  while (int(pages.size()) < n) {
    if (refcount_[p] == 0) {
      refcount_[p] = 1;
      pages.push_back(p);
    }
    --p;
  }
  num_free_ -= n;
  if (n > 0) top_hint_ = std::max<int32_t>(p, 0);
  return pages;
}

int32_t PageAllocator::AllocateContiguous(int n) {
  PREFIXD_CHECK_ARG(n > 0, "PageAllocator::AllocateContiguous: page count must be positive, got " << n);
  if (n <= num_free_) {
    int32_t run_start = search_hint_, run_len = 0;
    for (int32_t p = search_hint_; p < num_pages(); ++p) {
      if (refcount_[p] != 0) {
        run_len = 0;
        run_start = p + 1;
        continue;
      }
      if (++run_len == n) {
        for (int32_t q = run_start; q < run_start + n; ++q) refcount_[q] = 1;
        num_free_ -= n;
        if (run_start == search_hint_) search_hint_ = run_start + n;
        while (search_hint_ < num_pages() && refcount_[search_hint_] != 0) ++search_hint_;
        return run_start;
      }
    }
  }
  PREFIXD_THROW(ErrorKind::kOutOfMemory, "KV pool has no contiguous run of " << n << " free pages ("
                                                                              << num_free_ << " of " << num_pages()
                                                                              << " pages free, fragmented)");
}

void PageAllocator::AddRef(int32_t page) {
  CheckPage(page);
  PREFIXD_CHECK_ARG(refcount_[page] > 0, "PageAllocator::AddRef: page " << page << " is free");
  ++refcount_[page];
}

void PageAllocator::Release(int32_t page) {
  CheckPage(page);
  PREFIXD_CHECK_ARG(refcount_[page] > 0, "PageAllocator::Release: page " << page << " is already free");
  if (--refcount_[page] == 0) {
    ++num_free_;
    if (page < search_hint_) search_hint_ = page;
    if (page > top_hint_) top_hint_ = page;
  }
}

void PageAllocator::ReleaseRun(int32_t first_page, int n) {
  PREFIXD_CHECK_ARG(n >= 0, "PageAllocator::ReleaseRun: negative page count " << n);
  if (n == 0) return;
  PREFIXD_CHECK_ARG(first_page >= 0 && int64_t(first_page) + n <= num_pages(),
                    "PageAllocator::ReleaseRun: run [" << first_page << ", " << int64_t(first_page) + n
                                                       << ") is outside the pool [0, " << num_pages() << ")");
  // Check the whole run before touching it, so that a bad call changes nothing.
  for (int32_t p = first_page; p < first_page + n; ++p)
    PREFIXD_CHECK_ARG(refcount_[p] > 0, "PageAllocator::ReleaseRun: page " << p << " of run [" << first_page
                                                                         << ", " << first_page + n << ") is free");
  for (int32_t p = first_page; p < first_page + n; ++p) Release(p);
}

void PageAllocator::Release(const std::vector<int32_t>& pages) {
  // All-or-nothing: a page listed k times must hold at least k references.
  std::unordered_map<int32_t, int> uses;
  for (int32_t p : pages) {
    CheckPage(p);
    PREFIXD_CHECK_ARG(++uses[p] <= refcount_[p], "PageAllocator::Release: page " << p << " is released "
                                                                                 << uses[p] << " times but holds "
                                                                                 << refcount_[p] << " references");
  }
  for (int32_t p : pages) Release(p);
}

}  // namespace prefixd::kernels
