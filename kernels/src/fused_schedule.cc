#include "prefixd/kernels/fused_schedule.h"

#include <algorithm>
#include <functional>
#include <queue>
#include <utility>

#include "prefixd/common/error.h"

namespace prefixd::kernels {
namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

FusedOrder ParseFusedOrder(const std::string& name) {
  if (name == "alternate") return FusedOrder::kAlternate;
  if (name == "prefix-first") return FusedOrder::kPrefixFirst;
  if (name == "decode-first") return FusedOrder::kDecodeFirst;
  PREFIXD_THROW(ErrorKind::kInvalidArgument,
                "fused order '" << name << "': expected alternate, prefix-first or decode-first");
}

FusedSchedule ScheduleFusedItems(const CascadePlan& plan, const FusedScheduleOptions& o) {
  PREFIXD_CHECK_ARG(o.num_ctas >= 1 && o.tile_rows >= 1 && o.tile_tokens >= 1 && o.decode_tile_cost > 0 &&
                        o.item_cost >= 0,
                    "ScheduleFusedItems: num_ctas " << o.num_ctas << ", tile_rows " << o.tile_rows << ", tile_tokens "
                                                    << o.tile_tokens << ", decode_tile_cost " << o.decode_tile_cost
                                                    << ", item_cost " << o.item_cost
                                                    << " (all must be positive, item_cost may be 0)");
  struct Work {
    double cost;
    int32_t entry;
  };
  std::vector<Work> work;
  if (o.prefix_items)
    for (size_t i = 0; i < plan.prefix_items.size(); ++i) {
      const PrefixWorkItem& it = plan.prefix_items[i];
      const int64_t steps = CeilDiv(it.row_end - it.row_begin, o.tile_rows) * CeilDiv(it.kv_end - it.kv_begin, o.tile_tokens);
      work.push_back({double(steps) + o.item_cost, FusedSchedule::PrefixEntry(int64_t(i))});
    }
  if (o.decode_items)
    for (size_t i = 0; i < plan.decode_items.size(); ++i) {
      const DecodeWorkItem& it = plan.decode_items[i];
      const int64_t tiles = CeilDiv(it.kv_end - it.kv_begin, o.tile_tokens);
      work.push_back({double(tiles) * o.decode_tile_cost + o.item_cost, FusedSchedule::DecodeEntry(int64_t(i))});
    }
  // Longest first; ties in plan order (prefix items before decode items), so the result is
  // deterministic.
  std::stable_sort(work.begin(), work.end(), [](const Work& a, const Work& b) { return a.cost > b.cost; });

  const int ctas = int(std::min<int64_t>(o.num_ctas, int64_t(work.size())));
  std::vector<std::vector<int32_t>> lists(static_cast<size_t>(ctas));
  using Load = std::pair<double, int>;  // (work so far, CTA): the least loaded, lowest index first
  std::priority_queue<Load, std::vector<Load>, std::greater<Load>> loads;
  for (int b = 0; b < ctas; ++b) loads.push({0.0, b});
  for (const Work& w : work) {
    auto [load, b] = loads.top();
    loads.pop();
    lists[size_t(b)].push_back(w.entry);
    loads.push({load + w.cost, b});
  }

  FusedSchedule s;
  s.cta_indptr.assign(size_t(ctas) + 1, 0);
  s.entries.reserve(work.size());
  for (int b = 0; b < ctas; ++b) {
    std::vector<int32_t>& list = lists[size_t(b)];
    const bool prefix_first = o.order == FusedOrder::kPrefixFirst || (o.order == FusedOrder::kAlternate && b % 2 == 0);
    // Entries ≥ 0 are prefix items: a stable partition keeps each kind in its LPT order.
    std::stable_partition(list.begin(), list.end(), [&](int32_t e) { return (e >= 0) == prefix_first; });
    s.entries.insert(s.entries.end(), list.begin(), list.end());
    s.cta_indptr[size_t(b) + 1] = int32_t(s.entries.size());
  }
  return s;
}

}  // namespace prefixd::kernels
