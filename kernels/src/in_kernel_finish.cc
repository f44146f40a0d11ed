#include "prefixd/kernels/in_kernel_finish.h"

#include <cstdint>
#include <vector>

namespace prefixd::kernels {

bool ArrivalsFinishEveryRequest(const CascadePlan& plan, int warpgroup_rows) {
  const int requests = plan.num_requests, kv_heads = plan.num_kv_heads;
  if (requests <= 0 || kv_heads <= 0 || plan.num_qo_heads % kv_heads != 0) return false;
  const int g = plan.gqa_group_size();
  if (warpgroup_rows <= 0 || warpgroup_rows % g != 0) return false;
  if (plan.state_indptr.size() != size_t(requests) + 1 || plan.merge_requests.size() != size_t(requests)) return false;
  for (int r = 0; r < requests; ++r)
    if (plan.merge_requests[size_t(r)] != r) return false;
  std::vector<int64_t> arrivals(size_t(requests) * size_t(kv_heads), 0);
  auto arrive = [&](int64_t request, int kv_head) {
    if (request < 0 || request >= requests || kv_head < 0 || kv_head >= kv_heads) return false;
    ++arrivals[size_t(request) * size_t(kv_heads) + size_t(kv_head)];
    return true;
  };
  for (const PrefixWorkItem& item : plan.prefix_items) {
    if (item.group < 0 || size_t(item.group) >= plan.groups.size()) return false;
    if (item.row_begin % g != 0 || item.row_end % g != 0 || item.row_begin > item.row_end) return false;
    const int64_t first = plan.groups[size_t(item.group)].first_request;
    for (int row = item.row_begin; row < item.row_end; row += g)
      if (!arrive(first + row / g, item.kv_head)) return false;
  }
  for (const DecodeWorkItem& item : plan.decode_items)
    if (item.finish != 0 || !arrive(item.request, item.kv_head)) return false;
  for (int r = 0; r < requests; ++r) {
    const int64_t run = plan.state_indptr[size_t(r) + 1] - plan.state_indptr[size_t(r)];
    for (int h = 0; h < kv_heads; ++h)
      if (run < 1 || arrivals[size_t(r) * size_t(kv_heads) + size_t(h)] != run) return false;
  }
  return true;
}

}  // namespace prefixd::kernels
