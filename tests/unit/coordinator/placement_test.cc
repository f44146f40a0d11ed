// Registry and placement: pure functions and small state, no MPI.
#include <gtest/gtest.h>

#include <numeric>
#include <random>

#include "prefixd/coordinator/placement.h"
#include "prefixd/coordinator/registry.h"
#include "support/test_support.h"
#include "unit/kernels/expect_error.h"

namespace prefixd::coordinator {
namespace {

TEST(PrefixRegistry, IdenticalSequencesShareAnId) {
  PrefixRegistry reg;
  const std::vector<int32_t> a = {5, 6, 7}, b = {5, 6, 8}, a2 = {5, 6, 7};
  EXPECT_EQ(reg.Find(a), -1);
  const int32_t ia = reg.Insert(a);
  EXPECT_EQ(reg.Find(a2), ia);
  EXPECT_EQ(reg.Find(b), -1);
  const int32_t ib = reg.Insert(b);
  EXPECT_NE(ia, ib);
  EXPECT_EQ(reg.Find({5, 6}), -1);  // a proper prefix is another sequence
  EXPECT_EQ(reg.tokens(ib), b);
  reg.Erase(ia);
  EXPECT_EQ(reg.Find(a), -1);
  EXPECT_EQ(reg.Find(b), ib);
  EXPECT_PREFIXD_ERROR(reg.Erase(ia), ErrorKind::kNotFound, "unknown prefix");
  EXPECT_PREFIXD_ERROR(reg.tokens(ia), ErrorKind::kNotFound, "unknown prefix");
  EXPECT_NE(reg.Insert(a), ia);  // ids are never reused
}

TEST(Placement, ShardCount) {
  PlacementOptions o;
  o.shard_min_tokens = 1000;
  EXPECT_EQ(ChooseShardCount(1999, 8, 16, o), 1);     // short: whole on one rank
  EXPECT_EQ(ChooseShardCount(2000, 8, 16, o), 2);
  EXPECT_EQ(ChooseShardCount(131072, 4, 16, o), 4);   // long: every rank
  EXPECT_EQ(ChooseShardCount(131072, 1, 16, o), 1);
  o.max_shards = 3;
  EXPECT_EQ(ChooseShardCount(131072, 4, 16, o), 3);
  o = PlacementOptions{};
  o.shard_min_tokens = 1;
  EXPECT_EQ(ChooseShardCount(5, 8, 4, o), 2);  // never more shards than pages
}

TEST(Placement, SplitTokensIsBalancedInPages) {
  std::mt19937_64 rng(test::TestSeed());
  for (int trial = 0; trial < 200; ++trial) {
    const int page = 1 + int(rng() % 32), shards = 1 + int(rng() % 8);
    const int32_t tokens = int32_t(rng() % 5000);
    const std::vector<int32_t> s = SplitTokens(tokens, shards, page);
    ASSERT_EQ(int(s.size()), shards);
    EXPECT_EQ(std::accumulate(s.begin(), s.end(), int64_t(0)), tokens);
    int64_t lo = INT64_MAX, hi = 0;
    for (int i = 0; i < shards; ++i) {
      const int64_t pages = (s[i] + page - 1) / page;
      lo = std::min(lo, pages);
      hi = std::max(hi, pages);
      const bool last_nonempty = i + 1 == shards || s[i + 1] == 0;
      if (!last_nonempty) EXPECT_EQ(s[i] % page, 0) << "only the last piece may end mid-page";
    }
    EXPECT_LE(hi - lo, 1) << tokens << " tokens, " << shards << " shards, page " << page;
  }
}

TEST(Placement, ShardRanksPreferTheLeastLoaded) {
  std::vector<RankLoad> loads(4);
  loads[0].prefix_tokens = 100;
  loads[1].prefix_tokens = 0;
  loads[2].prefix_tokens = 50;
  loads[3].prefix_tokens = 0;
  loads[3].free_pages = 10;
  EXPECT_EQ(ChooseShardRanks(loads, 1), (std::vector<int>{3}));
  EXPECT_EQ(ChooseShardRanks(loads, 3), (std::vector<int>{1, 2, 3}));
  EXPECT_INVALID_ARGUMENT(ChooseShardRanks(loads, 5), "5 shards");
}

TEST(Placement, OwnersPreferHoldersThenLeastSuffixMemory) {
  std::vector<RankLoad> loads(4);
  loads[0].suffix_pages = 5;
  loads[1].suffix_pages = 1;
  loads[2].suffix_pages = 0;
  loads[3].suffix_pages = 3;
  EXPECT_EQ(OwnerCandidates(loads, {0, 3}), (std::vector<int>{3, 0, 2, 1}));
  EXPECT_EQ(OwnerCandidates(loads, {}), (std::vector<int>{2, 1, 3, 0}));
}

}  // namespace
}  // namespace prefixd::coordinator
