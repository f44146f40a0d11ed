// Where every row of one decode step goes: a pure function of the step's decode list (each
// request's prefix and owner) and of which ranks hold shards of each prefix. Every rank computes
// the layouts it needs for itself and, where it must agree with a peer on a message's contents,
// the peer's view too; since all ranks see the same plan, the two sides always agree.
//
// Rows and orders (R = this rank):
//  - canonical order C: the decode list stably sorted by the first appearance of its prefix, then
//    by owner (requests without a prefix last). Every per-peer message lists its rows in C order.
//  - local rows: what R's cascade computes. First one group per prefix that R holds a shard of
//    (all of the prefix's decoding requests, in C order: R computes the shard's partial states for
//    every one of them), then one group with an empty prefix for the requests R owns whose prefix
//    it holds no shard of (only their suffix is here).
//  - own rows: the requests R owns, in local-row order (so when every local row is owned, the
//    cascade's output already is the step's output and nothing moves).
//
// Query exchange: owner → every other holder of the request's prefix.
// State exchange, two exact ways (DESIGN.md):
//  (a) all-to-all: each holder sends its partial state of a request to the owner, which merges
//      its local row with what arrived (n-ary ⊕, padded with empty states);
//  (b) tree: all-reduce max of s over every decoding request, each rank rescales its partial
//      states by 2^(s − max) into a [ranks][max_own] slab, reduce-scatter sums it to the owners,
//      which divide (Tree Attention's form).
#pragma once

#include <cstdint>
#include <map>
#include <vector>

namespace prefixd::worker {

struct LayoutInput {
  int rank = 0;
  int num_ranks = 1;
  std::vector<int32_t> prefix_of;   // [decode entries]: prefix id or -1
  std::vector<int32_t> owner_of;    // [decode entries]: owner rank
  // Ranks holding a non-empty shard of each prefix, ascending.
  std::map<int32_t, std::vector<int32_t>> holders;
};

struct LocalGroup {
  int32_t prefix_id = -1;   // -1: the suffix-only group
  int32_t first_row = 0;
  int32_t num_rows = 0;
};

struct StepLayout {
  int rank = 0;
  int num_ranks = 1;
  std::vector<int32_t> order;          // C: decode-entry index of each canonical position

  std::vector<int32_t> local_rows;     // [B_loc]: canonical position of each local row
  std::vector<LocalGroup> groups;      // cover local rows in order
  std::vector<uint8_t> local_owned;    // [B_loc]: 1 when R owns the row's request
  std::vector<int32_t> own_rows;       // [B_own]: canonical position of each own row
  std::vector<int32_t> own_local_row;  // [B_own]: its local row
  bool own_is_local = false;           // own rows are exactly the local rows, same order

  // Query exchange (rows of H_qo·D elements). Counts per peer; R→R is always 0.
  std::vector<int64_t> q_send_count, q_recv_count;  // [ranks]
  std::vector<int32_t> q_pack;         // [Σ send]: own row to put in each send row (peer-major)
  std::vector<int32_t> q_unpack;       // [B_loc]: recv row (≥ 0) or −2 − own row
  bool needs_query_exchange = false;   // any rank sends any query (same value on every rank)
  // Queries in place (q_direct; this rank's own view, peers may differ): the own rows are one run
  // of local rows from q_own_local_row0, the rows from each peer j one run from
  // q_recv_local_row0[j] in message order, and what goes to peer j the own rows
  // [q_send_own_row0[j], + q_send_count[j]). Then own queries are made straight into the
  // local-row query buffer and the exchange sends from and receives into it: nothing is packed.
  bool q_direct = false;
  int32_t q_own_local_row0 = 0;
  std::vector<int64_t> q_recv_local_row0, q_send_own_row0;  // [ranks]
  // The query exchange is an all-gather (same value on every rank): every decoding request has the
  // one prefix, which every rank holds a shard of, and every rank owns the same number of them (m).
  // Then every rank's local rows are all requests, owner-major, its own rows [rank·m, rank·m + m)
  // (q_direct holds), and the in-place exchange is one ncclAllGather of m rows per rank, which on
  // 4 H200s took 12.5 µs against 15.4 for the grouped send/recv at 256 KiB (bench/comm/README.md;
  // in the whole 4-GPU step the difference is within the run-to-run noise).
  bool q_all_gather = false;

  // (a) all-to-all of states (rows of H_qo·(D+1) floats: v then s).
  std::vector<int64_t> st_send_count, st_recv_count;  // [ranks]
  std::vector<int32_t> st_pack;        // [Σ send]: local row of each send row (peer-major)
  int merge_n = 0;                     // contributions per own row (max over own rows)
  std::vector<int32_t> merge_src;      // [merge_n][B_own]: recv row, −2 − local row, or −1 (empty)
  bool needs_state_exchange = false;   // any rank sends any state (same value on every rank)

  // (b) tree reduction over all C rows.
  int max_own = 0;                     // max over ranks of their own-row count
  std::vector<int32_t> tree_max_src;   // [|C|]: −2 − local row, or −1 (−inf)
  std::vector<int32_t> tree_local_pos; // [B_loc]: canonical position of each local row (= local_rows)
  std::vector<int32_t> tree_dst;       // [B_loc]: owner · max_own + owner's own index
  std::vector<int32_t> tree_own_pos;   // [B_own]: canonical position of each own row

  int num_local() const { return int(local_rows.size()); }
  int num_own() const { return int(own_rows.size()); }
  int num_decode() const { return int(order.size()); }
};

// Throws kInvalidArgument when an entry names a rank outside [0, num_ranks) or a prefix missing
// from `holders`.
StepLayout MakeStepLayout(const LayoutInput& input);

}  // namespace prefixd::worker
