#include "prefixd/kernels/prefix_kv_tile.h"

#include <algorithm>

namespace prefixd::kernels {

double PrefixKvTileCost(const CascadePlan& plan, int tile_tokens) {
  double cost = 0;
  for (const PrefixWorkItem& it : plan.prefix_items) {
    const int64_t tokens = int64_t(it.kv_end) - it.kv_begin;
    if (tokens <= 0) continue;
    cost += double((tokens + tile_tokens - 1) / tile_tokens) * (tile_tokens + PrefixKvTileTurnTokens(plan.head_dim));
  }
  return cost;
}

int ChoosePrefixKvTileTokens(const CascadePlan& plan) {
  const int tile = DefaultPrefixKvTileTokens(plan.head_dim);
  const int other = AlternatePrefixKvTileTokens(plan.head_dim);
  if (other == 0) return tile;
  if (plan.head_dim == 128) {
    int32_t max_rows = 0;
    int64_t tokens = 0, items = 0;
    for (const PrefixWorkItem& it : plan.prefix_items) {
      max_rows = std::max(max_rows, it.row_end - it.row_begin);
      if (it.kv_end > it.kv_begin) tokens += it.kv_end - it.kv_begin, ++items;
    }
    if (max_rows <= kPrefixNarrowItemRows) return tile;
    if (tokens < int64_t(kLongTileItemTokens) * items) return tile;
  }
  return PrefixKvTileCost(plan, other) < PrefixKvTileCost(plan, tile) ? other : tile;
}

}  // namespace prefixd::kernels
