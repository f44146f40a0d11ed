#include "prefixd/kernels/prefix_unit_completion.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "prefixd/common/error.h"
#include "prefixd/kernels/prefix_balance.h"

namespace prefixd::kernels {

std::vector<PrefixUnitCompletion> PrefixUnitCompletions(const CascadePlan& plan, int ctas, int tile_tokens,
                                                        double item_overhead_tiles) {
  PREFIXD_CHECK_ARG(ctas >= 1 && tile_tokens >= 1 && item_overhead_tiles >= 0,
                    "PrefixUnitCompletions: ctas and tile_tokens must be ≥ 1 and the overhead ≥ 0, got "
                        << ctas << ", " << tile_tokens << ", " << item_overhead_tiles);
  const std::vector<PrefixWorkItem>& items = plan.prefix_items;
  const int64_t n = int64_t(items.size());
  if (n == 0) return {};
  auto cost = [&](const PrefixWorkItem& it) {
    return double((int64_t(it.kv_end) - it.kv_begin + tile_tokens - 1) / tile_tokens) + item_overhead_tiles;
  };
  // Each item's end on its CTA, in the kernel's schedule.
  std::vector<double> end(size_t(n), 0.0);
  double grid_end = 0;
  for (const std::vector<int64_t>& cta : PrefixItemsByCta(plan, ctas, plan.prefix_balanced_ctas == ctas)) {
    double t = 0;
    for (const int64_t i : cta) end[size_t(i)] = t += cost(items[size_t(i)]);
    grid_end = std::max(grid_end, t);
  }
  std::vector<PrefixUnitCompletion> units;
  std::map<std::tuple<int32_t, int32_t, int32_t>, size_t> index;
  for (int64_t i = 0; i < n; ++i) {
    const PrefixWorkItem& it = items[size_t(i)];
    const auto key = std::make_tuple(it.group, it.kv_head, it.row_begin);
    auto found = index.find(key);
    if (found == index.end()) {
      found = index.emplace(key, units.size()).first;
      units.push_back(PrefixUnitCompletion{it.group, it.kv_head, it.row_begin, 0.0});
    }
    PrefixUnitCompletion& u = units[found->second];
    u.fraction = std::max(u.fraction, grid_end > 0 ? end[size_t(i)] / grid_end : 1.0);
  }
  return units;
}

}  // namespace prefixd::kernels
