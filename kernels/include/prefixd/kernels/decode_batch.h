// One decode step of a batch of requests, grouped by shared prefix: what the planner reads.
//
// Requests are numbered 0..B-1 and ordered by group: group g covers requests
// [first_request, first_request + num_requests). Every request is in exactly one group; a request
// with no shared prefix is in a group whose prefix has 0 tokens. Each request has one query per
// head, q: [B][num_qo_heads][head_dim], and its own suffix pages (CSR, may be empty).
#pragma once

#include <cstdint>
#include <vector>

#include "prefixd/kernels/page_table.h"

namespace prefixd::kernels {

// A contiguous run of pages [first_page, first_page + ceil(num_tokens / page_size)) holding
// num_tokens tokens; the last page may be partly filled.
struct PrefixRun {
  int32_t first_page = 0;
  int32_t num_tokens = 0;
};

struct PrefixGroup {
  PrefixRun prefix;
  int32_t first_request = 0;
  int32_t num_requests = 0;
};

struct DecodeBatch {
  int num_qo_heads = 0;
  std::vector<PrefixGroup> groups;
  PageTable suffix;  // one sequence per request, B = suffix.num_seqs()

  int num_requests() const { return suffix.num_seqs(); }
};

}  // namespace prefixd::kernels
