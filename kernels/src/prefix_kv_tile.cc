#include "prefixd/kernels/prefix_kv_tile.h"

namespace prefixd::kernels {

double PrefixKvTileCost(const CascadePlan& plan, int tile_tokens) {
  double cost = 0;
  for (const PrefixWorkItem& it : plan.prefix_items) {
    const int64_t tokens = int64_t(it.kv_end) - it.kv_begin;
    if (tokens <= 0) continue;
    cost += double((tokens + tile_tokens - 1) / tile_tokens) * (tile_tokens + kPrefixKvTileTurnTokens);
  }
  return cost;
}

int ChoosePrefixKvTileTokens(const CascadePlan& plan) {
  const int tile = DefaultPrefixKvTileTokens(plan.head_dim);
  if (plan.head_dim != 64) return tile;
  return PrefixKvTileCost(plan, 128) < PrefixKvTileCost(plan, tile) ? 128 : tile;
}

}  // namespace prefixd::kernels
