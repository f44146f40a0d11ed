// The coordinator (rank 0): the global view of the cluster and the author of every step plan.
//
//  - prefix registry: identical token sequences share one prefix id and one copy of the KV;
//  - placement: long prefixes sharded over several ranks, short ones whole on one rank with their
//    requests; request owners chosen to balance suffix memory (placement.h);
//  - pages: one PageAllocator per rank, the authority on what is free there (workers only check);
//  - lifecycle: a prefix is reference-counted by its registrations (AddPrefix) and its requests;
//    when the count reaches 0 its KV is freed on every rank (a RemovePrefix event);
//  - admission control: a prefix or request that does not fit (kOutOfMemory), names an unknown
//    prefix (kNotFound) or has a bad shape (kInvalidArgument) is refused with an error naming it,
//    and nothing already admitted changes (allocations are rolled back before throwing);
//  - the step plan (worker/step_plan.h): the events since the last step, then every active
//    request decodes one token, in a deterministic order.
//
// No MPI here: the Engine broadcasts what MakeStep returns. So all of this is unit-tested alone.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "prefixd/coordinator/placement.h"
#include "prefixd/coordinator/registry.h"
#include "prefixd/kernels/kv_cache.h"
#include "prefixd/worker/step_plan.h"

namespace prefixd::coordinator {

struct ClusterConfig {
  int num_ranks = 1;
  int pages_per_rank = 0;      // KV pool pages on every rank
  int page_size = 16;
  PlacementOptions placement;
  uint64_t seed = 0;           // decoded tokens: SyntheticToken(seed ^ request id, i)
  int32_t vocab = 128256;      // token ids must be in [0, vocab)
};

// Optional placement override, for tests and experiments: tokens of each rank's shard (size
// num_ranks, rank order = position order, zeros allowed, sum = prefix length).
struct PrefixHint {
  std::vector<int32_t> shard_tokens;
};

struct RequestSpec {
  int32_t prefix_id = -1;          // −1: no shared prefix
  std::vector<int32_t> tokens;     // its own prompt (the question); may be empty with a prefix
  int32_t decode_steps = 1;        // tokens it decodes, one per step
  int32_t owner = -1;              // −1: the coordinator chooses
};

struct PrefixRecord {
  int32_t id = -1;
  int32_t num_tokens = 0;
  std::vector<worker::ShardPlacement> shards;
  std::vector<int32_t> holders;    // ranks with a non-empty shard, ascending
  int32_t registrations = 0;       // AddPrefix calls not yet released
  int32_t requests = 0;            // admitted requests not yet removed
};

struct RequestRecord {
  int32_t id = -1;
  int32_t prefix_id = -1;
  int32_t owner = 0;
  std::vector<int32_t> prompt;
  std::shared_ptr<const std::vector<int32_t>> prefix_tokens;  // outlives the prefix's registration
  std::vector<int32_t> pages;
  int32_t decode_steps = 0;
  std::vector<int32_t> decoded;    // tokens decoded so far
};

class Coordinator {
 public:
  explicit Coordinator(const ClusterConfig& config);

  const ClusterConfig& config() const { return config_; }

  // Registers a prefix (or finds the identical one already registered) and places it; takes one
  // registration reference, dropped by ReleasePrefix. Returns the prefix id.
  int32_t AddPrefix(const std::vector<int32_t>& tokens, const PrefixHint* hint = nullptr);
  // Drops one registration reference; the prefix is freed when nothing references it any more.
  void ReleasePrefix(int32_t prefix_id);
  // Admits a request: reserves its whole suffix (prompt + decode_steps tokens) on its owner, so
  // that an admitted request never runs out of pages. Returns the request id.
  int32_t AddRequest(const RequestSpec& spec);
  // Removes a request now (it stops decoding; its pages are freed).
  void RemoveRequest(int32_t request_id);

  // The next step's plan: pending events, then one decode entry for every active request, in
  // (prefix id, request id) order. Requests that decode their last token in this step are
  // removed right after it (their removal heads the next plan; their outputs of this step stay
  // readable until then).
  worker::StepPlan MakeStep();

  int64_t step() const { return step_; }
  bool HasPendingEvents() const { return !pending_.empty(); }
  int num_active() const;  // requests that will decode in the next step
  const std::map<int32_t, PrefixRecord>& prefixes() const { return prefixes_; }
  const std::map<int32_t, RequestRecord>& requests() const { return requests_; }
  const PrefixRegistry& registry() const { return registry_; }
  std::vector<RankLoad> Loads() const;
  // Full token sequence of a request so far: its prefix's tokens and its own (prompt + decoded).
  // Also for the requests that finished in the last step.
  void RequestTokens(int32_t request_id, std::vector<int32_t>* prefix, std::vector<int32_t>* suffix) const;

 private:
  // Shards for a new prefix of num_tokens (it has no id until placed: a refusal registers nothing).
  std::vector<worker::ShardPlacement> Place(int32_t num_tokens, const PrefixHint* hint);
  void RemoveRequestNow(int32_t request_id, bool keep_record);
  void MaybeFreePrefix(int32_t prefix_id);
  void CheckTokens(const std::vector<int32_t>& tokens, const std::string& what) const;

  ClusterConfig config_;
  PrefixRegistry registry_;
  std::vector<kernels::PageAllocator> pages_;  // one per rank
  std::vector<RankLoad> loads_;
  std::map<int32_t, PrefixRecord> prefixes_;
  std::map<int32_t, RequestRecord> requests_;
  std::map<int32_t, RequestRecord> finished_;  // finished in the last step: tokens still asked for
  std::vector<worker::PlanEvent> pending_;
  int32_t next_request_id_ = 0;
  int64_t step_ = 0;
};

}  // namespace prefixd::coordinator
