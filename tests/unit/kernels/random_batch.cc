#include "unit/kernels/random_batch.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace prefixd::test {

int PagesNeeded(const std::vector<GroupSpec>& groups, int page_size) {
  int pages = 0;
  for (const auto& g : groups) {
    pages += (g.prefix_tokens + page_size - 1) / page_size;
    for (int len : g.suffix_lens) pages += (len + page_size - 1) / page_size;
  }
  return pages;
}

kernels::DecodeBatch BuildBatch(const std::vector<GroupSpec>& groups, int num_qo_heads, int page_size,
                                kernels::PageAllocator& alloc, std::mt19937_64& rng) {
  kernels::DecodeBatch batch;
  batch.num_qo_heads = num_qo_heads;
  int32_t next_request = 0;
  for (const auto& spec : groups) {
    kernels::PrefixGroup g;
    g.first_request = next_request;
    g.num_requests = int32_t(spec.suffix_lens.size());
    g.prefix.num_tokens = spec.prefix_tokens;
    if (spec.prefix_tokens > 0) g.prefix.first_page = alloc.AllocateContiguous((spec.prefix_tokens + page_size - 1) / page_size);
    for (int len : spec.suffix_lens) {
      std::vector<int32_t> pages = alloc.Allocate((len + page_size - 1) / page_size);
      std::shuffle(pages.begin(), pages.end(), rng);
      batch.suffix.AddSeq(pages, len == 0 ? 0 : (len - 1) % page_size + 1);
    }
    next_request += g.num_requests;
    batch.groups.push_back(g);
  }
  return batch;
}

kernels::DecodeBatch FlattenBatch(const kernels::DecodeBatch& batch, int page_size) {
  kernels::DecodeBatch flat;
  flat.num_qo_heads = batch.num_qo_heads;
  flat.groups.push_back(kernels::PrefixGroup{kernels::PrefixRun{0, 0}, 0, int32_t(batch.num_requests())});
  for (const auto& g : batch.groups) {
    const int prefix_pages = (g.prefix.num_tokens + page_size - 1) / page_size;
    EXPECT_EQ(g.prefix.num_tokens % page_size, 0) << "FlattenBatch needs whole-page prefixes";
    for (int r = g.first_request; r < g.first_request + g.num_requests; ++r) {
      std::vector<int32_t> pages;
      for (int p = 0; p < prefix_pages; ++p) pages.push_back(g.prefix.first_page + p);
      pages.insert(pages.end(), batch.suffix.indices.begin() + batch.suffix.indptr[r],
                   batch.suffix.indices.begin() + batch.suffix.indptr[r + 1]);
      const int last = batch.suffix.num_pages(r) > 0 ? batch.suffix.last_page_len[r] : page_size;
      flat.suffix.AddSeq(pages, last);
    }
  }
  return flat;
}

std::vector<GroupSpec> RandomGroups(std::mt19937_64& rng, int num_groups, int max_requests, int max_prefix,
                                    int max_suffix) {
  std::uniform_int_distribution<int> requests(1, max_requests), prefix(0, max_prefix), suffix(0, max_suffix),
      coin(0, 3);
  std::vector<GroupSpec> groups(num_groups);
  for (auto& g : groups) {
    g.prefix_tokens = coin(rng) == 0 ? 0 : prefix(rng);
    g.suffix_lens.resize(requests(rng));
    for (int& len : g.suffix_lens) len = coin(rng) == 0 ? 0 : suffix(rng);
  }
  return groups;
}

bool SplitsPrefixBeyondPages(const kernels::CascadePlan& plan, int page_size) {
  bool found = false;
  for (size_t gi = 0; gi < plan.groups.size(); ++gi)
    found |= plan.group_num_chunks[gi] > (plan.groups[gi].prefix.num_tokens + page_size - 1) / page_size;
  return found;
}

}  // namespace prefixd::test
