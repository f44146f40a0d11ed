#include "prefixd/worker/worker.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <set>

#include "prefixd/common/error.h"
#include "prefixd/kernels/plan.h"
#include "prefixd/kernels/synthetic_kv.h"
#include "prefixd/worker/worker_ops.h"

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

// Everything a step needs in backend memory, reserved before the first layer.
struct Worker::Buffers {
  explicit Buffers(Backend* b)
      : upload(b), q_own(b), q_send(b), q_recv(b), q_local(b), v_loc(b), s_loc(b), st_send(b), st_recv(b), v_in(b),
        s_in(b), out_v(b), out_s(b), s_max(b), slab(b), slab_recv(b) {}
  BackendBuffer upload;                   // per-step host arrays, one copy (layout below)
  BackendBuffer q_own, q_send, q_recv, q_local;
  BackendBuffer v_loc, s_loc;             // this rank's partial states, [B_loc][H][D] / [B_loc][H]
  BackendBuffer st_send, st_recv;         // packed state rows
  BackendBuffer v_in, s_in;               // [merge_n][B_own][H][D] / [merge_n][B_own][H]
  BackendBuffer out_v, out_s;             // [layers kept][B_own][H][D] / [..][B_own][H]
  BackendBuffer s_max, slab, slab_recv;   // tree reduction

  // Pointers into `upload` for the current step.
  const uint64_t* own_hash = nullptr;     // [B_own]: sequence hash of the token decoded
  const int64_t* own_pos = nullptr;       // [B_own]: its position
  const int64_t* own_slot = nullptr;      // [B_own]: its pool slot
  const int32_t* q_pack = nullptr;
  const int32_t* q_unpack = nullptr;
  const int32_t* st_pack = nullptr;
  const int32_t* merge_src = nullptr;
  const int32_t* tree_max_src = nullptr;
  const int32_t* tree_local_pos = nullptr;
  const int32_t* tree_dst = nullptr;
  const int32_t* tree_own_pos = nullptr;

  // Per-peer byte counts and offsets of this step's exchanges.
  std::vector<size_t> q_send_bytes, q_send_off, q_recv_bytes, q_recv_off;
  std::vector<size_t> st_send_bytes, st_send_off, st_recv_bytes, st_recv_off;
};

namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

void CountsToBytes(const std::vector<int64_t>& counts, size_t row_bytes, std::vector<size_t>* bytes,
                   std::vector<size_t>* offsets) {
  bytes->resize(counts.size());
  offsets->resize(counts.size());
  size_t off = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    (*bytes)[i] = size_t(counts[i]) * row_bytes;
    (*offsets)[i] = off;
    off += (*bytes)[i];
  }
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

Worker::Worker(const WorkerOptions& options, std::unique_ptr<Backend> backend, std::unique_ptr<comm::Comm> comm)
    : options_(options), backend_(std::move(backend)), comm_(std::move(comm)) {
  PREFIXD_CHECK_ARG(backend_ != nullptr && comm_ != nullptr, "Worker: backend and comm are required");
  options_.pool.Validate();
  const kernels::KvPoolShape& pool = options_.pool;
  PREFIXD_CHECK_ARG(options_.num_qo_heads > 0 && options_.num_qo_heads % pool.num_kv_heads == 0,
                    "Worker: num_qo_heads " << options_.num_qo_heads << " is not a positive multiple of num_kv_heads "
                                            << pool.num_kv_heads);
  const bool device = backend_->kind() == BackendKind::kCuda;
  PREFIXD_CHECK_ARG(device == (comm_->memory() == comm::MemoryKind::kDevice),
                    "Worker: comm '" << comm_->name() << "' works on " << (device ? "host" : "device")
                                     << " buffers but backend " << backend_->Describe() << " keeps "
                                     << (device ? "device" : "host") << " memory");
  kv_.shape = pool;
  kv_.k = backend_->Alloc(size_t(pool.BytesPerArray()));
  kv_.v = backend_->Alloc(size_t(pool.BytesPerArray()));
  backend_->Fill(kv_.k, 0, size_t(pool.BytesPerArray()));
  backend_->Fill(kv_.v, 0, size_t(pool.BytesPerArray()));
  page_used_.assign(pool.num_pages, 0);
  buf_ = std::make_unique<Buffers>(backend_.get());
}

Worker::~Worker() {
  buf_.reset();
  if (backend_) {
    if (kv_.k) backend_->Free(kv_.k);
    if (kv_.v) backend_->Free(kv_.v);
  }
}

void Worker::Execute(const StepPlan& plan) {
  for (const PlanEvent& e : plan.events) ApplyEvent(e);
  Decode(plan);
  backend_->Synchronize();
}

// ---- lifecycle ----

void Worker::ApplyEvent(const PlanEvent& e) {
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
    kernels::FillSyntheticKvFromHost(*backend_, kv_, hashes.data() + s.pos_begin, nullptr, nullptr, s.num_tokens,
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
    kernels::FillSyntheticKvFromHost(*backend_, kv_, hashes.data(), positions.data(), slots.data(), n);
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
  const BackendBuffer* all[] = {&buf_->upload, &buf_->q_own,   &buf_->q_send, &buf_->q_recv, &buf_->q_local,
                                &buf_->v_loc,  &buf_->s_loc,   &buf_->st_send, &buf_->st_recv, &buf_->v_in,
                                &buf_->s_in,   &buf_->out_v,   &buf_->out_s,  &buf_->s_max,  &buf_->slab,
                                &buf_->slab_recv};
  for (const BackendBuffer* b : all) m.workspace_bytes += int64_t(b->bytes());
  return m;
}

// ---- decode ----

void Worker::Decode(const StepPlan& plan) {
  const kernels::KvPoolShape& pool = options_.pool;
  const int ps = pool.page_size, hq = options_.num_qo_heads, d = pool.head_dim;
  const int n = int(plan.decode.size());

  // Append this step's token to every decoding request (all ranks track lengths and hashes; the
  // owner also writes the K/V).
  LayoutInput in;
  in.rank = rank();
  in.num_ranks = num_ranks();
  std::set<int32_t> seen;
  for (const DecodeEntry& e : plan.decode) {
    auto it = requests_.find(e.request_id);
    PREFIXD_CHECK_INTERNAL(it != requests_.end(), "step " << plan.step << " decodes request " << e.request_id
                                                          << ", which is not present");
    PREFIXD_CHECK_INTERNAL(seen.insert(e.request_id).second,
                           "step " << plan.step << " decodes request " << e.request_id << " twice");
    RequestInfo& r = it->second;
    PREFIXD_CHECK_INTERNAL(int64_t(r.length) < int64_t(r.pages.size()) * ps,
                           "request " << r.id << " decodes past its " << r.pages.size() << " reserved pages");
    r.hash = kernels::ChainHash(r.hash, e.token);
    ++r.length;
    in.prefix_of.push_back(r.prefix_id);
    in.owner_of.push_back(r.owner);
    if (r.prefix_id >= 0 && !in.holders.count(r.prefix_id)) in.holders[r.prefix_id] = prefixes_.at(r.prefix_id).holders;
  }
  layout_ = MakeStepLayout(in);
  const StepLayout& L = layout_;
  const int b_loc = L.num_local(), b_own = L.num_own(), b_all = L.num_decode(), nr = num_ranks();
  owned_output_ids_.clear();
  std::vector<uint64_t> own_hash(b_own);
  std::vector<int64_t> own_pos(b_own), own_slot(b_own);
  for (int j = 0; j < b_own; ++j) {
    const RequestInfo& r = requests_.at(plan.decode[L.order[L.own_rows[j]]].request_id);
    owned_output_ids_.push_back(r.id);
    const int32_t t = r.length - 1;  // suffix index of the token decoded now
    own_hash[j] = r.hash;
    own_pos[j] = int64_t(r.prefix_len) + t;
    own_slot[j] = int64_t(r.pages[t / ps]) * ps + t % ps;
  }
  if (n == 0) return;

  // The local cascade: one group per held prefix (its shard here), then the suffix-only group.
  kernels::DecodeBatch batch;
  batch.num_qo_heads = hq;
  for (const LocalGroup& g : L.groups) {
    kernels::PrefixGroup pg;
    if (g.prefix_id >= 0) {
      const PrefixInfo& p = prefixes_.at(g.prefix_id);
      const ShardPlacement& s = p.shards.at(p.my_shard);
      pg.prefix = kernels::PrefixRun{s.first_page, s.num_tokens};
    }
    pg.first_request = g.first_row;
    pg.num_requests = g.num_rows;
    batch.groups.push_back(pg);
  }
  for (int i = 0; i < b_loc; ++i) {
    if (!L.local_owned[i]) {
      batch.suffix.AddSeq({}, 0);
      continue;
    }
    const RequestInfo& r = requests_.at(plan.decode[L.order[L.local_rows[i]]].request_id);
    const int32_t pages = int32_t(CeilDiv(r.length, ps));
    batch.suffix.AddSeq(std::vector<int32_t>(r.pages.begin(), r.pages.begin() + pages), r.length - (pages - 1) * ps);
  }
  if (b_loc > 0) backend_->LoadPlan(kernels::PlanCascade(batch, pool, backend_->DefaultPlanOptions()));

  // One upload of every per-step array.
  std::vector<uint8_t> up;
  const size_t o_hash = Append(&up, own_hash), o_pos = Append(&up, own_pos), o_slot = Append(&up, own_slot);
  const size_t o_qp = Append(&up, L.q_pack), o_qu = Append(&up, L.q_unpack), o_sp = Append(&up, L.st_pack);
  const size_t o_ms = Append(&up, L.merge_src), o_tm = Append(&up, L.tree_max_src);
  const size_t o_tl = Append(&up, L.tree_local_pos), o_td = Append(&up, L.tree_dst), o_to = Append(&up, L.tree_own_pos);
  Buffers& B = *buf_;
  B.upload.Reserve(std::max<size_t>(up.size(), 8));
  backend_->CopyToDevice(B.upload.get(), up.data(), up.size());
  auto* base = B.upload.get<uint8_t>();
  B.own_hash = reinterpret_cast<const uint64_t*>(base + o_hash);
  B.own_pos = reinterpret_cast<const int64_t*>(base + o_pos);
  B.own_slot = reinterpret_cast<const int64_t*>(base + o_slot);
  B.q_pack = reinterpret_cast<const int32_t*>(base + o_qp);
  B.q_unpack = reinterpret_cast<const int32_t*>(base + o_qu);
  B.st_pack = reinterpret_cast<const int32_t*>(base + o_sp);
  B.merge_src = reinterpret_cast<const int32_t*>(base + o_ms);
  B.tree_max_src = reinterpret_cast<const int32_t*>(base + o_tm);
  B.tree_local_pos = reinterpret_cast<const int32_t*>(base + o_tl);
  B.tree_dst = reinterpret_cast<const int32_t*>(base + o_td);
  B.tree_own_pos = reinterpret_cast<const int32_t*>(base + o_to);

  // Buffers for this step's shapes (no allocation inside the layer loop).
  const size_t q_row = size_t(hq) * d * kernels::DTypeBytes(pool.dtype);
  const size_t v_row = size_t(hq) * d * 4, s_row = size_t(hq) * 4, st_row = v_row + s_row;
  const int64_t q_send_rows = Sum(L.q_send_count), q_recv_rows = Sum(L.q_recv_count);
  const int64_t st_send_rows = Sum(L.st_send_count), st_recv_rows = Sum(L.st_recv_count);
  auto rows = [](int64_t r) { return size_t(std::max<int64_t>(r, 1)); };
  B.q_own.Reserve(rows(b_own) * q_row);
  B.q_send.Reserve(rows(q_send_rows) * q_row);
  B.q_recv.Reserve(rows(q_recv_rows) * q_row);
  B.q_local.Reserve(rows(b_loc) * q_row);
  B.v_loc.Reserve(rows(b_loc) * v_row);
  B.s_loc.Reserve(rows(b_loc) * s_row);
  B.st_send.Reserve(rows(st_send_rows) * st_row);
  B.st_recv.Reserve(rows(st_recv_rows) * st_row);
  B.v_in.Reserve(rows(int64_t(L.merge_n) * b_own) * v_row);
  B.s_in.Reserve(rows(int64_t(L.merge_n) * b_own) * s_row);
  num_output_layers_ = options_.keep_layer_outputs ? pool.num_layers : 1;
  B.out_v.Reserve(rows(int64_t(num_output_layers_) * b_own) * v_row);
  B.out_s.Reserve(rows(int64_t(num_output_layers_) * b_own) * s_row);
  if (options_.reduction == StateReduction::kTree) {
    B.s_max.Reserve(rows(b_all) * s_row);
    B.slab.Reserve(rows(int64_t(nr) * L.max_own) * st_row);
    B.slab_recv.Reserve(rows(L.max_own) * st_row);
  }
  CountsToBytes(L.q_send_count, q_row, &B.q_send_bytes, &B.q_send_off);
  CountsToBytes(L.q_recv_count, q_row, &B.q_recv_bytes, &B.q_recv_off);
  CountsToBytes(L.st_send_count, st_row, &B.st_send_bytes, &B.st_send_off);
  CountsToBytes(L.st_recv_count, st_row, &B.st_recv_bytes, &B.st_recv_off);

  // The decoded tokens' K/V, every layer at once (synthetic: a model would write layer by layer).
  kernels::SyntheticKvTokens append;
  append.hashes = B.own_hash;
  append.positions = B.own_pos;
  append.slots = B.own_slot;
  append.n = b_own;
  if (b_own > 0) {
    if (backend_->kind() == BackendKind::kCpu) {  // host arrays: let FillSyntheticKv check them
      append.hashes = own_hash.data();
      append.positions = own_pos.data();
      append.slots = own_slot.data();
    }
    kernels::FillSyntheticKv(*backend_, kv_, append);
  }

  for (int layer = 0; layer < pool.num_layers; ++layer) RunLayer(layer);
}

void Worker::ExchangeQueries(int layer) {
  const StepLayout& L = layout_;
  Buffers& B = *buf_;
  const kernels::KvPoolShape& pool = options_.pool;
  const int hq = options_.num_qo_heads;
  kernels::SyntheticQueries q;
  q.hashes = B.own_hash;
  q.positions = B.own_pos;
  q.n = L.num_own();
  q.num_heads = hq;
  q.head_dim = pool.head_dim;
  q.dtype = pool.dtype;
  q.layer = layer;
  q.q = B.q_own.get();
  kernels::FillSyntheticQueries(*backend_, q);

  const int row_words = hq * pool.head_dim * kernels::DTypeBytes(pool.dtype) / 4;
  if (L.needs_query_exchange) {
    GatherRows(*backend_, B.q_send.get(), B.q_own.get(), nullptr, B.q_pack, int(L.q_pack.size()), row_words, 0);
    if (!options_.null_collectives)
      comm_->AllToAllV(B.q_send.get(), B.q_send_bytes, B.q_send_off, B.q_recv.get(), B.q_recv_bytes, B.q_recv_off,
                       backend_->stream());
  }
  if (!L.own_is_local)
    GatherRows(*backend_, B.q_local.get(), B.q_recv.get(), B.q_own.get(), B.q_unpack, L.num_local(), row_words, 0);
}

void Worker::RunLayer(int layer) {
  const StepLayout& L = layout_;
  Buffers& B = *buf_;
  const int hq = options_.num_qo_heads, d = options_.pool.head_dim, b_own = L.num_own();
  const int out_layer = options_.keep_layer_outputs ? layer : 0;
  float* v_out = B.out_v.get<float>() + int64_t(out_layer) * b_own * hq * d;
  float* s_out = B.out_s.get<float>() + int64_t(out_layer) * b_own * hq;

  ExchangeQueries(layer);
  // Without any state exchange every local row is owned: the cascade writes the outputs directly.
  const bool direct = !L.needs_state_exchange;
  if (L.num_local() > 0) {
    kernels::CascadeArgs args;
    args.kv = kv_;
    args.layer = layer;
    args.q = L.own_is_local ? B.q_own.get() : B.q_local.get();
    args.sm_scale = options_.sm_scale;
    args.v_out = direct ? v_out : B.v_loc.get<float>();
    args.s_out = direct ? s_out : B.s_loc.get<float>();
    backend_->RunCascade(args);
  }
  if (direct) return;
  if (options_.reduction == StateReduction::kAllToAll) ReduceAllToAll(v_out, s_out);
  else ReduceTree(v_out, s_out);
}

void Worker::ReduceAllToAll(float* v_out, float* s_out) {
  const StepLayout& L = layout_;
  Buffers& B = *buf_;
  const int hq = options_.num_qo_heads, d = options_.pool.head_dim, b_own = L.num_own();
  PackStates(*backend_, B.v_loc.get<float>(), B.s_loc.get<float>(), B.st_pack, int(L.st_pack.size()), hq, d,
             B.st_send.get<float>());
  if (!options_.null_collectives)
    comm_->AllToAllV(B.st_send.get(), B.st_send_bytes, B.st_send_off, B.st_recv.get(), B.st_recv_bytes,
                     B.st_recv_off, backend_->stream());
  if (b_own == 0) return;
  if (L.merge_n == 1) {  // nothing arrives for any own row: just its local row
    UnpackStates(*backend_, B.st_recv.get<float>(), B.v_loc.get<float>(), B.s_loc.get<float>(), B.merge_src, 1, b_own,
                 hq, d, v_out, s_out);
    return;
  }
  UnpackStates(*backend_, B.st_recv.get<float>(), B.v_loc.get<float>(), B.s_loc.get<float>(), B.merge_src, L.merge_n,
               b_own, hq, d, B.v_in.get<float>(), B.s_in.get<float>());
  backend_->MergeStates(B.v_in.get<float>(), B.s_in.get<float>(), L.merge_n, b_own * hq, d, v_out, s_out);
}

void Worker::ReduceTree(float* v_out, float* s_out) {
  const StepLayout& L = layout_;
  Buffers& B = *buf_;
  const int hq = options_.num_qo_heads, d = options_.pool.head_dim;
  const int64_t st_row_floats = int64_t(hq) * (d + 1);
  const uint32_t neg_inf = kernels::FloatBits(-std::numeric_limits<float>::infinity());
  GatherRows(*backend_, B.s_max.get(), nullptr, B.s_loc.get(), B.tree_max_src, L.num_decode(), hq, neg_inf);
  if (!options_.null_collectives) comm_->AllReduceMax(B.s_max.get<float>(), size_t(L.num_decode()) * hq, backend_->stream());
  const size_t slab_floats = size_t(num_ranks()) * L.max_own * st_row_floats;
  backend_->Fill(B.slab.get(), 0, slab_floats * 4);
  TreeScaleStates(*backend_, B.v_loc.get<float>(), B.s_loc.get<float>(), B.s_max.get<float>(), B.tree_local_pos,
                  B.tree_dst, L.num_local(), hq, d, B.slab.get<float>());
  if (!options_.null_collectives)
    comm_->ReduceScatterSum(B.slab.get<float>(), B.slab_recv.get<float>(), size_t(L.max_own) * st_row_floats,
                            backend_->stream());
  TreeFinishStates(*backend_, B.slab_recv.get<float>(), B.s_max.get<float>(), B.tree_own_pos, L.num_own(), hq, d,
                   v_out, s_out);
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
  backend_->Synchronize();
  backend_->CopyToHost(v->data(), buf_->out_v.get<float>() + idx * b_own * hq * d, v->size() * 4);
  backend_->CopyToHost(s->data(), buf_->out_s.get<float>() + idx * b_own * hq, s->size() * 4);
}

}  // namespace prefixd::worker
