// Hopper-only (sm_90a) building blocks of the wgmma prefix attention kernel: mbarriers, the bulk
// tensor copy engine (TMA), warpgroup register reconfiguration, and wgmma with its shared-memory
// matrix descriptors. Compiled only into the sm_90a objects (kernels/cuda/sm90a/, CMake block
// "sm_90a prefix attention"); nothing here may be included by code built for plain sm_90.
//
// Shared-memory tiles are "panels" of 64 16-bit columns: rows of 128 bytes with the 128-byte
// swizzle (16-byte chunk c of row r stored at chunk c ^ (r mod 8)), 8-row atoms of 1024 bytes,
// each panel 1024-byte aligned. This is the layout TMA writes with CU_TENSOR_MAP_SWIZZLE_128B and
// the one wgmma reads with swizzle mode 1 (the swizzle is a function of the address bits, hence
// the alignment). Facts used (PTX ISA, "Matrix Descriptor Format" and "Shared Memory Matrix Layout"):
//   descriptor bits 0-13: start address >> 4, 16-29: leading-dimension byte offset >> 4,
//   32-45: stride-dimension byte offset >> 4, 62-63: swizzle (1 = 128 B).
//   K-major, swizzled: LBO unused (1); SBO = offset between 8-row groups (1024 B here). A k16 step
//     inside a 128-byte row advances the start address by 32 bytes.
//   MN-major, swizzled: LBO = offset between 64-element panels along M/N; SBO = offset between
//     8-row (k) groups (1024 B). A k16 step advances the start address by 16 rows (2048 B).
// Register fragments of m64nNk16 (per warp w of the warpgroup, lane l, g = l / 4, t = l % 4):
//   accumulator d[4j + e]: row 16w + g + 8·(e / 2), column 8j + 2t + (e % 2)  (mma.sync's C, tiled)
//   A from registers a0..a3: rows 16w + g (+8 for a1, a3), columns 2t.. (+8 for a2, a3)  (mma.sync's A)
// The Wgmma<T, N> wrappers at the end were generated (their operand lists are mechanical).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/mma_sm80.cuh"

namespace prefixd::kernels::cuda::sm90a {

// ---- mbarriers ---------------------------------------------------------------------------------

__device__ __forceinline__ void MbarrierInit(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count));
}
// Makes initialised barriers visible to the async proxy (TMA) before first use.
__device__ __forceinline__ void FenceBarrierInit() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
__device__ __forceinline__ void MbarrierArrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
// One arrival that also announces `bytes` of TMA traffic completing on this barrier's phase.
__device__ __forceinline__ void MbarrierArriveExpectTx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes)
               : "memory");
}
__device__ __forceinline__ bool MbarrierTryWait(uint32_t bar, uint32_t parity) {
  uint32_t done;
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
      "selp.u32 %0, 1, 0, p;\n"
      "}\n"
      : "=r"(done)
      : "r"(bar), "r"(parity)
      : "memory");
  return done != 0;
}
__device__ __forceinline__ uint64_t GlobalTimerNs() {
  uint64_t t;
  asm volatile("mov.u64 %0, %globaltimer;\n" : "=l"(t));
  return t;
}
// No legitimate wait in these kernels outlasts one KV tile of work (microseconds); a wait that
// takes this long means a broken pipeline.
constexpr uint64_t kBarrierWatchdogNs = 20'000'000'000ull;

// Blocks until the phase of parity `parity` has completed. A fresh barrier is in phase 0, and the
// phase "before" it (parity 1) counts as completed: waiting on parity 1 returns at once.
// WATCHDOG: trap (a launch error) instead of hanging when the wait outlasts kBarrierWatchdogNs.
// Only the producer uses it: a trap block in the consumers' code makes ptxas give up their
// setmaxnreg register budget (C7512, wgmma serialised); a consumer stuck on a full barrier stops
// the producer at an empty one soon after, and that trap ends the whole grid.
template <bool WATCHDOG = false>
__device__ __forceinline__ void MbarrierWait(uint32_t bar, uint32_t parity) {
  if constexpr (WATCHDOG) {
    if (MbarrierTryWait(bar, parity)) return;
    const uint64_t start = GlobalTimerNs();
    for (uint32_t n = 1;; ++n) {
      if (MbarrierTryWait(bar, parity)) return;
      // (No printf here: a call inside the kernel would serialise every wgmma, ptxas C7510.)
      if ((n & 1023) == 0 && GlobalTimerNs() - start > kBarrierWatchdogNs) __trap();
    }
  } else {
    while (!MbarrierTryWait(bar, parity)) {
    }
  }
}

// ---- TMA ---------------------------------------------------------------------------------------

__device__ __forceinline__ void PrefetchTensorMap(const void* tmap) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(tmap)) : "memory");
}
// Copies the box at element coordinates (x, y) of a 2D tensor map to shared memory `dst`;
// completion (its bytes) is signalled on `bar`. Out-of-range elements (negative y) are zeros.
__device__ __forceinline__ void TmaLoad2d(uint32_t dst, const void* tmap, int x, int y,
                                          uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3}], [%4];\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(tmap)), "r"(x), "r"(y), "r"(bar)
      : "memory");
}

// The same for a 3D tensor map: the box at element coordinates (x, y, z).
__device__ __forceinline__ void TmaLoad3d(uint32_t dst, const void* tmap, int x, int y, int z, uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3, %4}], [%5];\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(tmap)), "r"(x), "r"(y), "r"(z), "r"(bar)
      : "memory");
}

// Starts pulling `bytes` (a multiple of 16) at the 16-byte aligned global `addr` into L2 (no
// shared memory, no completion: a hint).
__device__ __forceinline__ void BulkPrefetchL2(const void* addr, uint32_t bytes) {
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;\n" ::"l"(addr), "r"(bytes) : "memory");
}

// Starts pulling the line holding global `addr` into L2 (a per-thread hint, no completion).
__device__ __forceinline__ void PrefetchLineL2(const void* addr) {
  asm volatile("prefetch.global.L2 [%0];\n" ::"l"(addr));
}

// Starts pulling the box at (x, y) of a 2D tensor map into L2 (no shared memory, no completion).
__device__ __forceinline__ void TmaPrefetch2d(const void* tmap, int x, int y) {
  asm volatile("cp.async.bulk.prefetch.tensor.2d.L2.global.tile [%0, {%1, %2}];\n" ::"l"(reinterpret_cast<uint64_t>(tmap)),
               "r"(x), "r"(y)
               : "memory");
}

// L2 eviction priority of a bulk tensor load (the .L2::cache_hint operand): a 64-bit cache policy
// made by createpolicy (fraction 1.0: every line the load brings in gets the priority).
enum class L2Evict : int { kNone = 0, kFirst = 1, kLast = 2, kNormal = 3 };

__device__ __forceinline__ uint64_t CreateL2Policy(L2Evict evict) {
  uint64_t policy = 0;
  if (evict == L2Evict::kFirst)
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(policy));
  else if (evict == L2Evict::kLast)
    asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;\n" : "=l"(policy));
  else
    asm volatile("createpolicy.fractional.L2::evict_normal.b64 %0, 1.0;\n" : "=l"(policy));
  return policy;
}

// TmaLoad2d with an L2 cache policy from CreateL2Policy.
__device__ __forceinline__ void TmaLoad2dHint(uint32_t dst, const void* tmap, int x, int y, uint32_t bar,
                                              uint64_t policy) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.L2::cache_hint"
      " [%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(tmap)), "r"(x), "r"(y), "r"(bar), "l"(policy)
      : "memory");
}

// ---- warp-level helpers of the suffix warps (suffix_warps_sm90a.cuh) ---------------------------

// The transpose of an 8×8 b16 matrix held as one mma fragment register per lane (row lane / 4,
// columns 2·(lane % 4)..+1): afterwards each lane holds the same position of the transpose.
__device__ __forceinline__ uint32_t MovMatrixTrans(uint32_t x) {
  uint32_t y;
  asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;\n" : "=r"(y) : "r"(x));
  return y;
}
// A load that no later load of this thread may pass (device scope): reads a counter that other
// CTAs release after writing the data it guards.
__device__ __forceinline__ int LoadAcquire(const int32_t* ptr) {
  int v;
  asm volatile("ld.acquire.gpu.global.b32 %0, [%1];\n" : "=r"(v) : "l"(ptr) : "memory");
  return v;
}

// ---- warpgroups --------------------------------------------------------------------------------

// Register budget per thread of the executing warpgroup (needs a register cap at kernel entry:
// __launch_bounds__(threads, 1)).
template <int REGS>
__device__ __forceinline__ void WarpgroupRegAlloc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(REGS));
}
template <int REGS>
__device__ __forceinline__ void WarpgroupRegDealloc() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(REGS));
}
// Barrier among `threads` threads (a multiple of 32) on hardware barrier `id` (0 is __syncthreads).
__device__ __forceinline__ void NamedBarrierSync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
// Orders this thread's generic-proxy shared-memory writes before later async-proxy reads (wgmma).
__device__ __forceinline__ void FenceProxyAsync() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// ---- wgmma -------------------------------------------------------------------------------------

__device__ __forceinline__ void WgmmaFence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void WgmmaCommit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int N>
__device__ __forceinline__ void WgmmaWait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// Pins registers an in-flight wgmma reads or writes: the compiler may not move their other uses
// across this point (accumulators after the wait, A fragments until the wait).
template <int N>
__device__ __forceinline__ void FenceRegisters(float (&r)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(r[i])::"memory");
}
template <int N, int M>
__device__ __forceinline__ void FenceRegisters(uint32_t (&r)[N][M]) {
#pragma unroll
  for (int i = 0; i < N; ++i)
#pragma unroll
    for (int j = 0; j < M; ++j) asm volatile("" : "+r"(r[i][j])::"memory");
}

// A value every lane of the warp holds alike, as lane 0's through a shuffle (ON): ptxas then
// knows it is warp-uniform and may keep it, and what is computed from it, in uniform registers,
// which wgmma's descriptors are read from. OFF: the value as it is.
template <bool ON, typename V>
__device__ __forceinline__ V WarpUniform(V value) {
  if constexpr (ON) return __shfl_sync(0xffffffffu, value, 0);
  return value;
}

// Descriptor of a 128-byte-swizzled operand starting at shared address `addr`.
__device__ __forceinline__ uint64_t SmemDescriptor(uint32_t addr, uint32_t lead_bytes,
                                                   uint32_t stride_bytes) {
  return uint64_t((addr & 0x3FFFF) >> 4) | (uint64_t(lead_bytes >> 4) << 16) |
         (uint64_t(stride_bytes >> 4) << 32) | (uint64_t(1) << 62);
}
// The descriptor of the same operand `bytes` further on. The start address field (bits 0-13, in
// 16-byte units) of a shared-memory address below 256 KiB never carries into the next field, so
// the offset is added to the low word alone: one integer add per wgmma on top of a descriptor
// computed once per tile, instead of the mask, shift and or of SmemDescriptor every time.
__device__ __forceinline__ uint64_t DescriptorPlus(uint64_t desc, uint32_t bytes) {
  const uint32_t lo = uint32_t(desc) + (bytes >> 4), hi = uint32_t(desc >> 32);
  return (uint64_t(hi) << 32) | lo;
}
// K-major operand (rows of one panel: Q rows for A, K tokens for B); k16 step `ks` of a tile whose
// panels are `panel_bytes` apart.
__device__ __forceinline__ uint32_t KMajorStepBytes(int ks, uint32_t panel_bytes) {
  return (ks / 4) * panel_bytes + (ks % 4) * 32;
}
// BY_ADD: the step as DescriptorPlus of the tile's descriptor; otherwise the whole descriptor of the
// step's address (WgmmaPrefixConfig::DESCRIPTORS_BY_ADD says where each is faster).
template <bool BY_ADD = true>
__device__ __forceinline__ uint64_t KMajorDescriptor(uint32_t tile, int ks, uint32_t panel_bytes) {
  if constexpr (BY_ADD) return DescriptorPlus(SmemDescriptor(tile, 16, 1024), KMajorStepBytes(ks, panel_bytes));
  return SmemDescriptor(tile + KMajorStepBytes(ks, panel_bytes), 16, 1024);
}
// MN-major B operand (V: tokens are k, head_dim columns are n, one panel per 64 columns); k16
// step `ks` (16 tokens).
template <bool BY_ADD = true>
__device__ __forceinline__ uint64_t MnMajorDescriptor(uint32_t tile, int ks, uint32_t panel_bytes) {
  if constexpr (BY_ADD) return DescriptorPlus(SmemDescriptor(tile, panel_bytes, 1024), ks * 16 * 128);
  return SmemDescriptor(tile + ks * 16 * 128, panel_bytes, 1024);
}

// wgmma.mma_async m64nNk16, fp32 accumulators, for the element type T and N ∈ {8, 64, 128, 160, 192,
// 256}. The accumulator operand lists are long and differ only in length, so one macro writes the
// specialisations (fp16/bf16 × N); each has SS (A and B K-major in shared memory) and RS (A from
// registers a0..a3, B MN-major in shared memory), D[64×N] (+)= A[64×16] · B[16×N].
template <typename T, int N>
struct Wgmma;

// "{%0, ..., %3}" / "{%0, ..., %31}" / ... / "{%0, ..., %127}": the accumulator registers of
// N = 8 / 64 / 128 / 160 / 192 / 256.
#define PREFIXD_WGMMA_D_REGS_4 "{%0, %1, %2, %3}"
#define PREFIXD_WGMMA_D_REGS_32 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"
#define PREFIXD_WGMMA_D_REGS_64 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}"
#define PREFIXD_WGMMA_D_REGS_80 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79}"
#define PREFIXD_WGMMA_D_REGS_96 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95}"
#define PREFIXD_WGMMA_D_REGS_128 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}"
// Eight accumulator operands from d[i].
#define PREFIXD_WGMMA_D_OPS_8(i)                                                                      \
  "+f"(d[(i) + 0]), "+f"(d[(i) + 1]), "+f"(d[(i) + 2]), "+f"(d[(i) + 3]), "+f"(d[(i) + 4]),            \
      "+f"(d[(i) + 5]), "+f"(d[(i) + 6]), "+f"(d[(i) + 7])
#define PREFIXD_WGMMA_D_OPS_4 "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
#define PREFIXD_WGMMA_D_OPS_32 \
  PREFIXD_WGMMA_D_OPS_8(0), PREFIXD_WGMMA_D_OPS_8(8), PREFIXD_WGMMA_D_OPS_8(16), PREFIXD_WGMMA_D_OPS_8(24)
#define PREFIXD_WGMMA_D_OPS_64 \
  PREFIXD_WGMMA_D_OPS_32, PREFIXD_WGMMA_D_OPS_8(32), PREFIXD_WGMMA_D_OPS_8(40), PREFIXD_WGMMA_D_OPS_8(48), \
      PREFIXD_WGMMA_D_OPS_8(56)
#define PREFIXD_WGMMA_D_OPS_80 \
  PREFIXD_WGMMA_D_OPS_64, PREFIXD_WGMMA_D_OPS_8(64), PREFIXD_WGMMA_D_OPS_8(72)
#define PREFIXD_WGMMA_D_OPS_96                                                                           \
  PREFIXD_WGMMA_D_OPS_64, PREFIXD_WGMMA_D_OPS_8(64), PREFIXD_WGMMA_D_OPS_8(72), PREFIXD_WGMMA_D_OPS_8(80), \
      PREFIXD_WGMMA_D_OPS_8(88)
#define PREFIXD_WGMMA_D_OPS_128                                                                          \
  PREFIXD_WGMMA_D_OPS_64, PREFIXD_WGMMA_D_OPS_8(64), PREFIXD_WGMMA_D_OPS_8(72), PREFIXD_WGMMA_D_OPS_8(80), \
      PREFIXD_WGMMA_D_OPS_8(88), PREFIXD_WGMMA_D_OPS_8(96), PREFIXD_WGMMA_D_OPS_8(104),                  \
      PREFIXD_WGMMA_D_OPS_8(112), PREFIXD_WGMMA_D_OPS_8(120)

// T: element type; PTX_T: its PTX name; N: the instruction's n; ACC: accumulators per thread
// (N / 2); then the operand numbers that follow the ACC accumulators, as strings: SS's descriptors
// and predicate, RS's four A registers, B descriptor and predicate.
#define PREFIXD_DEFINE_WGMMA(T, PTX_T, N, ACC, SS_DA, SS_DB, SS_P, RS_A0, RS_A1, RS_A2, RS_A3, RS_DB, RS_P) \
  template <>                                                                                          \
  struct Wgmma<T, N> {                                                                                 \
    static __device__ __forceinline__ void SS(float (&d)[ACC], uint64_t desc_a, uint64_t desc_b,      \
                                              int accumulate) {                                        \
      asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " SS_P ", 0;\n"                                   \
                   "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." PTX_T "." PTX_T " "                \
                   PREFIXD_WGMMA_D_REGS_##ACC ", " SS_DA ", " SS_DB ", p, 1, 1, 0, 0;\n}\n"             \
                   : PREFIXD_WGMMA_D_OPS_##ACC                                                         \
                   : "l"(desc_a), "l"(desc_b), "r"(accumulate));                                       \
    }                                                                                                  \
    static __device__ __forceinline__ void RS(float (&d)[ACC], const uint32_t (&a)[4], uint64_t desc_b, \
                                              int accumulate) {                                        \
      asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " RS_P ", 0;\n"                                   \
                   "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." PTX_T "." PTX_T " "                \
                   PREFIXD_WGMMA_D_REGS_##ACC ", {" RS_A0 ", " RS_A1 ", " RS_A2 ", " RS_A3 "}, " RS_DB  \
                   ", p, 1, 1, 1;\n}\n"                                                                 \
                   : PREFIXD_WGMMA_D_OPS_##ACC                                                         \
                   : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(accumulate));       \
    }                                                                                                  \
  };

PREFIXD_DEFINE_WGMMA(__half, "f16", 8, 4, "%4", "%5", "%6", "%4", "%5", "%6", "%7", "%8", "%9")
PREFIXD_DEFINE_WGMMA(__nv_bfloat16, "bf16", 8, 4, "%4", "%5", "%6", "%4", "%5", "%6", "%7", "%8", "%9")
PREFIXD_DEFINE_WGMMA(__half, "f16", 64, 32, "%32", "%33", "%34", "%32", "%33", "%34", "%35", "%36", "%37")
PREFIXD_DEFINE_WGMMA(__nv_bfloat16, "bf16", 64, 32, "%32", "%33", "%34", "%32", "%33", "%34", "%35", "%36", "%37")
PREFIXD_DEFINE_WGMMA(__half, "f16", 128, 64, "%64", "%65", "%66", "%64", "%65", "%66", "%67", "%68", "%69")
PREFIXD_DEFINE_WGMMA(__nv_bfloat16, "bf16", 128, 64, "%64", "%65", "%66", "%64", "%65", "%66", "%67", "%68", "%69")
PREFIXD_DEFINE_WGMMA(__half, "f16", 160, 80, "%80", "%81", "%82", "%80", "%81", "%82", "%83", "%84", "%85")
PREFIXD_DEFINE_WGMMA(__nv_bfloat16, "bf16", 160, 80, "%80", "%81", "%82", "%80", "%81", "%82", "%83", "%84", "%85")
PREFIXD_DEFINE_WGMMA(__half, "f16", 192, 96, "%96", "%97", "%98", "%96", "%97", "%98", "%99", "%100", "%101")
PREFIXD_DEFINE_WGMMA(__nv_bfloat16, "bf16", 192, 96, "%96", "%97", "%98", "%96", "%97", "%98", "%99", "%100", "%101")
PREFIXD_DEFINE_WGMMA(__half, "f16", 256, 128, "%128", "%129", "%130", "%128", "%129", "%130", "%131", "%132", "%133")
PREFIXD_DEFINE_WGMMA(__nv_bfloat16, "bf16", 256, 128, "%128", "%129", "%130", "%128", "%129", "%130", "%131", "%132", "%133")

#undef PREFIXD_DEFINE_WGMMA
#undef PREFIXD_WGMMA_D_OPS_128
#undef PREFIXD_WGMMA_D_OPS_96
#undef PREFIXD_WGMMA_D_OPS_80
#undef PREFIXD_WGMMA_D_OPS_64
#undef PREFIXD_WGMMA_D_OPS_32
#undef PREFIXD_WGMMA_D_OPS_8
#undef PREFIXD_WGMMA_D_OPS_4
#undef PREFIXD_WGMMA_D_REGS_128
#undef PREFIXD_WGMMA_D_REGS_96
#undef PREFIXD_WGMMA_D_REGS_80
#undef PREFIXD_WGMMA_D_REGS_64
#undef PREFIXD_WGMMA_D_REGS_32
#undef PREFIXD_WGMMA_D_REGS_4

}  // namespace prefixd::kernels::cuda::sm90a
