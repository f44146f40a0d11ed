// The CUDA backend (internal to kernels/; users call MakeCudaBackend): one device, one stream (a
// second, internal one only for concurrent prefix/decode, below), a workspace allocated once at
// construction, and the kernels of kernels/cuda/.
//
// Workspace (sizes from WorkspaceLimits):
//   plan buffer      device int32 [max_plan_ints] + pinned host staging of the same size: LoadPlan
//                    serialises the plan (plan.cc's layout) into the staging buffer, appends the
//                    decode items' bases ({page_indptr, state_indptr}[request] per item, derived)
//                    and issues ONE async copy; the run methods read the item arrays, state_indptr,
//                    groups and the suffix page table in place, through pointers into the device copy.
//   prefix plan      a second, identical pair for RunPrefixAttention's one-group plan, so a
//                    prefill/append call never disturbs the loaded decode plan.
//   partial states   v fp32 [max_state_floats], s fp32 [max_slots · max_qo_heads], used as
//                    [num_slots][H_qo][head_dim] and [num_slots][H_qo] by the loaded plan.
// Run methods only launch kernels on the stream: no allocation, no host synchronisation, so a
// whole RunCascade can be captured in a CUDA graph (with the plan loaded before capture).
//
// RunCascade = prefix kernel → decode kernel (which finishes the plan's finishing requests itself:
// plan.h, fused merge) → merge kernel over plan.merge_requests (skipped when there are none). The
// decode kernel is a programmatic dependent launch of the prefix kernel (decode_attention.h).
// Environment knobs, read at construction, for comparisons (Describe() names forced ones):
//   PREFIXD_DECODE_KERNEL=auto|simt|mma   decode kernel for GQA groups that have both
//   PREFIXD_DECODE_WARPS=1|2|4|8          warps per CTA of the tensor-core decode kernel
//   PREFIXD_DECODE_PIPELINE=auto|deep|shallow|narrow  the decode kernel's K/V pipeline depth (auto:
//                                         shallow where every item fits in it; narrow: 64-thread
//                                         CUDA-core CTAs at GQA 1 and 2; DecodePipeline)
//   PREFIXD_DECODE_PDL=0|1                programmatic dependent launch of the decode kernel (1)
//   PREFIXD_MERGE_PDL=0|1                 the same for the merge right behind the prefix kernel, in a
//                                         prefix + merge part (RunCascadeParts) (1)
//   PREFIXD_MERGE_ROWS_PER_WARP=auto|1|2  rows per warp of the merge kernel (MergeStatesParams::
//                                         rows_per_warp; auto: two where one would take more than a
//                                         wave and every run has at most 4 states)
//   PREFIXD_MERGE_RUN_LOOKUP=auto|table   the merge's run bounds by arithmetic where the plan's runs
//                                         are uniform and every request is merged (MergeStatesParams::
//                                         uniform_run_states), or always loaded (auto)
//   PREFIXD_MERGE_SKIP_EMPTY=0|1          the merge skips the v loads of the states the plan leaves
//                                         empty (CascadePlan::EmptyPrefixStates; MergeStatesParams::
//                                         empty_states) where the runs are uniform (1)
//   PREFIXD_EARLY_DECODE_PERCENT=auto|0-100  early decode (early_decode.h): that share of the
//                                         finished requests' suffix tokens beside the prefix grid, on
//                                         the SMs it leaves idle, as its programmatic dependent; the
//                                         rest of the decode, with a merge-only item per early
//                                         (request, KV head), as the early grid's
//                                         (DecodeAttentionParams::early_chain); auto: the share
//                                         EarlyDecodeAutoShare gives each plan, with the TMA decode
//                                         as the early grid, where the owner allows the concurrent
//                                         modes (BackendOptions::concurrent_prefix_decode) (auto)
//   PREFIXD_SEQUENTIAL_TMA=0|1            a cascade's decode after its prefix grid as the persistent
//                                         TMA decode on every SM where SequentialTmaDecodeWarps
//                                         (decode_kernel_choice.h) says it pays (GQA 1, head_dim 128,
//                                         items of 128-512 tokens, at most one per warp) (1)
//   PREFIXD_EARLY_DECODE_MIN_PREFIX_US=n  the automatic early share's shortest predicted prefix part
//                                         (EarlyDecodeRule::min_prefix_us) (180)
//   PREFIXD_EARLY_DECODE_TMA=0|1          the early grid as the persistent TMA decode, one CTA per
//                                         idle SM, where it applies (DecodeStreamTmaApplies; every
//                                         group of ≤ 8 heads at head_dim 64 and 128), instead of the
//                                         one-item-at-a-time kernel (1)
//   PREFIXD_DECODE_EVICT_FIRST=0|1        evict-first L2 policy for the decode kernel's K/V (1)
//   PREFIXD_DECODE_PREFETCH=0|1           finishing items prefetch their prefix states into L2 (1)
//   PREFIXD_DECODE_NEXT_WAVE=0|1          a decode of several waves: each CTA prefetches the start
//                                         of the item one wave later into L2 (NextWaveItem) (1)
//   PREFIXD_DECODE_ITEM_PAGES=off|lookup|next-wave  the pages of each decode item's first two page
//                                         slots passed with it (WriteDecodeItemPages): its first
//                                         copies without a page-table load; next-wave also pulls the
//                                         next-wave item's first K/V rows into L2 (off: not timed yet)
//   PREFIXD_UPLOAD_BATCH=0|1              a step's uploads as one copy kernel (BeginUploadBatch) (1)
//   PREFIXD_STEP_PDL=0|1                  that kernel, and FillSyntheticQueries, as programmatic
//                                         dependent launches: its host loads overlap the kernel
//                                         before it, and neither waits for a launch (1)
//   PREFIXD_DECODE_STREAM=0|1             the one-CTA-per-SM decode (CascadeArgs::decode_free_sms) as
//                                         the streaming kernel (decode_attention_mma_stream.cuh) (1:
//                                         since the state exchange moves in place, the decode beside
//                                         it is the step's longer tail; 4-GPU step 0.2875 against
//                                         0.2920 ms, bench/scaling/README.md session 16)
//   PREFIXD_DECODE_PERSISTENT=0|1         every tensor-core decode launch as one CTA per SM looping
//                                         over items (0; slower than one CTA per item, same README);
//                                         beside a concurrent prefix: on exactly its k SMs
//   PREFIXD_DECODE_TMA=0|1                a one-CTA-per-SM streaming decode with its K/V tiles copied
//                                         by the TMA (decode_stream_tma.h; sm_90a) (0)
//   PREFIXD_DECODE_TMA_DIAG=0|1|2         its diagnostics, WRONG results: copies only / arithmetic only
//   PREFIXD_DECODE_TMA_SWAP_AB=0|1        its tiles' arithmetic with the query heads as the mma's N
//                                         (SwapAbDecodeTile, half the mma) or 0 as its M (1)
//   PREFIXD_DECODE_TMA_WARPS=8|12         its warps per CTA (with the heads as N): 12 with 2 ring
//                                         stages each, or 8 with 3 (12; the planner's model counts
//                                         the rounds of the warps that run, bench/RESULTS.md s52)
//   PREFIXD_DECODE_WARMUP=0|1             the sm_90a prefix kernel pulls the start of a one-wave
//                                         decode kernel (items, page-table entries, queries, first
//                                         K/V rows) into L2 at its end (DecodeL2Warmup,
//                                         prefix_attention.h; DecodeWarmup) (1; never beside the
//                                         narrow prefix CTA, whose decode CTAs start with it)
//   PREFIXD_DECODE_WARMUP_MIB=n           its K/V rows: at most n MiB (0: none) (4)
//   PREFIXD_PREFIX_TARGET_ITEMS=n         DefaultPlanOptions().prefix_target_items
//   PREFIXD_PREFIX_BALANCE=0|1            DefaultPlanOptions().balance_prefix_ctas: SMs (less the
//                                         concurrent decode's) (1) or 0: a prefix grid balanced over
//                                         idle SMs (prefix_balance.h)
//   PREFIXD_PREFIX_BALANCE_STREAM=0|1     DefaultPlanOptions().balance_stream: also by the stream over
//                                         the heads (1 with concurrent decode, else 0)
//   PREFIXD_PREFIX_STREAM_NARROW=0|1      DefaultPlanOptions().balance_stream_narrow: the stream's
//                                         leftover CTAs as narrow slots (prefix_balance.h) (1)
//   PREFIXD_PREFIX_BALANCE_OVERHEAD=n     DefaultPlanOptions().balance_item_overhead_tiles, in
//                                         hundredths of a K/V tile (-1: the head_dim's, 80/250/520)
//   PREFIXD_PREFIX_BALANCE_MIN_GAIN=n     DefaultPlanOptions().balance_min_gain, in hundredths of a
//                                         percent (-1: 2%)
//   PREFIXD_DECODE_TARGET_ITEMS=n         DefaultPlanOptions().target_items (2 × SMs)
//   PREFIXD_MIN_PREFIX_CHUNK=n            DefaultPlanOptions().min_prefix_chunk (512)
//   PREFIXD_FINE_PREFIX_CHUNK=n           DefaultPlanOptions().fine_prefix_chunk (128; 0: off)
//   PREFIXD_TINY_PREFIX_TOKENS=n          DefaultPlanOptions().tiny_prefix_tokens (256; 0: off)
//   PREFIXD_CHOOSE_LAYOUT=0|1             DefaultPlanOptions().choose_layout (1; built-in H200 cost model)
//   PREFIXD_CONCURRENT_DECODE_SMS=auto|k  concurrent prefix/decode (below): auto (the default) where
//                                         the planner chooses it, k every step on k SMs, 0 never
//   PREFIXD_CONCURRENT_DECODE_TMA=0|1|force its decode as the persistent TMA decode on exactly the k
//                                         SMs where the plan says so (CascadePlan::
//                                         concurrent_decode_tma), and the planner's candidate (1);
//                                         force: also every plan of a forced k
//   PREFIXD_CONCURRENT_TMA_CANDIDATES=k,... the TMA decode's candidate k on this device (default:
//                                         ConcurrentTmaDecodeCandidates, cost_model.h)
//   PREFIXD_CONCURRENT_CHAIN=0|1|all      a concurrent step as one chain on one stream instead of
//                                         two streams joined before the merge: the capped prefix
//                                         grid signals its dependents at its start, the decode runs
//                                         as its programmatic dependent (on the k SMs left, then
//                                         on those the prefix grid's CTAs leave), the merge as the
//                                         decode's, scheduled while the prefix grid still runs
//                                         (all: whichever decode, the default since session 96;
//                                         1: only where the decode is the persistent TMA decode,
//                                         as in sessions 92-95; 0: the two streams)
//   PREFIXD_FUSED=0|1                     the one-launch fused cascade kernel (below) (0)
//   PREFIXD_FUSED_L2_AHEAD=n              its decode items prefetched into L2 ahead of the ring (0)
//   PREFIXD_FUSED_DIAG=0|1|2              diagnostics, WRONG results: suffix loads only / arithmetic only
//   PREFIXD_FUSED_MERGE=inside|kernel     its ⊕: inside (finishing decode items, the default) or by the
//                                         merge kernel after it for every request
//
// Fused cascade (PREFIXD_FUSED=1; kernels/cuda/cascade_fused.h): a plan the fused kernel can run
// (sm_90a device, head_dim 64/128, GQA group 1, 2, 4 or 8, page size 8-128, decode items starting at
// multiples of 16 tokens) is loaded with its per-CTA work lists (fused_schedule.h), and RunCascade
// (all parts, no packed merge output, no SMs left free) is then ONE launch — prefix and decode
// items side by side on every SM, the ⊕ of the requests the plan finishes in their decode items
// inside, through per-(request, KV head) arrival counters (a workspace array, zero between steps)
// — followed by the merge kernel only for plan.merge_requests. Any other call, and a plan it
// cannot run, takes the kernels above.
//
// Concurrent prefix/decode (CascadePlan::concurrent_decode_sms = k, 0 < k < SMs: where the
// compute-bound prefix kernel and the memory-bound decode kernel each leave the other's resource
// idle; measured on the H200, bench/RESULTS.md sessions 45 and 47: 32/8 B256 P32768 S256 283.0 →
// 273.6 µs at head_dim 128 with k = 20 (266.9 with PREFIXD_DECODE_PERSISTENT=1 PREFIXD_DECODE_TMA=1),
// 546.1 → 503.3 at 256 with k = 28; slower at S = 32, at B64, at P8192 and at head_dim 64 — there
// the planner takes it only with the persistent TMA decode, since session 89). By
// default the planner decides per plan (DefaultPlanOptions' concurrent_candidates: 15% and 21% of
// the SMs, where the prefix runs on the persistent sm_90a kernel and the fused kernel is off; the
// cost model's concurrent step, cost_model.h); PREFIXD_CONCURRENT_DECODE_SMS=k forces it on every
// plan (DefaultPlanOptions below, choose_layout off), 0 never. RunCascade runs the prefix kernel on the main
// stream with its persistent sm_90a grid capped at SMs − k CTAs (PrefixAttentionParams::max_ctas; the mma.sync path is not
// capped), and at the same time the decode kernel on a second stream forked from the main one,
// launched normally (no PDL: a programmatic dependency on the prefix grid would serialise it
// again), so that its CTAs take the k SMs the prefix grid leaves free (and every SM once prefix
// CTAs exit); or, where the plan says so (CascadePlan::concurrent_decode_tma, the planner's choice
// where the model has it pay), the persistent TMA decode on exactly the k SMs, which streams more
// per SM than the other (at 32/8 B256 P32768 S256 it ends before the prefix, 273.3 → 269.8 µs fp16,
// bench/RESULTS.md session 48; on 36-64 SMs it makes the mode pay at P8192-16384, session 51). The
// main stream is created with the highest priority and the second with the lowest,
// so that pending prefix CTAs are dispatched first. The decode kernel then cannot read finished
// prefix states, so no decode item finishes its request: LoadPlan loads every such plan unfused
// (DecodeWorkItem::finish = 0, merge_requests = every request; the same ⊕ to float rounding) and
// its options (the forced mode's DefaultPlanOptions(), the planner's candidate) have fuse_merge =
// false, prefix_target_items sized for SMs − k CTAs and the
// prefix grid balanced over them by the stream over the heads (PlanOptions::balance_stream; the
// planner's chunks alone left 64 pairs on 112 CTAs: the prefix part 392 µs instead of ~241). The
// main stream waits for the second (fork/join with events, created at construction, so the step
// stays capturable in a CUDA graph) before the merge kernel does all the ⊕. A captured step keeps
// the two priorities only in a graph instantiated with cudaGraphInstantiateFlagUseNodePriority;
// otherwise every node runs at the launch stream's priority (measured no slower on the H200 at
// head_dim 64-256, bench/RESULTS.md session 54, runs 4-5). Since session 92 a step whose decode is
// the persistent TMA decode runs instead as one chain on the main stream (PREFIXD_CONCURRENT_CHAIN,
// on by default): the prefix grid signals griddepcontrol.launch_dependents at each CTA's entry, the
// TMA decode is its programmatic dependent (launched once every prefix CTA is resident, on the k SMs
// left; each decode CTA signals at its start and waits for the prefix grid before it exits), and the
// merge is the decode's (its CTAs take SMs as the grids retire and wait for the decode grid, whose
// completion follows the prefix grid's). Same kernels, same bits; no fork, join or event: the merge
// no longer starts 3.5-5 µs after the prefix grid's end (0.3-1.5 µs off every concurrent step timed,
// bench/RESULTS.md session 92). No deadlock: each grid launches only once the one it waits for is
// resident. Since session 96 the steps whose decode is the one-item decode (head_dim 256, groups the
// TMA decode does not serve) chain too: a CTA per item, each signalling at its start, the last
// waiting for the prefix grid before it exits (DecodeAttentionParams::early_chain); 1.7-3.9 µs off
// 32/8 D256 B256 P32768 S256-512 (an H100, bench/RESULTS.md session 96).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/cuda/decode_attention.h"
#include "kernels/cuda/merge_states.h"
#include "kernels/cuda/prefix_attention.h"
#include "kernels/cuda/upload_batch.h"
#include "prefixd/kernels/backend.h"
#include "prefixd/kernels/early_decode.h"
#include "prefixd/kernels/fused_schedule.h"

namespace prefixd::kernels::cuda {

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(const BackendOptions& options);
  ~CudaBackend() override;
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  BackendKind kind() const override { return BackendKind::kCuda; }
  std::string Describe() const override { return description_; }
  // The planner's settings as read when the backend was made (ReadPlanOptions).
  PlanOptions DefaultPlanOptions() const override { return default_plan_options_; }
  const WorkspaceLimits& limits() const override { return limits_; }

  void* Alloc(size_t bytes) override;
  void Free(void* ptr) override;
  void CopyToDevice(void* dst, const void* src, size_t bytes) override;
  void CopyToDeviceAsync(void* dst, const void* src, size_t bytes) override;
  void CopyToHost(void* dst, const void* src, size_t bytes) override;
  void CopyDeviceToDevice(void* dst, const void* src, size_t bytes) override;
  void Fill(void* dst, uint8_t byte, size_t bytes) override;
  void Synchronize() override;
  void* stream() const override { return stream_; }
  double TimeUs(const std::function<void()>& enqueue) override;  // CUDA events on the stream
  void BeginUploadBatch() override;
  void EndUploadBatch() override;

  void LoadPlan(const CascadePlan& plan) override;
  void RunCascade(const CascadeArgs& args) override;
  void RunPrefixAttention(const PrefixAttentionArgs& args) override;

  void MergeStates(const float* v_in, const float* s_in, int n, int rows, int head_dim, float* v_out,
                   float* s_out) override;
  void MergeStateInPlace(float* v, float* s, const float* v_other, const float* s_other, int rows,
                         int head_dim) override;
  void CastStates(const float* v, int64_t count, DType dtype, void* out) override;

  int num_sms() const { return num_sms_; }
  // PREFIXD_CONCURRENT_DECODE_SMS at construction (0: prefix and decode run one after the other).
  int concurrent_decode_sms() const { return concurrent_decode_sms_; }
  // The steps run concurrently so far (RunCascade of a plan loaded with k > 0).
  int64_t concurrent_steps() const { return concurrent_steps_; }
  // The steps whose decode ran early items beside the prefix grid so far (PREFIXD_EARLY_DECODE_PERCENT).
  int64_t early_decode_steps() const { return early_decode_steps_; }
  // The early grids launched as the persistent TMA decode so far (PREFIXD_EARLY_DECODE_TMA), in
  // steps and in decode parts alone.
  int64_t early_tma_launches() const { return early_tma_launches_; }
  // The sequential steps' decodes launched as the persistent TMA decode so far (PREFIXD_SEQUENTIAL_TMA).
  int64_t sequential_tma_launches() const { return sequential_tma_launches_; }
  // The loaded plan's concurrent k (0: none loaded, or one after the other).
  int loaded_concurrent_decode_sms() const { return plan_loaded_ ? plan_.concurrent_decode_sms : 0; }
  // The concurrent steps whose decode ran as the persistent TMA decode on the k SMs so far.
  int64_t concurrent_tma_steps() const { return concurrent_tma_steps_; }
  // The concurrent steps chained on one stream so far (PREFIXD_CONCURRENT_CHAIN).
  int64_t chained_steps() const { return chained_steps_; }
  // The steps whose states' v were written and merged in 16 bits so far (PREFIXD_CONCURRENT_STATES16).
  int64_t states16_steps() const { return states16_steps_; }
  // The warps per CTA asked of the last TMA-decode launch beside a concurrent prefix (also when
  // timed alone): the plan's CascadePlan::concurrent_tma_warps, else PREFIXD_DECODE_TMA_WARPS's
  // (as TmaDecodeWarps runs them); 0 before any.
  int last_concurrent_tma_warps() const { return last_concurrent_tma_warps_; }

  // Each part alone reads/writes exactly what it does inside RunCascade (Backend::RunCascadeParts;
  // the kernel benchmark times them one by one).
  void RunCascadeParts(const CascadeArgs& args, unsigned parts) override;

  // Fused cascade (above): whether the loaded plan runs as one fused launch, and the launches so far.
  bool fused_plan_loaded() const { return plan_loaded_ && plan_.fused; }
  int64_t fused_launches() const { return fused_launches_; }
  // For the benchmark: the fused kernel fed only the loaded plan's prefix items (kPrefixPart) or
  // only its decode items (kDecodePart), writing their partial states and no outputs. Requires
  // fused_plan_loaded().
  void RunFusedItemsOnly(const CascadeArgs& args, unsigned part);

 private:
  // A device int32 buffer fed through a pinned staging buffer; `copied` is recorded after each
  // upload so the staging buffer is not overwritten while the copy may still be reading it.
  struct StagedBuffer {
    int32_t* device = nullptr;
    int32_t* host = nullptr;
    int64_t capacity = 0;  // ints
    cudaEvent_t copied = nullptr;
  };
  void Release() noexcept;  // frees the workspace and the stream (destructor, failed constructor)
  // The plan options of this backend's kernels and SMs with the planner's environment settings
  // (PREFIXD_CHOOSE_LAYOUT, PREFIXD_MIN_PREFIX_CHUNK, ...); called once, by the constructor.
  PlanOptions ReadPlanOptions() const;
  void AllocStaged(StagedBuffer* buffer, int64_t ints);
  static void FreeStaged(StagedBuffer* buffer) noexcept;
  int32_t* BeginUpload(StagedBuffer* buffer);  // waits for the previous upload's copy
  void EndUpload(StagedBuffer* buffer, int64_t ints);
  // A host → device copy on stream_: into the open upload batch where it qualifies, else (after
  // launching what the batch holds, so that copies stay in call order) cudaMemcpyAsync.
  void EnqueueUpload(void* dst, const void* src, size_t bytes);
  // Launches the batch's copies and records the `copied` events of the staged buffers in it.
  void FlushUploads();

  // Device views into the loaded plan (plan.cc's serialised layout).
  struct LoadedPlan {
    CascadePlan header;  // shapes only; the arrays live on the device
    const PrefixWorkItem* prefix_items = nullptr;
    int num_prefix_items = 0;
    const DecodeWorkItem* decode_items = nullptr;
    int num_decode_items = 0;
    const int32_t* state_indptr = nullptr;
    const PrefixGroup* groups = nullptr;
    const int32_t* suffix_indptr = nullptr;
    const int32_t* suffix_indices = nullptr;
    const int32_t* merge_requests = nullptr;
    int num_merge_requests = 0;
    // merge_requests partitioned: those without decode items first (num_merge_no_decode), then
    // the others (Backend::kMergeNoDecodePart, kMergeAfterDecodePart).
    const int32_t* merge_partitioned = nullptr;
    int num_merge_no_decode = 0;
    const int2* decode_item_bases = nullptr;  // [num_decode_items]
    const int2* decode_item_pages = nullptr;  // [num_decode_items] (WriteDecodeItemPages)
    int max_prefix_item_rows = 0;  // the prefix kernel's tile hint
    int max_decode_item_tokens = 0;  // the decode kernel's pipeline depth (DecodePipeline)
    int max_merge_run_states = 0;    // the longest run of merge_requests (MergeStatesParams::max_run_states)
    // Every request's run the same length n, request r's at slot r · n: n (MergeStatesParams::
    // uniform_run_states), else 0. merge_every_request: merge_requests is 0, 1, ..., num_requests − 1.
    int merge_uniform_run_states = 0;
    uint64_t merge_empty_states = 0;  // CascadePlan::EmptyPrefixStates (MergeStatesParams::empty_states)
    bool merge_every_request = false;
    // Early decode (early_decode.h): the last num_early_decode_items decode items run beside the
    // prefix grid on the early_decode_sms SMs it leaves idle, before the others.
    int num_early_decode_items = 0;
    int early_decode_sms = 0;
    bool prefix_kv_evict_first = false;  // PrefixKvEvictFirst(plan, L2 size): the prefix K/V stream's hint
    int prefix_kv_tile_tokens = 0;       // ChoosePrefixKvTileTokens(plan): the sm_90a prefix kernel's tile
    int prefix_balanced_ctas = 0;        // CascadePlan::prefix_balanced_ctas (the sm_90a kernel's chains)
    // Fused cascade: the per-CTA work lists of all items, the prefix items only, the decode items
    // only (fused_schedule.h), when the plan runs fused.
    bool fused = false;
    // Concurrent prefix/decode with the decode on this many SMs (0: one after the other).
    int concurrent_decode_sms = 0;
    // ... with the decode as the persistent TMA decode on exactly those SMs (CascadePlan::
    // concurrent_decode_tma, where PREFIXD_CONCURRENT_DECODE_TMA allows it), at the plan's warps
    // per CTA (CascadePlan::concurrent_tma_warps; 0: the backend's).
    bool concurrent_decode_tma = false;
    int concurrent_tma_warps = 0;
    const int32_t* request_finished = nullptr;  // [num_requests] (FusedCascadeParams::request_finished)
    struct FusedLists {
      const int32_t* cta_indptr = nullptr;
      const int32_t* entries = nullptr;
      int num_ctas = 0;
    } fused_all, fused_prefix, fused_decode;
  };
  // Launches the fused kernel on `lists`, with the ⊕ inside when `merge`. False (nothing launched)
  // when the call's shapes are not the fused kernel's (e.g. dtype): the caller runs the kernels.
  bool LaunchFused(const CascadeArgs& args, const LoadedPlan::FusedLists& lists, bool merge);
  // The prefix items of the loaded plan for `args` (inputs, items, groups, slots): what the prefix
  // kernel and the fused kernel's prefix half both run.
  PrefixAttentionParams PrefixItemsParams(const CascadeArgs& args) const;
  // The merge kernel's parameters this backend sets on every launch (rows per warp, SM count).
  MergeStatesParams MergeParams() const;
  // Whether the loaded plan's decode, launched as `p`, runs as the persistent TMA decode beside a
  // concurrent prefix (CascadePlan::concurrent_decode_tma, where DecodeStreamTmaApplies: the pool's
  // alignment, a KV head view; also when its part is timed alone).
  bool PlanTmaDecodeRuns(const DecodeAttentionParams& p, const CascadeArgs& args) const;
  // PlanTmaDecodeRuns for the decode launch the loaded plan makes with `args`.
  bool StepTmaDecodeRuns(const CascadeArgs& args) const;
  // Whether the loaded plan's step writes its partial states' v in 16 bits and merges them so
  // (PREFIXD_CONCURRENT_STATES16): a concurrent step whose prefix (launched as `prefix`) is the
  // sm_90a kernel and whose decode is the persistent TMA decode (tma_decode: StepTmaDecodeRuns), the
  // two kernels that can write them. A function of the plan and the call's arguments alone, so that
  // parts timed in separate calls agree on the states' width.
  bool StepStates16(const PrefixAttentionParams& prefix, bool tma_decode) const;
  // Whether the loaded plan's concurrent step runs chained on one stream for these arguments
  // (PREFIXD_CONCURRENT_CHAIN): its decode the persistent TMA decode (or, with =all, the one-item
  // decode), its prefix (launched as `prefix`) the sm_90a kernel; tma_decode: StepTmaDecodeRuns.
  bool ChainsConcurrentStep(const CascadeArgs& args, const PrefixAttentionParams& prefix, bool tma_decode) const;
  // `p` as the persistent TMA decode on `sms` SMs, one CTA each (decode_stream_tma.h): the
  // concurrent mode's, the early grid's and the sequential rule's launch.
  DecodeAttentionParams TmaDecodeOn(DecodeAttentionParams p, int sms) const;
  // The share of `plan`'s finished suffix tokens its early grid takes on idle_sms SMs
  // (PREFIXD_EARLY_DECODE_PERCENT; auto: EarlyDecodeAutoShare, early_decode.h).
  double EarlyDecodeShare(const CascadePlan& plan, int idle_sms) const;
  // What the prefix kernel pulls into L2 for the loaded plan's decode kernel, launched with `args`
  // (PREFIXD_DECODE_WARMUP, _MIB): nothing unless that decode runs in one wave; then every item's
  // start and, within the K/V budget, its first K/V rows.
  DecodeL2Warmup DecodeWarmup(const CascadeArgs& args) const;

  int device_ = 0;
  int num_sms_ = 0;
  int64_t l2_bytes_ = 0;  // the device's L2 (PrefixKvEvictFirst)
  std::string description_;
  WorkspaceLimits limits_;
  cudaStream_t stream_ = nullptr;
  StagedBuffer plan_buffer_, prefix_plan_buffer_;
  float* partial_v_ = nullptr;
  float* partial_s_ = nullptr;
  // PREFIXD_DECODE_KERNEL=auto|simt|mma at construction: which decode kernel runs for GQA groups
  // that have both (for comparisons; auto is the fast choice).
  DecodeKernel decode_kernel_ = DecodeKernel::kAuto;
  int decode_mma_warps_ = 0;   // PREFIXD_DECODE_WARPS (0: by the item count, RunCascadeParts)
  DecodePipeline decode_pipeline_ = DecodePipeline::kByItemLength;  // PREFIXD_DECODE_PIPELINE
  int decode_warp_rounds_ = kWarpRuleRounds;                         // PREFIXD_DECODE_WARP_ROUNDS (kWarp)
  // The length rule's one-warp CTA from this many items (DecodeAttentionParams::warp_min_items).
  static constexpr int kDefaultWarpMinItems = 8192;
  int decode_warp_min_items_ = kDefaultWarpMinItems;                 // PREFIXD_DECODE_WARP_MIN_ITEMS
  bool decode_pdl_ = true;     // PREFIXD_DECODE_PDL
  bool merge_pdl_ = true;      // PREFIXD_MERGE_PDL
  int merge_rows_per_warp_ = 0;  // PREFIXD_MERGE_ROWS_PER_WARP (0: auto)
  static constexpr int kEarlyDecodeAuto = -1;
  int early_decode_percent_ = 0;  // PREFIXD_EARLY_DECODE_PERCENT (0: off; kEarlyDecodeAuto: by the plan)
  bool early_decode_tma_ = true;  // PREFIXD_EARLY_DECODE_TMA
  EarlyDecodeRule early_rule_;    // its min_prefix_us: PREFIXD_EARLY_DECODE_MIN_PREFIX_US
  bool sequential_tma_ = true;    // PREFIXD_SEQUENTIAL_TMA
  // PREFIXD_CONCURRENT_CHAIN (off without the three launches' PDL), in its choices' order: which
  // concurrent steps run chained on one stream (ChainsConcurrentStep).
  enum class ConcurrentChain { kOff, kTmaDecode, kAll };
  ConcurrentChain concurrent_chain_ = ConcurrentChain::kAll;
  // PREFIXD_CONCURRENT_STATES16: the concurrent step's states with v in the model's dtype
  // (StepStates16): half the state bytes its merge reads, at one more rounding of each state. On
  // by default since session 99: −1.0 µs mean at 32 concurrent 32/8 S256 shapes, −2.8 to +0.6
  // (an H100, bench/RESULTS.md).
  bool concurrent_states16_ = true;
  bool merge_run_table_ = false;  // PREFIXD_MERGE_RUN_LOOKUP=table: never MergeStatesParams::uniform_run_states
  bool merge_skip_empty_ = true;  // PREFIXD_MERGE_SKIP_EMPTY
  bool decode_evict_first_ = true;  // PREFIXD_DECODE_EVICT_FIRST
  bool decode_prefetch_ = true;     // PREFIXD_DECODE_PREFETCH
  bool decode_next_wave_ = true;    // PREFIXD_DECODE_NEXT_WAVE
  // PREFIXD_DECODE_ITEM_PAGES: 0 off, 1 the items' first pages passed to the one-item decode kernels
  // (DecodeAttentionParams::item_pages), 2 also their next-wave K/V prefetch (prefetch_next_wave_kv).
  int decode_item_pages_ = 0;
  bool decode_stream_items_ = true;  // PREFIXD_DECODE_STREAM
  bool decode_persistent_ = false;   // PREFIXD_DECODE_PERSISTENT
  bool decode_tma_ = false;          // PREFIXD_DECODE_TMA
  int decode_tma_diag_ = 0;          // PREFIXD_DECODE_TMA_DIAG
  bool decode_tma_swap_ab_ = true;   // PREFIXD_DECODE_TMA_SWAP_AB
  int decode_tma_warps_ = 12;        // PREFIXD_DECODE_TMA_WARPS, as TmaDecodeWarps runs them
  int decode_tma_items_per_cta_ = 0;  // PREFIXD_DECODE_TMA_ITEMS_PER_CTA (0: one per warp)
  bool decode_warmup_ = true;         // PREFIXD_DECODE_WARMUP
  static constexpr int64_t kDefaultDecodeWarmupBytes = int64_t(4) << 20;
  int64_t decode_warmup_bytes_ = kDefaultDecodeWarmupBytes;  // PREFIXD_DECODE_WARMUP_MIB
  // PREFIXD_CONCURRENT_DECODE_SMS (0: off). When on: the decode kernel's stream (lowest priority;
  // stream_ then has the highest) and the fork/join events of RunCascade, all made at construction.
  int concurrent_decode_sms_ = 0;
  std::vector<int> concurrent_candidates_;  // PREFIXD_CONCURRENT_DECODE_SMS unset or auto
  std::vector<int> concurrent_tma_candidates_;  // ... the TMA decode's (PlanOptions::concurrent_tma_candidates)
  bool concurrent_tma_ = true;               // PREFIXD_CONCURRENT_DECODE_TMA
  bool concurrent_tma_forced_ = false;       // ... =force (with a forced k)
  int64_t concurrent_tma_steps_ = 0;
  int64_t concurrent_steps_ = 0;
  int64_t chained_steps_ = 0;
  int64_t states16_steps_ = 0;
  int last_concurrent_tma_warps_ = 0;
  int64_t early_decode_steps_ = 0;
  int64_t early_tma_launches_ = 0;
  int64_t sequential_tma_launches_ = 0;
  cudaStream_t decode_stream_ = nullptr;
  cudaEvent_t fork_ = nullptr, join_ = nullptr;
  cudaEvent_t timing_start_ = nullptr, timing_stop_ = nullptr;  // TimeUs, created at its first call
  bool plan_loaded_ = false;
  LoadedPlan plan_;
  PrefixKernelSettings prefix_settings_;          // PREFIXD_PREFIX_KERNEL, PREFIXD_SM90A_* (read once)
  PlanOptions default_plan_options_;              // ReadPlanOptions(), at construction
  bool fused_ = false;                            // PREFIXD_FUSED
  int fused_l2_ahead_ = 0;                        // PREFIXD_FUSED_L2_AHEAD
  int fused_diag_ = 0;                            // PREFIXD_FUSED_DIAG
  bool fused_merge_kernel_ = false;               // PREFIXD_FUSED_MERGE=kernel
  int32_t* fused_counters_ = nullptr;             // [max_requests · max_qo_heads] (≥ KV heads), zero between steps
  int64_t fused_launches_ = 0;
  // Upload batch (Backend::BeginUploadBatch): open or not, its copies, and the staged buffers
  // whose `copied` event is recorded when it is launched. PREFIXD_UPLOAD_BATCH=0 at construction:
  // every upload a cudaMemcpyAsync (A/B runs).
  bool upload_batch_enabled_ = true;
  bool batching_ = false;
  UploadBatch uploads_;
  std::vector<cudaEvent_t> uploads_copied_;
};

}  // namespace prefixd::kernels::cuda
