#include "prefixd/kernels/page_table.h"

#include "prefixd/common/error.h"

namespace prefixd::kernels {

void PageTable::Validate(int num_pages_in_pool, int page_size) const {
  PREFIXD_CHECK_ARG(page_size > 0, "page table: page_size must be positive, got " << page_size);
  PREFIXD_CHECK_ARG(!indptr.empty() && indptr[0] == 0,
                    "page table: indptr must start with 0 (it has " << indptr.size() << " entries"
                                                                    << (indptr.empty() ? "" : ", first ")
                                                                    << (indptr.empty() ? std::string() : std::to_string(indptr[0]))
                                                                    << ")");
  const int n = num_seqs();
  PREFIXD_CHECK_ARG(int(last_page_len.size()) == n, "page table: last_page_len has " << last_page_len.size()
                                                                                     << " entries for " << n << " sequences");
  for (int i = 0; i < n; ++i)
    PREFIXD_CHECK_ARG(indptr[i + 1] >= indptr[i], "page table: indptr decreases at sequence "
                                                      << i << " (" << indptr[i] << " -> " << indptr[i + 1] << ")");
  PREFIXD_CHECK_ARG(int64_t(indptr.back()) == int64_t(indices.size()),
                    "page table: indptr ends at " << indptr.back() << " but indices has " << indices.size() << " pages");
  for (int i = 0; i < n; ++i) {
    const int len = last_page_len[i];
    if (num_pages(i) == 0) {
      PREFIXD_CHECK_ARG(len == 0, "page table: sequence " << i << " has no pages but last_page_len " << len);
      continue;
    }
    PREFIXD_CHECK_ARG(len >= 1 && len <= page_size, "page table: sequence " << i << " has last_page_len " << len
                                                                            << ", outside [1, " << page_size << "]");
    for (int32_t j = indptr[i]; j < indptr[i + 1]; ++j)
      PREFIXD_CHECK_ARG(indices[j] >= 0 && indices[j] < num_pages_in_pool,
                        "page table: sequence " << i << " has page " << indices[j] << " at position "
                                                << j - indptr[i] << ", outside the pool's " << num_pages_in_pool
                                                << " pages");
  }
}

}  // namespace prefixd::kernels
