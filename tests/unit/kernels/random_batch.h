// Test helpers for the kernels tests: decode batches built from a compact spec on a real page
// allocator (so suffix pages are scattered and prefix runs contiguous, as in the service), and the
// non-cascade form of a batch (every request's page table lists its prefix pages, then its own).
#pragma once

#include <random>
#include <string>
#include <vector>

#include "prefixd/kernels/decode_batch.h"
#include "prefixd/kernels/kv_cache.h"

namespace prefixd::test {

struct GroupSpec {
  int prefix_tokens = 0;
  std::vector<int> suffix_lens;  // one per request of the group
};

// Pages a batch of these groups needs with the given page size.
int PagesNeeded(const std::vector<GroupSpec>& groups, int page_size);

// Allocates the prefix runs (contiguous) and suffix pages (shuffled) from `alloc` and returns the
// batch. Suffix last pages are partly filled whenever the length is not a multiple of page_size.
kernels::DecodeBatch BuildBatch(const std::vector<GroupSpec>& groups, int num_qo_heads, int page_size,
                                kernels::PageAllocator& alloc, std::mt19937_64& rng);

// The same attention without sharing: one group with a 0-token prefix, and each request's page
// table = its group's prefix pages, then its own. Needs every prefix to fill whole pages.
kernels::DecodeBatch FlattenBatch(const kernels::DecodeBatch& batch, int page_size);

// Random group specs: num_groups groups of 1..max_requests requests, prefix lengths in
// [0, max_prefix] (some 0), suffix lengths in [0, max_suffix] (some 0).
std::vector<GroupSpec> RandomGroups(std::mt19937_64& rng, int num_groups, int max_requests, int max_prefix,
                                    int max_suffix);

}  // namespace prefixd::test
