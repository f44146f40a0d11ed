// Placement: where a prefix's shards go and which rank owns a request. Pure functions of the
// ranks' loads, so they are unit-tested on their own; the Coordinator applies them and then
// reserves the pages.
//
// Policy (DESIGN.md): a long prefix is cut into contiguous shards of balanced size over several
// ranks (its attention then runs on all of them at once; states are merged exactly); a short one
// lives whole on one rank, the least loaded, and its requests are owned there too, so that they
// need no communication at all. Request owners balance suffix memory.
#pragma once

#include <cstdint>
#include <vector>

namespace prefixd::coordinator {

struct PlacementOptions {
  // Prefixes shorter than 2 × this live whole on one rank; longer ones are cut into about
  // length / shard_min_tokens shards, at most one per rank.
  int32_t shard_min_tokens = 8192;
  // Cap on the shard count of one prefix (0: the number of ranks).
  int max_shards = 0;
};

struct RankLoad {
  int32_t free_pages = 0;
  int64_t prefix_tokens = 0;   // tokens of prefix shards on the rank
  int64_t suffix_pages = 0;    // pages reserved for owned suffixes
};

// How many shards a prefix of num_tokens gets on num_ranks ranks.
int ChooseShardCount(int64_t num_tokens, int num_ranks, int page_size, const PlacementOptions& options);

// Splits num_tokens into num_shards contiguous pieces whose page counts differ by at most one
// (earlier pieces get the extra pages; every piece but the last is whole pages). Pieces may be 0
// when there are fewer pages than shards.
std::vector<int32_t> SplitTokens(int32_t num_tokens, int num_shards, int page_size);

// The ranks to hold num_shards shards: least prefix tokens first, then most free pages, then the
// lower rank; returned in ascending rank order (shards go in position order over them).
std::vector<int> ChooseShardRanks(const std::vector<RankLoad>& loads, int num_shards);

// Candidate owners of a request, best first: the prefix's holders (a holder owning it saves the
// suffix-only state transfer; with one holder, no communication at all) by least suffix pages,
// then every other rank by least suffix pages. Ties go to the lower rank.
std::vector<int> OwnerCandidates(const std::vector<RankLoad>& loads, const std::vector<int32_t>& holders);

}  // namespace prefixd::coordinator
