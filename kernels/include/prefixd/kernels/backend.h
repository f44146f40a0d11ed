// The attention backend interface: one API, two implementations (ggml-style).
//  - CPU backend: plain C++ on host memory; always built; what CI runs.
//  - CUDA backend: the fast kernels on one device and one stream.
// Both run the same CascadePlan. "Device memory" below means host memory for the CPU backend.
//
// Run methods never allocate and never synchronise with the host: every buffer they need (the
// work list, the partial states) is part of a workspace sized at construction, so a whole decode
// step can be captured in a CUDA graph. Run methods are stream-ordered and asynchronous on CUDA;
// call Synchronize() before reading results on the host.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "prefixd/kernels/dtype.h"
#include "prefixd/kernels/kv_cache.h"
#include "prefixd/kernels/plan.h"

namespace prefixd::kernels {

enum class BackendKind { kCpu, kCuda };
const char* BackendKindName(BackendKind kind);

// Capacity of the fixed workspace; LoadPlan throws kInvalidArgument when a plan exceeds it.
struct WorkspaceLimits {
  int max_requests = 4096;
  int max_qo_heads = 128;
  int max_head_dim = 256;
  int max_slots = 4096 * 16;       // partial-state slots (requests × chunks)
  int max_plan_ints = 1 << 22;     // serialised plan size
  // Partial-state floats (v: slots × H_qo × head_dim) a GPU workspace holds. Bounded on its own
  // because max_slots × max_qo_heads × max_head_dim (2^33 floats at the defaults) would not fit a
  // GPU; the CUDA backend allocates this many floats once and LoadPlan rejects plans needing more.
  int64_t max_state_floats = int64_t(1) << 28;  // 1 GiB of fp32
};

// Arguments of one cascade decode step for one layer.
struct CascadeArgs {
  KvPoolView kv;               // the pool (all layers)
  int layer = 0;
  const void* q = nullptr;     // [B][H_qo][D] in kv.shape.dtype
  float sm_scale = 0.f;        // ≥ 0; 0: 1/sqrt(head_dim)
  void* o = nullptr;           // [B][H_qo][D] in kv.shape.dtype, or null
  float* v_out = nullptr;      // [B][H_qo][D] fp32 final states, or null
  float* s_out = nullptr;      // [B][H_qo] fp32 final base-2 LSE, or null
  // KV head view (the worker's head chunks): with kv_head_count > 0 the loaded plan was made for
  // kv_head_count KV heads (and H_qo = kv_head_count · g query heads; q and the outputs are that
  // plan's [B][H_qo][D]), and its KV head h reads the pool's KV head kv_head_offset + h. Layer and
  // token strides stay the pool's. 0: the plan covers all of the pool's KV heads.
  int kv_head_offset = 0;
  int kv_head_count = 0;
  // Packed outputs of the merge part (Backend::kMergePart; optional): a request r with
  // merge_packed_row[r] ≥ 0 that the merge part finishes writes its final state to row
  // merge_packed_row[r] of merge_packed_out, in the packed layout [v: H_qo·D | s: H_qo] (fp32) of
  // the distributed engine's state exchange, instead of v_out / s_out / o. So the merge writes the
  // send buffer directly (no pack pass). merge_packed_row has one entry per request (device memory
  // on the CUDA backend, host memory on the CPU one).
  const int32_t* merge_packed_row = nullptr;
  float* merge_packed_out = nullptr;
  // CUDA: the stream this call's kernels run on (cudaStream_t; null: the backend's own). For a
  // caller that runs one part beside other work of the backend's stream, e.g. the own rows' decode
  // on a side stream while the state exchange runs on the compute stream. The caller orders that
  // stream against the backend's (the loaded plan and the partial-state workspace are shared).
  // The CPU backend runs in call order and ignores it.
  void* stream = nullptr;
  // CUDA: SMs the decode part leaves free (0: it may use all): its kernel then runs one CTA per
  // SM on the others, each looping over items, so that a kernel launched beside it (the state
  // exchange's) finds whole SMs. The CPU backend ignores it.
  int decode_free_sms = 0;
};

// Multi-query attention of n query rows against one contiguous prefix run, returning states.
// Non-causal: every query sees all prefix tokens (decode). Causal: query i sits at position
// q_offset + i of the prefix and sees tokens [0, q_offset + i] (prefill / append).
struct PrefixAttentionArgs {
  KvPoolView kv;
  int layer = 0;
  PrefixRun prefix;
  int num_queries = 0;
  int num_qo_heads = 0;
  const void* q = nullptr;     // [n][H_qo][D] in kv.shape.dtype
  bool causal = false;
  int q_offset = 0;            // causal only
  float sm_scale = 0.f;        // ≥ 0; 0: 1/sqrt(head_dim)
  float* v_out = nullptr;      // [n][H_qo][D] fp32
  float* s_out = nullptr;      // [n][H_qo] fp32 (base 2)
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual BackendKind kind() const = 0;
  virtual std::string Describe() const = 0;  // e.g. "cuda:0 NVIDIA H200 (132 SMs)" or "cpu"
  // Planner options suited to this backend (item count to fill the device, tile sizes).
  virtual PlanOptions DefaultPlanOptions() const = 0;
  virtual const WorkspaceLimits& limits() const = 0;

  // Memory (device memory for CUDA; host memory for CPU).
  virtual void* Alloc(size_t bytes) = 0;
  virtual void Free(void* ptr) = 0;
  virtual void CopyToDevice(void* dst, const void* src, size_t bytes) = 0;  // host → backend
  // Host → backend, stream-ordered, without waiting for it: the caller keeps `src` unchanged and
  // alive until the stream has passed the copy (e.g. until the next Synchronize). CPU: a copy.
  virtual void CopyToDeviceAsync(void* dst, const void* src, size_t bytes) { CopyToDevice(dst, src, bytes); }
  // Upload batch (CUDA): from BeginUploadBatch to EndUploadBatch, CopyToDeviceAsync's and
  // LoadPlan's copies from pinned host memory are queued and then done by one kernel (at
  // EndUploadBatch, or before any other operation of this backend), so that a step starts with
  // one operation instead of one copy-engine transfer per upload. Their destinations must stay
  // allocated, and nothing may read them, until EndUploadBatch. The CPU backend copies at once.
  virtual void BeginUploadBatch() {}
  virtual void EndUploadBatch() {}
  virtual void CopyToHost(void* dst, const void* src, size_t bytes) = 0;    // backend → host
  virtual void CopyDeviceToDevice(void* dst, const void* src, size_t bytes) = 0;
  virtual void Fill(void* dst, uint8_t byte, size_t bytes) = 0;             // e.g. poisoning
  virtual void Synchronize() = 0;
  virtual void* stream() const = 0;  // cudaStream_t for CUDA, null for CPU
  // Microseconds the backend spends on the work `enqueue` puts on its stream: on CUDA, events
  // around it (what was queued before is not counted); by default, the wall clock between two
  // Synchronize calls. Synchronises, so it is for tuning (MeasuredPlanner, measured_choice.h)
  // between steps, never inside a run method.
  virtual double TimeUs(const std::function<void()>& enqueue);

  // Copies the plan into the workspace's work buffer (one async copy). Validates capacity.
  virtual void LoadPlan(const CascadePlan& plan) = 0;
  // Runs the loaded plan: prefix items, decode items, then ⊕ per (request, qo head) into outputs.
  // = RunCascadeParts(args, kAllParts).
  virtual void RunCascade(const CascadeArgs& args) = 0;
  // The cascade in parts, for callers that put other work between them (e.g. sending the states
  // of rows without a suffix while the decode kernel runs): kPrefixPart runs the prefix items,
  // kDecodePart the decode items (a finishing item, DecodeWorkItem::finish, also ⊕-merges its
  // request's prefix states and writes that request's outputs), kMergePart the ⊕ of every request
  // in the plan's merge_requests, in two halves: kMergeNoDecodePart for the merge requests without
  // decode items (final after the prefix part: e.g. the rows whose states travel) and
  // kMergeAfterDecodePart for the others. Parts of one plan run in the order prefix, merge without
  // decode, decode, merge after decode; kMergeNoDecodePart may also come after kDecodePart, and
  // kDecodePart may run beside kPrefixPart (another stream) where no decode item reads prefix
  // states (CascadePlan::DecodeReadsPrefixStates), kMergeAfterDecodePart then following both.
  enum CascadePart : unsigned {
    kPrefixPart = 1u,
    kDecodePart = 2u,
    kMergeNoDecodePart = 4u,
    kMergeAfterDecodePart = 8u,
    kMergePart = kMergeNoDecodePart | kMergeAfterDecodePart,
    kAllParts = kPrefixPart | kDecodePart | kMergePart,
  };
  virtual void RunCascadeParts(const CascadeArgs& args, unsigned parts) = 0;
  virtual void RunPrefixAttention(const PrefixAttentionArgs& args) = 0;

  // n-ary ⊕: v_in [n][rows][D], s_in [n][rows] (fp32, base 2) → v_out [rows][D], s_out [rows].
  // The outputs must not overlap the inputs (the CPU backend rejects that; use MergeStateInPlace).
  virtual void MergeStates(const float* v_in, const float* s_in, int n, int rows, int head_dim,
                           float* v_out, float* s_out) = 0;
  // In place: (v, s) ← (v, s) ⊕ (v_other, s_other), rows × head_dim.
  virtual void MergeStateInPlace(float* v, float* s, const float* v_other, const float* s_other,
                                 int rows, int head_dim) = 0;
  // Casts final states' v (fp32 [rows][D]) to the output dtype.
  virtual void CastStates(const float* v, int64_t count, DType dtype, void* out) = 0;
};

struct BackendOptions {
  WorkspaceLimits limits;
  int device = 0;  // CUDA device ordinal
  // Whether the CUDA backend offers the planner its concurrent prefix/decode mode (PlanOptions::
  // concurrent_candidates, kernels/cuda/cuda_backend.h) under PREFIXD_CONCURRENT_DECODE_SMS=auto.
  // The multi-rank engine turns it off: its steps split the parts around the state exchange, where
  // a concurrent plan's capped prefix grid would run without the overlap it was chosen for.
  bool concurrent_prefix_decode = true;
};

std::unique_ptr<Backend> MakeCpuBackend(const BackendOptions& options = {});
// Throws kUnsupported when built without CUDA or when no GPU is usable.
std::unique_ptr<Backend> MakeCudaBackend(const BackendOptions& options = {});
// True when this build has the CUDA backend and cudaGetDeviceCount succeeds with n > 0. Any CUDA
// error (no driver: error 35 on the project machines) means "no GPU".
bool CudaAvailable();
int CudaDeviceCount();  // 0 when CudaAvailable() is false
// Free and total memory of CUDA device `device` (cudaMemGetInfo, which creates the device's
// context if the process has none yet), in bytes; both 0 without a usable GPU. The calling
// thread's current device is left as it was.
struct DeviceMemory {
  int64_t free_bytes = 0;
  int64_t total_bytes = 0;
};
DeviceMemory CudaDeviceMemory(int device);

}  // namespace prefixd::kernels
