#include "prefixd/coordinator/placement.h"

#include <algorithm>
#include <numeric>

#include "prefixd/common/error.h"

namespace prefixd::coordinator {

int ChooseShardCount(int64_t num_tokens, int num_ranks, int page_size, const PlacementOptions& options) {
  PREFIXD_CHECK_ARG(num_ranks >= 1 && page_size >= 1 && options.shard_min_tokens >= 1,
                    "placement: bad ranks " << num_ranks << " / page size " << page_size << " / shard_min_tokens "
                                            << options.shard_min_tokens);
  if (num_tokens < 2 * int64_t(options.shard_min_tokens)) return 1;
  int64_t k = num_tokens / options.shard_min_tokens;
  k = std::min<int64_t>(k, num_ranks);
  if (options.max_shards > 0) k = std::min<int64_t>(k, options.max_shards);
  const int64_t pages = (num_tokens + page_size - 1) / page_size;
  return int(std::max<int64_t>(1, std::min(k, pages)));
}

std::vector<int32_t> SplitTokens(int32_t num_tokens, int num_shards, int page_size) {
  PREFIXD_CHECK_ARG(num_tokens >= 0 && num_shards >= 1 && page_size >= 1,
                    "placement: cannot split " << num_tokens << " tokens into " << num_shards << " shards");
  const int64_t pages = (int64_t(num_tokens) + page_size - 1) / page_size;
  std::vector<int32_t> out(num_shards, 0);
  int64_t left = num_tokens;
  for (int i = 0; i < num_shards; ++i) {
    const int64_t my_pages = pages / num_shards + (i < pages % num_shards ? 1 : 0);
    const int64_t t = std::min<int64_t>(left, my_pages * page_size);
    out[i] = int32_t(t);
    left -= t;
  }
  return out;
}

std::vector<int> ChooseShardRanks(const std::vector<RankLoad>& loads, int num_shards) {
  PREFIXD_CHECK_ARG(num_shards >= 1 && num_shards <= int(loads.size()),
                    "placement: " << num_shards << " shards on " << loads.size() << " ranks");
  std::vector<int> ranks(loads.size());
  std::iota(ranks.begin(), ranks.end(), 0);
  std::stable_sort(ranks.begin(), ranks.end(), [&](int a, int b) {
    if (loads[a].prefix_tokens != loads[b].prefix_tokens) return loads[a].prefix_tokens < loads[b].prefix_tokens;
    return loads[a].free_pages > loads[b].free_pages;
  });
  ranks.resize(num_shards);
  std::sort(ranks.begin(), ranks.end());
  return ranks;
}

std::vector<int> OwnerCandidates(const std::vector<RankLoad>& loads, const std::vector<int32_t>& holders) {
  std::vector<int> ranks(loads.size());
  std::iota(ranks.begin(), ranks.end(), 0);
  auto is_holder = [&](int r) { return std::find(holders.begin(), holders.end(), r) != holders.end(); };
  std::stable_sort(ranks.begin(), ranks.end(), [&](int a, int b) {
    const bool ha = is_holder(a), hb = is_holder(b);
    if (ha != hb) return ha;
    return loads[a].suffix_pages < loads[b].suffix_pages;
  });
  return ranks;
}

}  // namespace prefixd::coordinator
