// The step plan: what the coordinator decided, as data (DESIGN.md: "the plan is data").
//
// Rank 0's coordinator makes one StepPlan per decode step and broadcasts it (serialised to int32)
// to every worker; every worker applies the same plan, so their views of the cluster (which
// prefix shards and which request suffixes live where, on which pages) stay identical. A worker
// never chooses a rank or a page itself; it only derives, deterministically, its part of the
// step's work and communication from the plan (see step_layout.h).
//
// A plan has two parts:
//  1. lifecycle events, applied in order: a prefix placed (its tokens and its shards), a request
//     admitted (its owner, question tokens and the suffix pages reserved for it on the owner), a
//     request or prefix removed (its pages freed). Order matters: pages freed by a removal may be
//     given to a later admission of the same plan.
//  2. the decode list: the requests that decode one token this step, each with the token it
//     appends (the coordinator stands in for a model's sampler), in a deterministic global order.
#pragma once

#include <cstdint>
#include <vector>

namespace prefixd::worker {

// One contiguous piece of a prefix: positions [pos_begin, pos_begin + num_tokens) of the prefix
// live on `rank` in pages [first_page, first_page + ceil(num_tokens / page_size)). A shard with
// 0 tokens holds no pages (placement may give a rank nothing of a short prefix).
struct ShardPlacement {
  int32_t rank = 0;
  int32_t pos_begin = 0;
  int32_t num_tokens = 0;
  int32_t first_page = -1;
};

struct PrefixAdd {
  int32_t prefix_id = -1;
  std::vector<int32_t> tokens;          // the whole prefix (holders hash it to make their KV)
  std::vector<ShardPlacement> shards;   // ordered by pos_begin, covering [0, tokens.size())
};

struct RequestAdd {
  int32_t request_id = -1;
  int32_t prefix_id = -1;               // -1: a request without a shared prefix
  int32_t owner = 0;                    // the rank holding its suffix and its outputs
  std::vector<int32_t> tokens;          // its own prompt (the question), prefilled at admission
  std::vector<int32_t> pages;           // suffix pages reserved on the owner, filled in order
};

enum class EventKind : int32_t { kAddPrefix = 1, kAddRequest = 2, kRemoveRequest = 3, kRemovePrefix = 4 };

struct PlanEvent {
  EventKind kind = EventKind::kAddPrefix;
  int32_t id = -1;                      // prefix or request id (the remove events' only field)
  PrefixAdd prefix;                     // kAddPrefix
  RequestAdd request;                   // kAddRequest
};

struct DecodeEntry {
  int32_t request_id = -1;
  int32_t token = 0;                    // appended to the request's sequence this step
};

struct StepPlan {
  int64_t step = 0;
  std::vector<PlanEvent> events;
  std::vector<DecodeEntry> decode;

  std::vector<int32_t> Serialize() const;
  // Throws kInvalidArgument on a truncated or malformed buffer.
  static StepPlan Deserialize(const std::vector<int32_t>& data);
};

}  // namespace prefixd::worker
