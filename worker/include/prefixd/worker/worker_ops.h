// The few data-movement kernels the worker needs around the attention kernels: gathering rows
// into and out of exchange buffers, and the two state reductions' element-wise steps. Each runs
// on the worker's backend (host loops for the CPU backend, one CUDA launch on the backend's stream
// otherwise) and, like the Backend's run methods, neither allocates nor synchronises.
//
// Index conventions (shared with step_layout.h): a source index i ≥ 0 is row i of the "remote"
// buffer (what arrived over the network), i ≤ −2 is row −2 − i of the "local" buffer (what this
// rank computed), and −1 means "nothing": a fill value (queries) or the empty state (0, −inf).
#pragma once

#include <cstdint>
#include <vector>

#include "prefixd/kernels/backend.h"

namespace prefixd::worker {

// dst[r] = the row idx[r] names (rows of row_words 32-bit words); −1 rows become `fill` words.
void GatherRows(kernels::Backend& backend, void* dst, const void* remote, const void* local, const int32_t* idx,
                int rows, int row_words, uint32_t fill);

// Packed state rows: [H·D floats of v | H floats of s]. out[r] = pack(v[idx[r]], s[idx[r]]).
void PackStates(kernels::Backend& backend, const float* v, const float* s, const int32_t* idx, int rows, int heads,
                int head_dim, float* out);

// For the n-ary merge: for k < n, j < rows, src = idx[k·rows + j]:
//   v_in[k][j] (H·D floats), s_in[k][j] (H floats) = packed row src, local (v, s) row −2 − src,
//   or (0, −inf) for −1.
void UnpackStates(kernels::Backend& backend, const float* packed, const float* v_local, const float* s_local,
                  const int32_t* idx, int n, int rows, int heads, int head_dim, float* v_in, float* s_in);

// UnpackStates and the n-ary ⊕ in one pass (no v_in / s_in round trip): for own row j and head h,
// the n states idx[k·rows + j] (k < n; same sources as UnpackStates, −1 the empty state) are
// merged as kernels::MergeStates does (max LSE first, then the weighted sum) into
// v_out[j][h] (D floats) and s_out[j][h]. All empty: (0, −inf).
void MergeExchangedStates(kernels::Backend& backend, const float* packed, const float* v_local, const float* s_local,
                          const int32_t* idx, int n, int rows, int heads, int head_dim, float* v_out, float* s_out);

// Tree reduction, scale: for local row r and head h with m = s_max[m_pos[r]][h] and
// w = 2^(s[r][h] − m) (0 when s is −inf): out[dst[r]] = [w·v[r] | w] (packed-row layout).
// Rows of `out` that no dst names are left as they are (the caller zeroes the slab).
void TreeScaleStates(kernels::Backend& backend, const float* v, const float* s, const float* s_max,
                     const int32_t* m_pos, const int32_t* dst, int rows, int heads, int head_dim, float* out);

// Tree reduction, finish: sums[r] = [Σ w·v | Σ w] → v_out[r] = Σ w·v / Σ w,
// s_out[r] = s_max[m_pos[r]] + log2(Σ w); Σ w = 0 gives the empty state (0, −inf).
void TreeFinishStates(kernels::Backend& backend, const float* sums, const float* s_max, const int32_t* m_pos,
                      int rows, int heads, int head_dim, float* v_out, float* s_out);

}  // namespace prefixd::worker

namespace prefixd::worker {

// Orders work between a worker's streams: the compute streams of its backends and one stream of
// its own for communication, so that the state exchange of one chunk of requests runs while the
// next chunk computes. CUDA: a non-blocking stream and events (cudaStreamWaitEvent captures the
// event's state when called, so events are reused freely). CPU backend: everything already runs
// in issue order; these are no-ops and the comm stream is null.
class StreamSync {
 public:
  explicit StreamSync(kernels::Backend& backend);
  ~StreamSync();
  StreamSync(const StreamSync&) = delete;
  StreamSync& operator=(const StreamSync&) = delete;

  void* comm_stream() const { return comm_stream_; }
  // A second compute stream (normal priority; null on the CPU): the own rows' suffix decode while
  // the state exchange runs on the compute stream (WorkerOptions::decode_on_side_stream).
  void* side_stream() const { return side_stream_; }
  // Work enqueued on `waiter` from now on starts after the work enqueued on `producer` so far.
  void Wait(void* waiter, void* producer);
  // Deferred form of Wait (head chunks: a chunk's state exchange is waited for only after the
  // next chunk's cascade has been enqueued): Record() marks the work enqueued on `producer` so
  // far; WaitFor() makes `waiter` wait for exactly that work. Marks come from a ring of
  // kMarks events: a mark must be waited for before kMarks more are recorded.
  static constexpr int kMarks = 64;
  int Record(void* producer);
  void WaitFor(void* waiter, int mark);
  // Blocks until the comm and side streams are idle.
  void Synchronize();
  // Run-ahead (WorkerOptions::run_ahead): marks the end of the step just enqueued on `stream`
  // (every other stream already joined into it), then blocks the host until the step before it
  // has finished. So the host prepares step t+1 while the device runs step t, and never runs more
  // than one step ahead (what the double-buffered PinnedStaging relies on). No-op on the CPU.
  void EndStepRunAhead(void* stream);

 private:
  bool cuda_ = false;
  void* comm_stream_ = nullptr;
  void* side_stream_ = nullptr;
  std::vector<void*> events_;
  size_t next_event_ = 0;
  std::vector<void*> marks_;
  int next_mark_ = 0;
  void* step_done_[2] = {nullptr, nullptr};
  bool step_pending_[2] = {false, false};
  int step_parity_ = 0;
};

// Host staging for a step's uploads (CUDA: pinned memory, so that cudaMemcpyAsync neither waits
// for the stream nor stages through a driver buffer; CPU backend: plain memory). Two slots used
// in turn, one per step: with the host at most one step ahead of the device (EndStepRunAhead, or
// the full synchronisation at the end of every step otherwise), the slot a step writes was last
// read by the copies of two steps before, which have finished.
class PinnedStaging {
 public:
  explicit PinnedStaging(kernels::Backend& backend);
  ~PinnedStaging();
  PinnedStaging(const PinnedStaging&) = delete;
  PinnedStaging& operator=(const PinnedStaging&) = delete;

  // Start of a step: switch to the other slot, empty.
  void NextStep();
  // Copies `bytes` of src into this step's slot (16-byte aligned) and returns where; null when
  // the slot is too small: then synchronise every stream that copies from staging, Grow(), and
  // stage again.
  const void* Stage(const void* src, size_t bytes);
  // Both slots hold at least `bytes` afterwards (contents dropped: only after a full sync).
  void Grow(size_t bytes);

 private:
  struct Slot {
    uint8_t* data = nullptr;
    size_t capacity = 0, used = 0;
  };
  void Release(Slot* s) noexcept;
  bool pinned_ = false;
  Slot slots_[2];
  int slot_ = 0;
};

}  // namespace prefixd::worker
