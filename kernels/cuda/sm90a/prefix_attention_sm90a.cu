// Host side of the sm_90a prefix attention path: TMA tensor maps (encoded through the driver entry
// point, never by linking libcuda), their cache, the device check, and the (dtype, head_dim)
// dispatch to the kernels instantiated in inst/.
#include "kernels/cuda/sm90a/prefix_attention_sm90a.h"

#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "prefixd/common/cuda_check.h"
#include "kernels/cuda/resident_ctas.cuh"
#include "kernels/cuda/sm90a/prefix_attention_sm90a.cuh"
#include "prefixd/common/error.h"

namespace prefixd::kernels::cuda::sm90a {

extern template void RunWgmmaPrefixAttention<__half, 64>(const WgmmaLaunch&, cudaStream_t);
extern template void RunWgmmaPrefixAttention<__half, 128>(const WgmmaLaunch&, cudaStream_t);
extern template void RunWgmmaPrefixAttention<__nv_bfloat16, 64>(const WgmmaLaunch&, cudaStream_t);
extern template void RunWgmmaPrefixAttention<__nv_bfloat16, 128>(const WgmmaLaunch&, cudaStream_t);
extern template void RunWgmmaPrefixAttention<__half, 256>(const WgmmaLaunch&, cudaStream_t);
extern template void RunWgmmaPrefixAttention<__nv_bfloat16, 256>(const WgmmaLaunch&, cudaStream_t);
extern template bool WgmmaPrefixAttentionLoads<__half, 64>();
extern template bool WgmmaPrefixAttentionLoads<__half, 128>();
extern template bool WgmmaPrefixAttentionLoads<__nv_bfloat16, 64>();
extern template bool WgmmaPrefixAttentionLoads<__nv_bfloat16, 128>();
extern template bool WgmmaPrefixAttentionLoads<__half, 256>();
extern template bool WgmmaPrefixAttentionLoads<__nv_bfloat16, 256>();

namespace {

// cuTensorMapEncodeTiled's signature (cuda.h), reached through cudaGetDriverEntryPointByVersion.
using EncodeTiledFn = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                   const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                                   CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

EncodeTiledFn EncodeTiled() {
  static const EncodeTiledFn fn = [] {
    void* ptr = nullptr;
    cudaDriverEntryPointQueryResult status = cudaDriverEntryPointSymbolNotFound;
    const cudaError_t err =
        cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &ptr, 12000, cudaEnableDefault, &status);
    if (err != cudaSuccess || status != cudaDriverEntryPointSuccess) {
      (void)cudaGetLastError();
      return EncodeTiledFn(nullptr);
    }
    return reinterpret_cast<EncodeTiledFn>(ptr);
  }();
  return fn;
}

// Rows (token slots) the tensor maps claim. The kernel never addresses a box past the end of the
// group's prefix run (see prefix_attention_sm90a.cuh), so the true pool size is not needed; this
// is the largest extent a signed 32-bit TMA coordinate can reach.
constexpr cuuint64_t kMapSlots = (cuuint64_t(1) << 31) - 1;

// Requests the Q map claims: the kernel only addresses rows of real requests of a group (a
// warpgroup's 64 rows by TMA only when all are), so the batch size is not needed.
constexpr cuuint64_t kMapRequests = cuuint64_t(1) << 24;

// One tiled map with the 128-byte swizzle: dims/strides as cuTensorMapEncodeTiled takes them (dim 0
// innermost, strides in bytes of dims 1..), every element stride 1.
CUtensorMap EncodeMap(const void* base, DType dtype, cuuint32_t rank, const cuuint64_t* dims, const cuuint64_t* strides,
                      const cuuint32_t* box, const char* what) {
  const EncodeTiledFn encode = EncodeTiled();
  if (encode == nullptr)
    PREFIXD_THROW(ErrorKind::kUnsupported, "sm_90a prefix attention: the driver has no cuTensorMapEncodeTiled");
  CUtensorMap map;
  std::memset(&map, 0, sizeof(map));
  const cuuint32_t element_strides[3] = {1, 1, 1};
  const CUresult res = encode(&map,
                              dtype == DType::kFloat16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
                                                       : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
                              rank, const_cast<void*>(base), dims, strides, box, element_strides,
                              CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                              CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (res != CUDA_SUCCESS) {
    std::string shape;
    for (cuuint32_t i = 0; i < rank; ++i)
      shape += (i ? " x " : "") + std::to_string(dims[i]) + " (box " + std::to_string(box[i]) + ")";
    PREFIXD_THROW(ErrorKind::kLibrary, "sm_90a prefix attention: cuTensorMapEncodeTiled failed (CUresult "
                                           << int(res) << ") for the " << what << " map at " << base << ", " << shape);
  }
  return map;
}

// A 2D map over one layer's K or V: dim 0 = the H_kv · D elements of a slot, dim 1 = slots
// (stride token_stride elements), box 64 × box_rows.
CUtensorMap EncodeKvMap(const void* base, int64_t row_elems, int64_t token_stride, DType dtype, int box_rows) {
  const cuuint64_t dims[2] = {cuuint64_t(row_elems), kMapSlots};
  const cuuint64_t strides[1] = {cuuint64_t(token_stride) * 2};
  const cuuint32_t box[2] = {64, cuuint32_t(box_rows)};
  return EncodeMap(base, dtype, 2, dims, strides, box, "K/V");
}

// A 3D map over the queries [requests][H_qo][D]: dims {D, H_qo, requests}, box {64 columns, g heads,
// 64 / g requests}: the 64 rows of a warpgroup in group order (prefix_attention_sm90a.cuh, LoadQTma).
// `requests` > 0: q's true extent (rows past it are zero-filled); 0: unknown (kMapRequests).
CUtensorMap EncodeQMap(const void* base, int num_qo_heads, int head_dim, int gqa, DType dtype, int64_t requests) {
  const cuuint64_t dims[3] = {cuuint64_t(head_dim), cuuint64_t(num_qo_heads),
                              requests > 0 ? cuuint64_t(requests) : kMapRequests};
  const cuuint64_t strides[2] = {cuuint64_t(head_dim) * 2, cuuint64_t(num_qo_heads) * head_dim * 2};
  const cuuint32_t box[3] = {64, cuuint32_t(gqa), cuuint32_t(64 / gqa)};
  return EncodeMap(base, dtype, 3, dims, strides, box, "Q");
}

// Encoded maps by (what, base pointer, shape): in steady state one entry per layer's K and V and
// per query buffer.
struct MapKey {
  // 0: K/V (a = row_elems, b = token_stride, c = box_rows); 1: Q (a = H_qo, b = D, c = g,
  // requests = q's extent or 0)
  int kind;
  const void* base;
  int64_t a, b;
  DType dtype;
  int c;
  int64_t requests = 0;
  // The same map but for the request extent: a query buffer's batch size changes from step to step.
  bool SameBuffer(const MapKey& o) const {
    return kind == o.kind && base == o.base && a == o.a && b == o.b && dtype == o.dtype && c == o.c;
  }
};
struct MapEntry {
  MapKey key;
  CUtensorMap map;
};

CUtensorMap EncodeKeyedMap(const MapKey& key) {
  return key.kind == 0 ? EncodeKvMap(key.base, key.a, key.b, key.dtype, key.c)
                       : EncodeQMap(key.base, int(key.a), int(key.b), key.c, key.dtype, key.requests);
}

CUtensorMap CachedMap(const MapKey& key) {
  static std::mutex mutex;
  static std::vector<MapEntry> cache;
  constexpr size_t kMaxEntries = 1024;  // 2-4 maps × layers × pools, + query buffers; cleared when full
  std::lock_guard<std::mutex> lock(mutex);
  for (MapEntry& e : cache) {
    if (!e.key.SameBuffer(key)) continue;
    // A new batch size re-encodes the buffer's entry in place (one host encode), so that a serving
    // loop's changing batches neither grow the cache nor lengthen this scan.
    if (e.key.requests != key.requests) e = {key, EncodeKeyedMap(key)};
    return e.map;
  }
  if (cache.size() >= kMaxEntries) cache.clear();
  cache.push_back({key, EncodeKeyedMap(key)});
  return cache.back().map;
}

}  // namespace

CUtensorMap CachedKvMap(const void* base, int64_t row_elems, int64_t token_stride, DType dtype, int box_rows) {
  return CachedMap(MapKey{0, base, row_elems, token_stride, dtype, box_rows});
}

namespace {

// Per-device facts, looked up once: 0 unknown, 1 no, 2 yes.
constexpr int kMaxDevices = 64;
std::atomic<int> g_device_ready[kMaxDevices];

}  // namespace

bool Built() { return true; }

bool Supports(const PrefixAttentionParams& p) {
  return (p.head_dim == 64 || p.head_dim == 128 || p.head_dim == 256) && !p.causal &&
         (p.dtype == DType::kFloat16 || p.dtype == DType::kBFloat16) && p.num_kv_heads > 0 &&
         int64_t(p.num_kv_heads) * p.head_dim <= p.token_stride && p.token_stride % 8 == 0;
}

bool DeviceReady() {
  // Never throws: no device, no driver or another architecture all mean "not here".
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  if (device >= kMaxDevices) return false;
  int state = g_device_ready[device].load(std::memory_order_acquire);
  if (state == 0) {
    int major = 0, minor = 0;
    bool ready = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) == cudaSuccess &&
                 cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) == cudaSuccess;
    (void)cudaGetLastError();
    ready = ready && major == 9 && minor == 0 && EncodeTiled() != nullptr;
    ready = ready && WgmmaPrefixAttentionLoads<__half, 64>() && WgmmaPrefixAttentionLoads<__half, 128>() &&
            WgmmaPrefixAttentionLoads<__half, 256>() && WgmmaPrefixAttentionLoads<__nv_bfloat16, 64>() &&
            WgmmaPrefixAttentionLoads<__nv_bfloat16, 128>() && WgmmaPrefixAttentionLoads<__nv_bfloat16, 256>();
    state = ready ? 2 : 1;
    g_device_ready[device].store(state, std::memory_order_release);
  }
  return state == 2;
}

int TileRows() { return WgmmaPrefixConfig<__half, 128, 2, true>::TILE_ROWS; }

bool UsesNarrowCta(const PrefixAttentionParams& params) {
  // Where no item needs a second consumer warpgroup (WgmmaPrefixConfig): the decode kernel's CTAs
  // then fit beside it on every SM.
  // Never at head_dim 256 (RunWgmmaPrefixAttention): the narrow CTA's shared memory alone fills an SM.
  if (params.head_dim == 256) return false;
  constexpr int kNarrowRows = WgmmaPrefixConfig<__half, 128, 2, false, 1>::TILE_ROWS;
  const int32_t wgs = params.settings.consumer_wgs;
  return wgs == 1 || (wgs == 0 && params.max_item_rows > 0 && params.max_item_rows <= kNarrowRows);
}

void PrefixAttention(const PrefixAttentionParams& params, cudaStream_t stream) {
  PREFIXD_CHECK_ARG(Supports(params), "sm_90a prefix attention: unsupported shape (head_dim "
                                          << params.head_dim << ", causal " << params.causal << ")");
  // The 16-bit states' kernels are built where the TMA decode, their other writer, exists.
  PREFIXD_CHECK_ARG(!params.states_16bit || params.head_dim <= 128,
                    "sm_90a prefix attention: 16-bit states (states_16bit) are built for head_dim 64 and 128 "
                    "only, not " << params.head_dim);
  if (params.num_items == 0) return;
  const int sms = DeviceSmCountOnce();
  WgmmaLaunch l;
  l.params = params;
  const int64_t row_elems = int64_t(params.num_kv_heads) * params.head_dim;
  // Tokens per K/V tile: the settings' where the head_dim has that tile (a test or benchmark
  // forcing one; others are ignored), else the plan's (ChoosePrefixKvTileTokens), else the
  // head_dim's default.
  const int tile_default = DefaultPrefixKvTileTokens(params.head_dim);
  const int tile_other = AlternatePrefixKvTileTokens(params.head_dim);
  const int forced_tile = params.settings.kv_tile;
  const bool forced = forced_tile > 0 && (forced_tile == tile_default || forced_tile == tile_other);
  const int asked = forced ? forced_tile : params.kv_tile_tokens;
  PREFIXD_CHECK_ARG(asked == 0 || asked == tile_default || (tile_other > 0 && asked == tile_other),
                    "sm_90a prefix attention: no " << asked << "-token K/V tiles at head_dim " << params.head_dim
                                                   << " (" << tile_default
                                                   << (tile_other > 0 ? " or " + std::to_string(tile_other) : " only")
                                                   << ")");
  l.tile_tokens = asked > 0 ? asked : tile_default;
  // One box per K/V tile and 64-column panel: the tile's tokens.
  l.tmap_k = CachedKvMap(params.k, row_elems, params.token_stride, params.dtype, l.tile_tokens);
  l.tmap_v = CachedKvMap(params.v, row_elems, params.token_stride, params.dtype, l.tile_tokens);
  // Q by TMA (settings.q_tma, the default) where the map can be made: g divides a warpgroup's 64
  // rows and q is 16-byte aligned; otherwise gathered by cp.async. With q's extent known, also for
  // warpgroups of fewer than 64 rows (WgmmaLaunch::q_tma_partial).
  const PrefixKernelSettings& set = params.settings;
  const int gqa = params.num_qo_heads / params.num_kv_heads;
  l.q_tma = set.q_tma && gqa >= 1 && 64 % gqa == 0 && reinterpret_cast<uintptr_t>(params.q) % 16 == 0;
  l.q_tma_partial = l.q_tma && set.q_tma_partial && params.num_requests > 0;
  if (l.q_tma)
    l.tmap_q = CachedMap(MapKey{1, params.q, params.num_qo_heads, params.head_dim, params.dtype, gqa,
                                l.q_tma_partial ? params.num_requests : 0});
  // A balanced plan's grid where it fits (the kernel then follows the plan's CTA chains; with any
  // other grid it takes the items round-robin: NextItemOfCta).
  l.grid = PersistentGridCtas(params.num_items, params.balanced_ctas, params.max_ctas, set, sms);
  l.stages = set.stages;
  // On by default: 1.3-6.5 µs less per cascade step on every shape of the grid, same results
  // (bench/RESULTS.md, final run).
  l.trigger_dependents = set.trigger_dependents;
  l.trigger_at_start = params.trigger_at_start;
  l.overlap = set.overlap;
  // The K/V tiles' L2 priority: the plan's (evict-first or none) unless the settings force one.
  switch (set.kv_l2_hint) {
    case PrefixKvL2Hint::kPlan: l.kv_evict = params.kv_evict_first ? L2Evict::kFirst : L2Evict::kNone; break;
    case PrefixKvL2Hint::kNone: l.kv_evict = L2Evict::kNone; break;
    case PrefixKvL2Hint::kEvictFirst: l.kv_evict = L2Evict::kFirst; break;
    case PrefixKvL2Hint::kEvictLast: l.kv_evict = L2Evict::kLast; break;
  }
  l.narrow = UsesNarrowCta(params);
  const bool fp16 = params.dtype == DType::kFloat16;
  if (params.head_dim == 64)
    return fp16 ? RunWgmmaPrefixAttention<__half, 64>(l, stream) : RunWgmmaPrefixAttention<__nv_bfloat16, 64>(l, stream);
  if (params.head_dim == 256)
    return fp16 ? RunWgmmaPrefixAttention<__half, 256>(l, stream) : RunWgmmaPrefixAttention<__nv_bfloat16, 256>(l, stream);
  return fp16 ? RunWgmmaPrefixAttention<__half, 128>(l, stream) : RunWgmmaPrefixAttention<__nv_bfloat16, 128>(l, stream);
}

}  // namespace prefixd::kernels::cuda::sm90a
