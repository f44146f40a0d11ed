// The coordinator alone (no MPI): admission control, lifecycle, placement decisions and the
// step plans it writes.
#include <gtest/gtest.h>

#include <random>

#include "prefixd/coordinator/coordinator.h"
#include "support/test_support.h"
#include "unit/kernels/expect_error.h"

namespace prefixd::coordinator {
namespace {

using worker::EventKind;

ClusterConfig Config(int ranks, int pages, int page_size = 16, int32_t shard_min = 64) {
  ClusterConfig c;
  c.num_ranks = ranks;
  c.pages_per_rank = pages;
  c.page_size = page_size;
  c.placement.shard_min_tokens = shard_min;
  c.vocab = 1000;
  return c;
}

std::vector<int32_t> Tokens(std::mt19937_64& rng, int n) {
  std::vector<int32_t> t(n);
  for (auto& x : t) x = int32_t(rng() % 1000);
  return t;
}

int64_t FreePages(const Coordinator& c) {
  int64_t n = 0;
  for (const RankLoad& l : c.Loads()) n += l.free_pages;
  return n;
}

TEST(Coordinator, LongPrefixIsShardedShortOneKeptWhole) {
  std::mt19937_64 rng(test::TestSeed());
  Coordinator c(Config(4, 1000));
  const int32_t big = c.AddPrefix(Tokens(rng, 4096));
  const PrefixRecord& rb = c.prefixes().at(big);
  ASSERT_EQ(rb.shards.size(), 4u);
  EXPECT_EQ(rb.holders, (std::vector<int32_t>{0, 1, 2, 3}));
  for (const auto& s : rb.shards) EXPECT_EQ(s.num_tokens, 1024);
  const int32_t small = c.AddPrefix(Tokens(rng, 100));
  ASSERT_EQ(c.prefixes().at(small).holders.size(), 1u);
  const int holder = c.prefixes().at(small).holders[0];
  // Its requests are owned by its holder: no communication at all.
  for (int i = 0; i < 3; ++i) {
    const int32_t r = c.AddRequest(RequestSpec{small, {1, 2, 3}, 4, -1});
    EXPECT_EQ(c.requests().at(r).owner, holder);
  }
  // Requests of the sharded prefix go where suffix memory is lowest, evening it out.
  for (int i = 0; i < 9; ++i) c.AddRequest(RequestSpec{big, {7}, 15, -1});
  for (const RankLoad& l : c.Loads()) EXPECT_EQ(l.suffix_pages, 3);
}

TEST(Coordinator, IdenticalPrefixesAreStoredOnce) {
  std::mt19937_64 rng(test::TestSeed());
  Coordinator c(Config(2, 100));
  const std::vector<int32_t> doc = Tokens(rng, 300);
  const int32_t a = c.AddPrefix(doc);
  const int64_t free_after_first = FreePages(c);
  EXPECT_EQ(c.AddPrefix(doc), a);
  EXPECT_EQ(FreePages(c), free_after_first);
  EXPECT_EQ(c.prefixes().at(a).registrations, 2);
  EXPECT_EQ(c.prefixes().size(), 1u);
}

TEST(Coordinator, AdmissionErrorsNameTheCulpritAndChangeNothing) {
  std::mt19937_64 rng(test::TestSeed());
  Coordinator c(Config(2, 20, 16, 64));
  const int32_t p = c.AddPrefix(Tokens(rng, 200));  // 13 pages over 2 ranks
  c.AddRequest(RequestSpec{p, {1, 2}, 10, -1});
  const worker::StepPlan first = c.MakeStep();
  const std::vector<RankLoad> before = c.Loads();
  const size_t requests_before = c.requests().size();

  EXPECT_PREFIXD_ERROR(c.AddRequest(RequestSpec{p + 5, {1}, 1, -1}), ErrorKind::kNotFound, "prefix " + std::to_string(p + 5));
  EXPECT_PREFIXD_ERROR(c.AddRequest(RequestSpec{p, {1}, 0, -1}), ErrorKind::kInvalidArgument, "decode_steps");
  EXPECT_PREFIXD_ERROR(c.AddRequest(RequestSpec{p, {1, 5000}, 3, -1}), ErrorKind::kInvalidArgument, "token 1 is 5000");
  EXPECT_PREFIXD_ERROR(c.AddRequest(RequestSpec{p, {1}, 3, 7}), ErrorKind::kInvalidArgument, "owner rank 7");
  EXPECT_PREFIXD_ERROR(c.AddRequest(RequestSpec{p, {1}, 16 * 21, -1}), ErrorKind::kOutOfMemory, "whole pool");
  EXPECT_PREFIXD_ERROR(c.AddRequest(RequestSpec{p, {1}, 16 * 15, -1}), ErrorKind::kOutOfMemory, "free KV pages");
  EXPECT_PREFIXD_ERROR(c.AddPrefix(Tokens(rng, 16 * 40)), ErrorKind::kOutOfMemory,
                       "a new prefix of 640 tokens: its shard of 320 tokens needs 20 contiguous KV pages");
  EXPECT_PREFIXD_ERROR(c.AddPrefix({}), ErrorKind::kInvalidArgument, "at least one token");
  EXPECT_PREFIXD_ERROR(c.AddPrefix({3, -1}), ErrorKind::kInvalidArgument, "token 1 is -1");
  PrefixHint hint;
  hint.shard_tokens = {5};
  EXPECT_PREFIXD_ERROR(c.AddPrefix(Tokens(rng, 5), &hint), ErrorKind::kInvalidArgument, "1 shards for 2 ranks");
  hint.shard_tokens = {5, 4};
  EXPECT_PREFIXD_ERROR(c.AddPrefix(Tokens(rng, 10), &hint), ErrorKind::kInvalidArgument, "covers 9 of 10");
  EXPECT_PREFIXD_ERROR(c.RemoveRequest(99), ErrorKind::kNotFound, "request 99");
  EXPECT_PREFIXD_ERROR(c.ReleasePrefix(99), ErrorKind::kNotFound, "prefix 99");

  const std::vector<RankLoad> after = c.Loads();
  for (size_t r = 0; r < before.size(); ++r) {
    EXPECT_EQ(after[r].free_pages, before[r].free_pages) << "rank " << r;
    EXPECT_EQ(after[r].prefix_tokens, before[r].prefix_tokens) << "rank " << r;
    EXPECT_EQ(after[r].suffix_pages, before[r].suffix_pages) << "rank " << r;
  }
  EXPECT_EQ(c.requests().size(), requests_before);
  EXPECT_EQ(c.prefixes().size(), 1u);
  EXPECT_FALSE(c.HasPendingEvents());
  // The admitted request decodes on.
  const worker::StepPlan next = c.MakeStep();
  ASSERT_EQ(next.decode.size(), 1u);
  EXPECT_EQ(next.decode[0].request_id, first.decode[0].request_id);
}

TEST(Coordinator, MultiRankPrefixFailureRollsBackEveryShard) {
  std::mt19937_64 rng(test::TestSeed());
  Coordinator c(Config(3, 10, 4, 4));
  PrefixHint hint;
  hint.shard_tokens = {3, 0, 2};
  c.AddPrefix(Tokens(rng, 5), &hint);  // ranks 0 and 2: one page each
  const std::vector<RankLoad> before = c.Loads();
  hint.shard_tokens = {8, 8, 40};  // rank 2 has 9 pages left: 10 do not fit
  EXPECT_PREFIXD_ERROR(c.AddPrefix(Tokens(rng, 56), &hint), ErrorKind::kOutOfMemory, "rank 2");
  const std::vector<RankLoad> after = c.Loads();
  for (size_t r = 0; r < 3; ++r) EXPECT_EQ(after[r].free_pages, before[r].free_pages) << "rank " << r;
}

TEST(Coordinator, LifecycleFreesAPrefixWithItsLastRequest) {
  std::mt19937_64 rng(test::TestSeed());
  Coordinator c(Config(2, 50, 8, 16));
  const int64_t all_free = FreePages(c);
  const int32_t p = c.AddPrefix(Tokens(rng, 100));
  const int32_t r0 = c.AddRequest(RequestSpec{p, {1}, 2, -1});
  const int32_t r1 = c.AddRequest(RequestSpec{p, {2}, 5, -1});
  c.ReleasePrefix(p);  // only the requests hold it now
  EXPECT_PREFIXD_ERROR(c.ReleasePrefix(p), ErrorKind::kInvalidArgument, "no registration");
  worker::StepPlan s0 = c.MakeStep();
  ASSERT_EQ(s0.events.size(), 3u);  // add prefix, add r0, add r1
  EXPECT_EQ(s0.events[0].kind, EventKind::kAddPrefix);
  EXPECT_EQ(s0.decode.size(), 2u);
  worker::StepPlan s1 = c.MakeStep();  // r0 decodes its last token
  EXPECT_EQ(s1.decode.size(), 2u);
  EXPECT_TRUE(c.requests().count(r1));
  EXPECT_FALSE(c.requests().count(r0));
  std::vector<int32_t> prefix, suffix;
  c.RequestTokens(r0, &prefix, &suffix);  // still answerable for the step it finished in
  EXPECT_EQ(prefix.size(), 100u);
  EXPECT_EQ(suffix.size(), 3u);
  worker::StepPlan s2 = c.MakeStep();
  ASSERT_EQ(s2.events.size(), 1u);
  EXPECT_EQ(s2.events[0].kind, EventKind::kRemoveRequest);
  EXPECT_EQ(s2.events[0].id, r0);
  EXPECT_EQ(c.prefixes().count(p), 1u);
  c.RemoveRequest(r1);  // the last one leaves early
  EXPECT_EQ(c.prefixes().count(p), 0u);
  EXPECT_EQ(FreePages(c), all_free);
  worker::StepPlan s3 = c.MakeStep();
  ASSERT_EQ(s3.events.size(), 2u);
  EXPECT_EQ(s3.events[0].kind, EventKind::kRemoveRequest);
  EXPECT_EQ(s3.events[1].kind, EventKind::kRemovePrefix);
  EXPECT_EQ(s3.events[1].id, p);
  EXPECT_TRUE(s3.decode.empty());
  EXPECT_PREFIXD_ERROR(c.AddRequest(RequestSpec{p, {1}, 1, -1}), ErrorKind::kNotFound, "not registered");
}

TEST(Coordinator, PlansAreDeterministicAndOrderedByPrefix) {
  auto run = [](uint64_t seed) {
    std::mt19937_64 rng(seed);
    Coordinator c(Config(3, 200, 16, 64));
    const int32_t a = c.AddPrefix(Tokens(rng, 500)), b = c.AddPrefix(Tokens(rng, 90));
    for (int i = 0; i < 6; ++i) c.AddRequest(RequestSpec{i % 2 ? a : b, Tokens(rng, 3), 3, -1});
    c.AddRequest(RequestSpec{-1, Tokens(rng, 3), 2, -1});
    std::vector<std::vector<int32_t>> wire;
    for (int s = 0; s < 4; ++s) wire.push_back(c.MakeStep().Serialize());
    return wire;
  };
  const uint64_t seed = test::TestSeed();
  EXPECT_EQ(run(seed), run(seed));
  std::mt19937_64 rng(seed);
  Coordinator c(Config(3, 200, 16, 64));
  const int32_t a = c.AddPrefix(Tokens(rng, 500)), b = c.AddPrefix(Tokens(rng, 90));
  c.AddRequest(RequestSpec{b, {}, 2, -1});
  c.AddRequest(RequestSpec{-1, {4}, 2, -1});
  c.AddRequest(RequestSpec{a, {}, 2, -1});
  const worker::StepPlan plan = c.MakeStep();
  ASSERT_EQ(plan.decode.size(), 3u);
  EXPECT_EQ(plan.decode[0].request_id, 1);  // no prefix (−1) first, then a, then b
  EXPECT_EQ(plan.decode[1].request_id, 2);
  EXPECT_EQ(plan.decode[2].request_id, 0);
  for (const auto& e : plan.decode) EXPECT_LT(e.token, 1000);
}

}  // namespace
}  // namespace prefixd::coordinator
