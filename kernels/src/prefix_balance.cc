#include "prefixd/kernels/prefix_balance.h"

#include <algorithm>
#include <vector>

#include "prefixd/common/error.h"
#include "prefixd/kernels/prefix_kv_tile.h"

namespace prefixd::kernels {
namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// One item of the stream over the heads (ChoosePrefixStream), for every row tile of its head:
// tiles [begin, end) of head `head`'s range as its chunk `chunk`, on slot `slot`; begin == end
// for the empty items of heads cut into fewer pieces than the most cut one.
struct StreamPiece {
  int slot;
  int64_t head, begin, end;
  int chunk;
};

// A slot of the stream: CTAs [first_cta, first_cta + ctas), CTA i running row tiles i, i + ctas,
// ... (row_tiles / ctas of them: one in a whole slot).
struct StreamSlot {
  int first_cta, ctas;
};

// The stream's summary (ChoosePrefixStream), its slots and pieces, which StreamPrefixGrid turns
// into items.
struct StreamLayout {
  PrefixStream stream;
  std::vector<StreamSlot> slots;
  std::vector<StreamPiece> pieces;
};

// The slots' widths: ctas / R whole slots of R, then (with narrow) the rest as slots of divisors
// of R, largest first.
std::vector<int> SlotWidths(const PrefixStreamShape& s) {
  std::vector<int> widths(size_t(s.ctas / s.row_tiles), s.row_tiles);
  int left = s.narrow_slots ? s.ctas % s.row_tiles : 0;
  while (left > 0) {
    int c = left;
    while (s.row_tiles % c != 0) --c;
    widths.push_back(c);
    left -= c;
  }
  return widths;
}

// The split over the slots: each narrow slot of c CTAs ⌊heads · tiles · c / ctas⌋ tiles at the
// stream's end, the whole slots the rest in shares of ⌈rest / whole slots⌉ (without narrow slots:
// ⌈heads · tiles / slots⌉), the empty pieces on the least busy slots; nullopt where there are
// fewer than two whole slots.
std::optional<StreamLayout> LayOutSlots(const PrefixStreamShape& s) {
  if (s.heads <= 0 || s.row_tiles <= 0 || s.tiles <= 0 || s.ctas / s.row_tiles < 2) return std::nullopt;
  const int64_t total = s.heads * s.tiles;
  const std::vector<int> widths = SlotWidths(s);
  const int whole = s.ctas / s.row_tiles;
  int64_t width_sum = 0;
  for (const int w : widths) width_sum += w;
  std::vector<int64_t> quota(widths.size());
  int64_t narrow_total = 0;
  for (size_t j = size_t(whole); j < widths.size(); ++j) narrow_total += quota[j] = total * widths[j] / width_sum;
  StreamLayout l;
  PrefixStream& st = l.stream;
  st.share_tiles = CeilDiv(total - narrow_total, whole);
  for (size_t j = 0; j < size_t(whole); ++j) quota[j] = st.share_tiles;
  std::vector<int> cut(size_t(s.heads), 0);
  std::vector<double> load;  // per slot: each of its CTAs' tiles + items × the overhead
  std::vector<int> passes;   // per slot: row tiles per CTA
  int64_t lo = 0;
  for (size_t j = 0; j < widths.size() && lo < total; ++j) {
    if (quota[j] == 0) continue;  // a narrow slot too narrow for a tile
    const int slot = int(l.slots.size());
    // The whole slots end where the narrow ones' tiles begin.
    const int64_t hi = std::min(j < size_t(whole) ? total - narrow_total : total, lo + quota[j]);
    if (hi <= lo) continue;
    l.slots.push_back({st.ctas, widths[j]});
    st.ctas += widths[j];
    st.narrow_slots += widths[j] < s.row_tiles;
    passes.push_back(s.row_tiles / widths[j]);
    load.push_back(0.0);
    for (int64_t h = lo / s.tiles; h < s.heads && h * s.tiles < hi; ++h) {
      const int64_t begin = std::max(lo, h * s.tiles) - h * s.tiles;
      const int64_t end = std::min(hi, (h + 1) * s.tiles) - h * s.tiles;
      if (begin >= end) continue;
      l.pieces.push_back({slot, h, begin, end, cut[size_t(h)]++});
      load[size_t(slot)] += passes[size_t(slot)] * (double(end - begin) + s.item_overhead_tiles);
    }
    lo = hi;
  }
  st.slots = int(l.slots.size());
  st.chunks = *std::max_element(cut.begin(), cut.end());
  for (int64_t h = 0; h < s.heads; ++h)
    for (int c = cut[size_t(h)]; c < st.chunks; ++c) {
      size_t slot = 0;  // the least busy after taking it
      for (size_t j = 1; j < load.size(); ++j)
        if (load[j] + passes[j] * s.item_overhead_tiles < load[slot] + passes[slot] * s.item_overhead_tiles) slot = j;
      l.pieces.push_back({int(slot), h, 0, 0, c});
      load[slot] += passes[slot] * s.item_overhead_tiles;
    }
  st.busiest_after = *std::max_element(load.begin(), load.end());
  return l;
}

// LayOutSlots, with the narrow slots only where they make the busiest CTA less busy (a narrow
// slot's CTA pays the overhead of every piece once per row tile it runs).
std::optional<StreamLayout> LayOutStream(const PrefixStreamShape& s) {
  PrefixStreamShape whole = s;
  whole.narrow_slots = false;
  std::optional<StreamLayout> best = LayOutSlots(whole);
  if (!best || !s.narrow_slots || s.ctas % s.row_tiles == 0) return best;
  std::optional<StreamLayout> narrow = LayOutSlots(s);
  if (narrow->stream.busiest_after < best->stream.busiest_after) best = std::move(narrow);
  return best;
}

// The heads of a plan's pairs (chunk-0 items), each its items' indices by row; false unless every
// head has the same number of row tiles.
bool HeadsOfPairs(const std::vector<PrefixWorkItem>& items, std::vector<std::vector<int64_t>>* heads) {
  heads->clear();
  std::vector<std::pair<int32_t, int32_t>> keys;  // (group, KV head) of heads[i]
  for (int64_t i = 0; i < int64_t(items.size()); ++i) {
    const PrefixWorkItem& it = items[size_t(i)];
    if (it.chunk != 0) continue;
    const auto key = std::make_pair(it.group, it.kv_head);
    const auto at = std::find(keys.begin(), keys.end(), key);
    if (at == keys.end()) {
      keys.push_back(key);
      heads->push_back({i});
    } else {
      (*heads)[size_t(at - keys.begin())].push_back(i);
    }
  }
  for (std::vector<int64_t>& rows : *heads) {
    std::sort(rows.begin(), rows.end(), [&](int64_t a, int64_t b) { return items[a].row_begin < items[b].row_begin; });
    if (rows.size() != heads->front().size()) return false;
  }
  return !heads->empty();
}

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

std::optional<PrefixStream> ChoosePrefixStream(const PrefixStreamShape& s) {
  const std::optional<StreamLayout> l = LayOutStream(s);
  if (!l) return std::nullopt;
  return l->stream;
}

namespace {

// The stream's grid (LayOutStream) in place of the plan's items: per slot and row tile one CTA in
// a whole slot, R / c row tiles per CTA in a narrow one; each CTA's pieces in order as a chain
// (in a narrow slot, each piece once per row tile of the CTA).
void StreamPrefixGrid(CascadePlan* plan, const std::vector<std::vector<int64_t>>& heads, int rows,
                      const StreamLayout& layout, int32_t tokens, int tile) {
  std::vector<PrefixWorkItem>& items = plan->prefix_items;
  std::vector<std::vector<PrefixWorkItem>> chains(size_t(layout.stream.ctas));
  for (const StreamPiece& piece : layout.pieces) {
    const StreamSlot& slot = layout.slots[size_t(piece.slot)];
    for (int r = 0; r < rows; ++r) {
      PrefixWorkItem it = items[size_t(heads[size_t(piece.head)][size_t(r)])];
      it.kv_begin = int32_t(std::min<int64_t>(piece.begin * tile, tokens));
      it.kv_end = int32_t(std::min<int64_t>(piece.end * tile, tokens));
      it.chunk = piece.chunk;
      it.cta_next = -1;
      chains[size_t(slot.first_cta + r % slot.ctas)].push_back(it);
    }
  }
  // Each CTA's first item at its index (FirstItemOfCta), the rest after the grid, linked.
  const int64_t grid = int64_t(chains.size());
  std::vector<PrefixWorkItem> out(static_cast<size_t>(grid));
  for (int64_t c = 0; c < grid; ++c) {
    out[size_t(c)] = chains[size_t(c)].front();
    int64_t last = c;
    for (size_t k = 1; k < chains[size_t(c)].size(); ++k) {
      out[size_t(last)].cta_next = int32_t(out.size());
      last = int64_t(out.size());
      out.push_back(chains[size_t(c)][k]);
    }
  }
  items = std::move(out);
  for (int32_t& c : plan->group_num_chunks)
    if (c > 0) c = layout.stream.chunks;
  plan->prefix_balanced_ctas = int32_t(grid);
}

}  // namespace

bool BalancePrefixGrid(CascadePlan* plan, const PlanOptions& options) {
  const int ctas = options.balance_prefix_ctas;
  std::vector<PrefixWorkItem>& items = plan->prefix_items;
  const int64_t n = int64_t(items.size());
  if (ctas <= 0 || n == 0 || (n >= ctas && !options.balance_stream)) return false;
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
  // The busiest CTA as planned: one item per CTA, or the round-robin's waves of them.
  const double before = double(CeilDiv(n, ctas)) * (double(CeilDiv(shape.tiles, chunks)) + shape.item_overhead_tiles);
  const double wanted = before * (1.0 - options.balance_min_gain);
  const std::optional<PrefixBalance> b = n < ctas ? ChoosePrefixBalance(shape) : std::nullopt;
  std::vector<std::vector<int64_t>> heads;
  std::optional<StreamLayout> stream;
  PrefixStreamShape stream_shape;
  if (options.balance_stream && HeadsOfPairs(items, &heads)) {
    stream_shape.heads = int64_t(heads.size());
    stream_shape.row_tiles = int(heads.front().size());
    stream_shape.tiles = shape.tiles;
    stream_shape.ctas = ctas;
    stream_shape.item_overhead_tiles = shape.item_overhead_tiles;
    stream_shape.narrow_slots = options.balance_stream_narrow;
    if (stream_shape.heads * stream_shape.row_tiles == shape.pairs) stream = LayOutStream(stream_shape);
  }
  if (stream && stream->stream.busiest_after <= wanted && (!b || stream->stream.busiest_after < b->busiest_after)) {
    StreamPrefixGrid(plan, heads, stream_shape.row_tiles, *stream, tokens, tile);
    return true;
  }
  if (!b || b->busiest_after > wanted) return false;

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

std::vector<std::vector<int64_t>> PrefixItemsByCta(const CascadePlan& plan, int ctas, bool chains) {
  PREFIXD_CHECK_ARG(ctas >= 1, "PrefixItemsByCta: ctas must be ≥ 1, got " << ctas);
  const int64_t n = int64_t(plan.prefix_items.size());
  std::vector<std::vector<int64_t>> by_cta(static_cast<size_t>(ctas));
  if (!chains) {
    for (int64_t i = 0; i < n; ++i) by_cta[size_t(i % ctas)].push_back(i);
    return by_cta;
  }
  for (int64_t c = 0; c < ctas && c < n; ++c) {
    for (int64_t i = c; i >= 0 && i < n; i = plan.prefix_items[size_t(i)].cta_next) {
      PREFIXD_CHECK_ARG(int64_t(by_cta[size_t(c)].size()) < n, "PrefixItemsByCta: the plan's cta_next chains loop");
      by_cta[size_t(c)].push_back(i);
    }
  }
  return by_cta;
}

}  // namespace prefixd::kernels
