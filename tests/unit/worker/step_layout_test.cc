// Step layouts of all ranks, checked against each other by simulating one step's exchanges in
// plain host code: every message a rank sends must be exactly what its peer expects, and every
// owner must end up with one contribution from each holder of its request's prefix (its own
// local row included) and nothing else. Both reductions are simulated.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <vector>

#include "prefixd/worker/step_layout.h"
#include "support/test_support.h"
#include "unit/kernels/expect_error.h"

namespace prefixd::worker {
namespace {

// A random step: some prefixes with random holder sets (possibly empty), requests with random
// prefixes (or none) and owners.
LayoutInput RandomStep(std::mt19937_64& rng, int num_ranks, int num_requests) {
  LayoutInput in;
  in.num_ranks = num_ranks;
  const int num_prefixes = 1 + int(rng() % 4);
  for (int p = 0; p < num_prefixes; ++p) {
    std::vector<int32_t> h;
    for (int r = 0; r < num_ranks; ++r)
      if (rng() % 2) h.push_back(r);
    in.holders[10 + p] = h;
  }
  for (int i = 0; i < num_requests; ++i) {
    const int p = int(rng() % (num_prefixes + 1));
    in.prefix_of.push_back(p == num_prefixes ? -1 : 10 + p);
    in.owner_of.push_back(int32_t(rng() % num_ranks));
  }
  return in;
}

// One prefix on every rank and k requests per rank, owners in random order: the all-gather case.
LayoutInput EvenStep(std::mt19937_64& rng, int num_ranks) {
  LayoutInput in;
  in.num_ranks = num_ranks;
  for (int r = 0; r < num_ranks; ++r) in.holders[5].push_back(r);
  const int k = 1 + int(rng() % 3);
  for (int i = 0; i < k * num_ranks; ++i) {
    in.prefix_of.push_back(5);
    in.owner_of.push_back(i % num_ranks);
  }
  std::shuffle(in.owner_of.begin(), in.owner_of.end(), rng);
  return in;
}

std::vector<StepLayout> AllLayouts(LayoutInput in) {
  std::vector<StepLayout> out;
  for (int r = 0; r < in.num_ranks; ++r) {
    in.rank = r;
    out.push_back(MakeStepLayout(in));
  }
  return out;
}

// The contributors an owner must merge for decode entry e: the prefix holders, plus the owner.
std::set<int> ExpectedContributors(const LayoutInput& in, int e) {
  std::set<int> c;
  if (in.prefix_of[e] >= 0)
    for (int32_t h : in.holders.at(in.prefix_of[e])) c.insert(h);
  c.insert(in.owner_of[e]);
  return c;
}

// A local row's "state" in the simulation: which entry, and the set of ranks merged into it.
struct SimState {
  int entry = -1;
  std::set<int> ranks;
};

class StepLayoutTest : public testing::TestWithParam<int> {};

TEST_P(StepLayoutTest, ExchangesAgreeAndEveryOwnerGetsEveryShard) {
  const int n = GetParam();
  const uint64_t seed = test::TestSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  for (int trial = 0; trial < 30; ++trial) {
    const LayoutInput in = trial % 4 == 3 ? EvenStep(rng, n) : RandomStep(rng, n, int(rng() % 12));
    const std::vector<StepLayout> L = AllLayouts(in);
    const int num_entries = int(in.prefix_of.size());
    bool any_exchange = false;
    for (int r = 0; r < n; ++r) {
      ASSERT_EQ(L[r].num_decode(), num_entries);
      EXPECT_EQ(L[r].needs_query_exchange, L[0].needs_query_exchange) << "rank " << r;
      ASSERT_EQ(L[r].local_rows.size(), L[r].q_unpack.size());
      for (int s = 0; s < n; ++s) {
        EXPECT_EQ(L[r].q_send_count[s], L[s].q_recv_count[r]) << r << " -> " << s;
        EXPECT_EQ(L[r].st_send_count[s], L[s].st_recv_count[r]) << r << " -> " << s;
        any_exchange |= L[r].q_send_count[s] > 0;
      }
      EXPECT_EQ(L[r].q_send_count[r], 0);
    }
    EXPECT_EQ(any_exchange, L[0].needs_query_exchange);

    // Queries: owners' own rows carry the entry index; after the exchange every local row of
    // every rank must hold its own entry.
    std::vector<std::vector<std::vector<int>>> q_msg(n, std::vector<std::vector<int>>(n));  // [from][to]
    for (int r = 0; r < n; ++r) {
      size_t k = 0;
      for (int peer = 0; peer < n; ++peer)
        for (int64_t i = 0; i < L[r].q_send_count[peer]; ++i, ++k)
          q_msg[r][peer].push_back(L[r].order[L[r].own_rows[L[r].q_pack[k]]]);
    }
    for (int r = 0; r < n; ++r) {
      std::vector<int> recv;
      for (int peer = 0; peer < n; ++peer) recv.insert(recv.end(), q_msg[peer][r].begin(), q_msg[peer][r].end());
      for (int i = 0; i < L[r].num_local(); ++i) {
        const int src = L[r].q_unpack[i];
        const int got = src >= 0 ? recv.at(src) : L[r].order[L[r].own_rows.at(-2 - src)];
        EXPECT_EQ(got, L[r].order[L[r].local_rows[i]]) << "rank " << r << " local row " << i;
      }
    }

    // Queries in place: where a rank's layout allows it, its own rows made at their local rows,
    // each message sent from and received into the local-row buffer, must give the same rows.
    for (int r = 0; r < n; ++r) {
      if (!L[r].q_direct) continue;
      std::vector<int> rows(L[r].num_local(), -1);
      for (int j = 0; j < L[r].num_own(); ++j) rows.at(L[r].q_own_local_row0 + j) = L[r].order[L[r].own_rows[j]];
      for (int peer = 0; peer < n; ++peer) {
        // What this rank would send to peer, read from its own buffer, is what the packed path sends.
        std::vector<int> sent;
        for (int64_t t = 0; t < L[r].q_send_count[peer]; ++t)
          sent.push_back(rows.at(L[r].q_own_local_row0 + L[r].q_send_own_row0[peer] + t));
        EXPECT_EQ(sent, q_msg[r][peer]) << "rank " << r << " in-place send to " << peer;
        for (int64_t t = 0; t < L[r].q_recv_count[peer]; ++t)
          rows.at(L[r].q_recv_local_row0[peer] + t) = q_msg[peer][r].at(t);
      }
      for (int i = 0; i < L[r].num_local(); ++i)
        EXPECT_EQ(rows[i], L[r].order[L[r].local_rows[i]]) << "rank " << r << " in-place local row " << i;
    }

    // All-gather: decided alike on every rank; where it holds, rank j's block of m rows (its own
    // rows, in its order) lands at local rows [j·m, j·m + m) of every rank, which are its local rows.
    for (int r = 0; r < n; ++r) EXPECT_EQ(L[r].q_all_gather, L[0].q_all_gather) << "rank " << r;
    if (L[0].q_all_gather) {
      for (int r = 0; r < n; ++r) {
        ASSERT_EQ(L[r].num_own(), L[0].num_own());
        ASSERT_EQ(L[r].num_local(), n * L[0].num_own());
        EXPECT_EQ(L[r].q_own_local_row0, r * L[r].num_own());
      }
      for (int r = 0; r < n; ++r)
        for (int j = 0; j < n; ++j)
          for (int t = 0; t < L[j].num_own(); ++t)
            EXPECT_EQ(L[r].order[L[r].local_rows[j * L[j].num_own() + t]], L[j].order[L[j].own_rows[t]])
                << "all-gather, rank " << r << ", block " << j << ", row " << t;
    }

    // Local rows: each rank's row for entry e merges its shard (if it holds the prefix) and, on
    // the owner, the suffix.
    std::vector<std::vector<SimState>> local(n);
    for (int r = 0; r < n; ++r)
      for (int i = 0; i < L[r].num_local(); ++i) {
        const int e = L[r].order[L[r].local_rows[i]];
        SimState st{e, {r}};
        local[r].push_back(st);
        const bool holds = in.prefix_of[e] >= 0 && std::count(in.holders.at(in.prefix_of[e]).begin(),
                                                                in.holders.at(in.prefix_of[e]).end(), r);
        EXPECT_TRUE(holds || in.owner_of[e] == r) << "rank " << r << " computes entry " << e << " for nothing";
      }

    // (a) all-to-all + n-ary merge.
    std::vector<std::vector<std::vector<SimState>>> st_msg(n, std::vector<std::vector<SimState>>(n));
    for (int r = 0; r < n; ++r) {
      size_t k = 0;
      for (int peer = 0; peer < n; ++peer)
        for (int64_t i = 0; i < L[r].st_send_count[peer]; ++i, ++k) st_msg[r][peer].push_back(local[r][L[r].st_pack[k]]);
    }
    // (b) tree: per owner, the union of every rank's slab row at its block position.
    std::vector<std::map<int, SimState>> tree(n);  // [owner][own index]
    for (int r = 0; r < n; ++r)
      for (int i = 0; i < L[r].num_local(); ++i) {
        const int dst = L[r].tree_dst[i], owner = dst / std::max(1, L[r].max_own);
        SimState& acc = tree[owner][dst % std::max(1, L[r].max_own)];
        EXPECT_TRUE(acc.entry == -1 || acc.entry == local[r][i].entry);
        EXPECT_FALSE(acc.ranks.count(r)) << "rank " << r << " writes one slab row twice";
        acc.entry = local[r][i].entry;
        acc.ranks.insert(r);
      }
    int owned_total = 0;
    for (int r = 0; r < n; ++r) {
      std::vector<SimState> recv;
      for (int peer = 0; peer < n; ++peer) recv.insert(recv.end(), st_msg[peer][r].begin(), st_msg[peer][r].end());
      const int b_own = L[r].num_own();
      owned_total += b_own;
      for (int j = 0; j < b_own; ++j) {
        const int e = L[r].order[L[r].own_rows[j]];
        EXPECT_EQ(in.owner_of[e], r);
        std::set<int> merged;
        for (int k = 0; k < L[r].merge_n; ++k) {
          const int src = L[r].merge_src[size_t(k) * b_own + j];
          if (src == -1) continue;
          const SimState& st = src >= 0 ? recv.at(src) : local[r].at(-2 - src);
          EXPECT_EQ(st.entry, e) << "rank " << r << " merges another request's state";
          for (int x : st.ranks) EXPECT_TRUE(merged.insert(x).second) << "rank " << x << " merged twice";
        }
        EXPECT_EQ(merged, ExpectedContributors(in, e)) << "a2a, rank " << r << ", entry " << e;
        const SimState& t = tree[r][j];
        EXPECT_EQ(t.entry, e);
        EXPECT_EQ(t.ranks, ExpectedContributors(in, e)) << "tree, rank " << r << ", entry " << e;
        EXPECT_EQ(L[r].tree_own_pos[j], L[r].own_rows[j]);
      }
      // The tree's max gathers exactly the local rows.
      for (int c = 0; c < num_entries; ++c) {
        const int src = L[r].tree_max_src[c];
        if (src != -1) EXPECT_EQ(L[r].local_rows.at(-2 - src), c);
      }
    }
    EXPECT_EQ(owned_total, num_entries);
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, StepLayoutTest, testing::Values(1, 2, 3, 4, 8));

TEST(StepLayout, OneRankOwnsEverythingAndMovesNothing) {
  LayoutInput in;
  in.num_ranks = 1;
  in.holders[3] = {0};
  in.prefix_of = {3, -1, 3};
  in.owner_of = {0, 0, 0};
  const StepLayout L = MakeStepLayout(in);
  EXPECT_TRUE(L.own_is_local);
  EXPECT_FALSE(L.needs_query_exchange);
  EXPECT_FALSE(L.needs_state_exchange);
  EXPECT_EQ(L.merge_n, 1);
  ASSERT_EQ(L.groups.size(), 2u);
  EXPECT_EQ(L.groups[0].prefix_id, 3);
  EXPECT_EQ(L.groups[0].num_rows, 2);
  EXPECT_EQ(L.groups[1].prefix_id, -1);
  EXPECT_EQ(L.order, (std::vector<int32_t>{0, 2, 1}));
}

// One document sharded over every rank, requests owned round-robin (the scaling benchmark's and
// the main job's default): every rank moves its queries in place.
TEST(StepLayout, OneSharedPrefixMovesQueriesInPlace) {
  for (int n : {2, 3, 4, 8}) {
    LayoutInput in;
    in.num_ranks = n;
    for (int r = 0; r < n; ++r) in.holders[7].push_back(r);
    for (int i = 0; i < 21; ++i) {
      in.prefix_of.push_back(7);
      in.owner_of.push_back(i % n);
    }
    for (int r = 0; r < n; ++r) {
      in.rank = r;
      const StepLayout L = MakeStepLayout(in);
      EXPECT_TRUE(L.needs_query_exchange);
      EXPECT_TRUE(L.q_direct) << n << " ranks, rank " << r;
    }
  }
}

// The query exchange is an all-gather exactly when one prefix on every rank has all the requests
// and every rank owns as many of them.
TEST(StepLayout, AllGatherQueriesOnlyForOneSharedPrefixWithEvenOwners) {
  for (int n : {2, 3, 4, 8}) {
    for (int requests : {21, 24}) {
      LayoutInput in;
      in.num_ranks = n;
      for (int r = 0; r < n; ++r) in.holders[7].push_back(r);
      for (int i = 0; i < requests; ++i) {
        in.prefix_of.push_back(7);
        in.owner_of.push_back(i % n);
      }
      const bool even = requests % n == 0;
      for (int r = 0; r < n; ++r) {
        in.rank = r;
        EXPECT_EQ(MakeStepLayout(in).q_all_gather, even) << n << " ranks, " << requests << " requests, rank " << r;
      }
      if (!even) continue;
      // Not when one request has no prefix, or a second prefix appears, or a rank holds no shard.
      LayoutInput x = in;
      x.prefix_of[5] = -1;
      EXPECT_FALSE(MakeStepLayout(x).q_all_gather);
      x = in;
      x.holders[8] = x.holders[7];
      x.prefix_of[5] = 8;
      EXPECT_FALSE(MakeStepLayout(x).q_all_gather);
      x = in;
      x.holders[7].pop_back();
      EXPECT_FALSE(MakeStepLayout(x).q_all_gather);
    }
  }
  // One rank alone moves nothing.
  LayoutInput one;
  one.holders[7] = {0};
  one.prefix_of = {7, 7};
  one.owner_of = {0, 0};
  EXPECT_FALSE(MakeStepLayout(one).q_all_gather);
}

TEST(StepLayout, ShortPrefixWithItsRequestsOnOneRankNeedsNoCommunication) {
  LayoutInput in;
  in.num_ranks = 4;
  in.holders[0] = {2};
  in.holders[1] = {0, 1, 2, 3};
  in.prefix_of = {0, 0};
  in.owner_of = {2, 2};
  in.rank = 2;
  EXPECT_FALSE(MakeStepLayout(in).needs_query_exchange);
  in.prefix_of.push_back(1);
  in.owner_of.push_back(0);
  EXPECT_TRUE(MakeStepLayout(in).needs_query_exchange);
}

TEST(StepLayout, RejectsBadInput) {
  LayoutInput in;
  in.num_ranks = 2;
  in.prefix_of = {5};
  in.owner_of = {0};
  EXPECT_INVALID_ARGUMENT(MakeStepLayout(in), "prefix 5");
  in.holders[5] = {1};
  in.owner_of = {2};
  EXPECT_INVALID_ARGUMENT(MakeStepLayout(in), "rank 2");
  in.owner_of = {1};
  in.holders[5] = {1, 1};
  EXPECT_INVALID_ARGUMENT(MakeStepLayout(in), "ascending");
}

}  // namespace
}  // namespace prefixd::worker
