// Exchange layouts for the two exact reductions of partial attention states (DESIGN.md, comm/).
//
// Vocabulary. An ITEM is the unit that moves: typically one request's partial state for all its
// query heads, i.e. H_qo rows of (v: D floats, s: 1 float, base-2 LSE). Each item has an OWNER
// rank (which needs the final state) and a set of CONTRIBUTOR ranks (which computed a partial
// state of it, e.g. the holders of its prefix's shards; the owner's own suffix state is merged
// locally and is not part of these plans unless the owner lists itself). The plans are pure
// functions of (routes, rank, num_ranks): every rank builds them from the same step plan, without
// communicating, so both sides of every message agree by construction.
//
// (a) Gather to owner (PlanOwnerGather): each contributor sends its partial state of an item to
//     the item's owner with one AllToAllV; the owner merges the n arrivals with the n-ary ⊕.
//     Moves Σ_items |contributors| item states; no rescaling before the exchange.
//
//       send buffer: items in `pack` order (peer-major, items ascending within a peer)
//       comm.AllToAllV(send, plan.Bytes(item_bytes)..., recv, ...)
//       owner: for own item k, merge recv items merge_items[merge_indptr[k] .. merge_indptr[k+1])
//
// (b) Tree reduction (PlanTreeReduce; Tree Attention's form): over ALL items
//     of the step, on every rank (a rank with no state for an item contributes (0, −inf)):
//       1. m = s_local;  comm.AllReduceMax(m)                           (one float per state row)
//       2. w = (m == −inf) ? 0 : 2^(s_local − m);  slab[slab_item[i]] = (w·v, w)   per row: D+1 floats
//          slab: [num_ranks][block_items] items, zero where nothing was written (padding included)
//       3. comm.ReduceScatterSum(slab, block, ReduceScatterCount(floats_per_item))
//       4. owner, own item k at block item k:  den > 0 ? (num / den, m + log2(den)) : (0, −inf)
//     Moves a fixed num_ranks·block_items slab per rank whatever the contributor sets; better
//     when most ranks contribute to most items, worse for sparse routes. Exactly ⊕ in exact
//     arithmetic: Σ_p 2^(s_p − m)·v_p / Σ_p 2^(s_p − m) with m = max_p s_p.
// The rescaling and merging arithmetic belongs to the caller (the worker, on its kernels
// backend); comm/ only fixes the layouts, and this header's users agree on them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace prefixd::comm {

// AllToAllV arguments for peer-major contiguous buffers: the rows for (or from) rank j follow
// those of rank j−1, with no gaps.
struct ExchangeBytes {
  std::vector<size_t> send_bytes, send_offsets, recv_bytes, recv_offsets;
};
ExchangeBytes PeerMajorBytes(const std::vector<int64_t>& send_items,
                             const std::vector<int64_t>& recv_items, size_t bytes_per_item);

// Who needs and who has each item of a step.
struct ItemRoute {
  int owner = 0;
  std::vector<int> contributors;  // ascending, unique, in [0, num_ranks); may be empty
};

// (a)
struct OwnerGatherPlan {
  int rank = 0;
  int num_ranks = 1;
  std::vector<int64_t> send_items;    // [num_ranks]: items this rank sends to each rank (self too)
  std::vector<int64_t> recv_items;    // [num_ranks]: items this rank receives from each rank
  std::vector<int32_t> pack;          // [Σ send_items]: item index of each send slot, peer-major
  std::vector<int32_t> own_items;     // items this rank owns, ascending
  std::vector<int64_t> merge_indptr;  // [own_items + 1]: CSR over own_items
  std::vector<int64_t> merge_items;   // recv slot of each contribution, in contributor order
  int64_t num_send() const;
  int64_t num_recv() const;
  ExchangeBytes Bytes(size_t bytes_per_item) const {
    return PeerMajorBytes(send_items, recv_items, bytes_per_item);
  }
};
OwnerGatherPlan PlanOwnerGather(const std::vector<ItemRoute>& routes, int rank, int num_ranks);

// (b)
struct TreeReducePlan {
  int rank = 0;
  int num_ranks = 1;
  int64_t num_items = 0;              // every item of the step takes part on every rank
  int64_t block_items = 0;            // max over ranks of their owned items (the scatter block)
  std::vector<int64_t> slab_item;     // [num_items]: owner·block_items + index among owner's items
  std::vector<int32_t> own_items;     // this rank's items, ascending; own_items[k] is block item k
  // Floats per rank block of the reduce-scatter, for items of `floats_per_item` (H·(D+1)).
  size_t ReduceScatterCount(size_t floats_per_item) const {
    return static_cast<size_t>(block_items) * floats_per_item;
  }
  size_t SlabFloats(size_t floats_per_item) const {
    return static_cast<size_t>(num_ranks) * ReduceScatterCount(floats_per_item);
  }
};
TreeReducePlan PlanTreeReduce(const std::vector<int>& owners, int rank, int num_ranks);

}  // namespace prefixd::comm
