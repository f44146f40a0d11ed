#include "prefixd/coordinator/coordinator.h"

#include <algorithm>
#include <limits>

#include "prefixd/common/error.h"
#include "prefixd/kernels/synthetic_kv.h"

namespace prefixd::coordinator {

using worker::EventKind;
using worker::PlanEvent;
using worker::ShardPlacement;

namespace {
int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
}  // namespace

Coordinator::Coordinator(const ClusterConfig& config) : config_(config) {
  PREFIXD_CHECK_ARG(config.num_ranks >= 1, "coordinator: num_ranks must be ≥ 1, got " << config.num_ranks);
  PREFIXD_CHECK_ARG(config.pages_per_rank >= 1, "coordinator: pages_per_rank must be ≥ 1, got " << config.pages_per_rank);
  PREFIXD_CHECK_ARG(config.page_size >= 1, "coordinator: page_size must be ≥ 1, got " << config.page_size);
  PREFIXD_CHECK_ARG(config.vocab >= 1, "coordinator: vocab must be ≥ 1, got " << config.vocab);
  for (int r = 0; r < config.num_ranks; ++r) pages_.emplace_back(config.pages_per_rank);
  loads_.resize(config.num_ranks);
}

std::vector<RankLoad> Coordinator::Loads() const {
  std::vector<RankLoad> out = loads_;
  for (int r = 0; r < config_.num_ranks; ++r) out[r].free_pages = pages_[r].num_free();
  return out;
}

int Coordinator::num_active() const {
  int n = 0;
  for (const auto& [id, r] : requests_) n += int(r.decoded.size()) < r.decode_steps;
  return n;
}

void Coordinator::CheckTokens(const std::vector<int32_t>& tokens, const std::string& what) const {
  for (size_t i = 0; i < tokens.size(); ++i)
    PREFIXD_CHECK_ARG(tokens[i] >= 0 && tokens[i] < config_.vocab,
                      what << ": token " << i << " is " << tokens[i] << ", outside the vocabulary [0, " << config_.vocab
                           << ")");
}

std::vector<ShardPlacement> Coordinator::Place(int32_t num_tokens, const PrefixHint* hint) {
  const int n = config_.num_ranks, ps = config_.page_size;
  std::vector<int> ranks;
  std::vector<int32_t> sizes;
  if (hint != nullptr) {
    PREFIXD_CHECK_ARG(int(hint->shard_tokens.size()) == n,
                      "prefix placement hint lists " << hint->shard_tokens.size() << " shards for " << n << " ranks");
    int64_t sum = 0;
    for (int r = 0; r < n; ++r) {
      PREFIXD_CHECK_ARG(hint->shard_tokens[r] >= 0, "prefix placement hint: rank " << r << " gets "
                                                                                   << hint->shard_tokens[r] << " tokens");
      sum += hint->shard_tokens[r];
      ranks.push_back(r);
      sizes.push_back(hint->shard_tokens[r]);
    }
    PREFIXD_CHECK_ARG(sum == num_tokens, "prefix placement hint covers " << sum << " of " << num_tokens << " tokens");
  } else {
    const int k = ChooseShardCount(num_tokens, n, ps, config_.placement);
    const std::vector<RankLoad> loads = Loads();
    if (k == 1) {
      // Whole on one rank: the least loaded one where a contiguous run fits.
      std::vector<int> order(n);
      for (int r = 0; r < n; ++r) order[r] = r;
      std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
        if (loads[a].prefix_tokens != loads[b].prefix_tokens) return loads[a].prefix_tokens < loads[b].prefix_tokens;
        return loads[a].free_pages > loads[b].free_pages;
      });
      const int pages = int(CeilDiv(num_tokens, ps));
      for (int r : order) {
        try {
          const int32_t first = pages_[r].AllocateContiguous(pages);
          pages_[r].ReleaseRun(first, pages);  // a probe; the real allocation follows below
          ranks = {r};
          break;
        } catch (const Error& e) {
          if (e.kind() != ErrorKind::kOutOfMemory) throw;
        }
      }
      if (ranks.empty()) ranks = {order.front()};  // fails below with that rank's message
      sizes = {num_tokens};
    } else {
      ranks = ChooseShardRanks(loads, k);
      sizes = SplitTokens(num_tokens, k, ps);
    }
  }
  // Reserve every shard's run; on any failure give back what was taken and refuse.
  std::vector<ShardPlacement> shards;
  int32_t pos = 0;
  for (size_t i = 0; i < ranks.size(); ++i) {
    ShardPlacement s{ranks[i], pos, sizes[i], -1};
    pos += sizes[i];
    if (s.num_tokens > 0) {
      const int pages = int(CeilDiv(s.num_tokens, ps));
      try {
        s.first_page = pages_[s.rank].AllocateContiguous(pages);
      } catch (const Error& e) {
        for (const ShardPlacement& t : shards)
          if (t.num_tokens > 0) pages_[t.rank].ReleaseRun(t.first_page, int(CeilDiv(t.num_tokens, ps)));
        if (e.kind() != ErrorKind::kOutOfMemory) throw;
        PREFIXD_THROW(ErrorKind::kOutOfMemory,
                      "a new prefix of " << num_tokens << " tokens: its shard of " << s.num_tokens
                                << " tokens needs " << pages << " contiguous KV pages on rank " << s.rank << ", which has "
                                << pages_[s.rank].num_free() << " free pages (" << shards.size()
                                << " shards were placed and have been released)");
      }
    }
    shards.push_back(s);
  }
  return shards;
}

int32_t Coordinator::AddPrefix(const std::vector<int32_t>& tokens, const PrefixHint* hint) {
  PREFIXD_CHECK_ARG(!tokens.empty(), "AddPrefix: a prefix needs at least one token");
  PREFIXD_CHECK_ARG(tokens.size() <= size_t(std::numeric_limits<int32_t>::max() / 2),
                    "AddPrefix: " << tokens.size() << " tokens is more than prefixd handles");
  CheckTokens(tokens, "AddPrefix");
  const int32_t existing = registry_.Find(tokens);
  if (existing >= 0) {
    ++prefixes_.at(existing).registrations;
    return existing;
  }
  // Place before registering so that a refusal leaves the registry untouched.
  const int32_t num_tokens = int32_t(tokens.size());
  std::vector<ShardPlacement> shards = Place(num_tokens, hint);
  const int32_t id = registry_.Insert(tokens);
  PrefixRecord rec;
  rec.id = id;
  rec.num_tokens = num_tokens;
  rec.shards = shards;
  rec.registrations = 1;
  for (const ShardPlacement& s : shards)
    if (s.num_tokens > 0) {
      rec.holders.push_back(s.rank);
      loads_[s.rank].prefix_tokens += s.num_tokens;
    }
  std::sort(rec.holders.begin(), rec.holders.end());
  prefixes_.emplace(id, rec);
  PlanEvent e;
  e.kind = EventKind::kAddPrefix;
  e.id = id;
  e.prefix.prefix_id = id;
  e.prefix.tokens = tokens;
  e.prefix.shards = std::move(shards);
  pending_.push_back(std::move(e));
  return id;
}

void Coordinator::ReleasePrefix(int32_t prefix_id) {
  auto it = prefixes_.find(prefix_id);
  if (it == prefixes_.end()) PREFIXD_THROW(ErrorKind::kNotFound, "ReleasePrefix: unknown prefix " << prefix_id);
  PREFIXD_CHECK_ARG(it->second.registrations > 0,
                    "ReleasePrefix: prefix " << prefix_id << " has no registration left to release");
  --it->second.registrations;
  MaybeFreePrefix(prefix_id);
}

void Coordinator::MaybeFreePrefix(int32_t prefix_id) {
  PrefixRecord& rec = prefixes_.at(prefix_id);
  if (rec.registrations > 0 || rec.requests > 0) return;
  for (const ShardPlacement& s : rec.shards)
    if (s.num_tokens > 0) {
      pages_[s.rank].ReleaseRun(s.first_page, int(CeilDiv(s.num_tokens, config_.page_size)));
      loads_[s.rank].prefix_tokens -= s.num_tokens;
    }
  registry_.Erase(prefix_id);
  prefixes_.erase(prefix_id);
  PlanEvent e;
  e.kind = EventKind::kRemovePrefix;
  e.id = prefix_id;
  pending_.push_back(std::move(e));
}

int32_t Coordinator::AddRequest(const RequestSpec& spec) {
  const int32_t id = next_request_id_;
  const PrefixRecord* prefix = nullptr;
  if (spec.prefix_id != -1) {
    auto it = prefixes_.find(spec.prefix_id);
    if (it == prefixes_.end())
      PREFIXD_THROW(ErrorKind::kNotFound, "request " << id << " names prefix " << spec.prefix_id
                                                     << ", which is not registered (or was already freed)");
    prefix = &it->second;
  }
  PREFIXD_CHECK_ARG(spec.decode_steps >= 1, "request " << id << ": decode_steps must be ≥ 1, got " << spec.decode_steps);
  CheckTokens(spec.tokens, "request " + std::to_string(id));
  const int64_t suffix_len = int64_t(spec.tokens.size()) + spec.decode_steps;
  const int64_t total = suffix_len + (prefix ? prefix->num_tokens : 0);
  PREFIXD_CHECK_ARG(total < int64_t(std::numeric_limits<int32_t>::max() / 2),
                    "request " << id << ": " << total << " tokens in all is more than prefixd handles");
  PREFIXD_CHECK_ARG(spec.owner >= -1 && spec.owner < config_.num_ranks,
                    "request " << id << ": owner rank " << spec.owner << " is not in [0, " << config_.num_ranks << ")");
  const int64_t need = CeilDiv(suffix_len, config_.page_size);
  if (need > config_.pages_per_rank)
    PREFIXD_THROW(ErrorKind::kOutOfMemory, "request " << id << " needs " << need << " KV pages for its " << suffix_len
                                                      << " suffix tokens, more than a rank's whole pool of "
                                                      << config_.pages_per_rank << " pages");
  std::vector<int> candidates;
  if (spec.owner >= 0) candidates = {spec.owner};
  else candidates = OwnerCandidates(Loads(), prefix ? prefix->holders : std::vector<int32_t>{});
  int owner = -1;
  for (int r : candidates)
    if (pages_[r].num_free() >= need) {
      owner = r;
      break;
    }
  if (owner < 0) {
    int32_t best = 0;
    for (int r : candidates) best = std::max(best, int32_t(pages_[r].num_free()));
    PREFIXD_THROW(ErrorKind::kOutOfMemory, "request " << id << " needs " << need << " free KV pages for "
                                                      << suffix_len << " suffix tokens; the most any "
                                                      << (spec.owner >= 0 ? "allowed " : "") << "rank has is " << best);
  }
  RequestRecord rec;
  rec.id = id;
  rec.prefix_id = prefix ? prefix->id : -1;
  rec.owner = owner;
  rec.prompt = spec.tokens;
  if (prefix) rec.prefix_tokens = registry_.shared_tokens(prefix->id);
  rec.pages = pages_[owner].Allocate(int(need));
  rec.decode_steps = spec.decode_steps;
  ++next_request_id_;
  loads_[owner].suffix_pages += need;
  if (prefix) ++prefixes_.at(prefix->id).requests;
  PlanEvent e;
  e.kind = EventKind::kAddRequest;
  e.id = id;
  e.request.request_id = id;
  e.request.prefix_id = rec.prefix_id;
  e.request.owner = owner;
  e.request.tokens = rec.prompt;
  e.request.pages = rec.pages;
  pending_.push_back(std::move(e));
  requests_.emplace(id, std::move(rec));
  return id;
}

void Coordinator::RemoveRequest(int32_t request_id) {
  if (!requests_.count(request_id))
    PREFIXD_THROW(ErrorKind::kNotFound, "RemoveRequest: unknown request " << request_id
                                                                          << " (never admitted, or already removed)");
  RemoveRequestNow(request_id, false);
}

void Coordinator::RemoveRequestNow(int32_t request_id, bool keep_record) {
  RequestRecord& rec = requests_.at(request_id);
  if (keep_record) finished_.emplace(request_id, rec);
  pages_[rec.owner].Release(rec.pages);
  loads_[rec.owner].suffix_pages -= int64_t(rec.pages.size());
  const int32_t prefix_id = rec.prefix_id;
  requests_.erase(request_id);
  PlanEvent e;
  e.kind = EventKind::kRemoveRequest;
  e.id = request_id;
  pending_.push_back(std::move(e));
  if (prefix_id >= 0) {
    --prefixes_.at(prefix_id).requests;
    MaybeFreePrefix(prefix_id);
  }
}

worker::StepPlan Coordinator::MakeStep() {
  worker::StepPlan plan;
  plan.step = step_++;
  plan.events = std::move(pending_);
  pending_.clear();
  finished_.clear();
  std::vector<const RequestRecord*> active;
  for (const auto& [id, r] : requests_)
    if (int(r.decoded.size()) < r.decode_steps) active.push_back(&r);
  std::stable_sort(active.begin(), active.end(),
                   [](const RequestRecord* a, const RequestRecord* b) { return a->prefix_id < b->prefix_id; });
  std::vector<int32_t> finished;
  for (const RequestRecord* r : active) {
    RequestRecord& rec = requests_.at(r->id);
    const int32_t token = kernels::SyntheticToken(config_.seed ^ uint64_t(rec.id), int64_t(rec.decoded.size()), config_.vocab);
    rec.decoded.push_back(token);
    plan.decode.push_back(worker::DecodeEntry{rec.id, token});
    if (int(rec.decoded.size()) == rec.decode_steps) finished.push_back(rec.id);
  }
  for (int32_t id : finished) RemoveRequestNow(id, true);
  return plan;
}

void Coordinator::RequestTokens(int32_t request_id, std::vector<int32_t>* prefix, std::vector<int32_t>* suffix) const {
  auto it = requests_.find(request_id);
  if (it == requests_.end()) {
    it = finished_.find(request_id);
    if (it == finished_.end()) PREFIXD_THROW(ErrorKind::kNotFound, "RequestTokens: unknown request " << request_id);
  }
  const RequestRecord& r = it->second;
  prefix->clear();
  if (r.prefix_tokens) *prefix = *r.prefix_tokens;
  *suffix = r.prompt;
  suffix->insert(suffix->end(), r.decoded.begin(), r.decoded.end());
}

}  // namespace prefixd::coordinator
