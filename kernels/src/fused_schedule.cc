#include "prefixd/kernels/fused_schedule.h"

#include <algorithm>
#include <functional>
#include <queue>
#include <utility>

#include "prefixd/common/error.h"

namespace prefixd::kernels {

FusedSchedule ScheduleFusedItems(const CascadePlan& plan, const FusedScheduleOptions& o) {
  PREFIXD_CHECK_ARG(o.num_ctas >= 1, "ScheduleFusedItems: num_ctas " << o.num_ctas << " (must be at least 1)");
  const int64_t num_prefix = o.prefix_items ? int64_t(plan.prefix_items.size()) : 0;
  const int64_t num_decode = o.decode_items ? int64_t(plan.decode_items.size()) : 0;
  const int ctas = int(std::min<int64_t>(o.num_ctas, std::max(num_prefix, num_decode)));
  std::vector<std::vector<int32_t>> lists(static_cast<size_t>(ctas));
  for (int64_t i = 0; i < num_prefix; ++i) lists[size_t(i % ctas)].push_back(FusedSchedule::PrefixEntry(i));

  // Decode items by suffix tokens, longest first; ties in plan order, so the result is deterministic.
  std::vector<int32_t> order(static_cast<size_t>(num_decode));
  for (int64_t i = 0; i < num_decode; ++i) order[size_t(i)] = int32_t(i);
  const auto tokens = [&](int32_t i) { return int64_t(plan.decode_items[size_t(i)].kv_end) - plan.decode_items[size_t(i)].kv_begin; };
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return tokens(a) > tokens(b); });
  using Load = std::pair<int64_t, int>;  // (suffix tokens so far, CTA): the least loaded, lowest index first
  std::priority_queue<Load, std::vector<Load>, std::greater<Load>> loads;
  for (int b = 0; b < ctas; ++b) loads.push({0, b});
  for (const int32_t i : order) {
    auto [load, b] = loads.top();
    loads.pop();
    lists[size_t(b)].push_back(FusedSchedule::DecodeEntry(i));
    loads.push({load + tokens(i), b});
  }

  FusedSchedule s;
  s.cta_indptr.assign(size_t(ctas) + 1, 0);
  s.entries.reserve(size_t(num_prefix + num_decode));
  for (int b = 0; b < ctas; ++b) {
    s.entries.insert(s.entries.end(), lists[size_t(b)].begin(), lists[size_t(b)].end());
    s.cta_indptr[size_t(b) + 1] = int32_t(s.entries.size());
  }
  return s;
}

}  // namespace prefixd::kernels
