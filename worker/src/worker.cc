#include "prefixd/worker/worker.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>

#include "prefixd/comm/state_reduction.h"
#include "prefixd/common/env.h"
#include "prefixd/common/error.h"
#include "prefixd/kernels/plan.h"
#include "prefixd/kernels/synthetic_kv.h"
#include "prefixd/worker/advance_plan.h"
#include "prefixd/worker/worker_ops.h"
#include "worker_buffers.h"

namespace prefixd::worker {

using kernels::Backend;
using kernels::BackendKind;

const char* StateReductionName(StateReduction r) {
  return r == StateReduction::kAllToAll ? "a2a" : "tree";
}

StateReduction ParseStateReduction(const std::string& name) {
  if (name == "a2a" || name == "alltoall" || name == "all-to-all") return StateReduction::kAllToAll;
  if (name == "tree") return StateReduction::kTree;
  PREFIXD_THROW(ErrorKind::kInvalidArgument, "unknown state reduction '" << name << "' (expected a2a or tree)");
}

namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

int64_t Sum(const std::vector<int64_t>& v) {
  int64_t s = 0;
  for (int64_t x : v) s += x;
  return s;
}

// Appends a typed array to a byte vector at an 8-byte-aligned offset; returns the offset.
template <typename T>
size_t Append(std::vector<uint8_t>* bytes, const std::vector<T>& v) {
  const size_t off = (bytes->size() + 7) / 8 * 8;
  bytes->resize(off + v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(bytes->data() + off, v.data(), v.size() * sizeof(T));
  return off;
}

}  // namespace

namespace {

// Backend::BeginUploadBatch on every backend of the worker for a scope; closed by Close(), or on
// the way out of an exception, so that no later kernel reads a destination whose copy still waits.
class UploadBatchScope {
 public:
  using Backends = std::vector<std::unique_ptr<Backend>>;
  UploadBatchScope(Backends& a, Backends& b) : a_(a), b_(b) {
    for (auto& x : a_) x->BeginUploadBatch();
    for (auto& x : b_) x->BeginUploadBatch();
  }
  void Close() {
    if (closed_) return;
    closed_ = true;
    for (auto& x : a_) x->EndUploadBatch();
    for (auto& x : b_) x->EndUploadBatch();
  }
  ~UploadBatchScope() {
    try {
      Close();
    } catch (...) {  // already unwinding from the first error
    }
  }

 private:
  Backends& a_;
  Backends& b_;
  bool closed_ = false;
};

// An A/B switch from the environment: `name` unset keeps `*value`; otherwise it must be one of
// the two spellings given.
void EnvSwitch(const char* name, const char* off, const char* on, bool* value) {
  *value = EnvChoice(name, {off, on}, *value ? 1 : 0) == 1;
}

}  // namespace

Worker::Worker(const WorkerOptions& options, std::unique_ptr<Backend> backend, std::unique_ptr<comm::Comm> comm)
    : options_(options), comm_(std::move(comm)) {
  PREFIXD_CHECK_ARG(backend != nullptr && comm_ != nullptr, "Worker: backend and comm are required");
  EnvSwitch("PREFIXD_QUERIES_IN_PLACE", "0", "1", &options_.queries_in_place);
  EnvSwitch("PREFIXD_QUERY_ALLGATHER", "0", "1", &options_.queries_all_gather);
  EnvSwitch("PREFIXD_QUERY_STREAM", "comm", "compute", &options_.queries_on_compute_stream);
  EnvSwitch("PREFIXD_APPEND_BEHIND_QUERIES", "0", "1", &options_.append_behind_query_exchange);
  EnvSwitch("PREFIXD_APPEND_ON_DECODE_STREAM", "0", "1", &options_.append_on_decode_stream);
  EnvSwitch("PREFIXD_MERGE_INTO_SEND", "0", "1", &options_.merge_into_send_buffer);
  EnvSwitch("PREFIXD_DECODE_ON_SIDE_STREAM", "0", "1", &options_.decode_on_side_stream);
  EnvSwitch("PREFIXD_DECODE_BEHIND_PREFIX", "0", "1", &options_.decode_behind_prefix);
  EnvSwitch("PREFIXD_DECODE_BESIDE_PREFIX", "0", "1", &options_.decode_beside_prefix);
  options_.fuse_merge = int(EnvInteger("PREFIXD_FUSE_MERGE", 0, 1, options_.fuse_merge));  // unset: as given
  options_.decode_free_sms = int(EnvInteger("PREFIXD_DECODE_FREE_SMS", 0, 9999, options_.decode_free_sms));
  options_.pool.Validate();
  const kernels::KvPoolShape& pool = options_.pool;
  PREFIXD_CHECK_ARG(options_.num_qo_heads > 0 && options_.num_qo_heads % pool.num_kv_heads == 0,
                    "Worker: num_qo_heads " << options_.num_qo_heads << " is not a positive multiple of num_kv_heads "
                                            << pool.num_kv_heads);
  PREFIXD_CHECK_ARG(options_.head_chunks >= 1 && options_.head_chunks <= 16 &&
                        pool.num_kv_heads % options_.head_chunks == 0,
                    "Worker: head_chunks " << options_.head_chunks << " must divide num_kv_heads " << pool.num_kv_heads
                                           << " (and be in [1, 16])");
  PREFIXD_CHECK_ARG(options_.head_chunks == 1 || !options_.split_own_rows,
                    "Worker: head_chunks > 1 and split_own_rows do not combine");
  PREFIXD_CHECK_ARG(options_.choose_layout >= -1 && options_.choose_layout <= 1,
                    "Worker: choose_layout must be -1 (the backend's default), 0 or 1, got " << options_.choose_layout);
  PREFIXD_CHECK_ARG(options_.measure_plan_choice >= -1 && options_.measure_plan_choice <= 1,
                    "Worker: measure_plan_choice must be -1 (on for CUDA), 0 or 1, got " << options_.measure_plan_choice);
  const bool device = backend->kind() == BackendKind::kCuda;
  options_.measure_plan_choice =
      int(EnvInteger("PREFIXD_MEASURED_CHOICE", 0, 1, options_.measure_plan_choice));  // unset: as given
  measure_plan_choice_ = options_.measure_plan_choice == 1 || (options_.measure_plan_choice == -1 && device);
  measured_planner_ = kernels::MeasuredPlanner(options_.measured_choice);
  PREFIXD_CHECK_ARG(device == (comm_->memory() == comm::MemoryKind::kDevice),
                    "Worker: comm '" << comm_->name() << "' works on " << (device ? "host" : "device")
                                     << " buffers but backend " << backend->Describe() << " keeps "
                                     << (device ? "device" : "host") << " memory");
  backends_.push_back(std::move(backend));
  Backend& main = *backends_[0];
  sync_ = std::make_unique<StreamSync>(main);
  if (main.kind() == BackendKind::kCuda || options_.host_only) staging_ = std::make_unique<PinnedStaging>(main);
  UpdateOtherStreams();
  out_v_ = BackendBuffer(&main);
  out_s_ = BackendBuffer(&main);
  append_ = BackendBuffer(&main);
  kv_.shape = pool;
  kv_.k = main.Alloc(size_t(pool.BytesPerArray()));
  try {
    kv_.v = main.Alloc(size_t(pool.BytesPerArray()));
  } catch (...) {  // a throwing constructor runs no destructor
    main.Free(kv_.k);
    throw;
  }
  main.Fill(kv_.k, 0, size_t(pool.BytesPerArray()));
  main.Fill(kv_.v, 0, size_t(pool.BytesPerArray()));
  main.Synchronize();
  page_used_.assign(pool.num_pages, 0);
  chunks_.resize(1);
  chunks_[0].backend = &main;
  chunks_[0].buf = std::make_unique<Buffers>(&main, comm_.get());
}

Worker::~Worker() {
  try {
    SynchronizeAll();
  } catch (...) {
    // Tearing down after an error: nothing more to report.
  }
  chunks_.clear();
  out_v_.Reset();
  out_s_.Reset();
  append_.Reset();
  sync_.reset();
  if (!backends_.empty()) {
    if (kv_.k) backends_[0]->Free(kv_.k);
    if (kv_.v) backends_[0]->Free(kv_.v);
  }
}

void Worker::AddPipelineBackend(std::unique_ptr<Backend> backend) {
  PREFIXD_CHECK_ARG(backend != nullptr && backend->kind() == backends_[0]->kind(),
                    "AddPipelineBackend: needs a backend of the same kind as " << backends_[0]->Describe());
  backends_.push_back(std::move(backend));
  Chunk ch;
  ch.backend = backends_.back().get();
  ch.buf = std::make_unique<Buffers>(ch.backend, comm_.get());
  chunks_.push_back(std::move(ch));
  UpdateOtherStreams();
}

void Worker::AddSplitBackend(std::unique_ptr<Backend> backend) {
  PREFIXD_CHECK_ARG(backend != nullptr && backend->kind() == backends_[0]->kind(),
                    "AddSplitBackend: needs a backend of the same kind as " << backends_[0]->Describe());
  const size_t c = split_backends_.size();
  PREFIXD_CHECK_ARG(c < chunks_.size(), "AddSplitBackend: one per pipeline chunk (" << chunks_.size() << ")");
  split_backends_.push_back(std::move(backend));
  Chunk& ch = chunks_[c];
  ch.split = split_backends_.back().get();
  ch.buf->v_own = std::make_unique<BackendBuffer>(ch.split);
  ch.buf->s_own = std::make_unique<BackendBuffer>(ch.split);
  UpdateOtherStreams();
}

void Worker::UpdateOtherStreams() {
  other_streams_.clear();
  void* main = backends_[0]->stream();
  for (size_t i = 1; i < backends_.size(); ++i)
    if (backends_[i]->stream() != main) other_streams_.push_back(backends_[i]->stream());
  for (const auto& b : split_backends_) other_streams_.push_back(b->stream());
  if (sync_ && sync_->comm_stream()) other_streams_.push_back(sync_->comm_stream());
  if (sync_ && sync_->side_stream()) other_streams_.push_back(sync_->side_stream());
}

void Worker::UploadAsync(Backend& be, void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  if (!staging_) return be.CopyToDeviceAsync(dst, src, bytes);
  const void* staged = staging_->Stage(src, bytes);
  if (staged == nullptr) {  // the slot is too small: wait until no copy reads staging, then grow
    SynchronizeAll();
    staging_->Grow(bytes);
    staged = staging_->Stage(src, bytes);
    PREFIXD_CHECK_INTERNAL(staged != nullptr, "PinnedStaging: " << bytes << " bytes do not fit after Grow");
  }
  be.CopyToDeviceAsync(dst, staged, bytes);
}

void Worker::SynchronizeAll() {
  for (auto& b : backends_) b->Synchronize();
  for (auto& b : split_backends_) b->Synchronize();
  if (sync_) sync_->Synchronize();
  step_in_flight_ = false;
}

void Worker::MarkPhase(double* phase) {
  if (profile_mode_ == ProfileMode::kOff) return;
  if (profile_mode_ == ProfileMode::kFenced) SynchronizeAll();
  const double now = Now();
  *phase += (now - mark_) * 1e3;
  mark_ = now;
}

bool Worker::runs_ahead() const {
  return options_.run_ahead && backends_[0]->kind() == BackendKind::kCuda && profile_mode_ != ProfileMode::kFenced &&
         !options_.host_only;
}

void Worker::Execute(const StepPlan& plan) {
  mark_ = Now();
  const double start = mark_;
  const bool run_ahead = runs_ahead();
  // A step that ran ahead may still run: a synchronising step (e.g. the profile switched to
  // fences) first waits for it, as it would have at the end of that step.
  if (!run_ahead && step_in_flight_) SynchronizeAll();
  if (staging_) staging_->NextStep();
  void* main = backends_[0]->stream();
  // Run-ahead: the last step may still run; main's queue ends with its join (below), so every
  // other stream starting after main's tail starts after the whole last step. (Events and the
  // token append run on main itself.)
  if (run_ahead)
    for (void* s : other_streams_) sync_->Wait(s, main);
  for (const PlanEvent& e : plan.events) ApplyEvent(e);
  Decode(plan);
  if (run_ahead) {
    for (void* s : other_streams_) sync_->Wait(main, s);
    sync_->EndStepRunAhead(main);
    step_in_flight_ = true;
  } else {
    SynchronizeAll();
  }
  if (profile_mode_ == ProfileMode::kOff) return;
  MarkPhase(&profile_.wait_ms);
  profile_.total_ms += (mark_ - start) * 1e3;
  ++profile_.steps;
}

// ---- lifecycle ----

void Worker::ApplyEvent(const PlanEvent& e) {
  events_since_decode_ = true;
  for (Chunk& ch : chunks_) ch.reusable = false;
  switch (e.kind) {
    case EventKind::kAddPrefix: AddPrefix(e.prefix); return;
    case EventKind::kAddRequest: AddRequest(e.request); return;
    case EventKind::kRemoveRequest: RemoveRequest(e.id); return;
    case EventKind::kRemovePrefix: RemovePrefix(e.id); return;
  }
  PREFIXD_THROW(ErrorKind::kInternal, "worker: unknown plan event kind " << int(e.kind));
}

void Worker::ClaimPages(int32_t first, const std::vector<int32_t>& pages, const char* what, int32_t id) {
  auto claim = [&](int32_t p) {
    PREFIXD_CHECK_INTERNAL(p >= 0 && p < int32_t(page_used_.size()),
                           what << " " << id << ": page " << p << " outside rank " << rank() << "'s "
                                << page_used_.size() << " pages");
    PREFIXD_CHECK_INTERNAL(!page_used_[p], what << " " << id << ": page " << p << " on rank " << rank()
                                                << " is already in use (coordinator and worker disagree)");
    page_used_[p] = 1;
  };
  if (first >= 0)
    for (int32_t i = 0; i < int32_t(pages.size()); ++i) claim(first + i);
  else
    for (int32_t p : pages) claim(p);
}

void Worker::ReleasePages(const std::vector<int32_t>& pages, const char* what, int32_t id) {
  for (int32_t p : pages) {
    PREFIXD_CHECK_INTERNAL(p >= 0 && p < int32_t(page_used_.size()) && page_used_[p],
                           what << " " << id << ": page " << p << " on rank " << rank() << " is not in use");
    page_used_[p] = 0;
  }
}

void Worker::AddPrefix(const PrefixAdd& add) {
  PREFIXD_CHECK_INTERNAL(!prefixes_.count(add.prefix_id), "prefix " << add.prefix_id << " added twice");
  const int32_t n = int32_t(add.tokens.size());
  PREFIXD_CHECK_INTERNAL(n > 0, "prefix " << add.prefix_id << " has no tokens");
  PrefixInfo info;
  info.id = add.prefix_id;
  info.num_tokens = n;
  info.shards = add.shards;
  int32_t next = 0;
  std::set<int32_t> seen;
  for (size_t i = 0; i < add.shards.size(); ++i) {
    const ShardPlacement& s = add.shards[i];
    PREFIXD_CHECK_INTERNAL(s.rank >= 0 && s.rank < num_ranks() && s.pos_begin == next && s.num_tokens >= 0,
                           "prefix " << add.prefix_id << " shard " << i << " (rank " << s.rank << ", positions ["
                                     << s.pos_begin << ", " << s.pos_begin + s.num_tokens << ")) is malformed");
    next += s.num_tokens;
    if (s.num_tokens == 0) continue;
    PREFIXD_CHECK_INTERNAL(seen.insert(s.rank).second,
                           "prefix " << add.prefix_id << " has two shards on rank " << s.rank);
    info.holders.push_back(s.rank);
    if (s.rank == rank()) info.my_shard = int(i);
  }
  PREFIXD_CHECK_INTERNAL(next == n, "prefix " << add.prefix_id << " shards cover " << next << " of " << n << " tokens");
  std::sort(info.holders.begin(), info.holders.end());
  const std::vector<uint64_t> hashes = kernels::PrefixHashes(add.tokens);
  info.hash = hashes.back();
  if (info.my_shard >= 0) {
    const ShardPlacement& s = add.shards[info.my_shard];
    const int32_t pages = int32_t(CeilDiv(s.num_tokens, options_.pool.page_size));
    ClaimPages(s.first_page, std::vector<int32_t>(pages), "prefix", add.prefix_id);
    if (!options_.host_only)
      kernels::FillSyntheticKvFromHost(*backends_[0], kv_, hashes.data() + s.pos_begin, nullptr, nullptr, s.num_tokens,
                                     s.pos_begin, int64_t(s.first_page) * options_.pool.page_size);
  }
  prefixes_.emplace(info.id, std::move(info));
}

void Worker::AddRequest(const RequestAdd& add) {
  PREFIXD_CHECK_INTERNAL(!requests_.count(add.request_id), "request " << add.request_id << " added twice");
  PREFIXD_CHECK_INTERNAL(add.owner >= 0 && add.owner < num_ranks(),
                         "request " << add.request_id << " owned by rank " << add.owner << " of " << num_ranks());
  RequestInfo info;
  info.id = add.request_id;
  info.prefix_id = add.prefix_id;
  info.owner = add.owner;
  info.pages = add.pages;
  info.hash = kernels::kEmptySequenceHash;
  if (add.prefix_id >= 0) {
    auto it = prefixes_.find(add.prefix_id);
    PREFIXD_CHECK_INTERNAL(it != prefixes_.end(),
                           "request " << add.request_id << " names prefix " << add.prefix_id << ", not present");
    info.prefix_len = it->second.num_tokens;
    info.hash = it->second.hash;
  }
  const int64_t n = int64_t(add.tokens.size());
  const int ps = options_.pool.page_size;
  PREFIXD_CHECK_INTERNAL(n <= int64_t(add.pages.size()) * ps,
                         "request " << add.request_id << ": " << n << " prompt tokens in " << add.pages.size() << " pages");
  const std::vector<uint64_t> hashes = kernels::PrefixHashes(add.tokens.data(), n, info.hash);
  if (add.owner == rank()) {
    ClaimPages(-1, add.pages, "request", add.request_id);
    std::vector<int64_t> positions(n), slots(n);
    for (int64_t i = 0; i < n; ++i) {
      positions[i] = info.prefix_len + i;
      slots[i] = int64_t(add.pages[i / ps]) * ps + i % ps;
    }
    if (!options_.host_only)
      kernels::FillSyntheticKvFromHost(*backends_[0], kv_, hashes.data(), positions.data(), slots.data(), n);
  }
  if (n > 0) info.hash = hashes.back();
  info.length = int32_t(n);
  requests_.emplace(info.id, std::move(info));
}

void Worker::RemoveRequest(int32_t id) {
  auto it = requests_.find(id);
  PREFIXD_CHECK_INTERNAL(it != requests_.end(), "removing request " << id << ", which is not present");
  if (it->second.owner == rank()) ReleasePages(it->second.pages, "request", id);
  requests_.erase(it);
}

void Worker::RemovePrefix(int32_t id) {
  auto it = prefixes_.find(id);
  PREFIXD_CHECK_INTERNAL(it != prefixes_.end(), "removing prefix " << id << ", which is not present");
  for (const auto& [rid, req] : requests_)
    PREFIXD_CHECK_INTERNAL(req.prefix_id != id, "removing prefix " << id << " while request " << rid << " uses it");
  const PrefixInfo& info = it->second;
  if (info.my_shard >= 0) {
    const ShardPlacement& s = info.shards[info.my_shard];
    std::vector<int32_t> pages(CeilDiv(s.num_tokens, options_.pool.page_size));
    for (size_t i = 0; i < pages.size(); ++i) pages[i] = s.first_page + int32_t(i);
    ReleasePages(pages, "prefix", id);
  }
  prefixes_.erase(it);
}

WorkerMemory Worker::Memory() const {
  WorkerMemory m;
  m.pool_bytes = 2 * options_.pool.BytesPerArray();
  m.pages_total = options_.pool.num_pages;
  for (const auto& [id, p] : prefixes_)
    if (p.my_shard >= 0) m.pages_prefix += int32_t(CeilDiv(p.shards[p.my_shard].num_tokens, options_.pool.page_size));
  for (const auto& [id, r] : requests_)
    if (r.owner == rank()) m.pages_suffix += int32_t(r.pages.size());
  m.workspace_bytes = int64_t(out_v_.bytes() + out_s_.bytes() + append_.bytes());
  for (const Chunk& ch : chunks_) m.workspace_bytes += ch.buf->bytes();
  return m;
}

// ---- decode ----

void Worker::Decode(const StepPlan& plan) {
  const int ps = options_.pool.page_size;
  // Append this step's token to every decoding request: every rank tracks lengths and hashes,
  // the owner also writes the token's K/V.
  // No request twice (sorted ids, no set), and no per-step allocation once the vectors have grown.
  // Steady decoding (no event since the last step, and the same requests in the same order, which
  // the coordinator's decode order gives while nothing joins or leaves) skips the duplicate check
  // and the lookups: the last step's request pointers are still valid (only events erase).
  bool steady = !events_since_decode_ && plan.decode.size() == last_decode_ids_.size();
  for (size_t i = 0; steady && i < plan.decode.size(); ++i) steady = plan.decode[i].request_id == last_decode_ids_[i];
  if (!steady) {
    std::vector<int32_t>& ids = scratch_ids_;
    ids.clear();
    for (const DecodeEntry& e : plan.decode) ids.push_back(e.request_id);
    std::sort(ids.begin(), ids.end());
    const auto twice = std::adjacent_find(ids.begin(), ids.end());
    PREFIXD_CHECK_INTERNAL(twice == ids.end(), "step " << plan.step << " decodes request " << *twice << " twice");
    decode_reqs_.clear();
    last_decode_ids_.clear();
    for (const DecodeEntry& e : plan.decode) {
      auto it = requests_.find(e.request_id);
      PREFIXD_CHECK_INTERNAL(it != requests_.end(), "step " << plan.step << " decodes request " << e.request_id
                                                            << ", which is not present");
      decode_reqs_.push_back(&it->second);
      last_decode_ids_.push_back(e.request_id);
    }
    events_since_decode_ = false;
  }
  std::vector<uint64_t>& app_hash = app_hash_;
  std::vector<int64_t>& app_pos = app_pos_;
  std::vector<int64_t>& app_slot = app_slot_;
  app_hash.clear();
  app_pos.clear();
  app_slot.clear();
  for (size_t i = 0; i < plan.decode.size(); ++i) {
    const DecodeEntry& e = plan.decode[i];
    RequestInfo& r = *decode_reqs_[i];
    PREFIXD_CHECK_INTERNAL(int64_t(r.length) < int64_t(r.pages.size()) * ps,
                           "request " << r.id << " decodes past its " << r.pages.size() << " reserved pages");
    r.hash = kernels::ChainHash(r.hash, e.token);
    ++r.length;
    if (r.owner != rank()) continue;
    const int32_t t = r.length - 1;  // suffix index of the token decoded now
    app_hash.push_back(r.hash);
    app_pos.push_back(int64_t(r.prefix_len) + t);
    app_slot.push_back(int64_t(r.pages[t / ps]) * ps + t % ps);
  }
  for (Chunk& ch : chunks_) ch.active = false;
  owned_output_ids_.clear();
  const int n = int(plan.decode.size());
  if (n == 0) {
    MarkPhase(&profile_.prepare_ms);
    return;
  }

  // The decoded tokens' K/V, every layer at once (synthetic; a model would write layer by layer),
  // on the main stream; every chunk's stream waits for it below. Or, where the first layer's query
  // exchange can hide it (WorkerOptions::append_behind_query_exchange), RunLayer launches it there.
  Backend& main = *backends_[0];
  append_pending_ = false;
  // The step's uploads (the tokens below, the chunks' plans and per-step arrays) as one operation
  // per backend (Backend::BeginUploadBatch), closed before anything reads them.
  UploadBatchScope upload_batch(backends_, split_backends_);
  kernels::SyntheticKvTokens& append = append_tokens_;
  if (!app_hash.empty()) {
    append = kernels::SyntheticKvTokens{};
    append.n = int64_t(app_hash.size());
    if (main.kind() == BackendKind::kCpu && !options_.host_only) {  // host arrays: FillSyntheticKv also checks them
      append.hashes = app_hash.data();
      append.positions = app_pos.data();
      append.slots = app_slot.data();
    } else {  // one async copy; the host copy lives until the step's final sync
      std::vector<uint8_t>& up = append_host_;
      up.clear();
      const size_t o_h = Append(&up, app_hash), o_p = Append(&up, app_pos), o_s = Append(&up, app_slot);
      append_.Reserve(up.size());
      UploadAsync(main, append_.get(), up.data(), up.size());
      append.hashes = reinterpret_cast<const uint64_t*>(append_.get<uint8_t>() + o_h);
      append.positions = reinterpret_cast<const int64_t*>(append_.get<uint8_t>() + o_p);
      append.slots = reinterpret_cast<const int64_t*>(append_.get<uint8_t>() + o_s);
    }
    append_pending_ = !options_.host_only;
  }

  // Chunks: contiguous pieces of the decode list (sizes differ by at most one), the same on
  // every rank.
  const int num_chunks = std::min<int>(int(chunks_.size()), n);
  for (int c = 0; c < num_chunks; ++c) {
    std::vector<int>& entries = scratch_entries_;
    entries.clear();
    for (int e = int(int64_t(c) * n / num_chunks); e < int(int64_t(c + 1) * n / num_chunks); ++e) entries.push_back(e);
    chunks_[c].own_offset = int(owned_output_ids_.size());
    const bool reuse = options_.reuse_steady_plans && steady && chunks_[c].reusable;
    if (!(reuse && PrepareChunkSteady(chunks_[c]))) PrepareChunk(chunks_[c], plan, entries);
    Chunk& ch = chunks_[c];
    bool sent_rows_decode = false;
    for (const kernels::DecodeWorkItem& it : ch.plan.decode_items)
      sent_rows_decode |= size_t(it.request) < ch.plan_rows.size() && ch.plan_rows[size_t(it.request)] == nullptr;
    ch.send_needs_decode = sent_rows_decode;
    chunks_with_sent_rows_decoding_ += sent_rows_decode;
  }
  upload_batch.Close();

  // The append waits for layer 0's query exchange to be under way where there is one chunk whose
  // queries travel on the comm stream (RunLayer) and which computes on the main stream; else now.
  const Chunk& first = chunks_[0];
  const bool behind_queries = append_pending_ && options_.append_behind_query_exchange && num_chunks == 1 &&
                              first.active && !first.is_split && first.head_chunks == 1 &&
                              first.layout.needs_query_exchange && first.backend == &main;
  if (behind_queries) ++appends_behind_queries_;
  if (append_pending_ && !behind_queries) {
    kernels::FillSyntheticKv(main, kv_, append);
    append_pending_ = false;
  }

  const kernels::KvPoolShape& pool = options_.pool;
  const size_t own_total = std::max<size_t>(owned_output_ids_.size(), 1);
  num_output_layers_ = options_.keep_layer_outputs ? pool.num_layers : 1;
  out_v_.Reserve(size_t(num_output_layers_) * own_total * options_.num_qo_heads * pool.head_dim * 4);
  out_s_.Reserve(size_t(num_output_layers_) * own_total * options_.num_qo_heads * 4);
  for (Chunk& ch : chunks_) {
    if (!ch.active) continue;
    sync_->Wait(ch.backend->stream(), main.stream());
    if (ch.is_split) sync_->Wait(ch.split->stream(), main.stream());
  }
  MarkPhase(&profile_.prepare_ms);
  if (options_.host_only) return;
  for (int layer = 0; layer < pool.num_layers; ++layer) RunLayer(layer);
}

void Worker::PrepareChunk(Chunk& ch, const StepPlan& plan, const std::vector<int>& entries) {
  const kernels::KvPoolShape& pool = options_.pool;
  const int ps = pool.page_size, hq = options_.num_qo_heads, d = pool.head_dim;
  LayoutInput in;
  in.rank = rank();
  in.num_ranks = num_ranks();
  for (int e : entries) {
    const RequestInfo& r = requests_.at(plan.decode[e].request_id);
    in.prefix_of.push_back(r.prefix_id);
    in.owner_of.push_back(r.owner);
    if (r.prefix_id >= 0 && !in.holders.count(r.prefix_id)) in.holders[r.prefix_id] = prefixes_.at(r.prefix_id).holders;
  }
  // The layout depends only on (prefix, owner) of each entry and on the holders: unchanged from
  // the last step in steady decoding, so it is kept.
  if (!ch.has_layout || in.rank != ch.layout_input.rank || in.num_ranks != ch.layout_input.num_ranks ||
      in.prefix_of != ch.layout_input.prefix_of || in.owner_of != ch.layout_input.owner_of ||
      in.holders != ch.layout_input.holders) {
    ch.layout = MakeStepLayout(in);
    ch.layout_input = std::move(in);
    ch.has_layout = true;
  }
  ch.active = true;
  const StepLayout& L = ch.layout;
  auto request_at = [&](int canonical) -> const RequestInfo& {
    return requests_.at(plan.decode[entries[L.order[canonical]]].request_id);
  };
  const int b_loc = L.num_local(), b_own = L.num_own(), nr = num_ranks();

  std::vector<uint64_t> own_hash(b_own);
  std::vector<int64_t> own_pos(b_own);
  ch.reusable = false;
  ch.own_reqs.clear();
  for (int j = 0; j < b_own; ++j) {
    const RequestInfo& r = request_at(L.own_rows[j]);
    ch.own_reqs.push_back(&r);
    owned_output_ids_.push_back(r.id);
    own_hash[j] = r.hash;
    own_pos[j] = int64_t(r.prefix_len) + r.length - 1;
  }

  // Split (own rows last): X = the local rows owned elsewhere, O = the own rows; both in local-row
  // order, so O's rows are the own rows and X's keep the layout's order.
  PREFIXD_CHECK_ARG(!options_.split_own_rows || ch.split != nullptr,
                    "Worker: split_own_rows needs a split backend per chunk (AddSplitBackend)");
  std::vector<int32_t> x_row(b_loc, -1), o_row(b_loc, -1);
  int num_x = 0, num_o = 0;
  for (int i = 0; i < b_loc; ++i) {
    if (L.local_owned[i]) o_row[i] = num_o++;
    else x_row[i] = num_x++;
  }
  ch.num_x = num_x;
  ch.is_split = options_.split_own_rows && L.needs_state_exchange && num_x > 0 && num_o > 0;
  PREFIXD_CHECK_ARG(options_.head_chunks == 1 || chunks_.size() == 1,
                    "Worker: head_chunks > 1 needs a single request chunk (no AddPipelineBackend)");
  // Head chunks: all-to-all only (the tree reduction falls back to whole heads).
  const int hc = options_.reduction == StateReduction::kAllToAll && !ch.is_split ? options_.head_chunks : 1;
  ch.head_chunks = hc;

  // The local cascade: one group per held prefix (its shard here), then the suffix-only group.
  // `keep` picks the rows of a split half (all rows when not split).
  auto make_batch = [&](auto keep) {
    kernels::DecodeBatch batch;
    batch.num_qo_heads = hq;
    int rows = 0;
    for (const LocalGroup& g : L.groups) {
      kernels::PrefixGroup pg;
      if (g.prefix_id >= 0) {
        const PrefixInfo& p = prefixes_.at(g.prefix_id);
        const ShardPlacement& s = p.shards.at(p.my_shard);
        pg.prefix = kernels::PrefixRun{s.first_page, s.num_tokens};
      }
      pg.first_request = rows;
      for (int i = g.first_row; i < g.first_row + g.num_rows; ++i) {
        if (!keep(i)) continue;
        ++rows;
        if (!L.local_owned[i]) {
          batch.suffix.AddSeq({}, 0);
          continue;
        }
        const RequestInfo& r = request_at(L.local_rows[i]);
        const int32_t pages = int32_t(CeilDiv(r.length, ps));
        batch.suffix.AddSeq(std::vector<int32_t>(r.pages.begin(), r.pages.begin() + pages),
                            r.length - (pages - 1) * ps);
      }
      pg.num_requests = rows - pg.first_request;
      if (pg.num_requests > 0) batch.groups.push_back(pg);
    }
    return batch;
  };
  // The plans are kept (with the request of each of their suffix rows) so that steady steps can
  // advance them in place (PrepareChunkSteady) instead of planning again.
  auto rows_of = [&](auto keep) {
    std::vector<const RequestInfo*> out;
    for (const LocalGroup& g : L.groups)
      for (int i = g.first_row; i < g.first_row + g.num_rows; ++i)
        if (keep(i)) out.push_back(L.local_owned[i] ? &request_at(L.local_rows[i]) : nullptr);
    return out;
  };
  Backend& be = *ch.backend;
  ch.plan_rows.clear();
  ch.split_rows.clear();
  ch.plan = kernels::CascadePlan{};
  ch.split_plan = kernels::CascadePlan{};
  if (ch.is_split) {
    auto x = [&](int i) { return !L.local_owned[i]; };
    auto o = [&](int i) { return bool(L.local_owned[i]); };
    ch.plan = PlanOn(be, make_batch(x), pool);
    be.LoadPlan(ch.plan);
    ch.plan_rows = rows_of(x);
    ch.split_plan = PlanOn(*ch.split, make_batch(o), pool);
    ch.split->LoadPlan(ch.split_plan);
    ch.split_rows = rows_of(o);
  } else if (b_loc > 0 && hc > 1) {  // one plan for H_kv/N heads, run over each chunk's head view
    kernels::DecodeBatch batch = make_batch([](int) { return true; });
    batch.num_qo_heads = hq / hc;
    kernels::KvPoolShape view = pool;
    view.num_kv_heads = pool.num_kv_heads / hc;
    ch.plan = PlanOn(be, batch, view);
    be.LoadPlan(ch.plan);
    ch.plan_rows = rows_of([](int) { return true; });
  } else if (b_loc > 0) {
    ch.plan = PlanOn(be, make_batch([](int) { return true; }), pool);
    be.LoadPlan(ch.plan);
    ch.plan_rows = rows_of([](int) { return true; });
  }
  // Head chunks: the layout's indices over sub-rows of H_qo/N heads (own row j, chunk c: j·N + c).
  std::vector<int32_t> hc_q_pack, hc_q_unpack, hc_out;
  if (hc > 1) {
    for (int c = 0; c < hc; ++c)
      for (int32_t j : L.q_pack) hc_q_pack.push_back(j * hc + c);
    for (int c = 0; c < hc; ++c)
      for (int32_t u : L.q_unpack) hc_q_unpack.push_back(u >= 0 ? u : -2 - ((-2 - u) * hc + c));
    for (int j = 0; j < b_own; ++j)
      for (int c = 0; c < hc; ++c) hc_out.push_back(c * b_own + j);
  }

  // Split: the layout's local-row indices, renamed to X or O rows.
  std::vector<int32_t> x_unpack, x_pack, o_merge_src, loc_from_split;
  if (ch.is_split) {
    for (int i = 0; i < b_loc; ++i) {
      if (L.local_owned[i]) {
        loc_from_split.push_back(-2 - o_row[i]);
        continue;
      }
      PREFIXD_CHECK_INTERNAL(L.q_unpack[i] >= 0, "split: row " << i << " owned elsewhere has no received query");
      x_unpack.push_back(L.q_unpack[i]);
      loc_from_split.push_back(x_row[i]);
    }
    for (int32_t i : L.st_pack) {
      PREFIXD_CHECK_INTERNAL(x_row[i] >= 0, "split: sending the state of own row " << i);
      x_pack.push_back(x_row[i]);
    }
    // X's queries are the received rows in order (the owner-sorted layout of one document): the
    // cascade reads them where they arrived.
    ch.x_queries_as_received = int64_t(x_unpack.size()) == Sum(L.q_recv_count);
    for (size_t i = 0; i < x_unpack.size() && ch.x_queries_as_received; ++i)
      ch.x_queries_as_received = x_unpack[i] == int32_t(i);
    o_merge_src = L.merge_src;
    for (int32_t& src : o_merge_src)
      if (src <= -2) {
        PREFIXD_CHECK_INTERNAL(o_row[-2 - src] >= 0, "split: merging local row " << -2 - src << ", not an own row");
        src = -2 - o_row[-2 - src];
      }
  }

  // One async upload of every per-step array of the chunk (the host copy lives until the step's
  // final sync, and the chunk's stream is the only reader).
  Buffers& B = *ch.buf;
  std::vector<uint8_t>& up = B.upload_host;
  up.clear();
  const size_t o_hash = Append(&up, own_hash), o_pos = Append(&up, own_pos);
  PREFIXD_CHECK_INTERNAL(o_hash == 0, "upload layout: own_hash must come first");
  ch.o_pos = o_pos;
  std::vector<int32_t> st_send_row(size_t(b_loc), -1);
  for (size_t i = 0; i < L.st_pack.size(); ++i) st_send_row[size_t(L.st_pack[i])] = int32_t(i);
  const size_t o_qp = Append(&up, L.q_pack), o_qu = Append(&up, L.q_unpack), o_sp = Append(&up, L.st_pack);
  const size_t o_sr = Append(&up, st_send_row);
  const size_t o_ms = Append(&up, L.merge_src), o_tm = Append(&up, L.tree_max_src);
  const size_t o_tl = Append(&up, L.tree_local_pos), o_td = Append(&up, L.tree_dst), o_to = Append(&up, L.tree_own_pos);
  const size_t o_xu = Append(&up, x_unpack), o_xp = Append(&up, x_pack), o_om = Append(&up, o_merge_src);
  const size_t o_ls = Append(&up, loc_from_split);
  const size_t o_hp = Append(&up, hc_q_pack), o_hu = Append(&up, hc_q_unpack), o_ho = Append(&up, hc_out);
  B.upload.Reserve(std::max<size_t>(up.size(), 8));
  UploadAsync(be, B.upload.get(), up.data(), up.size());
  auto* base = B.upload.get<uint8_t>();
  B.own_hash = reinterpret_cast<const uint64_t*>(base + o_hash);
  B.own_pos = reinterpret_cast<const int64_t*>(base + o_pos);
  B.q_pack = reinterpret_cast<const int32_t*>(base + o_qp);
  B.q_unpack = reinterpret_cast<const int32_t*>(base + o_qu);
  B.st_pack = reinterpret_cast<const int32_t*>(base + o_sp);
  B.st_send_row = reinterpret_cast<const int32_t*>(base + o_sr);
  B.merge_src = reinterpret_cast<const int32_t*>(base + o_ms);
  B.tree_max_src = reinterpret_cast<const int32_t*>(base + o_tm);
  B.tree_local_pos = reinterpret_cast<const int32_t*>(base + o_tl);
  B.tree_dst = reinterpret_cast<const int32_t*>(base + o_td);
  B.tree_own_pos = reinterpret_cast<const int32_t*>(base + o_to);
  B.x_unpack = reinterpret_cast<const int32_t*>(base + o_xu);
  B.x_pack = reinterpret_cast<const int32_t*>(base + o_xp);
  B.o_merge_src = reinterpret_cast<const int32_t*>(base + o_om);
  B.loc_from_split = reinterpret_cast<const int32_t*>(base + o_ls);
  B.hc_q_pack = reinterpret_cast<const int32_t*>(base + o_hp);
  B.hc_q_unpack = reinterpret_cast<const int32_t*>(base + o_hu);
  B.hc_out = reinterpret_cast<const int32_t*>(base + o_ho);

  // Buffers for this step's shapes (no allocation inside the layer loop).
  const size_t q_row = size_t(hq) * d * kernels::DTypeBytes(pool.dtype);
  const size_t v_row = size_t(hq) * d * 4, s_row = size_t(hq) * 4, st_row = v_row + s_row;
  auto rows = [](int64_t r) { return size_t(std::max<int64_t>(r, 1)); };
  B.q_own.Reserve(rows(b_own) * q_row);
  B.q_send.Reserve(rows(Sum(L.q_send_count)) * q_row);
  B.q_recv.Reserve(rows(Sum(L.q_recv_count)) * q_row);
  B.q_local.Reserve(rows(b_loc) * q_row);
  B.v_loc.Reserve(rows(b_loc) * v_row);
  B.s_loc.Reserve(rows(b_loc) * s_row);
  B.st_send.Reserve(rows(Sum(L.st_send_count)) * st_row);
  B.st_recv.Reserve(rows(Sum(L.st_recv_count)) * st_row);
  if (options_.reduction == StateReduction::kTree) {
    B.s_max.Reserve(rows(L.num_decode()) * s_row);
    B.slab.Reserve(rows(int64_t(nr) * L.max_own) * st_row);
    B.slab_recv.Reserve(rows(L.max_own) * st_row);
  }
  if (ch.is_split) {
    B.q_x.Reserve(rows(num_x) * q_row);
    B.v_x.Reserve(rows(num_x) * v_row);
    B.s_x.Reserve(rows(num_x) * s_row);
    B.v_own->Reserve(rows(b_own) * v_row);
    B.s_own->Reserve(rows(b_own) * s_row);
  }
  B.q_bytes = comm::PeerMajorBytes(L.q_send_count, L.q_recv_count, q_row);
  ch.queries_in_place = options_.queries_in_place && L.q_direct && L.needs_query_exchange && !ch.is_split && hc == 1;
  if (ch.queries_in_place) {  // offsets into q_local (StepLayout::q_direct)
    comm::ExchangeBytes& e = B.q_bytes;
    for (int j = 0; j < nr; ++j) {
      e.send_offsets[j] = size_t(L.q_own_local_row0 + L.q_send_own_row0[j]) * q_row;
      e.recv_offsets[j] = size_t(L.q_recv_local_row0[j]) * q_row;
    }
  }
  B.st_bytes = comm::PeerMajorBytes(L.st_send_count, L.st_recv_count, st_row);
  if (hc > 1) {  // every chunk-major buffer holds N chunks of 1/N of a row: the same bytes
    B.v_hc.Reserve(rows(b_own) * v_row);
    B.s_hc.Reserve(rows(b_own) * s_row);
    B.hc_q_bytes = comm::PeerMajorBytes(L.q_send_count, L.q_recv_count, q_row / hc);
    B.hc_st_bytes = comm::PeerMajorBytes(L.st_send_count, L.st_recv_count, st_row / hc);
  }
  ch.reusable = true;
  ch.advanced = 0;
}

kernels::PlanOptions Worker::PlanOptionsFor(const Backend& backend) const {
  kernels::PlanOptions o = backend.DefaultPlanOptions();
  if (options_.choose_layout >= 0) o.choose_layout = options_.choose_layout != 0;
  if (options_.fuse_merge >= 0) o.fuse_merge = options_.fuse_merge != 0;
  return o;
}

kernels::CascadePlan Worker::PlanOn(Backend& backend, const kernels::DecodeBatch& batch,
                                    const kernels::KvPoolShape& pool) {
  const kernels::PlanOptions options = PlanOptionsFor(backend);
  // host_only: nothing runs on a device, so nothing can be timed.
  if (!measure_plan_choice_ || options_.host_only) return kernels::PlanCascade(batch, pool, options);
  // A timing runs on an idle device: the step before may still be running (run_ahead), and its
  // streams share the backend's partial-state workspace.
  return measured_planner_.Plan(batch, pool, options, backend, kv_, nullptr, [this] { SynchronizeAll(); });
}

bool Worker::AdvancePlan(kernels::CascadePlan* plan, const std::vector<const RequestInfo*>& rows,
                         std::vector<int32_t>* old_len) {
  return AdvanceCascadePlan(plan, rows, options_.pool.page_size, old_len, &scratch_indices_);
}

bool Worker::PrepareChunkSteady(Chunk& ch) {
  // A kept plan's last decode items grow by a token per step; after kMaxAdvance steps the chunk
  // is planned again, so that its split of the suffixes stays the planner's.
  constexpr int kMaxAdvance = 16;
  if (ch.advanced >= kMaxAdvance) return false;
  auto fits = [&](const kernels::CascadePlan& plan, const std::vector<const RequestInfo*>& rows) {
    if (int(rows.size()) != plan.suffix.num_seqs()) return false;
    for (size_t i = 0; i < rows.size(); ++i) {
      if (rows[i] == nullptr) continue;
      const int64_t len = plan.suffix.SeqLen(int(i), options_.pool.page_size);
      if (rows[i]->length != len + 1 || len == 0) return false;
    }
    return true;
  };
  // All checks before any change: a chunk that cannot advance is prepared in full.
  const bool has_plan = !ch.plan_rows.empty();
  if (has_plan && !fits(ch.plan, ch.plan_rows)) return false;
  if (ch.is_split && !fits(ch.split_plan, ch.split_rows)) return false;
  ch.active = true;
  ++ch.advanced;
  if (has_plan) {
    PREFIXD_CHECK_INTERNAL(AdvancePlan(&ch.plan, ch.plan_rows, &ch.old_len), "steady plan advance failed");
    ch.backend->LoadPlan(ch.plan);
    ++plans_advanced_;
  }
  if (ch.is_split) {
    PREFIXD_CHECK_INTERNAL(AdvancePlan(&ch.split_plan, ch.split_rows, &ch.old_len), "steady plan advance failed");
    ch.split->LoadPlan(ch.split_plan);
    ++plans_advanced_;
  }
  // The per-step arrays: only the own rows' hash and position change; the layout's index arrays
  // in the device buffer are still the last upload's, so only the head of the buffer is copied.
  Buffers& B = *ch.buf;
  const int b_own = int(ch.own_reqs.size());
  auto* hash = reinterpret_cast<uint64_t*>(B.upload_host.data());
  auto* pos = reinterpret_cast<int64_t*>(B.upload_host.data() + ch.o_pos);
  for (int j = 0; j < b_own; ++j) {
    const RequestInfo& r = *ch.own_reqs[j];
    owned_output_ids_.push_back(r.id);
    hash[j] = r.hash;
    pos[j] = int64_t(r.prefix_len) + r.length - 1;
  }
  const size_t head = ch.o_pos + size_t(b_own) * sizeof(int64_t);
  UploadAsync(*ch.backend, B.upload.get(), B.upload_host.data(), head);
  return true;
}

void Worker::CopyOutputs(int layer, std::vector<float>* v, std::vector<float>* s) {
  const int layers = options_.pool.num_layers;
  PREFIXD_CHECK_ARG(layer >= 0 && layer < layers, "CopyOutputs: layer " << layer << " of " << layers);
  PREFIXD_CHECK_ARG(options_.keep_layer_outputs || layer == layers - 1,
                    "CopyOutputs: layer " << layer << " was not kept (keep_layer_outputs is off: only the last layer)");
  const int hq = options_.num_qo_heads, d = options_.pool.head_dim;
  const int64_t b_own = int64_t(owned_output_ids_.size());
  const int idx = options_.keep_layer_outputs ? layer : 0;
  v->assign(size_t(b_own * hq * d), 0.f);
  s->assign(size_t(b_own * hq), 0.f);
  if (b_own == 0) return;
  SynchronizeAll();
  backends_[0]->CopyToHost(v->data(), out_v_.get<float>() + idx * b_own * hq * d, v->size() * 4);
  backends_[0]->CopyToHost(s->data(), out_s_.get<float>() + idx * b_own * hq, s->size() * 4);
}

}  // namespace prefixd::worker
