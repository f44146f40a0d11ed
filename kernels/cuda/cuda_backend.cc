#include "kernels/cuda/cuda_backend.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <vector>

#include "prefixd/common/cuda_check.h"
#include "prefixd/common/env.h"
#include "kernels/cuda/cascade_fused.h"
#include "kernels/cuda/decode_attention.h"
#include "kernels/cuda/decode_stream_tma.h"
#include "kernels/cuda/merge_states.h"
#include "kernels/cuda/prefix_attention.h"
#include "kernels/cuda/sm90a/prefix_attention_sm90a.h"
#include "prefixd/common/error.h"
#include "prefixd/kernels/cost_model.h"
#include "prefixd/kernels/decode_item_pages.h"
#include "prefixd/kernels/decode_kernel_choice.h"
#include "prefixd/kernels/early_decode.h"
#include "prefixd/kernels/prefix_kv_tile.h"
#include "prefixd/kernels/prefix_l2_hint.h"
#include "src/backend_common.h"

namespace prefixd::kernels {
namespace cuda {
namespace {

constexpr float kLog2e = 1.4426950408889634f;

// "1 item", "4 items": a count in the backend's description.
std::string Items(int n) { return std::to_string(n) + (n == 1 ? " item" : " items"); }

// Shapes of plan.cc's serialised form (Serialize): its header, then the arrays in order.
constexpr int64_t kHeaderInts = CascadePlan::kSerializedHeaderInts;
constexpr int64_t kPrefixItemInts = sizeof(PrefixWorkItem) / sizeof(int32_t);
constexpr int64_t kDecodeItemInts = sizeof(DecodeWorkItem) / sizeof(int32_t);
constexpr int64_t kGroupInts = sizeof(PrefixGroup) / sizeof(int32_t);
static_assert(kPrefixItemInts == 8 && kDecodeItemInts == 6 && kGroupInts == 4,
              "work items are read on the device straight from the serialised int32 array");

// RunPrefixAttention splits the prefix along the KV axis (for enough CTAs) only into chunks of at
// least this many tokens, on multiples of the prefix kernel's KV tile.
constexpr int kPrefixChunkAlign = 64;
constexpr int kMinPrefixChunk = 256;

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Memory errors are the caller's to handle (kOutOfMemory), not a broken device (kLibrary).
void CheckAlloc(cudaError_t err, size_t bytes, const char* what) {
  if (err == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    PREFIXD_THROW(ErrorKind::kOutOfMemory,
                  what << ": cannot allocate " << bytes << " bytes of " << (std::strcmp(what, "cudaHostAlloc") == 0 ? "pinned host" : "device")
                       << " memory");
  }
  PREFIXD_CUDA_CHECK(err);
}

// The launch inputs the prefix and decode kernels share: one layer's K/V (k, v already offset to
// the layer and the view's first KV head), the pool's token layout, the queries, the head counts
// and the scale (sm_scale · log2(e)).
template <typename AttentionParams>
void SetAttentionInputs(AttentionParams* p, const void* k, const void* v, const KvPoolShape& shape, const void* q,
                        int num_qo_heads, int num_kv_heads, int head_dim, float sm_scale_log2) {
  p->k = k;
  p->v = v;
  p->token_stride = shape.TokenStride();
  p->page_size = shape.page_size;
  p->q = q;
  p->num_qo_heads = num_qo_heads;
  p->num_kv_heads = num_kv_heads;
  p->head_dim = head_dim;
  p->dtype = shape.dtype;
  p->sm_scale_log2 = sm_scale_log2;
}

// The step's inputs shared by every kernel of RunCascadeParts and the fused kernel: the layer's K/V
// (from the view's first KV head), the pool's token layout, the queries, the plan's head counts and
// the scale (sm_scale · log2(e)).
template <typename AttentionParams>
void SetCascadeInputs(AttentionParams* p, const CascadePlan& h, const CascadeArgs& args) {
  const KvPoolShape& shape = args.kv.shape;
  const int64_t layer_bytes =
      (shape.LayerStride() * args.layer + int64_t(args.kv_head_offset) * h.head_dim) * DTypeBytes(shape.dtype);
  SetAttentionInputs(p, static_cast<const char*>(args.kv.k) + layer_bytes,
                     static_cast<const char*>(args.kv.v) + layer_bytes, shape, args.q, h.num_qo_heads, h.num_kv_heads,
                     h.head_dim, ResolveSmScale(args.sm_scale, h.head_dim) * kLog2e);
}

constexpr int64_t kMaxEnvItems = int64_t(1) << 20;  // PREFIXD_*_TARGET_ITEMS

// PREFIXD_DECODE_ITEM_PAGES's values (CudaBackend::decode_item_pages_).
constexpr const char* kItemPagesNames[] = {"off", "lookup", "next-wave"};

// PREFIXD_DECODE_PIPELINE's values, in DecodePipeline's order (read and described by one table).
constexpr const char* kPipelineNames[] = {"auto", "deep", "shallow", "narrow", "warp", "single"};
static_assert(sizeof(kPipelineNames) / sizeof(kPipelineNames[0]) == int(DecodePipeline::kSingle) + 1,
              "one name per DecodePipeline");

}  // namespace

CudaBackend::CudaBackend(const BackendOptions& options) : device_(options.device), limits_(options.limits) {
  PREFIXD_CHECK_ARG(CudaAvailable(), "MakeCudaBackend: no usable CUDA GPU on this machine");
  PREFIXD_CHECK_ARG(device_ >= 0 && device_ < CudaDeviceCount(),
                    "MakeCudaBackend: device " << device_ << " does not exist (" << CudaDeviceCount() << " GPUs)");
  const WorkspaceLimits& l = limits_;
  PREFIXD_CHECK_ARG(l.max_requests > 0 && l.max_qo_heads > 0 && l.max_head_dim > 0 && l.max_slots > 0 &&
                        l.max_plan_ints > 0 && l.max_state_floats > 0,
                    "MakeCudaBackend: workspace limits must be positive");
  constexpr DecodeKernel kDecodeKernels[] = {DecodeKernel::kAuto, DecodeKernel::kCudaCores, DecodeKernel::kTensorCores};
  decode_kernel_ = kDecodeKernels[EnvChoice("PREFIXD_DECODE_KERNEL", {"auto", "simt", "mma"}, 0)];
  const int warps_log2 = EnvChoice("PREFIXD_DECODE_WARPS", {"1", "2", "4", "8"}, -1);
  decode_mma_warps_ = warps_log2 < 0 ? 0 : 1 << warps_log2;  // 0: by the item count
  decode_pipeline_ = static_cast<DecodePipeline>(EnvChoice(
      "PREFIXD_DECODE_PIPELINE",
      {kPipelineNames[0], kPipelineNames[1], kPipelineNames[2], kPipelineNames[3], kPipelineNames[4], kPipelineNames[5]},
      0));
  const int warp_rounds_log2 = EnvChoice("PREFIXD_DECODE_WARP_ROUNDS", {"1", "2", "4"}, -1);
  if (warp_rounds_log2 >= 0) decode_warp_rounds_ = 1 << warp_rounds_log2;
  decode_warp_min_items_ = int(EnvInteger("PREFIXD_DECODE_WARP_MIN_ITEMS", 0, kMaxEnvItems, decode_warp_min_items_));
  decode_pdl_ = EnvFlag("PREFIXD_DECODE_PDL", decode_pdl_);
  merge_pdl_ = EnvFlag("PREFIXD_MERGE_PDL", merge_pdl_);
  merge_rows_per_warp_ = EnvChoice("PREFIXD_MERGE_ROWS_PER_WARP", {"auto", "1", "2"}, 0);
  merge_run_table_ = EnvChoice("PREFIXD_MERGE_RUN_LOOKUP", {"auto", "table"}, 0) == 1;
  merge_skip_empty_ = EnvFlag("PREFIXD_MERGE_SKIP_EMPTY", merge_skip_empty_);
  // PREFIXD_EARLY_DECODE_PERCENT: unset, empty or "auto", EarlyDecodeAutoShare per plan (where the
  // owner allows the concurrent modes, BackendOptions::concurrent_prefix_decode: the engine's
  // ranks run the decode part apart from the prefix part, where an early grid gains nothing); n,
  // n% of every plan's finished suffix tokens; 0, never.
  const char* early_env = std::getenv("PREFIXD_EARLY_DECODE_PERCENT");
  if (early_env != nullptr && *early_env != '\0' && std::strcmp(early_env, "auto") != 0) {
    try {
      early_decode_percent_ = int(EnvInteger("PREFIXD_EARLY_DECODE_PERCENT", 0, 100, 0));
    } catch (const Error&) {  // the same check, its message naming the word too
      PREFIXD_CHECK_ARG(false, "PREFIXD_EARLY_DECODE_PERCENT must be auto or an integer in [0, 100], got '"
                                   << early_env << "'");
    }
  } else {
    early_decode_percent_ = options.concurrent_prefix_decode ? kEarlyDecodeAuto : 0;
  }
  early_decode_tma_ = EnvFlag("PREFIXD_EARLY_DECODE_TMA", early_decode_tma_);
  early_rule_.min_prefix_us = double(EnvInteger("PREFIXD_EARLY_DECODE_MIN_PREFIX_US", 0, 1000000,
                                                int64_t(early_rule_.min_prefix_us)));
  sequential_tma_ = EnvFlag("PREFIXD_SEQUENTIAL_TMA", sequential_tma_);
  decode_evict_first_ = EnvFlag("PREFIXD_DECODE_EVICT_FIRST", decode_evict_first_);
  decode_prefetch_ = EnvFlag("PREFIXD_DECODE_PREFETCH", decode_prefetch_);
  decode_next_wave_ = EnvFlag("PREFIXD_DECODE_NEXT_WAVE", decode_next_wave_);
  decode_item_pages_ = EnvChoice("PREFIXD_DECODE_ITEM_PAGES",
                                 {kItemPagesNames[0], kItemPagesNames[1], kItemPagesNames[2]}, decode_item_pages_);
  upload_batch_enabled_ = EnvFlag("PREFIXD_UPLOAD_BATCH", upload_batch_enabled_);
  uploads_.set_programmatic(cuda::StepPdlEnabled());
  decode_stream_items_ = EnvFlag("PREFIXD_DECODE_STREAM", decode_stream_items_);
  decode_persistent_ = EnvFlag("PREFIXD_DECODE_PERSISTENT", decode_persistent_);
  decode_tma_ = EnvFlag("PREFIXD_DECODE_TMA", decode_tma_);
  decode_tma_diag_ = int(EnvInteger("PREFIXD_DECODE_TMA_DIAG", 0, 2, decode_tma_diag_));
  decode_tma_swap_ab_ = EnvFlag("PREFIXD_DECODE_TMA_SWAP_AB", decode_tma_swap_ab_);
  // The warps that will run, so that the planner's model counts the same rounds as the launcher.
  decode_tma_warps_ = TmaDecodeWarps(decode_tma_swap_ab_, decode_mma_warps_,
                                     EnvChoice("PREFIXD_DECODE_TMA_WARPS", {"8", "12"}, 1) == 1 ? 12 : 8);
  decode_tma_items_per_cta_ =
      int(EnvInteger("PREFIXD_DECODE_TMA_ITEMS_PER_CTA", 0, 12, decode_tma_items_per_cta_));
  // PREFIXD_CONCURRENT_DECODE_TMA=force: with a forced k (PREFIXD_CONCURRENT_DECODE_SMS=k), every
  // plan's decode as the persistent TMA decode too (where the launch can take it), so that any k
  // can be timed with it (the planner's own candidates for it start at 20 of 132 SMs).
  const int concurrent_tma = EnvChoice("PREFIXD_CONCURRENT_DECODE_TMA", {"0", "1", "force"}, concurrent_tma_ ? 1 : 0);
  concurrent_tma_ = concurrent_tma != 0;
  concurrent_tma_forced_ = concurrent_tma == 2;
  prefix_settings_ = PrefixKernelSettings::FromEnvironment();
  // The chain is three programmatic launches (RunCascadeParts): nothing to chain with any of them
  // off.
  concurrent_chain_ = static_cast<ConcurrentChain>(
      EnvChoice("PREFIXD_CONCURRENT_CHAIN", {"0", "1", "all"}, static_cast<int>(concurrent_chain_)));
  if (!decode_pdl_ || !merge_pdl_ || !prefix_settings_.trigger_dependents) concurrent_chain_ = ConcurrentChain::kOff;
  concurrent_states16_ = EnvFlag("PREFIXD_CONCURRENT_STATES16", concurrent_states16_);
  fused_ = EnvFlag("PREFIXD_FUSED", fused_);
  fused_diag_ = int(EnvInteger("PREFIXD_FUSED_DIAG", 0, 2, fused_diag_));
  fused_merge_kernel_ = EnvChoice("PREFIXD_FUSED_MERGE", {"inside", "kernel"}, fused_merge_kernel_ ? 1 : 0) == 1;
  decode_warmup_ = EnvFlag("PREFIXD_DECODE_WARMUP", decode_warmup_);
  decode_warmup_bytes_ = EnvInteger("PREFIXD_DECODE_WARMUP_MIB", 0, 1024, decode_warmup_bytes_ >> 20) << 20;
  fused_l2_ahead_ = int(EnvInteger("PREFIXD_FUSED_L2_AHEAD", 0, 8, fused_l2_ahead_));
  PREFIXD_CUDA_CHECK(cudaSetDevice(device_));
  cudaDeviceProp prop{};
  PREFIXD_CUDA_CHECK(cudaGetDeviceProperties(&prop, device_));
  num_sms_ = prop.multiProcessorCount;
  l2_bytes_ = prop.l2CacheSize;
  // PREFIXD_CONCURRENT_DECODE_SMS: unset, empty (as every switch here) or "auto", the planner's
  // choice per plan (below); k, every plan concurrent on k SMs; 0, never.
  const char* concurrent_env = std::getenv("PREFIXD_CONCURRENT_DECODE_SMS");
  const bool concurrent_auto =
      concurrent_env == nullptr || *concurrent_env == '\0' || std::strcmp(concurrent_env, "auto") == 0;
  if (!concurrent_auto) {
    try {
      concurrent_decode_sms_ = int(EnvInteger("PREFIXD_CONCURRENT_DECODE_SMS", 0, num_sms_ - 1, 0));
    } catch (const Error&) {  // the same check, its message naming the word too
      PREFIXD_CHECK_ARG(false, "PREFIXD_CONCURRENT_DECODE_SMS must be auto or an integer in [0, "
                                   << num_sms_ - 1 << "], got '" << concurrent_env << "'");
    }
  }
  // PREFIXD_CONCURRENT_TMA_CANDIDATES=k1,k2,...: the TMA decode's candidates on this device instead
  // of ConcurrentTmaDecodeCandidates, so that one process can time the planner with another set.
  // Checked on every backend (a bad list is refused even where the mode is off), used below.
  const std::vector<int> built_in_tma = ConcurrentTmaDecodeCandidates(num_sms_);
  const std::vector<int64_t> tma_candidates =
      EnvIntegerList("PREFIXD_CONCURRENT_TMA_CANDIDATES", 1, num_sms_ - 1, {built_in_tma.begin(), built_in_tma.end()});
  // The planner's candidates (PlanOptions::concurrent_candidates, ConcurrentDecodeCandidates; the
  // TMA decode's own, above), where the prefix runs on the persistent sm_90a kernel (one CTA per
  // SM, the grid the mode caps), the fused kernel is off and the owner allows it
  // (BackendOptions::concurrent_prefix_decode).
  if (concurrent_auto && options.concurrent_prefix_decode && !fused_ &&
      PrefixAttentionCtasPerSm(128, DType::kFloat16, prefix_settings_.kernel) == 1 && num_sms_ >= 8) {
    concurrent_candidates_ = ConcurrentDecodeCandidates(num_sms_);
    concurrent_tma_candidates_.assign(tma_candidates.begin(), tma_candidates.end());
  }
  std::ostringstream d;
  d << "cuda:" << device_ << " " << prop.name << " (" << num_sms_ << " SMs, sm_" << prop.major << prop.minor << ")";
  if (decode_kernel_ != DecodeKernel::kAuto)
    d << " [decode kernel forced: " << (decode_kernel_ == DecodeKernel::kCudaCores ? "simt" : "mma") << "]";
  if (decode_mma_warps_ != 0) d << " [decode warps forced: " << decode_mma_warps_ << "]";
  if (decode_pipeline_ != DecodePipeline::kByItemLength)
    d << " [decode pipeline forced: " << kPipelineNames[int(decode_pipeline_)] << "]";
  if (decode_pipeline_ == DecodePipeline::kWarp) d << " [warp CTA rounds: " << decode_warp_rounds_ << "]";
  if (decode_warp_min_items_ != kDefaultWarpMinItems)
    d << " [warp CTA rule: " << (decode_warp_min_items_ > 0 ? "from " + Items(decode_warp_min_items_) : "off") << "]";
  if (!decode_pdl_) d << " [decode PDL off]";
  if (!merge_pdl_) d << " [merge PDL off]";
  if (merge_rows_per_warp_ != 0) d << " [merge rows per warp forced: " << merge_rows_per_warp_ << "]";
  if (merge_run_table_) d << " [merge run bounds always loaded]";
  if (!merge_skip_empty_) d << " [merge loads empty states]";
  if (!sequential_tma_) d << " [sequential TMA decode off]";
  if (early_decode_percent_ > 0)
    d << " [early decode: " << early_decode_percent_ << "% of the finished suffixes"
      << (early_decode_tma_ ? ", the TMA decode where it applies]" : "]");
  if (early_decode_percent_ == kEarlyDecodeAuto && !early_decode_tma_) d << " [early decode off: PREFIXD_EARLY_DECODE_TMA=0]";
  if (!decode_evict_first_) d << " [decode evict-first off]";
  if (!decode_prefetch_) d << " [decode prefetch off]";
  if (!decode_next_wave_) d << " [decode next-wave prefetch off]";
  if (decode_item_pages_ != 0) d << " [decode item pages: " << kItemPagesNames[decode_item_pages_] << "]";
  if (decode_stream_items_) d << " [decode streaming]";
  if (decode_persistent_) d << " [decode persistent]";
  if (decode_tma_) d << " [decode TMA]";
  if (decode_tma_diag_ != 0) d << " [decode TMA diagnostics " << decode_tma_diag_ << ": WRONG results]";
  if (decode_tma_ && !decode_tma_swap_ab_) d << " [decode TMA tiles: heads as M]";
  if (decode_tma_warps_ != 12) d << " [decode TMA: " << decode_tma_warps_ << " warps per CTA]";
  if (decode_tma_items_per_cta_ != 0) d << " [decode TMA: " << Items(decode_tma_items_per_cta_) << " per CTA]";
  if (!decode_warmup_) d << " [decode warm-up off]";
  if (decode_warmup_ && decode_warmup_bytes_ != kDefaultDecodeWarmupBytes)
    d << " [decode warm-up with " << (decode_warmup_bytes_ >> 20) << " MiB of K/V]";
  if (fused_) {
    d << " [fused cascade" << (FusedCascadeReady() ? "" : ": not on this device/build");
    if (fused_l2_ahead_ != 0) d << ", L2 prefetch " << fused_l2_ahead_ << " items ahead";
    if (fused_diag_ != 0) d << ", DIAGNOSTIC " << fused_diag_ << " (wrong results)";
    if (fused_merge_kernel_) d << ", merge kernel";
    d << "]";
  }
  if (concurrent_decode_sms_ > 0)
    d << " [concurrent prefix/decode: prefix grid <= " << num_sms_ - concurrent_decode_sms_ << " CTAs, unfused merge"
      << (concurrent_tma_forced_ ? ", the persistent TMA decode" : "") << "]";
  if (!concurrent_candidates_.empty()) {
    d << " [concurrent prefix/decode where the planner chooses it: decode SMs";
    for (const int k : concurrent_candidates_) d << " " << k;
    if (concurrent_tma_) {
      d << ", the persistent TMA decode where it fits, or on";
      for (const int k : concurrent_tma_candidates_) d << " " << k;
    }
    d << "]";
  }
  if (concurrent_decode_sms_ > 0 || !concurrent_candidates_.empty()) {
    if (concurrent_chain_ == ConcurrentChain::kOff) d << " [concurrent steps on two streams, not chained]";
    if (concurrent_chain_ == ConcurrentChain::kTmaDecode) d << " [concurrent steps chained only with the TMA decode]";
    if (!concurrent_states16_) d << " [concurrent TMA-decode steps' states in fp32]";
  }
  if (!prefix_settings_.trigger_dependents) d << " [prefix PDL trigger off]";
  if (prefix_settings_.kv_l2_hint != PrefixKvL2Hint::kPlan) {
    constexpr const char* kHintNames[] = {"plan", "none", "evict-first", "evict-last"};
    d << " [prefix K/V L2 hint forced: " << kHintNames[int(prefix_settings_.kv_l2_hint)] << "]";
  }
  if (prefix_settings_.consumer_wgs != 0)
    d << " [prefix CTA width forced: " << prefix_settings_.consumer_wgs << " consumer warpgroup(s)]";
  description_ = d.str();
  // The planner's settings (PREFIXD_CHOOSE_LAYOUT, PREFIXD_MIN_PREFIX_CHUNK, ...), read once like
  // every other switch: a malformed one is refused when the backend is made, and a step's plan
  // reads no environment variable on the host's planning path.
  default_plan_options_ = ReadPlanOptions();

  // A throwing constructor runs no destructor: free what was taken so far before rethrowing.
  try {
    if (concurrent_decode_sms_ == 0 && concurrent_candidates_.empty()) {
      PREFIXD_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    } else {
      // Concurrent prefix/decode: when both grids are pending, the prefix CTAs (main stream, highest
      // priority) are dispatched before the decode CTAs (second stream, lowest), so that the SMs
      // left free by the capped prefix grid are the ones the decode kernel gets.
      int least = 0, greatest = 0;
      PREFIXD_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
      PREFIXD_CUDA_CHECK(cudaStreamCreateWithPriority(&stream_, cudaStreamNonBlocking, greatest));
      PREFIXD_CUDA_CHECK(cudaStreamCreateWithPriority(&decode_stream_, cudaStreamNonBlocking, least));
      PREFIXD_CUDA_CHECK(cudaEventCreateWithFlags(&fork_, cudaEventDisableTiming));
      PREFIXD_CUDA_CHECK(cudaEventCreateWithFlags(&join_, cudaEventDisableTiming));
    }
    AllocStaged(&plan_buffer_, l.max_plan_ints);
    AllocStaged(&prefix_plan_buffer_, l.max_plan_ints);
    const size_t v_bytes = size_t(l.max_state_floats) * sizeof(float);
    const size_t s_bytes = size_t(l.max_slots) * size_t(l.max_qo_heads) * sizeof(float);
    CheckAlloc(cudaMalloc(&partial_v_, v_bytes), v_bytes, "cudaMalloc");
    CheckAlloc(cudaMalloc(&partial_s_, s_bytes), s_bytes, "cudaMalloc");
    if (fused_) {
      const size_t c_bytes = size_t(l.max_requests) * size_t(l.max_qo_heads) * sizeof(int32_t);
      CheckAlloc(cudaMalloc(&fused_counters_, c_bytes), c_bytes, "cudaMalloc");
      PREFIXD_CUDA_CHECK(cudaMemsetAsync(fused_counters_, 0, c_bytes, stream_));
      PREFIXD_CUDA_CHECK(cudaStreamSynchronize(stream_));  // zero before any stream may launch the kernel
    }
  } catch (...) {
    Release();
    throw;
  }
}

CudaBackend::~CudaBackend() { Release(); }

void CudaBackend::Release() noexcept {
  // Never throws: errors while tearing down (e.g. after a device fault) are ignored.
  cudaSetDevice(device_);
  if (stream_) cudaStreamSynchronize(stream_);
  if (decode_stream_) cudaStreamSynchronize(decode_stream_);
  FreeStaged(&plan_buffer_);
  FreeStaged(&prefix_plan_buffer_);
  if (partial_v_) cudaFree(partial_v_);
  if (partial_s_) cudaFree(partial_s_);
  if (fused_counters_) cudaFree(fused_counters_);
  fused_counters_ = nullptr;
  if (fork_) cudaEventDestroy(fork_);
  if (join_) cudaEventDestroy(join_);
  if (timing_start_) cudaEventDestroy(timing_start_);
  if (timing_stop_) cudaEventDestroy(timing_stop_);
  if (decode_stream_) cudaStreamDestroy(decode_stream_);
  if (stream_) cudaStreamDestroy(stream_);
  partial_v_ = partial_s_ = nullptr;
  fork_ = join_ = nullptr;
  decode_stream_ = stream_ = nullptr;
}

void CudaBackend::AllocStaged(StagedBuffer* b, int64_t ints) {
  const size_t bytes = size_t(ints) * sizeof(int32_t);
  CheckAlloc(cudaMalloc(&b->device, bytes), bytes, "cudaMalloc");
  CheckAlloc(cudaHostAlloc(&b->host, bytes, cudaHostAllocDefault), bytes, "cudaHostAlloc");
  PREFIXD_CUDA_CHECK(cudaEventCreateWithFlags(&b->copied, cudaEventDisableTiming));
  b->capacity = ints;
}

void CudaBackend::FreeStaged(StagedBuffer* b) noexcept {
  if (b->copied) cudaEventDestroy(b->copied);
  if (b->host) cudaFreeHost(b->host);
  if (b->device) cudaFree(b->device);
  *b = StagedBuffer{};
}

int32_t* CudaBackend::BeginUpload(StagedBuffer* b) {
  // A copy of this buffer still in the open upload batch reads the staging memory: launch it.
  if (std::find(uploads_copied_.begin(), uploads_copied_.end(), b->copied) != uploads_copied_.end()) FlushUploads();
  // The previous upload's copy may still be queued behind earlier work: the staging buffer is
  // free only once it has run. (A no-op wait when nothing was uploaded yet.)
  PREFIXD_CUDA_CHECK(cudaEventSynchronize(b->copied));
  return b->host;
}

void CudaBackend::EndUpload(StagedBuffer* b, int64_t ints) {
  EnqueueUpload(b->device, b->host, size_t(ints) * sizeof(int32_t));
  if (batching_ && !uploads_.empty()) uploads_copied_.push_back(b->copied);  // recorded at the launch
  else PREFIXD_CUDA_CHECK(cudaEventRecord(b->copied, stream_));
}

void CudaBackend::EnqueueUpload(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  if (batching_ && upload_batch_enabled_) {
    if (uploads_.Add(dst, src, bytes)) return;
    if (uploads_.full()) {
      FlushUploads();
      if (uploads_.Add(dst, src, bytes)) return;
    }
  }
  FlushUploads();  // what is queued goes first: copies stay in call order
  PREFIXD_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_));
}

void CudaBackend::FlushUploads() {
  if (!uploads_.empty()) {
    PREFIXD_CUDA_CHECK(cudaSetDevice(device_));
    uploads_.Launch(stream_);
  }
  for (cudaEvent_t e : uploads_copied_) PREFIXD_CUDA_CHECK(cudaEventRecord(e, stream_));
  uploads_copied_.clear();
}

void CudaBackend::BeginUploadBatch() {
  FlushUploads();
  batching_ = true;
}

void CudaBackend::EndUploadBatch() {
  FlushUploads();
  batching_ = false;
}

PlanOptions CudaBackend::ReadPlanOptions() const {
  PlanOptions o;
  // Long suffixes are split until the decode items fill two CTAs per SM; long prefixes until the
  // prefix kernel's items fill one wave of it (PrefixAttentionCtasPerSm: 2 for mma.sync, 1 for the
  // persistent wgmma kernel, whose per-item fixed cost makes fewer, longer items cheaper and
  // which then also writes, and the decode kernel reads, fewer prefix-chunk states).
  // PREFIXD_PREFIX_TARGET_ITEMS=n overrides the prefix target (for comparisons).
  o.target_items = 2 * num_sms_;
  o.prefix_target_items = num_sms_ * PrefixAttentionCtasPerSm(128, DType::kFloat16, prefix_settings_.kernel);
  // Forced concurrent prefix/decode: the prefix grid has SMs − k CTAs (one wave of items for them),
  // and the decode kernel cannot finish requests (cuda_backend.h). The planner's candidates
  // (auto) get the same options from PlanCascade where it chooses one.
  if (concurrent_decode_sms_ > 0) {
    o.prefix_target_items =
        (num_sms_ - concurrent_decode_sms_) * PrefixAttentionCtasPerSm(128, DType::kFloat16, prefix_settings_.kernel);
    o.fuse_merge = false;
  }
  o.prefix_target_items = int(EnvInteger("PREFIXD_PREFIX_TARGET_ITEMS", 0, kMaxEnvItems, o.prefix_target_items));
  // The persistent sm_90a prefix kernel runs one CTA per SM: plans whose prefix items leave some of
  // them idle are balanced over all (PlanOptions::balance_prefix_ctas, prefix_balance.h), or with
  // concurrent decode over the SMs it leaves, there by the stream over the heads too
  // (PlanOptions::balance_stream: 64 pairs on 112 CTAs). PREFIXD_PREFIX_BALANCE=0 turns it off;
  // PREFIXD_PREFIX_BALANCE_STREAM=0|1 the stream (default: with concurrent decode only);
  // PREFIXD_PREFIX_BALANCE_OVERHEAD=n sets an item's fixed cost to n hundredths of a K/V tile
  // instead of the head_dim's measured one (for comparisons).
  const bool persistent_prefix = PrefixAttentionCtasPerSm(128, DType::kFloat16, prefix_settings_.kernel) == 1;
  const bool balance = EnvFlag("PREFIXD_PREFIX_BALANCE", true);  // read (and checked) on every kernel
  o.balance_prefix_ctas = persistent_prefix && balance ? num_sms_ - concurrent_decode_sms_ : 0;
  o.balance_stream = EnvFlag("PREFIXD_PREFIX_BALANCE_STREAM", concurrent_decode_sms_ > 0);
  // PREFIXD_PREFIX_STREAM_NARROW=0|1: the stream's leftover CTAs as narrow slots
  // (PlanOptions::balance_stream_narrow).
  o.balance_stream_narrow = EnvFlag("PREFIXD_PREFIX_STREAM_NARROW", true);
  // Forced concurrent: every plan for it. Otherwise the planner's candidates (with choose_layout).
  o.concurrent_decode_sms = concurrent_decode_sms_;
  if (concurrent_decode_sms_ == 0) o.concurrent_candidates = concurrent_candidates_;
  o.concurrent_decode_tma = concurrent_decode_sms_ > 0 && concurrent_tma_forced_;
  o.concurrent_tma_candidate = concurrent_tma_ && !o.concurrent_candidates.empty();
  if (o.concurrent_tma_candidate) o.concurrent_tma_candidates = concurrent_tma_candidates_;
  // The model's TMA decode rounds are fitted for 12 warps per CTA (CostModelParams::H200); with
  // fewer, its rounds for those.
  if (o.concurrent_tma_candidate && decode_tma_warps_ != 12) {
    auto model = std::make_shared<CostModelParams>(CostModelParams::H200());
    model->SetTmaDecodeWarps(decode_tma_warps_);
    o.cost_model = std::move(model);
  }
  const int64_t overhead = EnvInteger("PREFIXD_PREFIX_BALANCE_OVERHEAD", -1, 10000, -1);
  if (overhead >= 0) o.balance_item_overhead_tiles = double(overhead) / 100.0;
  // PREFIXD_PREFIX_BALANCE_MIN_GAIN=n: the smallest predicted gain that balances, in hundredths of a
  // percent (PlanOptions::balance_min_gain, which must stay below 1; for comparisons).
  const int64_t min_gain = EnvInteger("PREFIXD_PREFIX_BALANCE_MIN_GAIN", -1, 9999, -1);
  if (min_gain >= 0) o.balance_min_gain = double(min_gain) / 10000.0;
  // PREFIXD_DECODE_TARGET_ITEMS=n: the decode items' target instead (suffixes split until their
  // items reach it; for comparisons).
  o.target_items = int(EnvInteger("PREFIXD_DECODE_TARGET_ITEMS", 1, kMaxEnvItems, o.target_items));
  // Layout choice by the cost model (PlanOptions::choose_layout): on by default (not with the forced
  // concurrent mode, whose every plan is made for it; the auto mode's candidates are scored by it).
  // With the built-in H200 parameters (fitted in session 8), the plain margin and the tiny-prefix rule (session 18): within 5% of the faster
  // layout on all 120 grid shapes and within 1.1% on 72 other shapes (session 18 run 4, H200);
  // always-cascade is up to 1.5× slower than plain decode at P = 128 (bench/NOTES-planner.md). The
  // parameters are an H200's. PREFIXD_CHOOSE_LAYOUT=0 turns it off.
  o.choose_layout = EnvFlag("PREFIXD_CHOOSE_LAYOUT", true) && concurrent_decode_sms_ == 0;
  // The prefix kernel's M tile is the same for every head_dim it supports (checked in LoadPlan).
  o.prefix_tile_rows = PrefixAttentionTileRows(128);
  // PREFIXD_PREFIX_TILE_ROWS=n: prefix items of at most n rows instead (64: the narrow CTA, beside
  // which decode CTAs run, on every shape; for comparisons).
  o.prefix_tile_rows = int(EnvInteger("PREFIXD_PREFIX_TILE_ROWS", 1, 1 << 16, o.prefix_tile_rows));
  // With the layout choice, the planner also tries the narrow sm_90a CTA's 64-row items where groups
  // have more rows (PlanOptions::narrow_tile_rows); PREFIXD_NARROW_TILE_ROWS=0 turns that off.
  o.narrow_tile_rows = int(EnvInteger("PREFIXD_NARROW_TILE_ROWS", 0, 1 << 16,
                                      PrefixAttentionNarrowTileRows(prefix_settings_)));
  o.prefix_chunk_align = kPrefixChunkAlign;
  // PREFIXD_MIN_PREFIX_CHUNK=n: the shortest prefix chunk instead (a multiple of the chunk
  // alignment; for comparisons of short prefixes, where 512 leaves few items).
  o.min_prefix_chunk = int(EnvInteger("PREFIXD_MIN_PREFIX_CHUNK", 1, 1 << 20, 512));
  // With the layout choice, the planner also tries chunks down to 128 tokens where 512 leaves a
  // short prefix with few items (PlanOptions::fine_prefix_chunk); PREFIXD_FINE_PREFIX_CHUNK=n sets
  // it (0: off).
  o.fine_prefix_chunk = int(EnvInteger("PREFIXD_FINE_PREFIX_CHUNK", 0, 1 << 20, 128));
  // Near-ties at prefixes of one K/V tile go to plain decode (PlanOptions::tiny_prefix_tokens);
  // PREFIXD_TINY_PREFIX_TOKENS=n sets the bound (0: off).
  o.tiny_prefix_tokens = int(EnvInteger("PREFIXD_TINY_PREFIX_TOKENS", 0, 1 << 20, o.tiny_prefix_tokens));
  o.decode_chunk_align = 16;
  o.min_decode_chunk = 256;
  return o;
}

void* CudaBackend::Alloc(size_t bytes) {
  if (bytes == 0) return nullptr;
  PREFIXD_CUDA_CHECK(cudaSetDevice(device_));
  void* ptr = nullptr;
  CheckAlloc(cudaMalloc(&ptr, bytes), bytes, "cudaMalloc");
  return ptr;
}

void CudaBackend::Free(void* ptr) {
  if (ptr == nullptr) return;
  PREFIXD_CUDA_CHECK(cudaSetDevice(device_));
  PREFIXD_CUDA_CHECK(cudaFree(ptr));
}

void CudaBackend::CopyToDevice(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  PREFIXD_CHECK_ARG(dst != nullptr && src != nullptr, "CopyToDevice: null pointer");
  FlushUploads();
  PREFIXD_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_));
  PREFIXD_CUDA_CHECK(cudaStreamSynchronize(stream_));  // src may be freed as soon as we return
}

void CudaBackend::CopyToDeviceAsync(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  PREFIXD_CHECK_ARG(dst != nullptr && src != nullptr, "CopyToDeviceAsync: null pointer");
  EnqueueUpload(dst, src, bytes);
}

void CudaBackend::CopyToHost(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  PREFIXD_CHECK_ARG(dst != nullptr && src != nullptr, "CopyToHost: null pointer");
  FlushUploads();
  PREFIXD_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream_));
  PREFIXD_CUDA_CHECK(cudaStreamSynchronize(stream_));  // the caller reads dst next
}

void CudaBackend::CopyDeviceToDevice(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  PREFIXD_CHECK_ARG(dst != nullptr && src != nullptr, "CopyDeviceToDevice: null pointer");
  FlushUploads();
  PREFIXD_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_));
}

void CudaBackend::Fill(void* dst, uint8_t byte, size_t bytes) {
  if (bytes == 0) return;
  PREFIXD_CHECK_ARG(dst != nullptr, "Fill: null pointer");
  FlushUploads();
  PREFIXD_CUDA_CHECK(cudaMemsetAsync(dst, byte, bytes, stream_));
}

void CudaBackend::Synchronize() {
  FlushUploads();
  PREFIXD_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

double CudaBackend::TimeUs(const std::function<void()>& enqueue) {
  PREFIXD_CUDA_CHECK(cudaSetDevice(device_));
  if (timing_start_ == nullptr) {
    PREFIXD_CUDA_CHECK(cudaEventCreate(&timing_start_));
    PREFIXD_CUDA_CHECK(cudaEventCreate(&timing_stop_));
  }
  FlushUploads();  // queued uploads are earlier work, not the timed one's
  PREFIXD_CUDA_CHECK(cudaEventRecord(timing_start_, stream_));
  enqueue();
  FlushUploads();
  PREFIXD_CUDA_CHECK(cudaEventRecord(timing_stop_, stream_));
  PREFIXD_CUDA_CHECK(cudaEventSynchronize(timing_stop_));
  float ms = 0.f;
  PREFIXD_CUDA_CHECK(cudaEventElapsedTime(&ms, timing_start_, timing_stop_));
  return double(ms) * 1e3;
}

void CudaBackend::LoadPlan(const CascadePlan& given) {
  // All checks first: a plan that fails leaves the previous one loaded.
  given.Validate();
  // Concurrent prefix/decode: the decode kernel runs beside the prefix kernel, so it cannot finish
  // requests from their prefix states; the merge step finishes every request instead. So does the
  // fused kernel with PREFIXD_FUSED_MERGE=kernel.
  // k of this plan's concurrent step: the forced mode's, or the plan's where the backend has the
  // mode's streams (0: the kernels one after the other).
  const int concurrent_k = concurrent_decode_sms_ > 0 ? concurrent_decode_sms_
                           : decode_stream_ != nullptr ? std::min(given.concurrent_decode_sms, num_sms_ - 1)
                                                       : 0;
  CascadePlan unfused;
  const bool unfuse = (concurrent_k > 0 || (fused_ && fused_merge_kernel_)) &&
                      int64_t(given.merge_requests.size()) < given.num_requests;
  if (unfuse) {
    unfused = given;
    for (DecodeWorkItem& it : unfused.decode_items) it.finish = 0;
    unfused.merge_requests.resize(size_t(given.num_requests));
    for (int32_t r = 0; r < given.num_requests; ++r) unfused.merge_requests[size_t(r)] = r;
  }
  // Early decode (PREFIXD_EARLY_DECODE_PERCENT, early_decode.h): a share of the finished requests'
  // suffixes on the SMs the prefix grid leaves idle, where it leaves some (the sm_90a kernel's
  // persistent grid), outside the concurrent and fused modes.
  const CascadePlan& base = unfuse ? unfused : given;
  const int prefix_ctas = sm90a::PersistentGridCtas(int(base.prefix_items.size()),
                                                    base.prefix_balanced_ctas, 0, prefix_settings_, num_sms_);
  CascadePlan early_plan;
  EarlyDecodeSplit early;
  if (early_decode_percent_ != 0 && concurrent_k == 0 && !fused_ && !base.prefix_items.empty() && prefix_ctas < num_sms_) {
    early = SplitEarlyDecode(base, EarlyDecodeShare(base, num_sms_ - prefix_ctas));
    if (early.num_early > 0) {
      early_plan = base;
      early_plan.decode_items = early.items;
    }
  }
  const CascadePlan& plan = early.num_early > 0 ? early_plan : base;
  // Prefix items may have more rows than the kernel's M tile (PrefixAttentionTileRows depends on
  // head_dim, DefaultPlanOptions does not know it): the kernel walks such an item tile by tile.
  const int64_t state_floats = int64_t(plan.num_slots()) * plan.num_qo_heads * plan.head_dim;
  PREFIXD_CHECK_ARG(state_floats <= limits_.max_state_floats,
                    "LoadPlan: plan needs " << state_floats << " partial-state floats, the workspace holds "
                                            << limits_.max_state_floats);
  const std::vector<int32_t> flat = plan.Serialize();
  CheckPlanFitsWorkspace(plan, flat.size(), limits_);

  const int64_t b = plan.num_requests, np = int64_t(plan.prefix_items.size()), nd = int64_t(plan.decode_items.size()),
                ng = int64_t(plan.groups.size()), nnz = int64_t(plan.suffix.indices.size()),
                nm = int64_t(plan.merge_requests.size());
  const int64_t o_prefix = kHeaderInts, o_decode = o_prefix + np * kPrefixItemInts,
                o_state = o_decode + nd * kDecodeItemInts, o_request_group = o_state + b + 1,
                o_groups = o_request_group + b, o_group_chunks = o_groups + ng * kGroupInts,
                o_suffix_indptr = o_group_chunks + ng, o_suffix_indices = o_suffix_indptr + b + 1,
                o_merge = o_suffix_indices + nnz + b, o_end = o_merge + nm;
  PREFIXD_CHECK_INTERNAL(int64_t(flat.size()) == o_end,
                         "plan.cc's serialised layout changed: " << flat.size() << " ints, expected " << o_end);
  // Fused cascade: the per-CTA work lists, when the fused kernel can run this plan (cuda_backend.h).
  bool fused = fused_ && concurrent_k == 0 && FusedCascadeReady() &&
               (plan.head_dim == 64 || plan.head_dim == 128) &&
               FusedCascadeSupportsShape(plan.head_dim, DType::kFloat16, plan.page_size, plan.gqa_group_size());
  for (int64_t i = 0; fused && i < nd; ++i) fused = plan.decode_items[i].kv_begin % 16 == 0;
  FusedSchedule schedules[3];
  if (fused) {
    FusedScheduleOptions so;
    so.num_ctas = num_sms_;
    schedules[0] = ScheduleFusedItems(plan, so);
    so.decode_items = false;
    schedules[1] = ScheduleFusedItems(plan, so);
    so.decode_items = true;
    so.prefix_items = false;
    schedules[2] = ScheduleFusedItems(plan, so);
  }
  // After the plan, 8-byte aligned: the decode items' {page_indptr, state_indptr}[request], their
  // first two slots' pages (WriteDecodeItemPages; only where PREFIXD_DECODE_ITEM_PAGES reads them,
  // so that the default step neither builds nor uploads them); then the fused work lists.
  const int64_t page_ints = decode_item_pages_ != 0 ? kDecodeItemPageInts * nd : 0;
  const int64_t o_bases = (o_end + 1) / 2 * 2, o_pages = o_bases + 2 * nd, o_fused = o_pages + page_ints;
  static_assert(kDecodeItemPageInts == 2, "read on the device as one int2 per item");
  int64_t upload_ints = o_fused;
  for (const FusedSchedule& fs : schedules) upload_ints += int64_t(fs.cta_indptr.size() + fs.entries.size());
  if (fused) upload_ints += b;  // request_finished (cascade_fused.h)
  upload_ints += nm;            // merge_partitioned
  if (fused && upload_ints > plan_buffer_.capacity) {  // no room for the work lists: run unfused
    fused = false;
    for (FusedSchedule& fs : schedules) fs = FusedSchedule{};
    upload_ints = o_fused + nm;
  }
  PREFIXD_CHECK_ARG(upload_ints <= plan_buffer_.capacity,
                    "LoadPlan: the plan and its decode item bases need " << upload_ints
                                                                        << " ints, the workspace holds "
                                                                        << plan_buffer_.capacity
                                                                        << " (raise WorkspaceLimits::max_plan_ints)");

  PREFIXD_CUDA_CHECK(cudaSetDevice(device_));
  int32_t* host = BeginUpload(&plan_buffer_);
  std::memcpy(host, flat.data(), flat.size() * sizeof(int32_t));
  if (o_bases > o_end) host[o_end] = 0;
  // One pass over the decode items: their bases, which requests have any, the longest item.
  std::vector<char> has_decode(size_t(b), 0);
  int max_decode_item_tokens = 0;  // also found by the cost model's ProfilePlan, to predict the kernel
  for (int64_t i = 0; i < nd; ++i) {
    const DecodeWorkItem& it = plan.decode_items[size_t(i)];
    host[o_bases + 2 * i] = plan.suffix.indptr[it.request];
    host[o_bases + 2 * i + 1] = plan.state_indptr[it.request];
    has_decode[size_t(it.request)] = 1;
    max_decode_item_tokens = std::max(max_decode_item_tokens, it.kv_end - it.kv_begin);
  }
  if (page_ints > 0) WriteDecodeItemPages(plan, host + o_pages);
  int64_t o_list = o_fused;
  int64_t list_offsets[3][2];
  for (int k = 0; k < 3; ++k) {
    const FusedSchedule& fs = schedules[k];
    list_offsets[k][0] = o_list;
    if (!fs.cta_indptr.empty()) std::memcpy(host + o_list, fs.cta_indptr.data(), fs.cta_indptr.size() * sizeof(int32_t));
    o_list += int64_t(fs.cta_indptr.size());
    list_offsets[k][1] = o_list;
    if (!fs.entries.empty()) std::memcpy(host + o_list, fs.entries.data(), fs.entries.size() * sizeof(int32_t));
    o_list += int64_t(fs.entries.size());
  }
  const int64_t o_finished = o_list;
  if (fused) {
    // 1 for a request whose decode items finish it (it is not in merge_requests).
    for (int64_t r = 0; r < b; ++r) host[o_finished + r] = 1;
    for (const int32_t r : plan.merge_requests) host[o_finished + r] = 0;
  }
  // merge_requests, those without decode items first.
  const int64_t o_partitioned = o_finished + (fused ? b : 0);
  int64_t num_no_decode = 0, at = o_partitioned;
  for (const int32_t r : plan.merge_requests)
    if (!has_decode[size_t(r)]) host[at++] = r, ++num_no_decode;
  for (const int32_t r : plan.merge_requests)
    if (has_decode[size_t(r)]) host[at++] = r;
  PREFIXD_CHECK_INTERNAL(at == upload_ints, "LoadPlan: upload layout " << at << " != " << upload_ints);
  EndUpload(&plan_buffer_, upload_ints);

  const int32_t* d = plan_buffer_.device;
  LoadedPlan loaded;
  loaded.header.num_requests = plan.num_requests;
  loaded.header.num_qo_heads = plan.num_qo_heads;
  loaded.header.num_kv_heads = plan.num_kv_heads;
  loaded.header.head_dim = plan.head_dim;
  loaded.header.page_size = plan.page_size;
  loaded.header.num_pages = plan.num_pages;
  loaded.prefix_items = reinterpret_cast<const PrefixWorkItem*>(d + o_prefix);
  loaded.num_prefix_items = int(np);
  loaded.decode_items = reinterpret_cast<const DecodeWorkItem*>(d + o_decode);
  loaded.num_decode_items = int(nd);
  loaded.state_indptr = d + o_state;
  loaded.groups = reinterpret_cast<const PrefixGroup*>(d + o_groups);
  loaded.suffix_indptr = d + o_suffix_indptr;
  loaded.suffix_indices = d + o_suffix_indices;
  loaded.merge_requests = d + o_merge;
  loaded.decode_item_bases = reinterpret_cast<const int2*>(d + o_bases);
  loaded.decode_item_pages = page_ints > 0 ? reinterpret_cast<const int2*>(d + o_pages) : nullptr;
  loaded.num_merge_requests = int(nm);
  loaded.merge_partitioned = d + o_partitioned;
  loaded.num_merge_no_decode = int(num_no_decode);
  for (const PrefixWorkItem& it : plan.prefix_items)
    loaded.max_prefix_item_rows = std::max(loaded.max_prefix_item_rows, it.row_end - it.row_begin);
  loaded.max_decode_item_tokens = max_decode_item_tokens;
  for (const int32_t r : plan.merge_requests)
    loaded.max_merge_run_states =
        std::max(loaded.max_merge_run_states, plan.state_indptr[size_t(r) + 1] - plan.state_indptr[size_t(r)]);
  loaded.merge_uniform_run_states = plan.UniformRunStates();  // MergeStatesParams::uniform_run_states
  loaded.merge_empty_states = merge_skip_empty_ ? plan.EmptyPrefixStates() : 0;
  loaded.num_early_decode_items = early.num_early;
  loaded.early_decode_sms = early.num_early > 0 ? num_sms_ - prefix_ctas : 0;
  loaded.merge_every_request = nm == b;
  for (int64_t i = 0; loaded.merge_every_request && i < nm; ++i)
    loaded.merge_every_request = plan.merge_requests[size_t(i)] == i;
  loaded.prefix_kv_evict_first = PrefixKvEvictFirst(plan, l2_bytes_);
  loaded.prefix_kv_tile_tokens = ChoosePrefixKvTileTokens(plan);
  loaded.prefix_balanced_ctas = plan.prefix_balanced_ctas;
  loaded.fused = fused;
  loaded.concurrent_decode_sms = concurrent_k;
  loaded.concurrent_decode_tma = concurrent_k > 0 && concurrent_tma_ && plan.concurrent_decode_tma != 0;
  loaded.concurrent_tma_warps = plan.concurrent_tma_warps;
  LoadedPlan::FusedLists* lists[3] = {&loaded.fused_all, &loaded.fused_prefix, &loaded.fused_decode};
  if (fused) loaded.request_finished = d + o_finished;
  for (int k = 0; fused && k < 3; ++k) {
    lists[k]->cta_indptr = d + list_offsets[k][0];
    lists[k]->entries = d + list_offsets[k][1];
    lists[k]->num_ctas = schedules[k].num_ctas();
  }
  plan_ = loaded;
  plan_loaded_ = true;
}

void CudaBackend::RunCascade(const CascadeArgs& args) { RunCascadeParts(args, kAllParts); }

void CudaBackend::RunCascadeParts(const CascadeArgs& args, unsigned parts) {
  PREFIXD_CHECK_ARG(plan_loaded_, "RunCascade: no plan loaded (call LoadPlan first)");
  const CascadePlan& h = plan_.header;
  CheckCascadeArgs(h, args);
  const KvPoolShape& shape = args.kv.shape;
  PREFIXD_CUDA_CHECK(cudaSetDevice(device_));
  FlushUploads();
  // The stream of this call (CascadeArgs::stream); everything below is ordered on it.
  cudaStream_t const stream = args.stream != nullptr ? static_cast<cudaStream_t>(args.stream) : stream_;
  // Concurrent prefix/decode (cuda_backend.h): the decode kernel on decode_stream_, forked from
  // stream_ just before the prefix launch and joined back before the merge, or chained on stream
  // (ChainsConcurrentStep: by default where the prefix is the sm_90a kernel and the decode the
  // persistent TMA decode or the one-item decode); the loaded plan has no finishing decode items.
  // The fork is recorded BEFORE the prefix launch (after it, the decode would wait for the prefix
  // grid to complete); the decode launch waits for it on the other stream, which also gives the
  // prefix grid a head start in being dispatched.
  // The whole step as one fused launch (cuda_backend.h), where the loaded plan and the call allow it.
  // The merge kernel still follows it for plan.merge_requests (none when every suffix is one chunk).
  const bool fused_step = plan_.fused && parts == kAllParts && args.merge_packed_out == nullptr &&
                          args.decode_free_sms == 0 && (args.o != nullptr || args.v_out != nullptr || args.s_out != nullptr) &&
                          LaunchFused(args, plan_.fused_all, !fused_merge_kernel_);
  const bool prefix_part = !fused_step && (parts & kPrefixPart) && plan_.num_prefix_items > 0;
  const bool decode_part = !fused_step && (parts & kDecodePart) && plan_.num_decode_items > 0;
  const int concurrent_k = plan_.concurrent_decode_sms;
  // The concurrent step on two streams (the decode forked beside the prefix, joined before the
  // merge) or chained on one (PREFIXD_CONCURRENT_CHAIN; ChainsConcurrentStep says where).
  // The prefix launch's parameters and whether the plan's decode is the persistent TMA decode, each
  // made once per step: ChainsConcurrentStep and StepStates16 read both (the latter also when only
  // the decode part runs, so that parts timed alone agree on the states' width).
  const bool needs_prefix_params =
      prefix_part || (concurrent_states16_ && concurrent_k > 0 && plan_.num_prefix_items > 0);
  PrefixAttentionParams prefix = needs_prefix_params ? PrefixItemsParams(args) : PrefixAttentionParams{};
  const bool tma_decode = concurrent_k > 0 && StepTmaDecodeRuns(args);
  const bool side_by_side = concurrent_k > 0 && prefix_part && decode_part;
  const bool chained = side_by_side && ChainsConcurrentStep(args, prefix, tma_decode);
  const bool concurrent = side_by_side && !chained;
  if ((concurrent || chained) && parts == kAllParts) ++concurrent_steps_;
  if (chained && parts == kAllParts) ++chained_steps_;
  // The plan's states with v in 16 bits (StepStates16): written so by both kernels, merged so.
  const bool states_16bit = StepStates16(prefix, tma_decode);
  if (states_16bit && parts == kAllParts) ++states16_steps_;
  cudaStream_t decode_stream = stream;
  if (concurrent) {
    PREFIXD_CUDA_CHECK(cudaEventRecord(fork_, stream));
    PREFIXD_CUDA_CHECK(cudaStreamWaitEvent(decode_stream_, fork_, 0));
    decode_stream = decode_stream_;
  }

  if (prefix_part) {
    PrefixAttentionParams& p = prefix;
    // The prefix of a step that runs concurrently (it has decode items) is capped, also when timed
    // alone (RunCascadeParts), so that the part times are those of the step's kernels.
    if (concurrent_k > 0 && plan_.num_decode_items > 0) p.max_ctas = num_sms_ - concurrent_k;
    // The decode kernel of this plan follows (in this call or the caller's next): its start into L2
    // at the prefix kernel's end. Not beside a concurrent decode, which has started long before,
    // nor beside the narrow sm_90a CTA, whose decode CTAs start with it (the warm-up then only
    // held the prefix CTAs' exit back: −0.1 to −1.4 µs per step without it, 11 of 14 shapes,
    // bench/RESULTS.md session 22).
    const bool narrow_prefix = SelectPrefixKernel(p) == PrefixKernelPath::kWgmma && sm90a::UsesNarrowCta(p);
    if (concurrent_k == 0 && !narrow_prefix) p.decode_warmup = DecodeWarmup(args);
    p.trigger_at_start = chained;  // the chain's decode starts with the prefix grid, not at its end
    p.states_16bit = states_16bit;
    PrefixAttention(p, stream);
  }
  if (decode_part) {
    DecodeAttentionParams p;
    p.kernel = decode_kernel_;
    SetCascadeInputs(&p, h, args);  // a KV head view (CascadeArgs::kv_head_count) starts at its first head
    p.page_indptr = plan_.suffix_indptr;
    p.page_indices = plan_.suffix_indices;
    p.items = plan_.decode_items;
    p.num_items = plan_.num_decode_items;
    p.state_indptr = plan_.state_indptr;
    p.partial_v = partial_v_;
    p.partial_s = partial_s_;
    p.states_16bit = states_16bit;  // only the TMA decode writes them (its launcher rejects the others)
    p.o = args.o;
    p.v_out = args.v_out;
    p.s_out = args.s_out;
    // The prefix kernel was the previous launch on the stream (and a normal one): the decode grid
    // may start while it drains (decode_attention.h). Concurrent: launched normally on the other
    // stream (its griddepcontrol.wait is then a no-op; no item reads prefix states).
    p.overlap_prefix = decode_pdl_ && prefix_part && !concurrent;
    p.max_item_tokens = plan_.max_decode_item_tokens;  // before DecodeUsesTensorCores below reads it
    // Warps per CTA of the tensor-core decode kernel: 2 (4 CTAs per SM) where the items fill the
    // SMs; 4 where there are at most two items per SM (e.g. 32 long suffixes × 8 KV heads), so
    // that an SM streams with 8 warps' bytes in flight instead of 4. The 16-row group (g = 9-16,
    // or slices of 16) takes 8 where its CTAs are at most one per SM: there it has half the CTAs
    // the slices of 8 had: with 4 warps its suffix parts were 17-22% slower than theirs at 32/2,
    // 24/2 and 32/1 B64 S256; 8 warps took them 10-25% below 4 at B16-64, head_dim 128 (H200,
    // bench/RESULTS.md, session 37; for the groups of 4 and 8 the same rule measured mixed and is
    // not applied).
    const bool tensor_cores = DecodeUsesTensorCores(p);
    const DecodeGroupSlicing slicing = DecodeSlicingFor(p.num_qo_heads / p.num_kv_heads, p.head_dim, tensor_cores);
    const int decode_ctas = plan_.num_decode_items * slicing.slices;
    const bool sixteen_rows = tensor_cores && slicing.rows == 16;
    p.mma_warps = decode_mma_warps_ != 0                      ? decode_mma_warps_
                  : sixteen_rows && decode_ctas <= num_sms_    ? 8
                  : decode_ctas <= 2 * num_sms_                ? 4
                                                               : 2;
    p.stream_items = decode_stream_items_;
    p.stream_tma = decode_tma_;
    // The plan's persistent TMA decode beside a concurrent prefix (also when timed alone): the
    // step's tma_decode above (StepTmaDecodeRuns, which reads what PlanTmaDecodeRuns reads of this
    // launch). Where this launch cannot take it (DecodeStreamTmaApplies: the pool's alignment, a KV
    // head view), the one-CTA-per-item decode runs instead.
    // Leaving SMs free (CascadeArgs::decode_free_sms): one CTA per SM, which then needs 8 warps
    // to keep enough bytes in flight for its share of the bandwidth.
    if (args.decode_free_sms > 0) {
      p.max_sms = std::max(1, num_sms_ - args.decode_free_sms);
      if (decode_mma_warps_ == 0) p.mma_warps = 8;
    } else if (tma_decode) {
      p = TmaDecodeOn(p, concurrent_k);
      if ((concurrent || chained) && parts == kAllParts) ++concurrent_tma_steps_;
      // Chained, it is the prefix grid's programmatic dependent (overlap_prefix above), launched as
      // the prefix CTAs start. Each CTA lets the merge (this grid's dependent) launch at its start
      // and waits for the prefix grid before it exits (DecodeAttentionParams::early_chain; the
      // mode's plan finishes no item here), so this grid's completion implies the prefix grid's.
      p.early_chain = chained;
    } else if (chained) {
      // Chained with the one-item decode (PREFIXD_CONCURRENT_CHAIN=all): a CTA per item, as on the
      // second stream, its CTAs taking the k SMs the prefix grid leaves and then its SMs as they
      // retire; each signals at its start, the last waits for the prefix grid before it exits
      // (DecodeAttentionParams::early_chain). Capped at the k SMs as an early grid (early_sms), the
      // decode that outlasts the prefix grid stayed on them: +2.7 to +10.1 µs at head_dim 256 (s96).
      p.early_chain = true;
    } else if (decode_persistent_ && (DecodeUsesTensorCores(p) || (decode_tma_ && DecodeStreamTmaApplies(p)))) {
      // PREFIXD_DECODE_PERSISTENT: the streaming kernel on every SM instead of one CTA per item;
      // beside a concurrent prefix (also when timed alone) on exactly the k SMs it leaves.
      p.max_sms = concurrent_k > 0 && plan_.num_prefix_items > 0 ? concurrent_k : num_sms_;
      if (decode_mma_warps_ == 0) p.mma_warps = 8;  // one CTA per SM (the TMA kernel also runs 4)
    }
    p.tma_diag = decode_tma_diag_;
    p.tma_swap_ab = decode_tma_swap_ab_;
    // The plan's own warps for its TMA decode beside the prefix (the measured choice's
    // kFewerTmaWarps), else PREFIXD_DECODE_TMA_WARPS's.
    p.tma_warps = tma_decode && plan_.concurrent_tma_warps > 0 ? plan_.concurrent_tma_warps : decode_tma_warps_;
    if (tma_decode) last_concurrent_tma_warps_ = TmaDecodeWarps(p.tma_swap_ab, p.mma_warps, p.tma_warps);
    p.tma_items_per_cta = decode_tma_items_per_cta_;
    // A cascade's decode after its prefix grid (also when timed alone), where SequentialTmaDecodeWarps
    // says the persistent TMA decode on every SM pays; not with other launch settings asked for.
    const int sequential_tma_warps =
        sequential_tma_ && concurrent_k == 0 && p.max_sms == 0 && plan_.num_prefix_items > 0 &&
                plan_.num_early_decode_items == 0 && decode_tma_swap_ab_ && decode_mma_warps_ == 0
            ? SequentialTmaDecodeWarps(p.num_qo_heads / p.num_kv_heads, p.head_dim, plan_.num_decode_items,
                                       plan_.max_decode_item_tokens, num_sms_)
            : 0;
    if (sequential_tma_warps > 0) {
      DecodeAttentionParams tma = TmaDecodeOn(p, num_sms_);
      tma.tma_warps = sequential_tma_warps;
      if (DecodeStreamTmaApplies(tma)) {
        p = tma;
        ++sequential_tma_launches_;
      }
    }
    p.item_bases = plan_.decode_item_bases;
    if (decode_item_pages_ != 0) p.item_pages = plan_.decode_item_pages;
    p.prefetch_next_wave_kv = decode_item_pages_ == 2;
    p.evict_first = decode_evict_first_;
    p.prefetch_prefix_states = decode_prefetch_;
    p.prefetch_next_wave = decode_next_wave_;
    p.pipeline = decode_pipeline_;
    p.warp_rounds = decode_warp_rounds_;
    p.warp_min_items = decode_warp_min_items_;
    const int num_early = plan_.num_early_decode_items;
    if (num_early > 0) {
      // Early decode (early_decode.h): the early items (the upload's last) first, as the prefix
      // kernel's programmatic dependent on the SMs it leaves idle; then the late items as the early
      // grid's, whose wait covers both grids (DecodeAttentionParams::early_chain).
      const int num_late = plan_.num_decode_items - num_early;
      DecodeAttentionParams e = p;
      e.items = p.items + num_late;
      e.item_bases = p.item_bases + num_late;
      if (p.item_pages != nullptr) e.item_pages = p.item_pages + num_late;
      e.num_items = num_early;
      e.early_chain = true;
      e.stream_items = e.stream_tma = false;
      // Beside the prefix grid only as its programmatic dependent; after it (no PDL), or in a
      // decode part alone, on every SM, or on those CascadeArgs::decode_free_sms leaves.
      const bool beside_prefix = decode_pdl_ && prefix_part;
      e.overlap_prefix = beside_prefix;
      e.early_sms = beside_prefix && args.decode_free_sms == 0 ? plan_.early_decode_sms : 0;
      e.max_sms = args.decode_free_sms > 0 ? p.max_sms : 0;
      // PREFIXD_EARLY_DECODE_TMA: the persistent TMA decode, one CTA on each of those SMs, whose
      // copies stay in flight across items (the one-item kernel streamed ~22 GB/s per SM at GQA 1).
      const DecodeAttentionParams tma =
          TmaDecodeOn(e, e.early_sms > 0 ? e.early_sms : e.max_sms > 0 ? e.max_sms : num_sms_);
      if (early_decode_tma_ && DecodeStreamTmaApplies(tma)) {
        e = tma;
        ++early_tma_launches_;
      }
      DecodeAttention(e, decode_stream);
      if (beside_prefix && parts == kAllParts) ++early_decode_steps_;
      p.num_items = num_late;
      p.overlap_prefix = decode_pdl_;
    }
    if (p.num_items > 0) DecodeAttention(p, decode_stream);
  }
  // The join comes before any early return: the call's stream (and so Synchronize, a graph capture's end,
  // the merge, the next step) always waits for the decode kernel.
  if (concurrent) {
    PREFIXD_CUDA_CHECK(cudaEventRecord(join_, decode_stream_));
    PREFIXD_CUDA_CHECK(cudaStreamWaitEvent(stream, join_, 0));
  }
  // The merge requests of this call: all, or one half of merge_partitioned.
  const bool merge_early = parts & kMergeNoDecodePart, merge_late = parts & kMergeAfterDecodePart;
  const int32_t* merge_list = plan_.merge_requests;
  int merge_count = plan_.num_merge_requests;
  if (merge_early != merge_late) {
    merge_list = plan_.merge_partitioned + (merge_early ? 0 : plan_.num_merge_no_decode);
    merge_count = merge_early ? plan_.num_merge_no_decode : plan_.num_merge_requests - plan_.num_merge_no_decode;
  }
  if (!(merge_early || merge_late) || merge_count == 0 ||
      (args.o == nullptr && args.v_out == nullptr && args.s_out == nullptr && args.merge_packed_out == nullptr))
    return;
  MergeStatesParams m = MergeParams();
  m.v_in = partial_v_;
  m.v_in_16bit = states_16bit;
  m.s_in = partial_s_;
  m.run_indptr = plan_.state_indptr;
  m.requests = merge_list;
  m.rows = merge_count * h.num_qo_heads;
  m.num_heads = h.num_qo_heads;
  m.head_dim = h.head_dim;
  m.out_dtype = shape.dtype;
  m.o = args.o;
  m.v_out = args.v_out;
  m.s_out = args.s_out;
  m.packed_row = args.merge_packed_row;
  m.packed_out = args.merge_packed_out;
  m.max_run_states = plan_.max_merge_run_states;
  if (!merge_run_table_) {  // the run bounds by arithmetic where the plan allows (MergeStatesParams)
    m.uniform_run_states = plan_.merge_uniform_run_states;
    if (m.uniform_run_states > 0) m.empty_states = plan_.merge_empty_states, m.num_kv_heads = h.num_kv_heads;
    if (merge_list == plan_.merge_requests && plan_.merge_every_request) m.requests = nullptr;
  }
  // Right behind the prefix kernel (no decode launch in between): scheduled while it drains. In
  // the chain, the decode's dependent: scheduled as the decode's CTAs start, so its CTAs take SMs
  // as the prefix grid's retire and wait there for the decode grid's completion (which follows the
  // prefix grid's) instead of being launched after a join.
  m.programmatic_launch = merge_pdl_ && prefix_part && (!decode_part || chained);
  cuda::MergeStates(m, stream);
}

bool CudaBackend::PlanTmaDecodeRuns(const DecodeAttentionParams& p, const CascadeArgs& args) const {
  return plan_.concurrent_decode_tma && plan_.concurrent_decode_sms > 0 && plan_.num_prefix_items > 0 &&
         args.decode_free_sms == 0 && DecodeStreamTmaApplies(p);
}

bool CudaBackend::StepTmaDecodeRuns(const CascadeArgs& args) const {
  DecodeAttentionParams d;  // what the decode launch's PlanTmaDecodeRuns reads, as it sets it
  d.kernel = decode_kernel_;
  SetCascadeInputs(&d, plan_.header, args);
  return PlanTmaDecodeRuns(d, args);
}

bool CudaBackend::StepStates16(const PrefixAttentionParams& prefix, bool tma_decode) const {
  return concurrent_states16_ && plan_.concurrent_decode_sms > 0 && plan_.num_prefix_items > 0 &&
         plan_.num_decode_items > 0 && SelectPrefixKernel(prefix) == PrefixKernelPath::kWgmma && tma_decode;
}

bool CudaBackend::ChainsConcurrentStep(const CascadeArgs& args, const PrefixAttentionParams& prefix,
                                       bool tma_decode) const {
  // The prefix must be the sm_90a kernel (which can signal at its start) and the decode one whose
  // CTAs signal at their start and wait for the prefix grid at their end: the persistent TMA
  // decode, or with PREFIXD_CONCURRENT_CHAIN=all (the default) the one-item decode, whose last CTA does.
  if (concurrent_chain_ == ConcurrentChain::kOff || SelectPrefixKernel(prefix) != PrefixKernelPath::kWgmma)
    return false;
  if (tma_decode) return true;
  return concurrent_chain_ == ConcurrentChain::kAll && args.decode_free_sms == 0 && !decode_persistent_ &&
         plan_.num_early_decode_items == 0;
}

DecodeAttentionParams CudaBackend::TmaDecodeOn(DecodeAttentionParams p, int sms) const {
  p.max_sms = sms;
  p.early_sms = 0;
  p.stream_items = p.stream_tma = true;
  // One CTA per SM: 8 asked for gives TmaDecodeWarps' 12 (or PREFIXD_DECODE_TMA_WARPS) with the
  // heads as the mma's N, 8 without; PREFIXD_DECODE_WARPS=4 gives 4.
  p.mma_warps = decode_mma_warps_ != 0 ? decode_mma_warps_ : 8;
  return p;
}

double CudaBackend::EarlyDecodeShare(const CascadePlan& plan, int idle_sms) const {
  if (early_decode_percent_ != kEarlyDecodeAuto) return early_decode_percent_ / 100.0;
  // Auto: sized for the TMA decode's rate on the idle SMs, so only where that decode is the early
  // grid (the one-item kernel streams less than half of it).
  const int gqa = plan.num_qo_heads / std::max(1, plan.num_kv_heads);
  if (!early_decode_tma_ || !TmaDecodeBuilt(gqa, plan.head_dim) || !sm90a::DeviceReady() ||
      !EarlyDecodeAutoEligible(plan, idle_sms, early_rule_))
    return 0.0;  // before the cost model's prediction, which LoadPlan would otherwise pay every step
  static const CostModelParams kModel = CostModelParams::H200();
  const double prefix_us = PredictCost(plan, kModel).prefix_us;
  // A token's K and V of one KV head: the pool's dtypes (fp16, bf16) are 2 bytes each.
  return EarlyDecodeAutoShare(plan, idle_sms, prefix_us, 2 * int64_t(plan.head_dim) * DTypeBytes(DType::kFloat16),
                              early_rule_);
}

MergeStatesParams CudaBackend::MergeParams() const {
  MergeStatesParams m;
  m.rows_per_warp = merge_rows_per_warp_;
  m.num_sms = num_sms_;
  return m;
}

PrefixAttentionParams CudaBackend::PrefixItemsParams(const CascadeArgs& args) const {
  PrefixAttentionParams p;
  SetCascadeInputs(&p, plan_.header, args);  // a KV head view (CascadeArgs::kv_head_count) starts at its first head
  p.items = plan_.prefix_items;
  p.num_items = plan_.num_prefix_items;
  p.groups = plan_.groups;
  p.num_requests = plan_.header.num_requests;  // q is the plan's [B][H_qo][D] (CascadeArgs::q)
  p.state_indptr = plan_.state_indptr;
  p.max_item_rows = plan_.max_prefix_item_rows;
  p.kv_tile_tokens = plan_.prefix_kv_tile_tokens;
  p.balanced_ctas = plan_.prefix_balanced_ctas;
  p.partial_v = partial_v_;
  p.partial_s = partial_s_;
  p.settings = prefix_settings_;
  p.kv_evict_first = plan_.prefix_kv_evict_first;
  return p;
}

DecodeL2Warmup CudaBackend::DecodeWarmup(const CascadeArgs& args) const {
  DecodeL2Warmup w;
  const int64_t row_bytes = int64_t(plan_.header.head_dim) * DTypeBytes(args.kv.shape.dtype);
  if (!decode_warmup_ || plan_.num_decode_items == 0 || row_bytes <= 0) return w;
  // The decode CTAs that start first: one per SM where SMs are left free (DecodeAttentionParams::
  // max_sms), otherwise about four per SM (the 2-warp tensor-core kernel's occupancy). Only a
  // decode of one wave gets the warm-up: there every CTA's cold start is on the step's critical
  // path, while in a decode of several waves only the first wave's is, and the warm-up's cost at
  // the prefix kernel's end was measured larger than that (bench/RESULTS.md, session 12).
  const int64_t first_ctas = args.decode_free_sms > 0 ? std::max(1, num_sms_ - args.decode_free_sms) : 4 * num_sms_;
  if (plan_.num_decode_items > first_ctas) return w;
  int64_t items = plan_.num_decode_items;
  // With a K/V budget, each item gets the same number of tokens within it; at least one 16-token
  // tile (fewer items then).
  int64_t tokens = 0;
  if (decode_warmup_bytes_ > 0) {
    tokens = decode_warmup_bytes_ / (items * 2 * row_bytes) / 16 * 16;
    if (tokens < 16) {
      tokens = 16;
      items = std::max<int64_t>(1, decode_warmup_bytes_ / (2 * row_bytes * tokens));
    }
  }
  w.items = plan_.decode_items;
  w.item_bases = plan_.decode_item_bases;
  if (decode_item_pages_ != 0) w.item_pages = plan_.decode_item_pages;
  w.page_indptr = plan_.suffix_indptr;
  w.page_indices = plan_.suffix_indices;
  w.num_items = int(items);
  w.tokens = int(std::min<int64_t>(tokens, int64_t(1) << 30));
  return w;
}

bool CudaBackend::LaunchFused(const CascadeArgs& args, const LoadedPlan::FusedLists& lists, bool merge) {
  const CascadePlan& h = plan_.header;
  const KvPoolShape& shape = args.kv.shape;
  FusedCascadeParams f;
  f.attn = PrefixItemsParams(args);
  if (!FusedCascadeSupportsShape(h.head_dim, shape.dtype, h.page_size, h.num_qo_heads / h.num_kv_heads) ||
      !sm90a::Supports(f.attn))
    return false;
  f.decode_items = plan_.decode_items;
  f.num_decode_items = plan_.num_decode_items;
  f.page_indptr = plan_.suffix_indptr;
  f.page_indices = plan_.suffix_indices;
  f.cta_indptr = lists.cta_indptr;
  f.cta_items = lists.entries;
  f.num_ctas = lists.num_ctas;
  f.counters = merge ? fused_counters_ : nullptr;
  f.request_finished = plan_.request_finished;
  f.l2_ahead_items = fused_l2_ahead_;
  f.diag = fused_diag_;
  if (merge) {
    f.o = args.o;
    f.v_out = args.v_out;
    f.s_out = args.s_out;
  }
  PREFIXD_CUDA_CHECK(cudaSetDevice(device_));
  FlushUploads();
  FusedCascade(f, args.stream != nullptr ? static_cast<cudaStream_t>(args.stream) : stream_);
  ++fused_launches_;
  return true;
}

void CudaBackend::RunFusedItemsOnly(const CascadeArgs& args, unsigned part) {
  PREFIXD_CHECK_ARG(fused_plan_loaded(), "RunFusedItemsOnly: the loaded plan does not run fused");
  PREFIXD_CHECK_ARG(part == kPrefixPart || part == kDecodePart, "RunFusedItemsOnly: part must be kPrefixPart or kDecodePart");
  CheckCascadeArgs(plan_.header, args);
  PREFIXD_CHECK_ARG(LaunchFused(args, part == kPrefixPart ? plan_.fused_prefix : plan_.fused_decode, false),
                    "RunFusedItemsOnly: the fused kernel does not run this call's shapes");
}

void CudaBackend::RunPrefixAttention(const PrefixAttentionArgs& args) {
  CheckPrefixAttentionArgs(args);
  FlushUploads();
  const KvPoolShape& shape = args.kv.shape;
  const int n = args.num_queries, num_heads = args.num_qo_heads, dim = shape.head_dim;
  const int g = num_heads / shape.num_kv_heads;
  if (n == 0) return;
  PREFIXD_CUDA_CHECK(cudaSetDevice(device_));
  const int64_t prefix_len = args.prefix.num_tokens;

  // One group holding all n queries; rows of a KV head = n · g, cut into the kernel's M tiles.
  const int tile_rows = PrefixAttentionTileRows(dim);
  const int64_t rows = int64_t(n) * g;
  const int64_t row_tiles = CeilDiv(rows, tile_rows);
  const int64_t base_items = row_tiles * shape.num_kv_heads;
  // Split along the KV axis until the items fill the device, within the workspace's state room.
  int64_t chunks = 0;
  if (prefix_len > 0) {
    const int64_t max_by_len = std::max<int64_t>(1, std::min(CeilDiv(prefix_len, kPrefixChunkAlign), prefix_len / kMinPrefixChunk));
    const int64_t max_by_room = std::min<int64_t>(limits_.max_slots / n,
                                                  limits_.max_state_floats / (int64_t(n) * num_heads * dim));
    chunks = std::clamp<int64_t>(CeilDiv(2 * num_sms_, base_items), 1, max_by_len);
    chunks = std::min(chunks, std::max<int64_t>(1, max_by_room));
  }
  const int64_t num_items = base_items * chunks;
  const int64_t ints = num_items * kPrefixItemInts + kGroupInts + n + 1;
  PREFIXD_CHECK_ARG(ints <= prefix_plan_buffer_.capacity && num_items <= INT32_MAX,
                    "RunPrefixAttention: " << n << " queries × " << num_heads << " heads need a " << ints
                                           << "-int plan, the workspace holds " << prefix_plan_buffer_.capacity
                                           << " (raise WorkspaceLimits::max_plan_ints)");

  if (prefix_len == 0) {  // nothing to attend to: every row is the empty state (0, −inf)
    MergeStatesParams m;
    m.num_states = 0;
    m.rows = n * num_heads;
    m.head_dim = dim;
    m.v_out = args.v_out;
    m.s_out = args.s_out;
    cuda::MergeStates(m, stream_);
    return;
  }

  int32_t* host = BeginUpload(&prefix_plan_buffer_);
  auto* items = reinterpret_cast<PrefixWorkItem*>(host);
  const int64_t units = CeilDiv(prefix_len, kPrefixChunkAlign);
  int64_t i = 0;
  for (int64_t c = 0; c < chunks; ++c) {
    const int32_t kv_begin = int32_t(kPrefixChunkAlign * (c * units / chunks));
    const int32_t kv_end = c + 1 == chunks ? int32_t(prefix_len) : int32_t(kPrefixChunkAlign * ((c + 1) * units / chunks));
    for (int32_t h = 0; h < shape.num_kv_heads; ++h)
      for (int64_t r0 = 0; r0 < rows; r0 += tile_rows)
        items[i++] = PrefixWorkItem{0, h, int32_t(r0), int32_t(std::min<int64_t>(rows, r0 + tile_rows)), kv_begin, kv_end,
                                    int32_t(c)};
  }
  auto* group = reinterpret_cast<PrefixGroup*>(host + num_items * kPrefixItemInts);
  *group = PrefixGroup{args.prefix, 0, n};
  int32_t* state_indptr = host + num_items * kPrefixItemInts + kGroupInts;
  for (int r = 0; r <= n; ++r) state_indptr[r] = int32_t(r * chunks);
  EndUpload(&prefix_plan_buffer_, ints);

  const int32_t* d = prefix_plan_buffer_.device;
  PrefixAttentionParams p;
  const int64_t layer_bytes = shape.LayerStride() * DTypeBytes(shape.dtype) * args.layer;
  SetAttentionInputs(&p, static_cast<const char*>(args.kv.k) + layer_bytes,
                     static_cast<const char*>(args.kv.v) + layer_bytes, shape, args.q, num_heads, shape.num_kv_heads,
                     dim, ResolveSmScale(args.sm_scale, dim) * kLog2e);
  p.settings = prefix_settings_;
  p.causal = args.causal;
  p.q_offset = args.q_offset;
  p.items = reinterpret_cast<const PrefixWorkItem*>(d);
  p.num_items = int(num_items);
  p.groups = reinterpret_cast<const PrefixGroup*>(d + num_items * kPrefixItemInts);
  p.state_indptr = d + num_items * kPrefixItemInts + kGroupInts;
  if (chunks == 1) {  // one state per row: the kernel writes the outputs directly
    p.partial_v = args.v_out;
    p.partial_s = args.s_out;
    PrefixAttention(p, stream_);
    return;
  }
  p.partial_v = partial_v_;
  p.partial_s = partial_s_;
  PrefixAttention(p, stream_);
  MergeStatesParams m = MergeParams();
  m.v_in = partial_v_;
  m.s_in = partial_s_;
  m.run_indptr = p.state_indptr;
  m.max_run_states = int(chunks);
  if (!merge_run_table_) m.uniform_run_states = int(chunks);  // state_indptr[r] = r · chunks above
  m.rows = n * num_heads;
  m.num_heads = num_heads;
  m.head_dim = dim;
  m.v_out = args.v_out;
  m.s_out = args.s_out;
  cuda::MergeStates(m, stream_);
}

void CudaBackend::MergeStates(const float* v_in, const float* s_in, int n, int rows, int head_dim, float* v_out,
                              float* s_out) {
  PREFIXD_CHECK_ARG(n >= 0 && rows >= 0 && head_dim > 0 && head_dim % 4 == 0,
                    "MergeStates: bad sizes n " << n << ", rows " << rows << ", head_dim " << head_dim
                                                << " (head_dim must be a positive multiple of 4)");
  FlushUploads();
  if (rows == 0) return;
  PREFIXD_CHECK_ARG(v_out != nullptr && s_out != nullptr && (n == 0 || (v_in != nullptr && s_in != nullptr)),
                    "MergeStates: null pointer");
  PREFIXD_CUDA_CHECK(cudaSetDevice(device_));
  MergeStatesParams m = MergeParams();
  m.v_in = v_in;
  m.s_in = s_in;
  m.num_states = n;
  m.max_run_states = n;
  m.rows = rows;
  m.head_dim = head_dim;
  m.v_out = v_out;
  m.s_out = s_out;
  cuda::MergeStates(m, stream_);
}

void CudaBackend::MergeStateInPlace(float* v, float* s, const float* v_other, const float* s_other, int rows,
                                    int head_dim) {
  PREFIXD_CHECK_ARG(rows >= 0 && head_dim > 0 && head_dim % 4 == 0,
                    "MergeStateInPlace: bad sizes rows " << rows << ", head_dim " << head_dim
                                                         << " (head_dim must be a positive multiple of 4)");
  FlushUploads();
  if (rows == 0) return;
  PREFIXD_CHECK_ARG(v != nullptr && s != nullptr && v_other != nullptr && s_other != nullptr,
                    "MergeStateInPlace: null pointer");
  PREFIXD_CUDA_CHECK(cudaSetDevice(device_));
  cuda::MergeStateInPlace(v, s, v_other, s_other, rows, head_dim, stream_);
}

void CudaBackend::CastStates(const float* v, int64_t count, DType dtype, void* out) {
  PREFIXD_CHECK_ARG(count >= 0, "CastStates: negative count " << count);
  if (count == 0) return;
  PREFIXD_CHECK_ARG(v != nullptr && out != nullptr, "CastStates: null pointer");
  FlushUploads();
  PREFIXD_CUDA_CHECK(cudaSetDevice(device_));
  cuda::CastStates(v, count, dtype, out, stream_);
}

}  // namespace cuda

std::unique_ptr<Backend> MakeCudaBackend(const BackendOptions& options) {
  if (!CudaAvailable())
    PREFIXD_THROW(ErrorKind::kUnsupported, "MakeCudaBackend: no usable CUDA GPU (cudaGetDeviceCount failed or found none)");
  return std::make_unique<cuda::CudaBackend>(options);
}

}  // namespace prefixd::kernels
