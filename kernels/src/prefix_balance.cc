#include "prefixd/kernels/prefix_balance.h"

#include <algorithm>
#include <vector>

#include "prefixd/kernels/prefix_kv_tile.h"

namespace prefixd::kernels {
namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

std::optional<PrefixBalance> ChoosePrefixBalance(const PrefixBalanceShape& s) {
  const int64_t items = s.pairs * s.chunks;
  if (s.pairs <= 0 || s.chunks <= 0 || s.tiles < s.chunks + 1 || items >= s.ctas) return std::nullopt;
  const int spare = int(std::min<int64_t>(s.ctas - items, s.pairs));
  const int64_t tails_per_cta = CeilDiv(s.pairs, spare);  // the busiest spare CTA's tails
  const double o = s.item_overhead_tiles;
  PrefixBalance best;
  best.spare_ctas = spare;
  best.busiest_before = double(CeilDiv(s.tiles, s.chunks)) + o;
  best.busiest_after = best.busiest_before;
  // Each chunk keeps ≥ 1 tile. The chunks shrink as the tails grow: the optimum is where the two
  // cross, but the ceilings make it a step function; a scan over a few hundred values is cheap.
  for (int64_t tail = 1; tail <= s.tiles - s.chunks; ++tail) {
    const double chunk = double(CeilDiv(s.tiles - tail, s.chunks)) + o;
    const double tails = double(tails_per_cta) * (double(tail) + o);
    const double busiest = std::max(chunk, tails);
    if (busiest < best.busiest_after) {
      best.busiest_after = busiest;
      best.tail_tiles = tail;
    }
    if (tails > best.busiest_before) break;  // longer tails only get worse
  }
  if (best.tail_tiles == 0) return std::nullopt;
  return best;
}

bool BalancePrefixGrid(CascadePlan* plan, const PlanOptions& options) {
  const int ctas = options.balance_prefix_ctas;
  std::vector<PrefixWorkItem>& items = plan->prefix_items;
  const int64_t n = int64_t(items.size());
  if (ctas <= 0 || n == 0 || n >= ctas) return false;
  for (const PrefixWorkItem& it : items)
    if (it.row_end - it.row_begin <= options.balance_min_item_rows) return false;
  // Every group with a prefix: the same length and chunk count.
  int32_t tokens = 0, chunks = 0;
  for (size_t g = 0; g < plan->groups.size(); ++g) {
    if (plan->group_num_chunks[g] == 0) continue;
    if (chunks == 0) {
      tokens = plan->groups[g].prefix.num_tokens;
      chunks = plan->group_num_chunks[g];
    } else if (plan->groups[g].prefix.num_tokens != tokens || plan->group_num_chunks[g] != chunks) {
      return false;
    }
  }
  if (chunks == 0 || n % chunks != 0) return false;
  const int tile = DefaultPrefixKvTileTokens(plan->head_dim);
  PrefixBalanceShape shape;
  shape.pairs = n / chunks;
  shape.chunks = chunks;
  shape.tiles = CeilDiv(tokens, tile);
  shape.ctas = ctas;
  shape.item_overhead_tiles = options.balance_item_overhead_tiles >= 0
                                  ? options.balance_item_overhead_tiles
                                  : DefaultBalanceItemOverheadTiles(plan->head_dim);
  if (CeilDiv(shape.tiles, chunks) < options.balance_min_chunk_tiles) return false;
  const std::optional<PrefixBalance> b = ChoosePrefixBalance(shape);
  if (!b || b->busiest_after > b->busiest_before * (1.0 - options.balance_min_gain)) return false;

  // The pairs in the plan's order (PlanFixed: chunk, then KV head, then row tile): chunk 0's items.
  std::vector<PrefixWorkItem> pairs;
  for (const PrefixWorkItem& it : items)
    if (it.chunk == 0) pairs.push_back(it);
  if (int64_t(pairs.size()) != shape.pairs) return false;
  // Chunks over [0, tokens − tail) on tile boundaries (as PlanFixed's SplitRange, align = tile);
  // the tail [tokens − tail, tokens) is chunk `chunks`.
  const int32_t main_end = tokens - int32_t(b->tail_tiles) * tile;
  const int64_t main_tiles = CeilDiv(main_end, tile);
  std::vector<int32_t> bounds(chunks + 1);
  for (int c = 0; c < chunks; ++c) bounds[c] = int32_t(int64_t(tile) * (c * main_tiles / chunks));
  bounds[chunks] = main_end;
  std::vector<PrefixWorkItem> balanced;
  balanced.reserve(size_t(n + shape.pairs));
  for (PrefixWorkItem it : items) {  // one CTA each, as before
    it.kv_begin = bounds[it.chunk];
    it.kv_end = bounds[it.chunk + 1];
    it.cta_next = -1;
    balanced.push_back(it);
  }
  // Tail t runs on spare CTA t mod spare, its (t / spare)-th item: the spare CTAs' first items
  // complete the grid's first n + spare items, the others follow in tail order.
  const int spare = b->spare_ctas;
  const int64_t grid = n + spare;
  auto index_of_tail = [&](int64_t t) { return t < spare ? n + t : grid + (t - spare); };
  balanced.resize(size_t(n + shape.pairs));
  for (int64_t t = 0; t < shape.pairs; ++t) {
    PrefixWorkItem tail = pairs[size_t(t)];
    tail.kv_begin = main_end;
    tail.kv_end = tokens;
    tail.chunk = chunks;
    tail.cta_next = t + spare < shape.pairs ? int32_t(index_of_tail(t + spare)) : -1;
    balanced[size_t(index_of_tail(t))] = tail;
  }
  items = std::move(balanced);
  for (int32_t& c : plan->group_num_chunks)
    if (c > 0) c = chunks + 1;
  plan->prefix_balanced_ctas = int32_t(grid);
  return true;
}

}  // namespace prefixd::kernels
