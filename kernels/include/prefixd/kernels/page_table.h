// CSR page tables (seed 001): sequence i owns pages indices[indptr[i] .. indptr[i+1]), filled in
// order; its last page holds last_page_len[i] tokens (1..page_size), or 0 when it has no pages.
#pragma once

#include <cstdint>
#include <vector>

namespace prefixd::kernels {

struct PageTable {
  std::vector<int32_t> indptr{0};       // [num_seqs + 1], indptr[0] = 0, non-decreasing
  std::vector<int32_t> indices;         // [indptr.back()] page ids into the pool
  std::vector<int32_t> last_page_len;   // [num_seqs]

  int num_seqs() const { return int(indptr.size()) - 1; }
  int num_pages(int seq) const { return indptr[seq + 1] - indptr[seq]; }
  int64_t SeqLen(int seq, int page_size) const {
    const int n = num_pages(seq);
    return n == 0 ? 0 : int64_t(n - 1) * page_size + last_page_len[seq];
  }
  // Pool slot of token t of sequence seq.
  int64_t Slot(int seq, int64_t t, int page_size) const {
    return int64_t(indices[indptr[seq] + t / page_size]) * page_size + t % page_size;
  }
  void AddSeq(const std::vector<int32_t>& pages, int last_len) {
    indices.insert(indices.end(), pages.begin(), pages.end());
    indptr.push_back(int32_t(indices.size()));
    last_page_len.push_back(pages.empty() ? 0 : last_len);
  }
  // Throws kInvalidArgument naming the sequence when the table is malformed or a page is out of
  // [0, num_pages_in_pool) or a last_page_len is out of range.
  void Validate(int num_pages_in_pool, int page_size) const;
};

}  // namespace prefixd::kernels
