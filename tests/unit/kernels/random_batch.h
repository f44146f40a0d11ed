// Test helpers for the kernels tests: decode batches built from a compact spec on a real page
// allocator (so suffix pages are scattered and prefix runs contiguous, as in the service), the
// non-cascade form of a batch (every request's page table lists its prefix pages, then its own),
// and the cascade and baseline cases the CPU and GPU backend tests share.
#pragma once

#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "prefixd/kernels/decode_batch.h"
#include "prefixd/kernels/dtype.h"
#include "prefixd/kernels/kv_cache.h"
#include "prefixd/kernels/plan.h"

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

// One cascade decode case; `Split` names the plan options of the test file that uses it (the
// default, value-initialised, is its first enumerator).
template <typename Split>
struct CascadeCaseOf {
  std::string name;
  kernels::DType dtype;
  int num_qo_heads, num_kv_heads, head_dim, page_size;
  std::vector<GroupSpec> groups;  // empty: random groups from the test seed
  bool peaky = false;
  Split split{};
  int num_layers = 1, layer = 0;
  bool expect_prefix_chunks_beyond_pages = false;  // some group split finer than its pages
  bool expect_split_kv = false;                    // some suffix split into several chunks
};

template <typename Split>
void PrintTo(const CascadeCaseOf<Split>& c, std::ostream* os) {
  *os << c.name;
}

// True when some group's prefix is split into more chunks than it has pages.
bool SplitsPrefixBeyondPages(const kernels::CascadePlan& plan, int page_size);

// Non-cascade baseline: every request's table lists the prefix pages then its own; no sharing.
struct BaselineCase {
  std::string name;
  kernels::DType dtype;
  int num_qo_heads, num_kv_heads, head_dim, page_size;
  std::vector<GroupSpec> groups;  // prefixes are whole pages
  bool peaky;
};

inline void PrintTo(const BaselineCase& c, std::ostream* os) { *os << c.name; }

}  // namespace prefixd::test
