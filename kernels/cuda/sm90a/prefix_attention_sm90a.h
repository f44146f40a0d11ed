// The two implementations behind PrefixAttention (kernels/cuda/prefix_attention.h) and how the
// launcher chooses between them. Internal to kernels/ (CUDA runtime types allowed).
//
//   mma.sync (kernels/cuda/prefix_attention.cuh): every head_dim, causal or not, any sm_80+ GPU.
//   wgmma    (kernels/cuda/sm90a/): FlashAttention-3 style (TMA + wgmma, warp-specialised,
//            persistent); head_dim 64, 128 and 256, fp16/bf16, non-causal; compiled only for sm_90a,
//            so it runs only on compute capability 9.0 (H100, H200).
//
// Selection (SelectPrefixKernel), by PrefixAttentionParams::settings.kernel (PrefixKernelSettings:
// read from the environment once by the launches' owner, never per launch):
//   PREFIXD_PREFIX_KERNEL=mma    always mma.sync;
//   PREFIXD_PREFIX_KERNEL=wgmma  wgmma wherever it applies (shape supported, device 9.0, built);
//   unset or "auto"              the default: wgmma wherever it applies (kWgmmaByDefault in
//                                prefix_attention.cu; it measured faster than mma.sync on every
//                                shape it applies to, bench/NOTES-prefix.md).
// Any other value is rejected (kInvalidArgument), so a typo cannot silently time the wrong kernel.
// Knobs of the wgmma path, for tests and benchmarks: PREFIXD_SM90A_MAX_CTAS=n caps the persistent
// grid (many items per CTA; PrefixAttentionParams::max_ctas caps it too, the smaller cap wins),
// PREFIXD_SM90A_STAGES=2|3 the K/V ring depth (3 means 4 at head_dim 64 and 2 at head_dim 256, where
// Q and two stages already take 192 KiB), PREFIXD_SM90A_KV_POLICY=
// plan|normal|first|last the L2 eviction priority (.L2::cache_hint, createpolicy) of the K/V tile
// loads (plan, the default: evict-first where the plan says so, PrefixKvEvictFirst in
// prefixd/kernels/prefix_l2_hint.h; otherwise no hint), PREFIXD_SM90A_Q_TMA=0|1 the query rows by
// TMA (1, the default, wherever g divides 64) or gathered by cp.async (0), PREFIXD_SM90A_Q_TMA_PARTIAL=
// 0|1 those of warpgroups with fewer than 64 rows by TMA too (1, the default, where the caller gives
// q's request count, PrefixAttentionParams::num_requests) or by cp.async (0), PREFIXD_SM90A_CONSUMERS=
// auto|1|2 the consumer warpgroups per CTA (auto: one, the narrow CTA that leaves half the register
// file to the decode kernel's CTAs, where every item has at most 64 rows; otherwise two; always two
// at head_dim 256, where the narrow CTA would leave no room beside it), PREFIXD_SM90A_KV_TILE=
// auto|128|160|192 the K/V tile (auto: the plan's, PrefixAttentionParams::kv_tile_tokens, from
// ChoosePrefixKvTileTokens); 128 or 192 at head_dim 64, 128 or 160 at head_dim 128 (a value the
// head_dim has no kernel for is ignored there); head_dim 256 has its one tile.
// By default every CTA executes griddepcontrol.launch_dependents as it starts its last item, so that
// the decode kernel (a programmatic dependent launch, decode_attention.h) is scheduled while this
// grid drains; PREFIXD_PREFIX_PDL_TRIGGER=0 waits for the last prefix CTA to exit instead.
#pragma once

#include <cuda.h>  // CUtensorMap (a plain struct; no driver library is linked)
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/prefix_attention.h"

namespace prefixd::kernels::cuda {

enum class PrefixKernelPath { kMmaSync, kWgmma };
const char* PrefixKernelPathName(PrefixKernelPath path);  // "mma" / "wgmma"

// Defined in prefix_attention.cu (always built with CUDA).
PrefixKernelPath SelectPrefixKernel(const PrefixAttentionParams& params);

namespace sm90a {

// Query rows per consumer warpgroup (the wgmma M). A row tile's warpgroups start at item.row_begin +
// 64·k: they hold whole requests (rows local_request · g + head) only where g divides 64, which the
// fused kernel's per-request arrival counts rely on (FusedCascadeSupportsShape).
constexpr int kWarpgroupRows = 64;

// Whether this build contains the sm_90a kernels (CMake: PREFIXD_HAVE_SM90A).
bool Built();
// Shapes the wgmma kernel computes: head_dim 64/128/256, fp16/bf16, non-causal, token_stride and the
// item rows any (tile rows 128, items with more rows walk their row tiles).
bool Supports(const PrefixAttentionParams& params);
// The current device is compute capability 9.0 and the kernels load on it (cached per device).
bool DeviceReady();
// Rows of one row tile (the planner's prefix_tile_rows for this path).
int TileRows();
// Whether a launch of these params runs the narrow CTA (one consumer warpgroup; settings.
// consumer_wgs, or auto with every item at most 64 rows), beside which the decode kernel's CTAs fit.
bool UsesNarrowCta(const PrefixAttentionParams& params);
// The persistent grid's CTAs for num_items items on a device of `sms` SMs: one CTA per SM, capped by
// settings.max_ctas and the launch's max_ctas (the smaller cap wins), at most one per item; the
// plan's balanced grid (balanced_ctas > 0) where it fits under both. What PrefixAttention launches;
// also how many SMs the grid leaves idle (the early decode, cuda_backend.cc).
inline int PersistentGridCtas(int num_items, int balanced_ctas, int max_ctas, const PrefixKernelSettings& settings,
                              int sms) {
  int cap = settings.max_ctas > 0 ? settings.max_ctas : sms;
  if (max_ctas > 0) cap = cap < max_ctas ? cap : max_ctas;
  const int grid = num_items < cap ? num_items : cap;
  return balanced_ctas > 0 && balanced_ctas <= grid ? balanced_ctas : grid;
}
// Asynchronous on `stream`, no allocation (tensor maps are encoded on the host once per K/V base
// pointer and shape, then cached). Requires Supports(params) && DeviceReady().
void PrefixAttention(const PrefixAttentionParams& params, cudaStream_t stream);

// The TMA map over one layer's K or V (dim 0: the row_elems = H_kv · D elements of a slot, dim 1:
// slots at token_stride elements), boxes of 64 columns × box_rows slots with the 128-byte swizzle;
// encoded once per (base, shape, box) and cached. The prefix kernel's boxes are its K/V tiles,
// the fused cascade kernel's suffix boxes one page each. Throws kUnsupported without the driver's
// encoder, kLibrary when it fails.
CUtensorMap CachedKvMap(const void* base, int64_t row_elems, int64_t token_stride, DType dtype, int box_rows);

}  // namespace sm90a
}  // namespace prefixd::kernels::cuda
