#include "prefixd/worker/step_layout.h"

#include <algorithm>
#include <limits>

#include "prefixd/common/error.h"

namespace prefixd::worker {
namespace {

bool Holds(const LayoutInput& in, int rank, int32_t prefix) {
  if (prefix < 0) return false;
  const std::vector<int32_t>& h = in.holders.at(prefix);
  return std::binary_search(h.begin(), h.end(), rank);
}

}  // namespace

StepLayout MakeStepLayout(const LayoutInput& in) {
  const int n_ranks = in.num_ranks;
  const int me = in.rank;
  PREFIXD_CHECK_ARG(n_ranks >= 1 && me >= 0 && me < n_ranks, "step layout: rank " << me << " of " << n_ranks);
  PREFIXD_CHECK_ARG(in.prefix_of.size() == in.owner_of.size(),
                    "step layout: " << in.prefix_of.size() << " prefixes for " << in.owner_of.size() << " owners");
  const int n = int(in.prefix_of.size());
  for (int e = 0; e < n; ++e) {
    PREFIXD_CHECK_ARG(in.owner_of[e] >= 0 && in.owner_of[e] < n_ranks,
                      "step layout: decode entry " << e << " is owned by rank " << in.owner_of[e] << " of " << n_ranks);
    const int32_t p = in.prefix_of[e];
    if (p < 0) continue;
    auto it = in.holders.find(p);
    PREFIXD_CHECK_ARG(it != in.holders.end(), "step layout: decode entry " << e << " names prefix " << p
                                                                            << ", which has no shard list");
    for (size_t k = 0; k < it->second.size(); ++k)
      PREFIXD_CHECK_ARG(it->second[k] >= 0 && it->second[k] < n_ranks && (k == 0 || it->second[k - 1] < it->second[k]),
                        "step layout: prefix " << p << "'s holders must be distinct ascending ranks below " << n_ranks);
  }

  StepLayout L;
  L.rank = me;
  L.num_ranks = n_ranks;

  // Canonical order: by first appearance of the prefix (prefix-less requests last), then by owner
  // (so that the rows one owner sends or receives are runs: q_direct), stable otherwise.
  std::map<int32_t, int> first_seen;
  std::vector<int32_t> prefix_order;  // prefixes by first appearance
  for (int e = 0; e < n; ++e)
    if (in.prefix_of[e] >= 0 && first_seen.emplace(in.prefix_of[e], int(first_seen.size())).second)
      prefix_order.push_back(in.prefix_of[e]);
  auto key = [&](int e) {
    return in.prefix_of[e] < 0 ? std::numeric_limits<int>::max() : first_seen.at(in.prefix_of[e]);
  };
  L.order.resize(n);
  for (int e = 0; e < n; ++e) L.order[e] = e;
  std::stable_sort(L.order.begin(), L.order.end(), [&](int a, int b) {
    return key(a) != key(b) ? key(a) < key(b) : in.owner_of[a] < in.owner_of[b];
  });
  std::vector<int32_t> prefix(n), owner(n);  // by canonical position
  for (int c = 0; c < n; ++c) {
    prefix[c] = in.prefix_of[L.order[c]];
    owner[c] = in.owner_of[L.order[c]];
  }
  std::vector<uint8_t> owner_holds(n);
  for (int c = 0; c < n; ++c) owner_holds[c] = Holds(in, owner[c], prefix[c]);

  // Own order of every rank: requests whose prefix it holds first, then the others; C order within.
  std::vector<int32_t> own_index(n), own_count(n_ranks, 0);
  for (int pass = 0; pass < 2; ++pass)
    for (int c = 0; c < n; ++c)
      if (owner_holds[c] == (pass == 0)) own_index[c] = own_count[owner[c]]++;
  L.max_own = n_ranks ? *std::max_element(own_count.begin(), own_count.end()) : 0;

  // Local rows: one group per held prefix, then the suffix-only group.
  std::vector<int32_t> local_of(n, -1);  // canonical position → local row
  auto add_row = [&](int c) {
    local_of[c] = int32_t(L.local_rows.size());
    L.local_rows.push_back(c);
    L.local_owned.push_back(owner[c] == me);
  };
  for (int32_t p : prefix_order) {
    if (!Holds(in, me, p)) continue;
    LocalGroup g{p, int32_t(L.local_rows.size()), 0};
    for (int c = 0; c < n; ++c)
      if (prefix[c] == p) add_row(c);
    g.num_rows = int32_t(L.local_rows.size()) - g.first_row;
    L.groups.push_back(g);
  }
  {
    LocalGroup g{-1, int32_t(L.local_rows.size()), 0};
    for (int c = 0; c < n; ++c)
      if (owner[c] == me && !owner_holds[c]) add_row(c);
    g.num_rows = int32_t(L.local_rows.size()) - g.first_row;
    if (g.num_rows > 0) L.groups.push_back(g);
  }
  for (int i = 0; i < L.num_local(); ++i)
    if (L.local_owned[i]) {
      L.own_rows.push_back(L.local_rows[i]);
      L.own_local_row.push_back(i);
    }
  PREFIXD_CHECK_INTERNAL(L.num_own() == own_count[me], "own rows " << L.num_own() << " vs " << own_count[me]);
  for (int j = 0; j < L.num_own(); ++j)
    PREFIXD_CHECK_INTERNAL(own_index[L.own_rows[j]] == j, "own order of row " << j);
  L.own_is_local = L.num_own() == L.num_local();

  // Query exchange.
  L.q_send_count.assign(n_ranks, 0);
  L.q_recv_count.assign(n_ranks, 0);
  std::vector<int32_t> q_recv_row(n, -1);
  int32_t recv_rows = 0;
  for (int peer = 0; peer < n_ranks; ++peer) {
    if (peer == me) continue;
    for (int c = 0; c < n; ++c) {
      if (owner[c] == me && Holds(in, peer, prefix[c])) {
        L.q_pack.push_back(own_index[c]);
        ++L.q_send_count[peer];
      }
      if (owner[c] == peer && Holds(in, me, prefix[c])) {
        q_recv_row[c] = recv_rows++;
        ++L.q_recv_count[peer];
      }
    }
  }
  L.q_unpack.resize(L.num_local());
  for (int i = 0; i < L.num_local(); ++i) {
    const int c = L.local_rows[i];
    L.q_unpack[i] = owner[c] == me ? -2 - own_index[c] : q_recv_row[c];
    PREFIXD_CHECK_INTERNAL(L.q_unpack[i] != -1, "local row " << i << " has no query source");
  }
  for (int c = 0; c < n && !L.needs_query_exchange; ++c)
    if (prefix[c] >= 0)
      for (int32_t h : in.holders.at(prefix[c]))
        if (h != owner[c]) L.needs_query_exchange = true;
  L.needs_state_exchange = L.needs_query_exchange;  // the same pairs move queries out and states back

  // Queries in place: own rows one run of local rows, each peer's received rows a run in message
  // order, each peer's sent rows a run of own rows.
  L.q_recv_local_row0.assign(n_ranks, 0);
  L.q_send_own_row0.assign(n_ranks, 0);
  L.q_direct = true;
  for (int j = 0; j < L.num_own(); ++j)
    if (L.own_local_row[j] != L.own_local_row[0] + j) L.q_direct = false;
  L.q_own_local_row0 = L.num_own() > 0 ? L.own_local_row[0] : 0;
  std::vector<int32_t> local_of_recv(recv_rows, -1);
  for (int i = 0; i < L.num_local(); ++i)
    if (L.q_unpack[i] >= 0) local_of_recv[L.q_unpack[i]] = i;
  int64_t recv_off = 0, send_off = 0;
  for (int peer = 0; peer < n_ranks && L.q_direct; ++peer) {
    const int64_t nr = L.q_recv_count[peer], ns = L.q_send_count[peer];
    if (nr > 0) {
      L.q_recv_local_row0[peer] = local_of_recv[recv_off];
      for (int64_t t = 0; t < nr; ++t)
        if (local_of_recv[recv_off + t] != L.q_recv_local_row0[peer] + t) L.q_direct = false;
    }
    if (ns > 0) {
      L.q_send_own_row0[peer] = L.q_pack[send_off];
      for (int64_t t = 0; t < ns; ++t)
        if (L.q_pack[send_off + t] != L.q_send_own_row0[peer] + t) L.q_direct = false;
    }
    recv_off += nr;
    send_off += ns;
  }

  // The all-gather case, decided from what every rank sees (the decode list and the holders).
  if (L.needs_query_exchange && n > 0 && n_ranks > 1 && prefix_order.size() == 1 && prefix[n - 1] >= 0 &&
      int(in.holders.at(prefix[0]).size()) == n_ranks &&
      std::all_of(own_count.begin(), own_count.end(), [&](int32_t c) { return c == own_count[0]; })) {
    L.q_all_gather = true;
    const int64_t m = own_count[0];
    bool shaped = L.q_direct && L.num_local() == n && L.q_own_local_row0 == me * m;
    for (int peer = 0; peer < n_ranks; ++peer)
      if (peer != me)
        shaped = shaped && L.q_recv_local_row0[peer] == peer * m && L.q_recv_count[peer] == m &&
                 L.q_send_count[peer] == m && L.q_send_own_row0[peer] == 0;
    PREFIXD_CHECK_INTERNAL(shaped, "step layout: an all-gather query exchange whose rows are not owner-major");
  }

  // (a) states back to the owners.
  L.st_send_count.assign(n_ranks, 0);
  L.st_recv_count.assign(n_ranks, 0);
  std::vector<std::vector<int32_t>> st_recv_row(n_ranks);  // [peer][canonical position]
  recv_rows = 0;
  for (int peer = 0; peer < n_ranks; ++peer) {
    if (peer == me) continue;
    for (int i = 0; i < L.num_local(); ++i)
      if (owner[L.local_rows[i]] == peer) {
        L.st_pack.push_back(i);
        ++L.st_send_count[peer];
      }
    st_recv_row[peer].assign(n, -1);
    for (int c = 0; c < n; ++c)
      if (owner[c] == me && Holds(in, peer, prefix[c])) {
        st_recv_row[peer][c] = recv_rows++;
        ++L.st_recv_count[peer];
      }
  }
  std::vector<std::vector<int32_t>> sources(L.num_own());
  for (int j = 0; j < L.num_own(); ++j) {
    const int c = L.own_rows[j];
    sources[j].push_back(-2 - L.own_local_row[j]);
    if (prefix[c] >= 0)
      for (int32_t h : in.holders.at(prefix[c]))
        if (h != me) sources[j].push_back(st_recv_row[h][c]);
    L.merge_n = std::max(L.merge_n, int(sources[j].size()));
  }
  L.merge_src.assign(size_t(L.merge_n) * L.num_own(), -1);
  for (int j = 0; j < L.num_own(); ++j)
    for (size_t k = 0; k < sources[j].size(); ++k) L.merge_src[k * L.num_own() + j] = sources[j][k];

  // (b) tree.
  L.tree_max_src.resize(n);
  for (int c = 0; c < n; ++c) L.tree_max_src[c] = local_of[c] >= 0 ? -2 - local_of[c] : -1;
  L.tree_local_pos = L.local_rows;
  L.tree_dst.resize(L.num_local());
  for (int i = 0; i < L.num_local(); ++i) {
    const int c = L.local_rows[i];
    L.tree_dst[i] = owner[c] * L.max_own + own_index[c];
  }
  L.tree_own_pos = L.own_rows;
  return L;
}

}  // namespace prefixd::worker
