#include "prefixd/kernels/plan.h"

#include <algorithm>
#include <limits>
#include <climits>
#include <cmath>
#include <numeric>
#include <optional>
#include <utility>

#include "prefixd/common/error.h"
#include "prefixd/kernels/cost_model.h"
#include "prefixd/kernels/decode_kernel_choice.h"
#include "prefixd/kernels/prefix_balance.h"

namespace prefixd::kernels {
namespace {

constexpr int32_t kPlanMagic = 0x50445043;  // "PDPC": prefixd plan, cascade
// 2: DecodeWorkItem::finish, merge_requests; 3: PrefixWorkItem::cta_next, prefix_balanced_ctas;
// 4: concurrent_decode_sms; 5: concurrent_decode_tma; 6: concurrent_tma_warps
constexpr int32_t kPlanVersion = 6;
constexpr int kHeaderInts = CascadePlan::kSerializedHeaderInts;
constexpr int kPrefixItemInts = 8;
constexpr int kDecodeItemInts = 6;
constexpr int kGroupInts = 4;

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// How many chunks a range of len tokens may be cut into: every boundary on a multiple of align
// (so at most ceil(len / align) chunks) and every chunk at least min_chunk tokens when len allows.
int64_t MaxChunks(int64_t len, int align, int min_chunk) {
  if (len <= 0) return 0;
  return std::min(CeilDiv(len, align), std::max<int64_t>(1, len / min_chunk));
}

// Cuts [0, len) into n chunks of near-equal size whose interior boundaries are multiples of
// align. Needs 1 ≤ n ≤ ceil(len / align); then boundaries strictly increase (every chunk has at
// least floor(units / n) align-units, the last one possibly a partial unit).
std::vector<int32_t> SplitRange(int32_t len, int64_t n, int align) {
  const int64_t units = CeilDiv(len, align);
  std::vector<int32_t> bounds(n + 1);
  for (int64_t i = 0; i < n; ++i) bounds[i] = int32_t(align * (i * units / n));
  bounds[n] = len;
  return bounds;
}

// Chooses a chunk count for each range so that the total item count Σ weight[i] · chunks[i]
// approaches target without exceeding it (when no splitting is needed, or none is possible,
// every non-empty range gets one chunk). All ranges share one chunk length L, the smallest that
// fits the target, so that items carry similar amounts of work; a range never gets more chunks
// than MaxChunks allows.
std::vector<int64_t> ChooseChunkCounts(const std::vector<int64_t>& lens, const std::vector<int64_t>& weights,
                                       int align, int min_chunk, int64_t target) {
  const size_t n = lens.size();
  std::vector<int64_t> max_chunks(n);
  int64_t max_len = 0;
  for (size_t i = 0; i < n; ++i) {
    max_chunks[i] = MaxChunks(lens[i], align, min_chunk);
    max_len = std::max(max_len, lens[i]);
  }
  auto counts_for = [&](int64_t chunk_len, std::vector<int64_t>* counts) {
    int64_t total = 0;
    for (size_t i = 0; i < n; ++i) {
      const int64_t c = lens[i] <= 0 ? 0 : std::clamp<int64_t>(CeilDiv(lens[i], chunk_len), 1, max_chunks[i]);
      if (counts) (*counts)[i] = c;
      total += weights[i] * c;
    }
    return total;
  };
  std::vector<int64_t> counts(n, 0);
  if (max_len == 0) return counts;
  // counts_for is non-increasing in L; with L = max_len every range has one chunk.
  int64_t lo = 1, hi = max_len;
  if (counts_for(hi, nullptr) < target) {
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      if (counts_for(mid, nullptr) <= target) hi = mid;
      else lo = mid + 1;
    }
  }
  counts_for(hi, &counts);
  return counts;
}

void ValidateOptions(const PlanOptions& o) {
  PREFIXD_CHECK_ARG(o.target_items >= 1, "plan options: target_items must be ≥ 1, got " << o.target_items);
  PREFIXD_CHECK_ARG(o.concurrent_decode_sms >= 0,
                    "plan options: concurrent_decode_sms must be ≥ 0 (0: off), got " << o.concurrent_decode_sms);
  for (const int k : o.concurrent_candidates)
    PREFIXD_CHECK_ARG(k >= 1, "plan options: concurrent_candidates must be ≥ 1, got " << k);
  for (const int k : o.concurrent_tma_candidates)
    PREFIXD_CHECK_ARG(k >= 1, "plan options: concurrent_tma_candidates must be ≥ 1, got " << k);
  PREFIXD_CHECK_ARG(!o.concurrent_decode_tma || o.concurrent_decode_sms > 0,
                    "plan options: concurrent_decode_tma needs concurrent_decode_sms > 0");
  PREFIXD_CHECK_ARG(o.prefix_target_items >= 0,
                    "plan options: prefix_target_items must be ≥ 0 (0: target_items), got " << o.prefix_target_items);
  PREFIXD_CHECK_ARG(o.prefix_tile_rows >= 1, "plan options: prefix_tile_rows must be ≥ 1, got " << o.prefix_tile_rows);
  PREFIXD_CHECK_ARG(o.prefix_chunk_align >= 1, "plan options: prefix_chunk_align must be ≥ 1, got " << o.prefix_chunk_align);
  PREFIXD_CHECK_ARG(o.min_prefix_chunk >= 1, "plan options: min_prefix_chunk must be ≥ 1, got " << o.min_prefix_chunk);
  PREFIXD_CHECK_ARG(o.decode_chunk_align >= 1, "plan options: decode_chunk_align must be ≥ 1, got " << o.decode_chunk_align);
  PREFIXD_CHECK_ARG(o.min_decode_chunk >= 1, "plan options: min_decode_chunk must be ≥ 1, got " << o.min_decode_chunk);
  PREFIXD_CHECK_ARG(o.narrow_tile_rows >= 0,
                    "plan options: narrow_tile_rows must be ≥ 0 (0: off), got " << o.narrow_tile_rows);
  PREFIXD_CHECK_ARG(o.narrow_head_dim >= 0,
                    "plan options: narrow_head_dim must be ≥ 0 (0: any), got " << o.narrow_head_dim);
  PREFIXD_CHECK_ARG(o.fine_prefix_chunk >= 0,
                    "plan options: fine_prefix_chunk must be ≥ 0 (0: off), got " << o.fine_prefix_chunk);
  PREFIXD_CHECK_ARG(o.balance_prefix_ctas >= 0,
                    "plan options: balance_prefix_ctas must be ≥ 0 (0: off), got " << o.balance_prefix_ctas);
  PREFIXD_CHECK_ARG(o.balance_min_gain >= 0 && o.balance_min_gain < 1,
                    "plan options: balance_min_gain must be in [0, 1), got " << o.balance_min_gain);
  PREFIXD_CHECK_ARG(o.balance_min_chunk_tiles >= 0,
                    "plan options: balance_min_chunk_tiles must be ≥ 0, got " << o.balance_min_chunk_tiles);
  PREFIXD_CHECK_ARG(o.balance_min_item_rows >= 0,
                    "plan options: balance_min_item_rows must be ≥ 0, got " << o.balance_min_item_rows);
  PREFIXD_CHECK_ARG(o.fine_max_suffix_ratio >= 0,
                    "plan options: fine_max_suffix_ratio must be ≥ 0, got " << o.fine_max_suffix_ratio);
  PREFIXD_CHECK_ARG(o.plain_margin >= 0 && o.plain_margin < 1,
                    "plan options: plain_margin must be in [0, 1), got " << o.plain_margin);
  PREFIXD_CHECK_ARG(o.tiny_prefix_tokens >= 0,
                    "plan options: tiny_prefix_tokens must be ≥ 0 (0: off), got " << o.tiny_prefix_tokens);
  PREFIXD_CHECK_ARG(o.tiny_prefix_head_dim >= 0,
                    "plan options: tiny_prefix_head_dim must be ≥ 0 (0: any), got " << o.tiny_prefix_head_dim);
  PREFIXD_CHECK_ARG(o.tiny_prefix_margin >= 0 && o.tiny_prefix_margin < 1,
                    "plan options: tiny_prefix_margin must be in [0, 1), got " << o.tiny_prefix_margin);
}

// Groups must list requests 0..B-1 in order, each group non-empty; prefix runs must lie in the pool.
void ValidateGroups(const std::vector<PrefixGroup>& groups, int num_requests, int num_pages, int page_size) {
  int32_t next = 0;
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    const PrefixGroup& g = groups[gi];
    PREFIXD_CHECK_ARG(g.first_request == next, "group " << gi << " starts at request " << g.first_request
                                                        << " but request " << next
                                                        << " is next (groups must cover requests 0..B-1 in order, "
                                                           "without gaps or overlaps)");
    PREFIXD_CHECK_ARG(g.num_requests >= 1, "group " << gi << " has " << g.num_requests << " requests (need ≥ 1)");
    PREFIXD_CHECK_ARG(int64_t(g.first_request) + g.num_requests <= num_requests,
                      "group " << gi << " covers requests [" << g.first_request << ", "
                               << int64_t(g.first_request) + g.num_requests << ") but the batch has only "
                               << num_requests << " requests");
    next = g.first_request + g.num_requests;
    PREFIXD_CHECK_ARG(g.prefix.num_tokens >= 0, "group " << gi << " has a negative prefix length " << g.prefix.num_tokens);
    if (g.prefix.num_tokens > 0) {
      const int64_t pages = CeilDiv(g.prefix.num_tokens, page_size);
      PREFIXD_CHECK_ARG(g.prefix.first_page >= 0 && g.prefix.first_page + pages <= num_pages,
                        "group " << gi << "'s prefix run of " << g.prefix.num_tokens << " tokens, pages ["
                                 << g.prefix.first_page << ", " << g.prefix.first_page + pages
                                 << "), is outside the pool's " << num_pages << " pages");
    }
  }
  PREFIXD_CHECK_ARG(next == num_requests, "groups cover requests [0, " << next << ") but the batch has "
                                                                     << num_requests << " requests (request " << next
                                                                     << " is in no group)");
}

// Bounds-checked reader for Deserialize.
class Reader {
 public:
  Reader(const int32_t* data, size_t size) : data_(data), size_(size) {}
  int32_t Next() {
    PREFIXD_CHECK_ARG(pos_ < size_, "serialised plan is truncated at int " << pos_);
    return data_[pos_++];
  }
  size_t pos() const { return pos_; }

 private:
  const int32_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

// The plan of the batch exactly as given (no layout choice). The options are the caller's, checked
// by PlanCascade, or a layout candidate derived from them.
CascadePlan PlanFixed(const DecodeBatch& batch, const KvPoolShape& pool, const PlanOptions& options) {
  pool.Validate();
  const int b = batch.num_requests();
  PREFIXD_CHECK_ARG(b >= 0, "decode batch: suffix page table has no indptr");
  PREFIXD_CHECK_ARG(batch.num_qo_heads > 0, "decode batch: num_qo_heads must be positive, got " << batch.num_qo_heads);
  PREFIXD_CHECK_ARG(batch.num_qo_heads % pool.num_kv_heads == 0,
                    "decode batch: num_qo_heads " << batch.num_qo_heads << " is not a multiple of the pool's num_kv_heads "
                                                  << pool.num_kv_heads << " (GQA needs H_qo % H_kv == 0)");
  batch.suffix.Validate(pool.num_pages, pool.page_size);
  ValidateGroups(batch.groups, b, pool.num_pages, pool.page_size);

  CascadePlan plan;
  plan.num_requests = b;
  plan.num_qo_heads = batch.num_qo_heads;
  plan.num_kv_heads = pool.num_kv_heads;
  plan.head_dim = pool.head_dim;
  plan.page_size = pool.page_size;
  plan.num_pages = pool.num_pages;
  plan.groups = batch.groups;
  plan.suffix = batch.suffix;
  plan.concurrent_decode_sms = options.concurrent_decode_sms;  // ≥ 0 (ValidateOptions)
  plan.concurrent_decode_tma = options.concurrent_decode_tma ? 1 : 0;  // only with k > 0 (ValidateOptions)
  const int g = plan.gqa_group_size();
  const int num_groups = int(batch.groups.size());

  // Prefix items: row tiles × KV heads per group; split along the KV axis when too few.
  std::vector<int64_t> prefix_len(num_groups), prefix_weight(num_groups);
  for (int gi = 0; gi < num_groups; ++gi) {
    const PrefixGroup& grp = batch.groups[gi];
    prefix_len[gi] = grp.prefix.num_tokens;
    prefix_weight[gi] = int64_t(plan.num_kv_heads) * CeilDiv(int64_t(grp.num_requests) * g, options.prefix_tile_rows);
  }
  const std::vector<int64_t> prefix_chunks = ChooseChunkCounts(
      prefix_len, prefix_weight, options.prefix_chunk_align, options.min_prefix_chunk,
      options.prefix_target_items > 0 ? options.prefix_target_items : options.target_items);
  plan.group_num_chunks.resize(num_groups);
  for (int gi = 0; gi < num_groups; ++gi) {
    const PrefixGroup& grp = batch.groups[gi];
    plan.group_num_chunks[gi] = int32_t(prefix_chunks[gi]);
    if (prefix_chunks[gi] == 0) continue;
    const std::vector<int32_t> bounds = SplitRange(grp.prefix.num_tokens, prefix_chunks[gi], options.prefix_chunk_align);
    const int32_t rows = grp.num_requests * g;
    for (int32_t c = 0; c < prefix_chunks[gi]; ++c)
      for (int32_t h = 0; h < plan.num_kv_heads; ++h)
        for (int32_t r0 = 0; r0 < rows; r0 += options.prefix_tile_rows)
          plan.prefix_items.push_back(PrefixWorkItem{gi, h, r0, std::min(rows, r0 + options.prefix_tile_rows),
                                                     bounds[c], bounds[c + 1], c});
  }
  // Where the items leave CTAs of the persistent grid idle: tails of every pair for them (one
  // more chunk per group, so before the state slots below).
  BalancePrefixGrid(&plan, options);
  plan.request_group.assign(b, 0);
  for (int gi = 0; gi < num_groups; ++gi)
    for (int32_t r = 0; r < batch.groups[gi].num_requests; ++r) plan.request_group[batch.groups[gi].first_request + r] = gi;

  // Decode items: one per (request, KV head); split-KV for long suffixes when too few.
  std::vector<int64_t> suffix_len(b), suffix_weight(b, plan.num_kv_heads);
  for (int r = 0; r < b; ++r) suffix_len[r] = batch.suffix.SeqLen(r, pool.page_size);
  const std::vector<int64_t> decode_chunks = ChooseChunkCounts(
      suffix_len, suffix_weight, options.decode_chunk_align, options.min_decode_chunk, options.target_items);

  // A one-chunk suffix's items finish their request (fuse_merge); the merge step finishes the rest.
  plan.state_indptr.assign(b + 1, 0);
  for (int r = 0; r < b; ++r) {
    const int32_t first = plan.group_num_chunks[plan.request_group[r]];
    plan.state_indptr[r + 1] = plan.state_indptr[r] + first + int32_t(decode_chunks[r]);
    const int32_t finish = options.fuse_merge && decode_chunks[r] == 1 ? 1 : 0;
    if (!finish) plan.merge_requests.push_back(r);
    if (decode_chunks[r] == 0) continue;
    const std::vector<int32_t> bounds = SplitRange(int32_t(suffix_len[r]), decode_chunks[r], options.decode_chunk_align);
    for (int32_t c = 0; c < decode_chunks[r]; ++c)
      for (int32_t h = 0; h < plan.num_kv_heads; ++h)
        plan.decode_items.push_back(DecodeWorkItem{r, h, bounds[c], bounds[c + 1], first + c, finish});
  }
  return plan;
}

// Layout choice (PlanOptions::choose_layout). Candidates are scored by the cost model:
//  1. split options: the given ones, the prefix item target ×½ and ×2, each with the suffixes split
//     as given or not split at all (6 plans per all-cascade layout; the best is the layout's
//     score, another than the given splits only when predicted faster than them by more than
//     PlanOptions::plain_margin); a layout with plain groups is scored with the given splits only;
//  2. layouts: every group cascade; then, greedily, eligible groups flipped to plain in ascending
//     order of their prefix work (requests × prefix tokens) while each flip lowers the predicted
//     time (stopping at the first that does not: a group with more prefix work gains less from
//     plain decode); and every eligible group plain. The lowest predicted time wins; ties keep the
//     earlier candidate (cascade first, the given split options first), and a candidate with plain
//     groups must beat the best cascade by more than PlanOptions::plain_margin, unless all its
//     plain groups have tiny prefixes (and suffixes of at least half of them, on average): then it
//     needs only to come within tiny_prefix_margin of it;
//  3. where the all-cascade layout won: its fine prefix chunks (ScoreFineCascade), for a gain of
//     more than plain_margin over it;
//  4. the all-cascade layout with items of narrow_tile_rows rows (ScoreNarrowCascade), for a gain
//     of more than plain_margin over the winner so far (not where the tiny-prefix rule covers a
//     group);
//  5. where an all-cascade layout won: the concurrent mode's plans of its options, one per
//     concurrent_candidates and concurrent_tma_candidates k (ScoreConcurrentCascade), for a gain
//     of more than plain_margin.
// Cost: at most 10 + eligible groups + concurrent candidates plans built (6 cascade split
// variants, the greedy flips, all plain, 2 fine, 1 narrow, 1 one after the other, 1 per k); each
// plan is O(items), and so is each costing of one (a k's plan is costed again at head_dim 256 and
// with the TMA decode).
struct Scored {
  double us = 0;
  PlanOptions options;
  std::vector<uint8_t> plain;
  size_t given_prefix_items = 0;  // prefix items of the layout's plan with the given split options
};

// The cost model's time of `layout` planned with `o` (one more candidate); its prefix item count
// to `prefix_items` when given.
double PredictPlan(const DecodeBatch& layout, const KvPoolShape& pool, const PlanOptions& o,
                   const CostModelParams& params, int* candidates, size_t* prefix_items = nullptr) {
  const CascadePlan plan = PlanFixed(layout, pool, o);
  ++*candidates;
  if (prefix_items != nullptr) *prefix_items = plan.prefix_items.size();
  return PredictCost(plan, params).total_us;
}

Scored ScoreLayout(const DecodeBatch& batch, const KvPoolShape& pool, const PlanOptions& base,
                   const CostModelParams& params, const std::vector<uint8_t>& plain, int* candidates) {
  const DecodeBatch layout = PlainLayout(batch, plain, pool.page_size);
  const int target = base.prefix_target_items > 0 ? base.prefix_target_items : base.target_items;
  // Layouts with plain groups keep the given splits: their split variants hinge on one CTA's
  // streaming rate (decode cta_gbs), which the calibrations barely pin, and where the planner chose
  // one it ran slower than predicted (unsplit plain decode on the H200: 36.5 µs against the
  // cascade's 17.1 in session 2; 15.9-16.9 against 15.5-16.1 in session 8, bench/NOTES-planner.md).
  const bool any_plain = std::find(plain.begin(), plain.end(), uint8_t(1)) != plain.end();
  // The other split options are taken only for a predicted gain of more than plain_margin over the
  // given ones: no calibration times them, and where the planner took one on a near-tie it measured
  // slower (prefix target ×2 at 32/4 and 32/8 B192 P4096: 6-11%, session 23).
  Scored best;
  bool first = true;
  size_t given_items = 0;
  double given_us = 0;
  for (const int prefix_target : {target, std::max(1, target / 2), target * 2})
    for (const int min_decode_chunk : {base.min_decode_chunk, INT_MAX}) {
      if (!first && min_decode_chunk == base.min_decode_chunk && prefix_target == target) continue;
      if (!first && any_plain) continue;
      PlanOptions o = base;
      o.prefix_target_items = prefix_target;
      o.min_decode_chunk = min_decode_chunk;
      const double us = PredictPlan(layout, pool, o, params, candidates, first ? &given_items : nullptr);
      if (first) given_us = us;
      if (first || (us < best.us && us < given_us * (1.0 - base.plain_margin))) best = Scored{us, o, plain};
      first = false;
    }
  best.given_prefix_items = given_items;
  return best;
}

// The all-cascade layout with the fine prefix chunks (PlanOptions::fine_prefix_chunk) and the given
// item targets, suffixes split as given or not at all; or nothing where it does not apply: only
// where the given plan's prefix grid is tiny (at most an eighth of the item target) and
// min_prefix_chunk is what keeps it so. Measured on the H200 (bench/NOTES-planner.md, session 17):
// there the busiest prefix CTA's tiles are the prefix part's time, and 4× more, 4× shorter items
// took 1.1-3.3 µs off 10-20 µs steps; where the given grid already covered half the SMs the finer
// one was up to 7% slower (the decode loses the SMs it ran on beside the prefix grid), which the
// model does not predict. The model also flatters the fine plans, so they compete with the other
// cascades only (by plain_margin, PlanChosen), never with plain layouts. Nor where the suffixes
// are long against the prefix (PlanOptions::fine_max_suffix_ratio: the decode beside the narrow
// prefix CTA then covers the prefix grid's fixed cost, session 22).
// suffix_tokens: the batch's suffix tokens over all requests.
std::optional<Scored> ScoreFineCascade(const DecodeBatch& batch, const KvPoolShape& pool, const PlanOptions& base,
                                       const CostModelParams& params, size_t given_items, int64_t suffix_tokens,
                                       int* candidates) {
  if (base.fine_prefix_chunk <= 0 || base.fine_prefix_chunk >= base.min_prefix_chunk) return std::nullopt;
  const int target = base.prefix_target_items > 0 ? base.prefix_target_items : base.target_items;
  bool binds = false;
  int64_t prefix_tokens = 0;
  for (const PrefixGroup& g : batch.groups) {
    binds = binds || g.prefix.num_tokens >= 2 * int64_t(base.fine_prefix_chunk);
    prefix_tokens += g.prefix.num_tokens;
  }
  if (given_items == 0 || int64_t(given_items) * 8 > target || !binds) return std::nullopt;
  if (double(suffix_tokens) > base.fine_max_suffix_ratio * double(prefix_tokens)) return std::nullopt;
  std::optional<Scored> best;
  for (const int min_decode_chunk : {base.min_decode_chunk, INT_MAX}) {
    PlanOptions o = base;
    o.min_prefix_chunk = base.fine_prefix_chunk;
    o.prefix_target_items = target;
    o.min_decode_chunk = min_decode_chunk;
    const double us = PredictPlan(batch, pool, o, params, candidates);
    if (!best || us < best->us) best = Scored{us, o, std::vector<uint8_t>(batch.groups.size(), 0)};
  }
  return best;
}

// The all-cascade layout with prefix items of at most narrow_tile_rows rows (PlanOptions), the
// given split options; or nothing where that changes no item (no candidate, or no group with more
// rows per KV head than narrow_tile_rows) or the head_dim is not narrow_head_dim.
std::optional<Scored> ScoreNarrowCascade(const DecodeBatch& batch, const KvPoolShape& pool, const PlanOptions& base,
                                         const CostModelParams& params, int* candidates) {
  if (base.narrow_tile_rows <= 0 || base.narrow_tile_rows >= base.prefix_tile_rows) return std::nullopt;
  if (base.narrow_head_dim > 0 && pool.head_dim != base.narrow_head_dim) return std::nullopt;
  const int g = pool.num_kv_heads > 0 ? batch.num_qo_heads / pool.num_kv_heads : 1;
  const bool binds = std::any_of(batch.groups.begin(), batch.groups.end(), [&](const PrefixGroup& grp) {
    return grp.prefix.num_tokens > 0 && int64_t(grp.num_requests) * g > base.narrow_tile_rows;
  });
  if (!binds) return std::nullopt;
  PlanOptions o = base;
  o.prefix_tile_rows = base.narrow_tile_rows;
  return Scored{PredictPlan(batch, pool, o, params, candidates), o, std::vector<uint8_t>(batch.groups.size(), 0)};
}

// How much before the model's prefix part the concurrent TMA decode must end to be taken at the
// other decode's k (ScoreConcurrentCascade).
constexpr double kTmaFitMargin = 0.15;
// The shorter of the two parts, one after the other, that the TMA decode's own candidates need
// (ScoreConcurrentCascade): the overlap hides at most that part, and the mode adds the merge step
// (~11 µs) and a second launch. Below it the model's small-step error exceeds the gain: it had the
// mode 20% faster at 32/8 B256 P1024 S32 (prefix ~17 µs), and every S = 32 shape measured slower.
// 20 since session 52: at 30 it left out 32/8 B128 P8192 and P16384 S128 (decode parts ~25 µs),
// which the 12-warp TMA decode ran 12% and 9% faster (k = 28 and 20; bench/RESULTS.md session 52).
// 28 since session 60: with k = 14 and 16 among the candidates (the prefix stream's narrow slots)
// the model took k = 16 at 32/8 B256 P8192 S32 (its decode part 26.9 µs), measured −0.5% and then
// +3% (bf16) against the step one after the other, where the model's sequential step runs 10%
// high; B128 P8192 and P16384 S128 (29.4 µs in today's model) keep the mode.
constexpr double kTmaMinPartUs = 28;

// The concurrent mode's options at the neighbouring k of a chosen k (PlanReport::concurrent_fewer_sms
// and concurrent_more_sms).
struct ConcurrentNeighbours {
  std::optional<PlanOptions> fewer_sms, more_sms;
};

// The concurrent mode's plans of the all-cascade winner's options `winner` (PlanOptions::
// concurrent_candidates): for each k, the decode on k SMs beside a prefix grid of SMs − k CTAs
// (the prefix target and balance scaled to them, the stream balance, every request through the
// merge step), scored by the cost model's concurrent step (cost_model.h); the fastest if it beats
// the winner's options with the stream balance alone, or nothing (also without candidates, below
// concurrent_min_head_dim but for the TMA decode's own candidates from concurrent_tma_min_head_dim,
// beside a memory-bound prefix, or without both prefix and suffix tokens to overlap).
std::optional<Scored> ScoreConcurrentCascade(const DecodeBatch& batch, const KvPoolShape& pool, const PlanOptions& winner,
                                             const PlanOptions& base, const CostModelParams& params, int* candidates,
                                             ConcurrentNeighbours* neighbours) {
  const int sms = int(params.num_sms);
  const bool prefix = std::any_of(batch.groups.begin(), batch.groups.end(),
                                  [](const PrefixGroup& g) { return g.prefix.num_tokens > 0; });
  bool suffix = false;
  for (int r = 0; r < batch.num_requests() && !suffix; ++r) suffix = batch.suffix.SeqLen(r, pool.page_size) > 0;
  if (base.concurrent_candidates.empty() || !prefix || !suffix) return std::nullopt;
  // Below concurrent_min_head_dim only the TMA decode's own candidates (from
  // concurrent_tma_min_head_dim up); the other decode's mode is not scored there.
  const bool other_decode = pool.head_dim >= base.concurrent_min_head_dim;
  if (!other_decode && pool.head_dim < base.concurrent_tma_min_head_dim) return std::nullopt;
  // Only beside a compute-bound prefix (its FLOPs take longer than its K/V bytes at the model's
  // rates: at GQA 4, B > ~74): a memory-bound one leaves the decode no bandwidth to overlap with,
  // and there the model's small-step times are too coarse to call a few µs (32/8 B16 P8192 S256:
  // 26.7 → 23.7 predicted, not measured).
  double flop_us = 0, byte_us = 0;
  for (const PrefixGroup& g : batch.groups) {
    const double tokens = g.prefix.num_tokens;
    flop_us += 4.0 * g.num_requests * batch.num_qo_heads * tokens * pool.head_dim / (params.prefix_tflops * 1e6);
    byte_us += tokens * pool.num_kv_heads * pool.head_dim * 2.0 * DTypeBytes(pool.dtype) / (params.prefix_gbs * 1e3);
  }
  if (flop_us <= byte_us) return std::nullopt;
  const int target = winner.prefix_target_items > 0 ? winner.prefix_target_items : winner.target_items;
  const std::vector<uint8_t> none(batch.groups.size(), 0);
  // The bar: the same options one after the other, with the stream's balance too, so that the gain
  // must come from the overlap, not from a balance the step could have without it.
  PlanOptions sequential = winner;
  sequential.balance_stream = true;
  const CostBreakdown one_after_other = PredictCost(PlanFixed(batch, pool, sequential), params);
  ++*candidates;
  Scored best{one_after_other.total_us, sequential, none};
  // The mode's options and plan with the decode on k SMs, each built once: the TMA decode's plan
  // differs only in CascadePlan::concurrent_decode_tma, which cost_with_tma sets for its costing.
  struct Mode {
    PlanOptions options;
    CascadePlan plan;
  };
  std::vector<Mode> modes;
  modes.reserve(base.concurrent_candidates.size() + base.concurrent_tma_candidates.size());  // mode_for's references stay
  auto options_for = [&](int k) {
    PlanOptions o = winner;
    o.concurrent_decode_sms = k;
    o.fuse_merge = false;  // the decode cannot read prefix states it runs beside
    o.prefix_target_items = std::max(1, int(std::lround(double(target) * (sms - k) / sms)));
    o.balance_prefix_ctas = base.balance_prefix_ctas > k ? base.balance_prefix_ctas - k : 0;
    o.balance_stream = true;  // 64 pairs on 112 CTAs: the chunks alone leave them unbalanced
    return o;
  };
  auto mode_for = [&](int k) -> Mode& {
    for (Mode& m : modes)
      if (m.options.concurrent_decode_sms == k) return m;
    PlanOptions o = options_for(k);
    CascadePlan plan = PlanFixed(batch, pool, o);
    ++*candidates;
    modes.push_back(Mode{std::move(o), std::move(plan)});
    return modes.back();
  };
  auto cost_with_tma = [&](Mode& m) {
    ++*candidates;
    m.plan.concurrent_decode_tma = 1;
    const CostBreakdown c = PredictCost(m.plan, params);
    m.plan.concurrent_decode_tma = 0;
    PlanOptions o = m.options;
    o.concurrent_decode_tma = true;
    return std::pair{c, o};
  };
  for (const int k : base.concurrent_candidates) {
    if (k >= sms || !other_decode) continue;
    Mode& m = mode_for(k);
    const double us = PredictCost(m.plan, params).total_us;
    if (us < best.us) best = Scored{us, m.options, none};
  }
  const bool tma = base.concurrent_tma_candidate && TmaDecodeModeled(batch.num_qo_heads / pool.num_kv_heads, pool.head_dim) &&
                   (pool.dtype == DType::kFloat16 || pool.dtype == DType::kBFloat16) &&
                   pool.head_dim >= base.concurrent_tma_min_head_dim;
  // `best` compares at the model's predicted step; `mode_us` is that of the mode's plan as chosen
  // (the TMA decode's where it takes it below), for the TMA decode's own candidates after it.
  double mode_us = best.us;
  if (best.options.concurrent_decode_sms > 0) {
    // Where the mode wins, its k: the candidate with the least predicted step at the decode's
    // measured rate beside the prefix at this head_dim (concurrent_sm_gbs_d256 at 256). At the rate of
    // head_dim 128 the model had the decode on 20 SMs end ~33 µs after the head_dim-256 prefix and took
    // k = 20, measured 2.5% slower than k = 28 (32/8 B256 P32768 S256, bench/RESULTS.md session 49).
    // The mode itself stays decided at concurrent_sm_gbs: at 34 GB/s the model's gain at that shape
    // (2.4%) falls under plain_margin, where 8.9% was measured (its head_dim-256 prefix is ~23% slow);
    // so does the step's reported prediction, as for the TMA decode below.
    if (pool.head_dim > 128 && params.concurrent_sm_gbs_d256 != params.concurrent_sm_gbs) {
      CostModelParams at_dim = params;
      at_dim.concurrent_sm_gbs = params.concurrent_sm_gbs_d256;
      double least = 0;
      for (const Mode& m : modes) {
        ++*candidates;  // costed again, not rebuilt
        const double us = PredictCost(m.plan, at_dim).total_us;
        if (least == 0 || us < least) least = us, best.options = m.options;
      }
    }
    // Where the mode wins, its decode as the persistent TMA decode on the k SMs, where the backend
    // and the shape have it and the model has it end clearly before the prefix part (by
    // kTmaFitMargin): it streams more per SM than the other decode but never leaves the k SMs. It
    // measured 0.1-3.7% faster at the six shapes where it fit (32/8 B128-256 P32768-65536
    // S256-512, fp16 and bf16: no tail of the other decode's CTAs after the prefix's end) and 9-11%
    // slower at P32768 S512, where its bytes outlast the prefix (bench/RESULTS.md session 48). The
    // margin: the model's prefix part on SMs − k CTAs ran ~11% above the measured one at these
    // shapes, its TMA decode's rounds within a few % (session 51), so "fits" needs the decode to
    // end 15% before the predicted prefix (B256 P32768 S256: 72% of it; S512: 94%). Since session
    // 52 the TMA costing scales that prefix by concurrent_tma_prefix_scale (0.925 then, 0.86
    // since session 87's refit for the faster prefix kernel); the margin stays, and the CPU test
    // of session 48's measured swap-ins still holds with the scale of its kernel. The choice
    // of the mode itself stays on the other decode's prediction, so that the mode is taken where
    // it was before (session 47's measured choices); the own candidates below may then take it at
    // the TMA decode's own prediction.
    if (tma) {
      const auto [c, o] = cost_with_tma(mode_for(best.options.concurrent_decode_sms));
      if (c.concurrent_decode_end_us <= c.prefix_us * (1.0 - kTmaFitMargin)) best.options = o, mode_us = c.total_us;
    }
  }
  // The mode with the TMA decode on each of its own candidates k (concurrent_tma_candidates: more
  // SMs than the other decode's, since its step is max(prefix, its rounds of items), which balance
  // at k = 20-64 on the measured shapes), scored by the model's rounds (cost_model.h), where one
  // predicts less than the choice above (the caller takes the mode only for a gain of more than
  // plain_margin over the step one after the other). Measured with it at 12 warps per CTA (session
  // 52, run 3): 6-15% faster at 32/8 D128 B128-256 P8192-16384 S128-256, 7% at B128-256 P32768
  // S256, 10% and 15% at B256 P8192 and P32768 S512; even at P32768 S128; slower at S32, where the
  // model does not take it.
  if (tma && std::min(one_after_other.prefix_us, one_after_other.decode_us) >= kTmaMinPartUs) {
    for (const int k : base.concurrent_tma_candidates) {
      if (k >= sms) continue;
      const auto [c, o] = cost_with_tma(mode_for(k));
      // ≤: the candidate at the k taken above is that same plan, now scored at its own prediction
      // (the caller's margin then weighs the TMA decode's step, not the other decode's).
      if (c.total_us <= mode_us) best = Scored{c.total_us, o, none}, mode_us = c.total_us;
    }
  }
  if (best.options.concurrent_decode_sms == 0) return std::nullopt;  // one after the other is best
  // The same mode at the neighbouring k of its decode's candidates (PlanReport::concurrent_
  // fewer_sms / more_sms), for the measured choice to time beside the model's k: their options
  // only, no plan built.
  if (neighbours) {
    const bool on_tma = best.options.concurrent_decode_tma;
    std::vector<int> ks;
    for (const int k : on_tma ? base.concurrent_tma_candidates : base.concurrent_candidates)
      if (k < sms) ks.push_back(k);
    std::sort(ks.begin(), ks.end());
    ks.erase(std::unique(ks.begin(), ks.end()), ks.end());
    const auto at = std::find(ks.begin(), ks.end(), best.options.concurrent_decode_sms);
    auto options_at = [&](int64_t i) -> std::optional<PlanOptions> {
      if (i < 0 || i >= int64_t(ks.size())) return std::nullopt;  // past the list's ends
      PlanOptions o = options_for(ks[size_t(i)]);
      o.concurrent_decode_tma = on_tma;  // as cost_with_tma sets it
      return o;
    };
    if (at != ks.end()) {
      neighbours->fewer_sms = options_at((at - ks.begin()) - 1);
      neighbours->more_sms = options_at((at - ks.begin()) + 1);
    }
  }
  return best;
}

CascadePlan PlanChosen(const DecodeBatch& batch, const KvPoolShape& pool, const PlanOptions& options,
                       PlanReport* report) {
  PlanOptions base = options;
  base.choose_layout = false;
  base.cost_model.reset();
  const CostModelParams params = options.cost_model ? *options.cost_model : CostModelParams::H200();
  const int num_groups = int(batch.groups.size());
  std::vector<int> eligible;
  for (int g = 0; g < num_groups; ++g)
    if (batch.groups[g].prefix.num_tokens > 0 && CanPlanPlain(batch.groups[g], pool.page_size)) eligible.push_back(g);
  std::stable_sort(eligible.begin(), eligible.end(), [&](int a, int b) {
    return int64_t(batch.groups[a].num_requests) * batch.groups[a].prefix.num_tokens <
           int64_t(batch.groups[b].num_requests) * batch.groups[b].prefix.num_tokens;
  });
  int candidates = 0;
  const std::vector<uint8_t> none(num_groups, 0);
  std::vector<uint8_t> all = none;
  for (int g : eligible) all[g] = 1;
  const Scored cascade = ScoreLayout(batch, pool, base, params, none, &candidates);
  Scored best = cascade;
  Scored current = cascade;
  // A plain candidate is only chosen below its limit: the cascade's time less plain_margin, or, when
  // every group it plans plain has a tiny prefix, the cascade's time plus tiny_prefix_margin
  // (PlanOptions). One whose lower bound is not below its limit is skipped, and so are its supersets
  // (more bytes to stream).
  std::vector<uint8_t> tiny(num_groups, 0);  // PlanOptions::tiny_prefix_tokens applies to the group
  int64_t batch_suffix_tokens = 0;            // for the fine chunks (ScoreFineCascade)
  for (int g = 0; g < num_groups; ++g) {
    const PrefixGroup& grp = batch.groups[g];
    int64_t suffix_tokens = 0;
    for (int r = grp.first_request; r < grp.first_request + grp.num_requests; ++r)
      suffix_tokens += batch.suffix.SeqLen(r, pool.page_size);
    batch_suffix_tokens += suffix_tokens;
    tiny[g] = (options.tiny_prefix_head_dim == 0 || pool.head_dim == options.tiny_prefix_head_dim) &&
              grp.prefix.num_tokens <= options.tiny_prefix_tokens &&
              2 * suffix_tokens >= int64_t(grp.num_requests) * grp.prefix.num_tokens;
  }
  auto all_tiny = [&](const std::vector<uint8_t>& plain) {
    bool any = false;
    for (int g = 0; g < num_groups; ++g) {
      if (!plain[g]) continue;
      if (!tiny[g]) return false;
      any = true;
    }
    return any;
  };
  auto plain_limit = [&](const std::vector<uint8_t>& plain) {
    return cascade.us * (all_tiny(plain) ? 1.0 + options.tiny_prefix_margin : 1.0 - options.plain_margin);
  };
  auto cannot_win = [&](const std::vector<uint8_t>& plain) {
    return PlainStreamLowerBoundUs(batch, pool, plain, params) >= plain_limit(plain);
  };
  std::optional<Scored> tiny_best;  // the fastest candidate whose plain groups are all tiny
  auto note_tiny = [&](const Scored& s) {
    if (all_tiny(s.plain) && (!tiny_best || s.us < tiny_best->us)) tiny_best = s;
  };
  for (size_t i = 0; i < eligible.size(); ++i) {
    if (i + 1 == eligible.size()) break;  // the last flip is the all-plain candidate below
    std::vector<uint8_t> plain = current.plain;
    plain[eligible[i]] = 1;
    if (cannot_win(plain)) break;
    const Scored s = ScoreLayout(batch, pool, base, params, plain, &candidates);
    note_tiny(s);
    if (!(s.us < current.us)) break;
    current = s;
    if (s.us < best.us) best = s;
  }
  if (!eligible.empty() && !cannot_win(all)) {
    const Scored all_plain = ScoreLayout(batch, pool, base, params, all, &candidates);
    note_tiny(all_plain);
    if (all_plain.us < best.us) best = all_plain;
  }
  // Plain groups only below their limit (PlanOptions::plain_margin, tiny_prefix_margin).
  if (best.us > plain_limit(best.plain)) best = cascade;
  if (best.plain == none && tiny_best && tiny_best->us <= plain_limit(tiny_best->plain)) best = *tiny_best;
  // The all-cascade layout kept: the fine prefix chunks, for a clear predicted gain too.
  if (best.plain == none)
    if (const std::optional<Scored> fine =
            ScoreFineCascade(batch, pool, base, params, cascade.given_prefix_items, batch_suffix_tokens, &candidates))
      if (fine->us < cascade.us * (1.0 - options.plain_margin)) best = *fine;
  // The narrow prefix CTA's cascade, against whatever won so far (plain layouts included: where it
  // pays, beside a decode of many waves, plain decode is often the runner-up); not where the
  // tiny-prefix rule covers a group: a prefix of a tile or two leaves the decode nothing to hide
  // under, and there the model's gains for it were not measured (64/8 B128 P128 S64: predicted 10%
  // faster than plain decode, measured 10% slower; session 24).
  const bool any_tiny = std::find(tiny.begin(), tiny.end(), uint8_t(1)) != tiny.end();
  if (const std::optional<Scored> narrow =
          any_tiny ? std::nullopt : ScoreNarrowCascade(batch, pool, base, params, &candidates))
    if (narrow->us < std::min(best.us, cascade.us) * (1.0 - options.plain_margin)) best = *narrow;
  // The concurrent mode for an all-cascade winner, for a clear predicted gain too.
  ConcurrentNeighbours neighbours;
  bool concurrent_taken = false;
  if (best.plain == none)
    if (const std::optional<Scored> concurrent = ScoreConcurrentCascade(batch, pool, best.options, base, params,
                                                                        &candidates, report ? &neighbours : nullptr))
      if (concurrent->us < best.us * (1.0 - options.plain_margin)) best = *concurrent, concurrent_taken = true;
  if (report) {
    report->concurrent_fewer_sms = concurrent_taken ? neighbours.fewer_sms : std::nullopt;
    report->concurrent_more_sms = concurrent_taken ? neighbours.more_sms : std::nullopt;
    report->group_plain = best.plain;
    report->concurrent_decode_sms = best.options.concurrent_decode_sms;
    report->concurrent_decode_tma = best.options.concurrent_decode_tma;
    report->prefix_target_items = best.options.prefix_target_items;
    report->min_prefix_chunk = best.options.min_prefix_chunk;
    report->min_decode_chunk = best.options.min_decode_chunk;
    report->prefix_tile_rows = best.options.prefix_tile_rows;
    report->predicted_us = best.us;
    report->predicted_cascade_us = PredictCost(PlanFixed(batch, pool, base), params).total_us;
    // Not planned where its bound already loses (milliseconds of host time for a long prefix).
    report->predicted_plain_us =
        eligible.empty()  ? report->predicted_cascade_us
        : cannot_win(all) ? std::numeric_limits<double>::infinity()
                          : PredictCost(PlanFixed(PlainLayout(batch, all, pool.page_size), pool, base), params).total_us;
    report->candidates = candidates;
  }
  return PlanFixed(PlainLayout(batch, best.plain, pool.page_size), pool, best.options);
}

}  // namespace

// (plan.h) A lower bound of the cost model's time for a layout with the given plain groups,
// without building it: its decode streams each plain group's prefix once per request, at best at the
// fastest rate the model knows, and a step takes at least its decode part. Building such a plan
// costs O(requests × prefix pages) (at 128 requests × 262144 tokens, 14 ms of host time), so the
// planner skips plain candidates whose bound already loses.
double PlainStreamLowerBoundUs(const DecodeBatch& batch, const KvPoolShape& pool, const std::vector<uint8_t>& plain,
                               const CostModelParams& params) {
  double bytes = 0;
  for (size_t g = 0; g < batch.groups.size(); ++g)
    if (plain[g])
      bytes += double(batch.groups[g].num_requests) * batch.groups[g].prefix.num_tokens * pool.num_kv_heads *
               pool.head_dim * 2.0 * DTypeBytes(pool.dtype);
  const double fastest_gbs = std::max({params.decode_tensor_cores.stream_gbs, params.decode_tensor_cores.hbm_gbs,
                                       params.decode_cuda_cores.stream_gbs, params.decode_cuda_cores.hbm_gbs});
  return bytes / (fastest_gbs * 1e9) * 1e6;
}

bool CanPlanPlain(const PrefixGroup& group, int page_size) {
  return page_size > 0 && group.prefix.num_tokens % page_size == 0;
}

DecodeBatch PlainLayout(const DecodeBatch& batch, const std::vector<uint8_t>& plain, int page_size) {
  if (plain.empty() || std::none_of(plain.begin(), plain.end(), [](uint8_t x) { return x != 0; })) return batch;
  PREFIXD_CHECK_ARG(plain.size() == batch.groups.size(),
                    "PlainLayout: " << plain.size() << " layout flags for " << batch.groups.size() << " groups");
  PREFIXD_CHECK_ARG(page_size > 0, "PlainLayout: page_size must be positive, got " << page_size);
  const int b = batch.num_requests();
  std::vector<int32_t> prefix_first(b, 0), prefix_pages(b, 0);
  DecodeBatch out;
  out.num_qo_heads = batch.num_qo_heads;
  out.groups = batch.groups;
  for (size_t g = 0; g < batch.groups.size(); ++g) {
    if (!plain[g]) continue;
    const PrefixGroup& grp = batch.groups[g];
    PREFIXD_CHECK_ARG(CanPlanPlain(grp, page_size), "PlainLayout: group " << g << "'s prefix of " << grp.prefix.num_tokens
                                                                          << " tokens does not fill whole pages of "
                                                                          << page_size);
    for (int32_t r = grp.first_request; r < grp.first_request + grp.num_requests && r < b; ++r) {
      prefix_first[r] = grp.prefix.first_page;
      prefix_pages[r] = grp.prefix.num_tokens / page_size;
    }
    out.groups[g].prefix.num_tokens = 0;
  }
  out.suffix.indices.reserve(batch.suffix.indices.size());
  std::vector<int32_t> pages;
  for (int r = 0; r < b; ++r) {
    pages.resize(prefix_pages[r]);
    std::iota(pages.begin(), pages.end(), prefix_first[r]);
    pages.insert(pages.end(), batch.suffix.indices.begin() + batch.suffix.indptr[r],
                 batch.suffix.indices.begin() + batch.suffix.indptr[r + 1]);
    const int32_t last = batch.suffix.num_pages(r) > 0 ? batch.suffix.last_page_len[r] : page_size;
    out.suffix.AddSeq(pages, last);
  }
  return out;
}

CascadePlan PlanCascade(const DecodeBatch& batch, const KvPoolShape& pool, const PlanOptions& options) {
  return PlanCascade(batch, pool, options, nullptr);
}

CascadePlan PlanCascade(const DecodeBatch& batch, const KvPoolShape& pool, const PlanOptions& options,
                        PlanReport* report) {
  // Once, on the caller's options: with the layout choice the candidates' options are derived
  // from them (an unset prefix target, say, replaced by the item target), so a bad value could
  // otherwise pass unnoticed.
  ValidateOptions(options);
  if (!options.choose_layout) {
    CascadePlan plan = PlanFixed(batch, pool, options);
    if (report) {
      *report = PlanReport{};
      report->group_plain.assign(batch.groups.size(), 0);
      report->prefix_target_items = options.prefix_target_items > 0 ? options.prefix_target_items : options.target_items;
      report->min_prefix_chunk = options.min_prefix_chunk;
      report->min_decode_chunk = options.min_decode_chunk;
      report->prefix_tile_rows = options.prefix_tile_rows;
      report->concurrent_decode_sms = options.concurrent_decode_sms;
      report->concurrent_decode_tma = options.concurrent_decode_tma;
      report->candidates = 1;
    }
    return plan;
  }
  // PlanChosen plans the batch as given first, so errors name the caller's groups.
  return PlanChosen(batch, pool, options, report);
}

int CascadePlan::UniformRunStates() const {
  if (state_indptr.size() < 2) return 0;
  const int32_t n = state_indptr[1] - state_indptr[0];
  if (n <= 0) return 0;
  for (size_t r = 0; r < state_indptr.size(); ++r)
    if (int64_t(state_indptr[r]) != int64_t(r) * n) return 0;
  return n;
}

uint64_t CascadePlan::EmptyPrefixStates() const {
  if (group_num_chunks.empty() || num_kv_heads <= 0 || num_kv_heads > 64) return 0;
  const int32_t chunks = group_num_chunks.front();
  if (chunks <= 0 || std::any_of(group_num_chunks.begin(), group_num_chunks.end(), [&](int32_t c) { return c != chunks; }))
    return 0;
  uint64_t empty = 0, written = 0;  // (chunk, KV head) pairs with an empty item, with a non-empty one
  for (const PrefixWorkItem& it : prefix_items) {
    const int64_t bit = int64_t(it.chunk) * num_kv_heads + it.kv_head;
    if (bit < 0 || bit >= 64) continue;
    (it.kv_end > it.kv_begin ? written : empty) |= uint64_t(1) << bit;
  }
  return empty & ~written;
}

bool CascadePlan::MergeNeedsDecode() const {
  if (merge_requests.empty() || decode_items.empty()) return false;
  std::vector<char> merged(size_t(num_requests), 0);
  for (const int32_t r : merge_requests)
    if (r >= 0 && r < num_requests) merged[size_t(r)] = 1;
  for (const DecodeWorkItem& it : decode_items)
    if (it.request >= 0 && it.request < num_requests && merged[size_t(it.request)]) return true;
  return false;
}

namespace {

// A balanced plan's CTA chains (CascadePlan::prefix_balanced_ctas): CTA c starts at item c and
// follows cta_next; every item on exactly one chain (which also rules out cycles: a chain that
// came back would revisit an item). Without balance every cta_next is −1.
void ValidateCtaChains(const CascadePlan& p) {
  const int64_t n = int64_t(p.prefix_items.size());
  const int32_t ctas = p.prefix_balanced_ctas;
  if (ctas == 0) {
    for (int64_t i = 0; i < n; ++i)
      PREFIXD_CHECK_ARG(p.prefix_items[i].cta_next == -1, "plan: prefix item " << i << " has cta_next "
                                                              << p.prefix_items[i].cta_next
                                                              << " in a plan without a balanced grid");
    return;
  }
  PREFIXD_CHECK_ARG(ctas > 0 && ctas <= n, "plan: prefix_balanced_ctas " << ctas << " for " << n << " prefix items");
  std::vector<uint8_t> seen(size_t(n), 0);
  int64_t visited = 0;
  for (int32_t c = 0; c < ctas; ++c)
    for (int64_t i = c; i != -1; i = p.prefix_items[size_t(i)].cta_next) {
      PREFIXD_CHECK_ARG(i >= 0 && i < n && !seen[size_t(i)],
                        "plan: the chain of CTA " << c << " of the balanced prefix grid reaches item " << i
                                                  << (i >= 0 && i < n ? ", already on a chain" : ", out of range"));
      seen[size_t(i)] = 1;
      ++visited;
    }
  PREFIXD_CHECK_ARG(visited == n, "plan: the balanced prefix grid's " << ctas << " chains cover " << visited << " of "
                                                                      << n << " prefix items");
}

}  // namespace

bool CascadePlan::DecodeReadsPrefixStates() const {
  for (const DecodeWorkItem& it : decode_items)
    if (it.finish != 0) return true;
  return false;
}

void CascadePlan::Validate() const {
  PREFIXD_CHECK_ARG(num_requests >= 0, "plan: negative num_requests " << num_requests);
  PREFIXD_CHECK_ARG(num_kv_heads > 0 && num_qo_heads > 0 && num_qo_heads % num_kv_heads == 0,
                    "plan: bad head counts H_qo " << num_qo_heads << ", H_kv " << num_kv_heads);
  PREFIXD_CHECK_ARG(head_dim == 64 || head_dim == 128 || head_dim == 256, "plan: unsupported head_dim " << head_dim);
  PREFIXD_CHECK_ARG(page_size > 0 && num_pages > 0, "plan: bad pool page_size " << page_size << " / num_pages " << num_pages);
  PREFIXD_CHECK_ARG(suffix.num_seqs() == num_requests,
                    "plan: suffix page table has " << suffix.num_seqs() << " sequences for " << num_requests << " requests");
  suffix.Validate(num_pages, page_size);
  ValidateGroups(groups, num_requests, num_pages, page_size);
  const int num_groups = int(groups.size());
  PREFIXD_CHECK_ARG(int(group_num_chunks.size()) == num_groups && int(request_group.size()) == num_requests &&
                        int(state_indptr.size()) == num_requests + 1,
                    "plan: array sizes disagree with " << num_groups << " groups and " << num_requests << " requests");
  for (int gi = 0; gi < num_groups; ++gi) {
    const int32_t chunks = group_num_chunks[gi], tokens = groups[gi].prefix.num_tokens;
    PREFIXD_CHECK_ARG(tokens == 0 ? chunks == 0 : (chunks >= 1 && chunks <= tokens),
                      "plan: group " << gi << " has " << chunks << " prefix chunks for " << tokens << " tokens");
    for (int32_t r = groups[gi].first_request; r < groups[gi].first_request + groups[gi].num_requests; ++r)
      PREFIXD_CHECK_ARG(request_group[r] == gi, "plan: request " << r << " is listed in group " << request_group[r]
                                                                 << " but group " << gi << " covers it");
  }
  PREFIXD_CHECK_ARG(state_indptr[0] == 0, "plan: state_indptr must start with 0");
  for (int r = 0; r < num_requests; ++r)
    PREFIXD_CHECK_ARG(state_indptr[r + 1] - int64_t(state_indptr[r]) >= group_num_chunks[request_group[r]],
                      "plan: request " << r << " has " << state_indptr[r + 1] - int64_t(state_indptr[r])
                                       << " state slots, fewer than its group's prefix chunks");
  const int g = gqa_group_size();
  for (size_t i = 0; i < prefix_items.size(); ++i) {
    const PrefixWorkItem& it = prefix_items[i];
    PREFIXD_CHECK_ARG(it.group >= 0 && it.group < num_groups, "plan: prefix item " << i << " names group " << it.group);
    const PrefixGroup& grp = groups[it.group];
    PREFIXD_CHECK_ARG(it.kv_head >= 0 && it.kv_head < num_kv_heads && it.row_begin >= 0 && it.row_begin < it.row_end &&
                          int64_t(it.row_end) <= int64_t(grp.num_requests) * g && it.kv_begin >= 0 &&
                          it.kv_begin <= it.kv_end && it.kv_end <= grp.prefix.num_tokens && it.chunk >= 0 &&
                          it.chunk < group_num_chunks[it.group],
                      "plan: prefix item " << i << " (group " << it.group << ", kv head " << it.kv_head << ", rows ["
                                           << it.row_begin << ", " << it.row_end << "), tokens [" << it.kv_begin << ", "
                                           << it.kv_end << "), chunk " << it.chunk << ") is out of range");
  }
  ValidateCtaChains(*this);
  PREFIXD_CHECK_ARG(concurrent_decode_sms >= 0, "plan: negative concurrent_decode_sms " << concurrent_decode_sms);
  PREFIXD_CHECK_ARG(concurrent_decode_tma == 0 || (concurrent_decode_tma == 1 && concurrent_decode_sms > 0),
                    "plan: concurrent_decode_tma " << concurrent_decode_tma << " (0, or 1 with concurrent_decode_sms > 0; "
                                                   << "concurrent_decode_sms is " << concurrent_decode_sms << ")");
  PREFIXD_CHECK_ARG(concurrent_tma_warps == 0 || (concurrent_decode_tma == 1 &&
                                                  (concurrent_tma_warps == 8 || concurrent_tma_warps == 12)),
                    "plan: concurrent_tma_warps " << concurrent_tma_warps << " (0, or 8 or 12 with concurrent_decode_tma "
                                                  << "1; concurrent_decode_tma is " << concurrent_decode_tma << ")");
  // Every request is finished exactly once: by the merge step (listed in merge_requests) or by its
  // decode items, which then are one finishing item per KV head covering the whole suffix.
  std::vector<uint8_t> merged(num_requests, 0);
  for (size_t i = 0; i < merge_requests.size(); ++i) {
    const int32_t r = merge_requests[i];
    PREFIXD_CHECK_ARG(r >= 0 && r < num_requests && (i == 0 || r > merge_requests[i - 1]),
                      "plan: merge_requests[" << i << "] = " << r << " is out of range or not ascending");
    merged[r] = 1;
  }
  std::vector<int64_t> finishing;  // (request, KV head) of every finishing item
  for (size_t i = 0; i < decode_items.size(); ++i) {
    const DecodeWorkItem& it = decode_items[i];
    PREFIXD_CHECK_ARG(it.request >= 0 && it.request < num_requests, "plan: decode item " << i << " names request " << it.request);
    const int r = it.request;
    const int32_t run = state_indptr[r + 1] - state_indptr[r], first = group_num_chunks[request_group[r]];
    PREFIXD_CHECK_ARG(it.kv_head >= 0 && it.kv_head < num_kv_heads && it.kv_begin >= 0 && it.kv_begin < it.kv_end &&
                          it.kv_end <= suffix.SeqLen(r, page_size) && it.slot_offset >= first &&
                          it.slot_offset < run && (it.finish == 0 || it.finish == 1),
                      "plan: decode item " << i << " (request " << r << ", kv head " << it.kv_head << ", tokens ["
                                           << it.kv_begin << ", " << it.kv_end << "), slot offset " << it.slot_offset
                                           << ", finish " << it.finish << ") is out of range");
    PREFIXD_CHECK_ARG(it.finish == (merged[r] ? 0 : 1),
                      "plan: decode item " << i << " has finish " << it.finish << " but request " << r << " is "
                                           << (merged[r] ? "" : "not ") << "in merge_requests");
    if (it.finish) {
      PREFIXD_CHECK_ARG(it.kv_begin == 0 && it.kv_end == suffix.SeqLen(r, page_size) && it.slot_offset == first &&
                            run == first + 1,
                        "plan: decode item " << i << " finishes request " << r << " but is not its only suffix chunk");
      finishing.push_back(int64_t(r) * num_kv_heads + it.kv_head);
    }
  }
  // Distinct (request, head) pairs of non-merged requests, as many as those requests have heads:
  // then every such pair has exactly one finishing item.
  std::sort(finishing.begin(), finishing.end());
  for (size_t i = 1; i < finishing.size(); ++i)
    PREFIXD_CHECK_ARG(finishing[i] != finishing[i - 1], "plan: request " << finishing[i] / num_kv_heads << ", KV head "
                                                                         << finishing[i] % num_kv_heads
                                                                         << " has several finishing decode items");
  const int64_t finished = int64_t(num_requests) - int64_t(merge_requests.size());
  PREFIXD_CHECK_ARG(int64_t(finishing.size()) == finished * num_kv_heads,
                    "plan: " << finished << " requests are not in merge_requests but " << finishing.size()
                             << " finishing decode items cover them (need one per KV head: "
                             << finished * num_kv_heads << ")");
}

std::vector<int32_t> ScheduleKey(const CascadePlan& plan) {
  if (plan.prefix_balanced_ctas == 0 || plan.prefix_balanced_ctas != int64_t(plan.prefix_items.size()))
    return plan.Serialize();
  CascadePlan round_robin = plan;  // every cta_next is −1 already: each chain is its first item
  round_robin.prefix_balanced_ctas = 0;
  return round_robin.Serialize();
}

std::vector<int32_t> CascadePlan::Serialize() const {
  std::vector<int32_t> out;
  out.reserve(kHeaderInts + prefix_items.size() * kPrefixItemInts + decode_items.size() * kDecodeItemInts +
              groups.size() * (kGroupInts + 1) + state_indptr.size() + request_group.size() + suffix.indptr.size() +
              suffix.indices.size() + suffix.last_page_len.size() + merge_requests.size());
  out.insert(out.end(), {kPlanMagic, kPlanVersion, num_requests, num_qo_heads, num_kv_heads, head_dim, page_size,
                         num_pages, int32_t(prefix_items.size()), int32_t(decode_items.size()), int32_t(groups.size()),
                         int32_t(suffix.indices.size()), int32_t(merge_requests.size()), prefix_balanced_ctas,
                         concurrent_decode_sms, concurrent_decode_tma, concurrent_tma_warps});
  for (const auto& it : prefix_items)
    out.insert(out.end(),
               {it.group, it.kv_head, it.row_begin, it.row_end, it.kv_begin, it.kv_end, it.chunk, it.cta_next});
  for (const auto& it : decode_items)
    out.insert(out.end(), {it.request, it.kv_head, it.kv_begin, it.kv_end, it.slot_offset, it.finish});
  auto append = [&out](const std::vector<int32_t>& v) { out.insert(out.end(), v.begin(), v.end()); };
  append(state_indptr);
  append(request_group);
  for (const auto& g : groups) out.insert(out.end(), {g.prefix.first_page, g.prefix.num_tokens, g.first_request, g.num_requests});
  append(group_num_chunks);
  append(suffix.indptr);
  append(suffix.indices);
  append(suffix.last_page_len);
  append(merge_requests);
  return out;
}

CascadePlan CascadePlan::Deserialize(const std::vector<int32_t>& data) { return Deserialize(data.data(), data.size()); }

CascadePlan CascadePlan::Deserialize(const int32_t* data, size_t size) {
  PREFIXD_CHECK_ARG(data != nullptr || size == 0, "serialised plan: null buffer of " << size << " ints");
  PREFIXD_CHECK_ARG(size >= size_t(kHeaderInts), "serialised plan: " << size << " ints, shorter than its "
                                                                      << kHeaderInts << "-int header");
  PREFIXD_CHECK_ARG(data[0] == kPlanMagic, "serialised plan: bad magic " << data[0]);
  PREFIXD_CHECK_ARG(data[1] == kPlanVersion, "serialised plan: version " << data[1] << ", expected " << kPlanVersion);
  Reader in(data, size);
  in.Next();
  in.Next();
  CascadePlan p;
  p.num_requests = in.Next();
  p.num_qo_heads = in.Next();
  p.num_kv_heads = in.Next();
  p.head_dim = in.Next();
  p.page_size = in.Next();
  p.num_pages = in.Next();
  const int32_t n_prefix = in.Next(), n_decode = in.Next(), n_groups = in.Next(), n_indices = in.Next(),
                n_merge = in.Next();
  p.prefix_balanced_ctas = in.Next();
  p.concurrent_decode_sms = in.Next();
  p.concurrent_decode_tma = in.Next();
  p.concurrent_tma_warps = in.Next();
  PREFIXD_CHECK_ARG(p.num_requests >= 0 && n_prefix >= 0 && n_decode >= 0 && n_groups >= 0 && n_indices >= 0 &&
                        n_merge >= 0,
                    "serialised plan: negative count in header (requests " << p.num_requests << ", prefix items "
                                                                           << n_prefix << ", decode items " << n_decode
                                                                           << ", groups " << n_groups << ", pages "
                                                                           << n_indices << ", merged requests "
                                                                           << n_merge << ")");
  const int64_t b = p.num_requests;
  const int64_t expected = kHeaderInts + int64_t(n_prefix) * kPrefixItemInts + int64_t(n_decode) * kDecodeItemInts +
                           (b + 1) + b + int64_t(n_groups) * (kGroupInts + 1) + (b + 1) + n_indices + b + n_merge;
  PREFIXD_CHECK_ARG(int64_t(size) == expected,
                    "serialised plan: " << size << " ints, but its header implies " << expected);
  p.prefix_items.resize(n_prefix);
  for (auto& it : p.prefix_items) {
    it.group = in.Next();
    it.kv_head = in.Next();
    it.row_begin = in.Next();
    it.row_end = in.Next();
    it.kv_begin = in.Next();
    it.kv_end = in.Next();
    it.chunk = in.Next();
    it.cta_next = in.Next();
  }
  p.decode_items.resize(n_decode);
  for (auto& it : p.decode_items) {
    it.request = in.Next();
    it.kv_head = in.Next();
    it.kv_begin = in.Next();
    it.kv_end = in.Next();
    it.slot_offset = in.Next();
    it.finish = in.Next();
  }
  auto read = [&in](std::vector<int32_t>* v, int64_t n) {
    v->resize(n);
    for (auto& x : *v) x = in.Next();
  };
  read(&p.state_indptr, b + 1);
  read(&p.request_group, b);
  p.groups.resize(n_groups);
  for (auto& g : p.groups) {
    g.prefix.first_page = in.Next();
    g.prefix.num_tokens = in.Next();
    g.first_request = in.Next();
    g.num_requests = in.Next();
  }
  read(&p.group_num_chunks, n_groups);
  read(&p.suffix.indptr, b + 1);
  read(&p.suffix.indices, n_indices);
  read(&p.suffix.last_page_len, b);
  read(&p.merge_requests, n_merge);
  PREFIXD_CHECK_INTERNAL(in.pos() == size, "read " << in.pos() << " of " << size << " ints");
  p.Validate();
  return p;
}

}  // namespace prefixd::kernels
