#include "prefixd/comm/state_reduction.h"

#include <algorithm>
#include <numeric>

#include "prefixd/common/error.h"

namespace prefixd::comm {
namespace {

void CheckRanks(int rank, int num_ranks) {
  PREFIXD_CHECK_ARG(num_ranks >= 1 && rank >= 0 && rank < num_ranks,
                    "rank " << rank << " of " << num_ranks << " ranks");
}

}  // namespace

ExchangeBytes PeerMajorBytes(const std::vector<int64_t>& send_items,
                             const std::vector<int64_t>& recv_items, size_t bytes_per_item) {
  PREFIXD_CHECK_ARG(send_items.size() == recv_items.size(),
                    "send and recv counts cover " << send_items.size() << " and " << recv_items.size()
                                                  << " ranks");
  const size_t n = send_items.size();
  ExchangeBytes out;
  out.send_bytes.resize(n);
  out.send_offsets.resize(n);
  out.recv_bytes.resize(n);
  out.recv_offsets.resize(n);
  size_t send_at = 0, recv_at = 0;
  for (size_t j = 0; j < n; ++j) {
    PREFIXD_CHECK_ARG(send_items[j] >= 0 && recv_items[j] >= 0, "negative item count for rank " << j);
    out.send_offsets[j] = send_at;
    out.send_bytes[j] = static_cast<size_t>(send_items[j]) * bytes_per_item;
    send_at += out.send_bytes[j];
    out.recv_offsets[j] = recv_at;
    out.recv_bytes[j] = static_cast<size_t>(recv_items[j]) * bytes_per_item;
    recv_at += out.recv_bytes[j];
  }
  return out;
}

int64_t OwnerGatherPlan::num_send() const {
  return std::accumulate(send_items.begin(), send_items.end(), int64_t(0));
}
int64_t OwnerGatherPlan::num_recv() const {
  return std::accumulate(recv_items.begin(), recv_items.end(), int64_t(0));
}

OwnerGatherPlan PlanOwnerGather(const std::vector<ItemRoute>& routes, int rank, int num_ranks) {
  CheckRanks(rank, num_ranks);
  const int64_t num_items = static_cast<int64_t>(routes.size());
  PREFIXD_CHECK_ARG(num_items <= INT32_MAX, num_items << " items");
  OwnerGatherPlan plan;
  plan.rank = rank;
  plan.num_ranks = num_ranks;
  plan.send_items.assign(num_ranks, 0);
  plan.recv_items.assign(num_ranks, 0);

  // Items this rank sends, bucketed by owner (peer-major; ascending items within a bucket since
  // items are visited in order). Items it receives, bucketed by contributor, likewise.
  std::vector<std::vector<int32_t>> to(num_ranks), from(num_ranks);
  for (int32_t i = 0; i < static_cast<int32_t>(num_items); ++i) {
    const ItemRoute& route = routes[i];
    PREFIXD_CHECK_ARG(route.owner >= 0 && route.owner < num_ranks,
                      "item " << i << ": owner " << route.owner << " of " << num_ranks << " ranks");
    for (size_t k = 0; k < route.contributors.size(); ++k) {
      const int c = route.contributors[k];
      PREFIXD_CHECK_ARG(c >= 0 && c < num_ranks, "item " << i << ": contributor " << c);
      PREFIXD_CHECK_ARG(k == 0 || route.contributors[k - 1] < c,
                        "item " << i << ": contributors must be ascending and unique");
      if (c == rank) to[route.owner].push_back(i);
      if (route.owner == rank) from[c].push_back(i);
    }
    if (route.owner == rank) plan.own_items.push_back(i);
  }
  for (int j = 0; j < num_ranks; ++j) {
    plan.send_items[j] = static_cast<int64_t>(to[j].size());
    plan.recv_items[j] = static_cast<int64_t>(from[j].size());
    plan.pack.insert(plan.pack.end(), to[j].begin(), to[j].end());
  }

  // Recv slot of (contributor j, item i): base of j's block + position of i within from[j].
  // Walking own items in order and each contributor's list in order finds every slot in one pass.
  std::vector<int64_t> base(num_ranks, 0), next(num_ranks, 0);
  for (int j = 1; j < num_ranks; ++j) base[j] = base[j - 1] + plan.recv_items[j - 1];
  plan.merge_indptr.reserve(plan.own_items.size() + 1);
  plan.merge_indptr.push_back(0);
  for (const int32_t i : plan.own_items) {
    for (const int c : routes[i].contributors) {
      PREFIXD_CHECK_INTERNAL(next[c] < plan.recv_items[c] && from[c][next[c]] == i, "item " << i);
      plan.merge_items.push_back(base[c] + next[c]++);
    }
    plan.merge_indptr.push_back(static_cast<int64_t>(plan.merge_items.size()));
  }
  return plan;
}

TreeReducePlan PlanTreeReduce(const std::vector<int>& owners, int rank, int num_ranks) {
  CheckRanks(rank, num_ranks);
  PREFIXD_CHECK_ARG(owners.size() <= size_t(INT32_MAX), owners.size() << " items");
  TreeReducePlan plan;
  plan.rank = rank;
  plan.num_ranks = num_ranks;
  plan.num_items = static_cast<int64_t>(owners.size());
  plan.slab_item.resize(owners.size());
  std::vector<int64_t> owned(num_ranks, 0);
  for (size_t i = 0; i < owners.size(); ++i) {
    PREFIXD_CHECK_ARG(owners[i] >= 0 && owners[i] < num_ranks,
                      "item " << i << ": owner " << owners[i] << " of " << num_ranks << " ranks");
    plan.slab_item[i] = owned[owners[i]]++;  // index among the owner's items, for now
    if (owners[i] == rank) plan.own_items.push_back(static_cast<int32_t>(i));
  }
  plan.block_items = *std::max_element(owned.begin(), owned.end());
  for (size_t i = 0; i < owners.size(); ++i) plan.slab_item[i] += owners[i] * plan.block_items;
  return plan;
}

}  // namespace prefixd::comm
