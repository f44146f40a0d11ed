// PrefixAttention: argument checks, the choice between the mma.sync kernel and the sm_90a wgmma
// kernel (kernels/cuda/sm90a/prefix_attention_sm90a.h says when which runs), and the one place
// where (dtype, head_dim) become template constants of the mma.sync kernel, instantiated in
// kernels/cuda/inst/, one file each.
#include "kernels/cuda/prefix_attention.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdlib>
#include <cstring>

#include "kernels/cuda/prefix_attention.cuh"
#include "kernels/cuda/sm90a/prefix_attention_sm90a.h"
#include "prefixd/common/env.h"
#include "prefixd/common/error.h"

namespace prefixd::kernels::cuda {

// Defined in inst/prefix_attention_<dtype>_d<D>.cu.
extern template void RunPrefixAttention<__half, 64>(const PrefixAttentionParams&, cudaStream_t);
extern template void RunPrefixAttention<__half, 128>(const PrefixAttentionParams&, cudaStream_t);
extern template void RunPrefixAttention<__half, 256>(const PrefixAttentionParams&, cudaStream_t);
extern template void RunPrefixAttention<__nv_bfloat16, 64>(const PrefixAttentionParams&, cudaStream_t);
extern template void RunPrefixAttention<__nv_bfloat16, 128>(const PrefixAttentionParams&, cudaStream_t);
extern template void RunPrefixAttention<__nv_bfloat16, 256>(const PrefixAttentionParams&, cudaStream_t);
extern template int RunPrefixAttentionCtasPerSm<__half, 64>(int);
extern template int RunPrefixAttentionCtasPerSm<__half, 128>(int);
extern template int RunPrefixAttentionCtasPerSm<__half, 256>(int);
extern template int RunPrefixAttentionCtasPerSm<__nv_bfloat16, 64>(int);
extern template int RunPrefixAttentionCtasPerSm<__nv_bfloat16, 128>(int);
extern template int RunPrefixAttentionCtasPerSm<__nv_bfloat16, 256>(int);

namespace {

bool Aligned16(const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % 16 == 0; }

void CheckParams(const PrefixAttentionParams& p) {
  PREFIXD_CHECK_ARG(p.num_items >= 0, "PrefixAttention: num_items " << p.num_items << " < 0");
  PREFIXD_CHECK_ARG(p.num_kv_heads > 0 && p.num_qo_heads > 0 && p.num_qo_heads % p.num_kv_heads == 0,
                    "PrefixAttention: num_qo_heads " << p.num_qo_heads
                        << " must be a positive multiple of num_kv_heads " << p.num_kv_heads);
  PREFIXD_CHECK_ARG(p.token_stride >= int64_t(p.num_kv_heads) * p.head_dim && p.token_stride % 8 == 0,
                    "PrefixAttention: token_stride " << p.token_stride
                        << " must be >= num_kv_heads * head_dim and a multiple of 8 elements");
  PREFIXD_CHECK_ARG(p.page_size > 0, "PrefixAttention: page_size " << p.page_size);
  // The kernel finds the row max on raw scores, which is only the max of scaled ones for c > 0.
  PREFIXD_CHECK_ARG(p.sm_scale_log2 > 0.f,
                    "PrefixAttention: sm_scale_log2 " << p.sm_scale_log2 << " must be > 0");
  PREFIXD_CHECK_ARG(p.max_item_rows >= 0, "PrefixAttention: max_item_rows " << p.max_item_rows << " < 0");
  PREFIXD_CHECK_ARG(!p.causal || p.q_offset >= 0, "PrefixAttention: q_offset " << p.q_offset << " < 0");
  if (p.num_items == 0) return;
  PREFIXD_CHECK_ARG(p.k && p.v && p.q && p.items && p.groups && p.state_indptr && p.partial_v &&
                        p.partial_s,
                    "PrefixAttention: null device pointer");
  // 16-byte cp.async copies of K, V and Q rows.
  PREFIXD_CHECK_ARG(Aligned16(p.k) && Aligned16(p.v) && Aligned16(p.q),
                    "PrefixAttention: k, v and q must be 16-byte aligned");
}

}  // namespace

#if !PREFIXD_HAVE_SM90A
// Built without the sm_90a objects (CMake PREFIXD_WITH_SM90A=OFF or an old nvcc): the wgmma path
// never applies.
namespace sm90a {
bool Built() { return false; }
bool Supports(const PrefixAttentionParams&) { return false; }
bool DeviceReady() { return false; }
int TileRows() { return 128; }
bool UsesNarrowCta(const PrefixAttentionParams&) { return false; }
void PrefixAttention(const PrefixAttentionParams&, cudaStream_t) {
  PREFIXD_THROW(ErrorKind::kUnsupported, "PrefixAttention: this build has no sm_90a kernels");
}
}  // namespace sm90a
#endif

const char* PrefixKernelPathName(PrefixKernelPath path) {
  return path == PrefixKernelPath::kWgmma ? "wgmma" : "mma";
}

// Whether "auto" takes the wgmma kernel where it applies (see prefix_attention_sm90a.h). On since
// the kernel passed the oracle tests on an H200 (bench/NOTES-prefix.md, helper-hopper run 1).
constexpr bool kWgmmaByDefault = true;

PrefixKernelSettings PrefixKernelSettings::FromEnvironment() {
  PrefixKernelSettings s;
  constexpr PrefixKernelChoice kKernels[] = {PrefixKernelChoice::kAuto, PrefixKernelChoice::kMma,
                                             PrefixKernelChoice::kWgmma};
  s.kernel = kKernels[EnvChoice("PREFIXD_PREFIX_KERNEL", {"auto", "mma", "wgmma"}, 0)];
  s.q_tma = EnvFlag("PREFIXD_SM90A_Q_TMA", s.q_tma);
  s.q_tma_partial = EnvFlag("PREFIXD_SM90A_Q_TMA_PARTIAL", s.q_tma_partial);
  s.trigger_dependents = EnvFlag("PREFIXD_PREFIX_PDL_TRIGGER", s.trigger_dependents);
  s.overlap = EnvChoice("PREFIXD_SM90A_SCHEDULE", {"overlap", "plain"}, s.overlap ? 0 : 1) == 0;
  s.max_ctas = int32_t(EnvInteger("PREFIXD_SM90A_MAX_CTAS", 0, 1 << 20, s.max_ctas));
  // 2 or 3: the kernel has two rings, the 2-stage one and a deeper one (3 stages, 4 at head_dim 64).
  s.stages = EnvChoice("PREFIXD_SM90A_STAGES", {"2", "3"}, s.stages > 2 ? 1 : 0) == 1 ? 3 : 2;
  constexpr PrefixKvL2Hint kHints[] = {PrefixKvL2Hint::kPlan, PrefixKvL2Hint::kNone, PrefixKvL2Hint::kEvictFirst,
                                       PrefixKvL2Hint::kEvictLast};
  s.kv_l2_hint = kHints[EnvChoice("PREFIXD_SM90A_KV_POLICY", {"plan", "normal", "first", "last"}, 0)];
  s.consumer_wgs = int32_t(EnvChoice("PREFIXD_SM90A_CONSUMERS", {"auto", "1", "2"}, 0));
  constexpr int32_t kTiles[] = {0, 128, 160, 192};
  s.kv_tile = kTiles[EnvChoice("PREFIXD_SM90A_KV_TILE", {"auto", "128", "160", "192"}, 0)];
  return s;
}

PrefixKernelPath SelectPrefixKernel(const PrefixAttentionParams& params) {
  const PrefixKernelChoice request = params.settings.kernel;
  if (request == PrefixKernelChoice::kMma || (request == PrefixKernelChoice::kAuto && !kWgmmaByDefault))
    return PrefixKernelPath::kMmaSync;
  if (sm90a::Built() && sm90a::Supports(params) && sm90a::DeviceReady()) return PrefixKernelPath::kWgmma;
  return PrefixKernelPath::kMmaSync;
}

int PrefixAttentionTileRows(int head_dim) {
  switch (head_dim) {
    case 64: return DefaultPrefixConfig<__half, 64>::Type::TILE_ROWS;
    case 128: return DefaultPrefixConfig<__half, 128>::Type::TILE_ROWS;
    case 256: return DefaultPrefixConfig<__half, 256>::Type::TILE_ROWS;
  }
  PREFIXD_THROW(ErrorKind::kUnsupported, "PrefixAttention: head_dim " << head_dim
                                             << " has no kernel (64, 128, 256)");
}

int PrefixAttentionSmallTileRows() { return SMALL_TILE_ROWS; }

namespace {

// A non-causal launch of this shape with `settings`, for asking which kernel (and CTA) would run.
PrefixAttentionParams ProbeLaunch(const PrefixKernelSettings& settings, int head_dim, DType dtype, int max_item_rows) {
  PrefixAttentionParams probe;
  probe.settings = settings;
  probe.head_dim = head_dim;
  probe.dtype = dtype;
  probe.num_qo_heads = probe.num_kv_heads = 1;
  probe.token_stride = head_dim;
  probe.max_item_rows = max_item_rows;
  return probe;
}

}  // namespace

int PrefixAttentionNarrowTileRows(const PrefixKernelSettings& settings) {
  // A head_dim-128 launch of 64-row items.
  const PrefixAttentionParams probe = ProbeLaunch(settings, 128, DType::kFloat16, SMALL_TILE_ROWS);
  const bool by_rows = settings.consumer_wgs == 0;  // auto: narrow exactly where items have ≤ 64 rows
  return by_rows && SelectPrefixKernel(probe) == PrefixKernelPath::kWgmma && sm90a::UsesNarrowCta(probe)
             ? SMALL_TILE_ROWS
             : 0;
}

int PrefixAttentionCtasPerSm(int head_dim, DType dtype, PrefixKernelChoice kernel, int max_item_rows) {
  PrefixKernelSettings settings;
  settings.kernel = kernel;
  const PrefixAttentionParams probe = ProbeLaunch(settings, head_dim, dtype, max_item_rows);
  if (SelectPrefixKernel(probe) == PrefixKernelPath::kWgmma) return 1;  // persistent, 1 CTA per SM
  const bool fp16 = dtype == DType::kFloat16;
  const int r = max_item_rows;
  switch (head_dim) {
    case 64:
      return fp16 ? RunPrefixAttentionCtasPerSm<__half, 64>(r)
                  : RunPrefixAttentionCtasPerSm<__nv_bfloat16, 64>(r);
    case 128:
      return fp16 ? RunPrefixAttentionCtasPerSm<__half, 128>(r)
                  : RunPrefixAttentionCtasPerSm<__nv_bfloat16, 128>(r);
    case 256:
      return fp16 ? RunPrefixAttentionCtasPerSm<__half, 256>(r)
                  : RunPrefixAttentionCtasPerSm<__nv_bfloat16, 256>(r);
  }
  PREFIXD_THROW(ErrorKind::kUnsupported, "PrefixAttention: head_dim " << head_dim
                                             << " has no kernel (64, 128, 256)");
}

void PrefixAttention(const PrefixAttentionParams& params, cudaStream_t stream) {
  CheckParams(params);
  if (params.num_items > 0 && SelectPrefixKernel(params) == PrefixKernelPath::kWgmma)
    return sm90a::PrefixAttention(params, stream);
  PREFIXD_CHECK_ARG(!params.states_16bit || params.num_items == 0,
                    "PrefixAttention: 16-bit states (states_16bit) come only from the sm_90a kernel, which does not "
                    "run here");
  const bool fp16 = params.dtype == DType::kFloat16;
  switch (params.head_dim) {
    case 64:
      return fp16 ? RunPrefixAttention<__half, 64>(params, stream)
                  : RunPrefixAttention<__nv_bfloat16, 64>(params, stream);
    case 128:
      return fp16 ? RunPrefixAttention<__half, 128>(params, stream)
                  : RunPrefixAttention<__nv_bfloat16, 128>(params, stream);
    case 256:
      return fp16 ? RunPrefixAttention<__half, 256>(params, stream)
                  : RunPrefixAttention<__nv_bfloat16, 256>(params, stream);
  }
  PREFIXD_THROW(ErrorKind::kUnsupported, "PrefixAttention: head_dim " << params.head_dim
                                             << " has no kernel (64, 128, 256)");
}

}  // namespace prefixd::kernels::cuda
