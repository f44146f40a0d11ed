// One worker per GPU (MPI rank): the KV page pool for every layer, the prefix shards placed here,
// the suffixes of the requests this rank owns, and the execution of the coordinator's step plans.
//
// A decode step, per layer (DESIGN.md, "Layers and data flow"):
//  1. the queries of each request (made on its owner) travel to the other holders of its prefix's
//     shards (Comm::AllToAllV);
//  2. one cascade launch computes this rank's partial states: its shard of every held prefix for
//     all of the prefix's decoding requests, plus the suffix of every request it owns, merged
//     locally (kernels' PlanCascade / RunCascade; a shard is a PrefixRun here, a request owned
//     elsewhere has an empty suffix table here);
//  3. the partial states are reduced to the owners, exactly, one of two ways (step_layout.h):
//     all-to-all of (v, s) + n-ary ⊕, or Tree Attention's max / rescale / reduce-scatter;
//  and once per step, before the layers, the token each owned request decodes is appended to its
//  suffix pages (synthetic K/V for every layer, straight into the pool).
//
// Overlap within a layer (a real model's layer l+1 needs layer l's output, so layers never run
// ahead): with P pipeline backends (AddPipelineBackend), the step's decode list is cut into P
// chunks of requests, each with its own layout, plan, backend and stream. Per layer, all chunks'
// queries are sent first; then chunk c computes while chunk c−1's states travel on the comm
// stream, so only about 1/P of the exchange stays exposed. On the CPU backend the same code runs
// in issue order (what the MPI tests check); on CUDA the streams overlap.
//
// Own rows last (WorkerOptions::split_own_rows, one extra backend per chunk: AddSplitBackend):
// when a chunk exchanges states, its local rows are computed by two cascades instead of one: X,
// the rows of requests owned elsewhere (their prefix shard only; their states travel), on the
// chunk's backend, and O, the rows this rank owns (shard ⊕ suffix), on the split backend's own
// stream. O needs only this rank's own queries, so it runs while the queries travel, X computes
// and X's states travel; the owners' merge waits for both. The critical path per layer becomes
// queries out → X → states back (X is (g−1)/g of the rows at g ranks) with O and the suffix
// decode off it. Same states, same ⊕, so the results equal the unsplit path's to rounding.
//
// Head chunks (WorkerOptions::head_chunks = N > 1, all-to-all reduction): per layer, the KV
// heads are cut into N chunks; chunk c is every local row for KV heads [c·H_kv/N, (c+1)·H_kv/N)
// and their query heads, so the prefix kernel keeps its rows per tile (all requests × g) and one
// cascade plan, made for H_kv/N heads, runs N times over the pool's heads (CascadeArgs' KV head
// view). All chunks' queries go out first on the comm stream (chunk-major send buffer, one
// gather); chunk c's cascade waits only for chunk c's queries; chunk c's states go out as soon
// as its cascade is done and are merged after chunk c+1's cascade has been enqueued (deferred
// event, StreamSync::Record/WaitFor). Only chunk 0's queries and chunk N−1's states stay on the
// critical path. Every chunk has its own region of each exchange buffer, so nothing is reused
// within a layer; the merged states land chunk-major and one gather per layer puts them back
// into the [B_own][H_qo][D] outputs.
//
// Per-phase host timing (ProfileMode, profile()): kHost reads the clock at phase boundaries
// (what the host spends enqueueing, and the final wait); kFenced also synchronises every stream
// there, so each phase's device time lands in that phase (slower steps; for attribution only).
//
// Every Execute() is collective over the Comm's ranks. Page bookkeeping: the coordinator owns the
// page allocators (it must know exactly what fits to admit or refuse); the worker only checks
// that each page it is told to fill is free here and each page it is told to free is in use, so
// a coordinator/worker disagreement is caught at once (kInternal) rather than corrupting KV.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "prefixd/comm/comm.h"
#include "prefixd/kernels/backend.h"
#include "prefixd/kernels/kv_cache.h"
#include "prefixd/kernels/measured_choice.h"
#include "prefixd/kernels/plan.h"
#include "prefixd/kernels/synthetic_kv.h"
#include "prefixd/worker/backend_buffer.h"
#include "prefixd/worker/step_layout.h"
#include "prefixd/worker/step_plan.h"
#include "prefixd/worker/worker_ops.h"

namespace prefixd::worker {

enum class StateReduction { kAllToAll, kTree };
const char* StateReductionName(StateReduction r);
StateReduction ParseStateReduction(const std::string& name);  // "a2a"/"alltoall" or "tree"

struct WorkerOptions {
  kernels::KvPoolShape pool;        // this rank's pool: layers, pages, page size, H_kv, D, dtype
  int num_qo_heads = 0;
  float sm_scale = 0.f;             // 0: 1/sqrt(head_dim)
  StateReduction reduction = StateReduction::kAllToAll;
  // Benchmark only: every collective becomes a no-op (results are then WRONG); the step time
  // without them measures compute, and the difference the exposed communication.
  bool null_collectives = false;
  // Keep every layer's final states of the last step (for checks); otherwise only the last
  // layer's are kept, which saves layers × B_own × H_qo × (D + 1) floats.
  bool keep_layer_outputs = true;
  // Own rows last (see above); needs a split backend per chunk (AddSplitBackend).
  bool split_own_rows = false;
  // Send before decode: with the all-to-all reduction and no split, a chunk that exchanges states
  // runs its cascade as prefix + the merge of the requests without decode items (the rows owned
  // elsewhere have no suffix: their states are final then), sends those states, and only then runs
  // the own rows' suffix decode and their merge, which so overlap the state exchange instead of
  // delaying it. Only where every state it sends is final then (Chunk::send_needs_decode);
  // otherwise the cascade runs whole. On by default:
  // on 4 H200s (P = 262144, B = 128, S = 512) the 1-layer step went 0.351 → 0.342 ms and the
  // 32-layer step at P = 65536 5.5 → 5.3 ms (bench/scaling/README.md, session 3).
  bool send_before_decode = true;
  // Queries in place (StepLayout::q_direct, where the layout allows it and the chunk is not
  // split): own queries are made straight into the local-row query buffer, which the query
  // exchange sends from and receives into; no pack or unpack kernels. PREFIXD_QUERIES_IN_PLACE=0|1
  // overrides it (A/B runs).
  bool queries_in_place = true;
  // With queries in place, a query exchange that is an all-gather (StepLayout::q_all_gather: one
  // prefix on every rank, the same number of its requests owned by each) runs as Comm::AllGather
  // instead of the grouped send/recv. PREFIXD_QUERY_ALLGATHER=0|1 overrides it (A/B runs).
  bool queries_all_gather = true;
  // With one request chunk and no split the query exchange has nothing to overlap with: it runs on
  // the compute stream, without the two cross-stream waits. PREFIXD_QUERY_STREAM=compute|comm
  // overrides it (A/B runs).
  bool queries_on_compute_stream = true;
  // The step's K/V append (the decoded tokens' K/V, which only the suffix decode reads) runs while
  // the first layer's queries travel instead of before them: the query exchange then goes to the
  // comm stream. Where there is one request chunk, not split, in whole heads, computed on the main
  // backend; elsewhere the append runs first, as always. PREFIXD_APPEND_BEHIND_QUERIES=0|1
  // overrides it (A/B runs).
  bool append_behind_query_exchange = true;
  // Where the first layer's own-row decode will run on the side stream (send_before_decode with
  // decode_on_side_stream), the append goes to that stream instead, beside the query exchange,
  // and the exchange stays on the compute stream (queries_on_compute_stream): the prefix kernel
  // then follows the exchange in its own stream, without a cross-stream wait. Takes precedence over
  // append_behind_query_exchange there. PREFIXD_APPEND_ON_DECODE_STREAM=0|1 overrides it (A/B runs).
  bool append_on_decode_stream = true;
  // With send_before_decode, the merge part writes the states that travel straight into the send
  // buffer, packed (CascadeArgs::merge_packed_row), instead of the local-state buffer that a pack
  // pass then copies from: one kernel less before the state exchange. PREFIXD_MERGE_INTO_SEND=0|1
  // overrides it (A/B runs).
  bool merge_into_send_buffer = true;
  // With send_before_decode, the state exchange runs on the compute stream right behind the merge
  // and the own rows' decode on a side stream (StreamSync::side_stream), instead of the exchange on
  // the comm stream and the decode on the compute stream. Why: the decode launch, next in its
  // stream, reached the SMs before the exchange's kernel, whose stream still had to see the merge's
  // event; its CTAs then filled the SMs and the exchange's kernel waited for them to drain (device
  // timeline on 4 H200s, bench/scaling/README.md, session 6). PREFIXD_DECODE_ON_SIDE_STREAM=0|1
  // overrides it (A/B runs).
  bool decode_on_side_stream = true;
  // With decode_on_side_stream: the side-stream decode waits for the prefix kernel only, not for
  // the merge part behind it (which packs the states that travel; the decode finishes other rows),
  // so that it starts while the merge runs instead of after it, and overlaps less of the state
  // exchange, which it slows (HBM traffic: ~20 µs alone, 31-34 µs beside the decode, bench/scaling/
  // README.md session 6). The merge part is then its own launch, not a programmatic dependent of the
  // prefix kernel. Off: on 4 × H200 the 4-GPU step read 0.3065-0.3180 ms with it against
  // 0.3082-0.3121 without (bench/scaling/README.md, session 12), no robust gain.
  // PREFIXD_DECODE_BEHIND_PREFIX=0|1 overrides it (A/B runs).
  bool decode_behind_prefix = false;
  // With decode_on_side_stream, where the own rows' decode reads no prefix state (every request
  // with decode items is merged by the merge part, CascadePlan::DecodeReadsPrefixStates false: e.g.
  // a suffix split into several items), the decode is enqueued on the side stream right behind the
  // prefix kernel, waiting only for what the prefix kernel waits for: it runs on the SMs the
  // prefix grid leaves idle, then beside the merge and the state exchange, instead of after the
  // prefix kernel. Takes precedence over decode_behind_prefix there. Off: on 8 × H200 (P = 262144,
  // B = 128, S = 512) the decode still started only after the prefix kernel (the merge grid,
  // launched as the prefix kernel's programmatic dependent, holds the idle SMs), and the 8-GPU step
  // read 0.1977 ms with it against 0.1906 without (bench/scaling/README.md, session 14; measured
  // before session 15 made the own rows' merge wait for the prefix part, as it must). Session 16
  // tried the decode enqueued before the query exchange on only the SMs the prefix grid leaves idle
  // (4 of 132): one CTA per SM streams ~23 GB/s, so the 4-GPU step's 33.5 MB of own suffixes took
  // 366 µs there, far past the 221-µs prefix kernel (step 0.42 against 0.29 ms; not kept).
  // PREFIXD_DECODE_BESIDE_PREFIX=0|1 overrides it (A/B runs).
  bool decode_beside_prefix = false;
  // With decode_on_side_stream: SMs the side-stream decode leaves free for the state exchange's
  // kernel (CascadeArgs::decode_free_sms). NCCL's all-to-all ran 24 blocks of 640 threads on the
  // 4 × H200 machines, and none fits an SM that holds a decode CTA. 0: the decode uses every SM.
  // PREFIXD_DECODE_FREE_SMS=n overrides it (A/B runs).
  int decode_free_sms = 24;
  // The cascade planner's layout choice (kernels::PlanOptions::choose_layout: a short-prefix group
  // planned as plain decode): -1 as the backend's DefaultPlanOptions say (on for CUDA, off for the
  // CPU backend), 0 off, 1 on.
  int choose_layout = -1;
  // Where the layout choice's cost model has a near tie (kernels::MeasuredPlanner: the cascade,
  // plain decode, the half-target or the narrow cascade predicted within 15% of its choice), time
  // the candidates on the backend once per shape class and keep the fastest: -1 on for CUDA
  // backends (off for the CPU backend), 0 off, 1 on. A timing synchronises every stream first and
  // takes a few milliseconds, at the first batch of each shape class. PREFIXD_MEASURED_CHOICE=0|1
  // overrides it (A/B runs).
  int measure_plan_choice = -1;
  kernels::MeasuredChoiceOptions measured_choice;  // its tie band, timing rounds and L2 flush
  // Whether single-chunk suffixes are finished inside their decode items (kernels::PlanOptions::
  // fuse_merge): -1 as the backend's DefaultPlanOptions say, 0 off (every request through the merge
  // kernel; the decode then reads no prefix state, so it may run beside the prefix kernel), 1 on.
  // PREFIXD_FUSE_MERGE=0|1 overrides it (tests, A/B runs).
  int fuse_merge = -1;
  // Head chunks (see above): per layer, the KV heads are cut into this many chunks (each with
  // its g query heads per KV head); divides num_kv_heads, at most 16. Used with the all-to-all
  // reduction and one request chunk, without split_own_rows; the tree reduction falls back to 1.
  int head_chunks = 1;
  // Benchmark only (the scaling bench's --host-only): every device operation is skipped (synthetic
  // K/V fills, queries, cascades, exchanges, merges; outputs are garbage) while all host work of a
  // step runs as usual: events, the decode scan, layouts, cascade planning, LoadPlan and the
  // per-step uploads. With a backend whose memory operations are no-ops this measures the host
  // cost of a step without a GPU.
  bool host_only = false;
  // Steady steps advance the kept cascade plans in place and upload only the own rows' hash and
  // position (PrepareChunkSteady) instead of planning and uploading again. On by default since it
  // ran on a GPU (the NCCL + CUDA MPI tests, which turn it on, and the scaling bench: 1-GPU step
  // 1.146 → 1.039 ms at P = 262144, B = 128, bench/scaling/README.md); the scaling bench's
  // --fresh-plans turns it off.
  bool reuse_steady_plans = true;
  // The host runs one step ahead of the device: Execute() returns once the step is enqueued and
  // the step BEFORE it has finished, so that the next step's plan broadcast, events, token append
  // and uploads (host work during which the device would otherwise sit idle) overlap this step's
  // device work — the serving loop's "overlap scheduler". Device work stays in step order (every
  // stream of a step starts after every stream of the step before). Outputs are read after a full
  // sync (CopyOutputs), and an asynchronous device error surfaces one step later. CUDA only (the
  // CPU backend runs synchronously anyway); ignored while profiling with fences.
  bool run_ahead = false;
};

enum class ProfileMode { kOff, kHost, kFenced };

// Host milliseconds per phase, summed over the steps since the last ResetProfile().
struct StepProfile {
  int steps = 0;
  double plan_ms = 0;       // Engine: make, broadcast and decode the plan (non-zero ranks: waiting for it)
  double plan_make_ms = 0;  // Engine, rank 0: of plan_ms, making and encoding the plan (before the broadcast)
  double prepare_ms = 0;    // events, token append, layouts, cascade plans, uploads
  double queries_ms = 0;    // per layer: synthetic queries, query exchange
  double attention_ms = 0;  // per layer: the cascades
  double reduce_ms = 0;     // per layer: state reduction and merges
  double wait_ms = 0;       // the final wait for every stream
  double total_ms = 0;      // the whole step (plan included)
};

// Replicated view of the cluster, identical on every rank after each plan.
struct PrefixInfo {
  int32_t id = -1;
  int32_t num_tokens = 0;
  uint64_t hash = 0;                      // hash of all its tokens: a suffix's chain starts here
  std::vector<ShardPlacement> shards;
  std::vector<int32_t> holders;           // ranks with a non-empty shard, ascending
  int my_shard = -1;                      // index into shards of this rank's non-empty shard
};

struct RequestInfo {
  int32_t id = -1;
  int32_t prefix_id = -1;
  int32_t owner = 0;
  int32_t prefix_len = 0;
  std::vector<int32_t> pages;             // reserved suffix pages on the owner
  int32_t length = 0;                     // suffix tokens stored (prompt + decoded)
  uint64_t hash = 0;                      // hash of prefix + suffix tokens so far
};

struct WorkerMemory {
  int64_t pool_bytes = 0;                 // K and V arrays, all layers
  int32_t pages_total = 0;
  int32_t pages_prefix = 0;               // pages holding prefix shards
  int32_t pages_suffix = 0;               // pages reserved for owned suffixes
  int64_t workspace_bytes = 0;            // exchange and output buffers
};

class Worker {
 public:
  // The Comm's memory kind must match the backend (host for CPU, device for CUDA) and its
  // stream is the backend's. Allocates the pool (zeroed).
  Worker(const WorkerOptions& options, std::unique_ptr<kernels::Backend> backend, std::unique_ptr<comm::Comm> comm);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  int rank() const { return comm_->rank(); }
  int num_ranks() const { return comm_->size(); }
  const WorkerOptions& options() const { return options_; }
  // Benchmark switch (see WorkerOptions::null_collectives); same value on every rank.
  void set_null_collectives(bool on) { options_.null_collectives = on; }
  kernels::Backend& backend() { return *backends_[0]; }
  comm::Comm& comm() { return *comm_; }
  kernels::KvPoolView kv() const { return kv_; }

  // One more chunk of the pipeline (see above): a backend of the same kind on the same device,
  // sharing this worker's pool. Same number on every rank.
  void AddPipelineBackend(std::unique_ptr<kernels::Backend> backend);
  int num_pipeline_chunks() const { return int(chunks_.size()); }
  // The backend of chunk c's own rows (split_own_rows): same kind and device, sharing the pool.
  // Call once per chunk, after AddPipelineBackend. Same on every rank.
  void AddSplitBackend(std::unique_ptr<kernels::Backend> backend);

  void set_profile(ProfileMode mode) { profile_mode_ = mode; }
  StepProfile& profile() { return profile_; }
  void ResetProfile() { profile_ = StepProfile{}; }

  // Applies the plan's events, then decodes its decode list through every layer. Collective.
  // Returns when the step's work is enqueued AND finished (synchronises the backend); with
  // run_ahead, when it is enqueued and the step before it has finished.
  void Execute(const StepPlan& plan);
  // Blocks until every stream is idle (the last step finished).
  void Synchronize() { SynchronizeAll(); }
  // Whether the next Execute() returns before its step has finished: run_ahead on a CUDA backend,
  // not fenced for profiling, not host-only.
  bool runs_ahead() const;

  // Requests whose outputs this rank holds after the last Execute, in output-row order.
  const std::vector<int32_t>& owned_outputs() const { return owned_output_ids_; }
  // Final states of the last step for one layer: v [B_own][H_qo][D], s [B_own][H_qo] (base 2).
  // Throws if layer outputs were not kept for that layer.
  void CopyOutputs(int layer, std::vector<float>* v, std::vector<float>* s);

  const std::map<int32_t, PrefixInfo>& prefixes() const { return prefixes_; }
  const std::map<int32_t, RequestInfo>& requests() const { return requests_; }
  WorkerMemory Memory() const;
  // Layout of chunk c of the last step (chunk 0 holds the whole step without pipelining).
  const StepLayout& last_layout(int chunk = 0) const { return chunks_.at(chunk).layout; }
  // Whether chunk c of the last step ran split (own rows on the split backend).
  bool last_split(int chunk = 0) const { return chunks_.at(chunk).is_split; }
  // Cascade plans advanced in place by steady steps so far (instead of planned again).
  int64_t plans_advanced() const { return plans_advanced_; }
  // Plans whose near tie was timed (WorkerOptions::measure_plan_choice), and shape classes kept.
  int64_t plan_choices_timed() const { return measured_planner_.timings(); }
  int64_t plan_classes_kept() const { return measured_planner_.classes(); }
  // Head chunks the last step ran with (1: none).
  int last_head_chunks(int chunk = 0) const { return chunks_.at(chunk).head_chunks; }
  // Layers so far whose states were sent before the own rows' decode (send_before_decode).
  int64_t layers_sent_before_decode() const { return layers_sent_before_decode_; }
  // Of those, layers whose prefix and merge parts ran as two calls (WorkerOptions::decode_behind_prefix).
  int64_t layers_decode_behind_prefix() const { return layers_decode_behind_prefix_; }
  // Layers whose own-row decode ran beside the prefix kernel (WorkerOptions::decode_beside_prefix).
  int64_t layers_decode_beside_prefix() const { return layers_decode_beside_prefix_; }
  // Query exchanges that ran as an all-gather (WorkerOptions::queries_all_gather).
  int64_t layers_queries_all_gathered() const { return layers_queries_all_gathered_; }
  // Chunk-steps so far in which rows owned elsewhere had decode items (plain-decode groups of the
  // layout choice), so that their states were not final after prefix + merge (Chunk::send_needs_decode).
  int64_t chunks_with_sent_rows_decoding() const { return chunks_with_sent_rows_decoding_; }
  // Steps whose K/V append ran behind the first layer's query exchange (append_behind_query_exchange).
  int64_t appends_behind_queries() const { return appends_behind_queries_; }
  // Of those, appends that ran on the decode's side stream (WorkerOptions::append_on_decode_stream).
  int64_t appends_on_decode_stream() const { return appends_on_decode_stream_; }

 private:
  struct Buffers;
  // One chunk of a step's requests: its layout, the backend (and stream) that computes it, and
  // its buffers. Its own rows are rows [own_offset, own_offset + num_own) of the step's outputs.
  struct Chunk {
    kernels::Backend* backend = nullptr;
    kernels::Backend* split = nullptr;  // computes the own rows when split this step
    StepLayout layout;
    LayoutInput layout_input;  // what `layout` was made from (reused while it is unchanged)
    bool has_layout = false;
    std::unique_ptr<Buffers> buf;
    int own_offset = 0;
    bool active = false;  // has decode entries this step
    bool is_split = false;  // this step: X on backend, O on split (see above)
    int num_x = 0;          // rows of X (local rows owned elsewhere)
    int head_chunks = 1;    // this step (see above)
    bool queries_in_place = false;  // this step: WorkerOptions::queries_in_place applies
    bool x_queries_as_received = false;  // split: X's rows are the received query rows, in order
    // Steady decoding (Decode's fast path): what the last full PrepareChunk made, updated in place
    // while no event happens and the decode list names the same requests in the same order.
    bool reusable = false;
    std::vector<const RequestInfo*> own_reqs;   // [b_own] in own-row order
    size_t o_pos = 0;                           // byte offset of own_pos in upload_host (own_hash at 0)
    kernels::CascadePlan plan, split_plan;      // loaded on backend / split (split_plan: split only)
    std::vector<const RequestInfo*> plan_rows, split_rows;  // per plan request: its suffix's request, or null
    int advanced = 0;                           // steady steps since the plans were made
    // Whether some state this chunk sends is not final after prefix + the merge of the requests
    // without decode items, set after each prepare (send_before_decode then runs the cascade
    // whole): a row owned elsewhere with decode items (a group that the layout choice planned as
    // plain decode gives every row the shard's prefix pages to decode).
    bool send_needs_decode = false;
    std::vector<int32_t> old_len;               // scratch
  };

  void ApplyEvent(const PlanEvent& event);
  void AddPrefix(const PrefixAdd& add);
  void AddRequest(const RequestAdd& add);
  void RemoveRequest(int32_t id);
  void RemovePrefix(int32_t id);
  void ClaimPages(int32_t first, const std::vector<int32_t>& pages, const char* what, int32_t id);
  void ReleasePages(const std::vector<int32_t>& pages, const char* what, int32_t id);

  void Decode(const StepPlan& plan);
  void PrepareChunk(Chunk& ch, const StepPlan& plan, const std::vector<int>& entries);
  // Steady step: every request of the chunk decoded one more token, nothing else changed. Updates
  // the chunk's plans and uploads in place; false (nothing changed) where a full prepare is needed
  // (a suffix enters a new page).
  bool PrepareChunkSteady(Chunk& ch);
  bool AdvancePlan(kernels::CascadePlan* plan, const std::vector<const RequestInfo*>& rows, std::vector<int32_t>* old_len);
  void RunLayer(int layer);
  void RunLayerHeadChunks(Chunk& ch, int layer);
  // Whether the chunk's layer runs send_before_decode: its states that travel are final after
  // prefix + merge, sent before the own rows' decode.
  bool SendsBeforeDecode(const Chunk& ch) const;
  float* OutV(int layer, const Chunk& ch);
  float* OutS(int layer, const Chunk& ch);
  // decode_after_send (send_before_decode): the chunk's cascade arguments, whose decode part runs
  // once the states are on their way (and whose merge part, with merge_packed_row set, has already
  // written the send buffer).
  // decode_mark ≥ 0 (StreamSync::Record, behind the prefix part): what the side-stream decode waits
  // for, instead of all the compute stream's work so far (WorkerOptions::decode_behind_prefix).
  // decode_enqueued: that decode is on the side stream already (WorkerOptions::decode_beside_prefix);
  // then only the own rows' merge is enqueued here, behind decode_mark (it reads prefix states).
  void ReduceAllToAll(Chunk& ch, int layer, const kernels::CascadeArgs* decode_after_send = nullptr,
                      int decode_mark = -1, bool decode_enqueued = false);
  // Packs rows `pack` of (v_send, s_send) (pack null: the send buffer holds them already),
  // exchanges them, and merges each own row's local state (merge_src's local rows index v_local /
  // s_local, made on local_stream unless null) with what arrived.
  void ReduceAllToAll(Chunk& ch, int layer, const float* v_send, const float* s_send, const int32_t* pack,
                      const float* v_local, const float* s_local, const int32_t* merge_src, void* local_stream,
                      const kernels::CascadeArgs* decode_after_send = nullptr, int decode_mark = -1,
                      bool decode_enqueued = false);
  void ReduceTree(Chunk& ch, int layer);
  void SynchronizeAll();
  // other_streams_ = every stream of this worker but the main one (chunk, split and comm
  // streams); called whenever a backend is added.
  void UpdateOtherStreams();
  // The options this worker plans its cascades with: the backend's, with choose_layout as
  // WorkerOptions::choose_layout says.
  kernels::PlanOptions PlanOptionsFor(const kernels::Backend& backend) const;
  // The plan of a chunk's batch on `backend`: PlanCascade with PlanOptionsFor, its near ties timed
  // where WorkerOptions::measure_plan_choice is on.
  kernels::CascadePlan PlanOn(kernels::Backend& backend, const kernels::DecodeBatch& batch,
                              const kernels::KvPoolShape& pool);
  // Host → device copy of a step's per-step array on `be`'s stream, through PinnedStaging on
  // CUDA (src may change as soon as this returns).
  void UploadAsync(kernels::Backend& be, void* dst, const void* src, size_t bytes);
  void RunSplitCascades(Chunk& ch, int layer);
  // Profiling: adds the time since the last mark to *phase (after a full sync when fenced).
  void MarkPhase(double* phase);

  WorkerOptions options_;
  int64_t layers_sent_before_decode_ = 0;
  int64_t layers_decode_behind_prefix_ = 0;
  int64_t layers_decode_beside_prefix_ = 0;
  int64_t layers_queries_all_gathered_ = 0;
  int64_t chunks_with_sent_rows_decoding_ = 0;
  // This step's K/V append (Decode): its tokens, and whether it still has to run behind layer 0's
  // query exchange (WorkerOptions::append_behind_query_exchange).
  kernels::SyntheticKvTokens append_tokens_;
  bool append_pending_ = false;
  int64_t appends_behind_queries_ = 0;
  int64_t appends_on_decode_stream_ = 0;
  std::vector<std::unique_ptr<kernels::Backend>> backends_;  // [0]: the main one, which owns the pool
  std::unique_ptr<comm::Comm> comm_;
  std::unique_ptr<StreamSync> sync_;
  std::unique_ptr<PinnedStaging> staging_;  // CUDA and host-only: the per-step uploads' host side
  bool step_in_flight_ = false;  // the last step ran ahead and has not been waited for
  std::vector<void*> other_streams_;  // UpdateOtherStreams
  kernels::KvPoolView kv_;
  std::vector<uint8_t> page_used_;       // consistency check against the coordinator's allocator
  std::map<int32_t, PrefixInfo> prefixes_;
  std::map<int32_t, RequestInfo> requests_;

  std::vector<Chunk> chunks_;
  std::vector<int32_t> owned_output_ids_;
  int num_output_layers_ = 0;            // layers whose outputs the buffers hold
  BackendBuffer out_v_, out_s_;          // [layers kept][B_own][H][D] / [..][B_own][H]
  BackendBuffer append_;                 // this step's appended tokens: hash, position, slot
  std::vector<uint8_t> append_host_;     // their host copy (kept until the step's final sync)
  std::vector<int32_t> scratch_ids_;     // per-step host scratch, kept to avoid reallocation
  std::vector<int32_t> last_decode_ids_; // the last step's decode list (request ids, in order)
  std::vector<RequestInfo*> decode_reqs_;  // its requests (valid while no event has run since)
  bool events_since_decode_ = true;
  std::vector<int> scratch_entries_;
  int64_t plans_advanced_ = 0;
  bool measure_plan_choice_ = false;         // WorkerOptions::measure_plan_choice, resolved
  kernels::MeasuredPlanner measured_planner_;
  std::vector<int32_t> scratch_indices_;      // an event ran since decode_reqs_ was made
  std::vector<uint64_t> app_hash_;
  std::vector<int64_t> app_pos_, app_slot_;
  std::vector<std::unique_ptr<kernels::Backend>> split_backends_;

  ProfileMode profile_mode_ = ProfileMode::kOff;
  StepProfile profile_;
  double mark_ = 0;                      // clock at the last phase mark (seconds)
};

}  // namespace prefixd::worker
