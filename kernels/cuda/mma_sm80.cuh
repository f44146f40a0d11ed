// Warp-level tensor-core primitives of the sm_80+ mma.sync path (also the portable path on sm_90):
// cp.async global→shared copies, ldmatrix fragment loads, m16n8k16 fp16/bf16 → fp32 mma, and the
// XOR swizzle of shared-memory tiles that keeps both the copies and ldmatrix free of bank conflicts.
//
// Fragment layouts (PTX ISA, "mma.m16n8k16"): lane = 4·group + thread_in_group.
//   A (16×16, row-major)  a0: (group, 2t..2t+1)  a1: (group+8, 2t..)  a2: (group, 8+2t..)  a3: (group+8, 8+2t..)
//   B (16×8,  k × n)      b0: (k = 2t..2t+1, n = group)   b1: (k = 8+2t.., n = group)
//   C (16×8,  fp32)       c0,c1: (group, 2t..2t+1)        c2,c3: (group+8, 2t..2t+1)
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

namespace prefixd::kernels::cuda {

__device__ __forceinline__ uint32_t SmemAddress(const void* ptr) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(ptr));
}
// 16 bytes of shared memory at a shared-space address (e.g. one 16-byte chunk of a swizzled tile).
__device__ __forceinline__ uint4 LoadShared16(uint32_t addr) {
  uint4 v;
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(addr));
  return v;
}

// ---- cp.async (16-byte, L2-only: K/V tiles are streamed once per CTA) -------------------------

// Copies 16 bytes, or writes 16 zero bytes when !valid (src is then not read but must still be a
// mapped address): padding rows become zeros, so they can never inject NaN into P·V.
__device__ __forceinline__ void CpAsync16(uint32_t dst, const void* src, bool valid) {
  const int src_bytes = valid ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
               "r"(src_bytes));
}
__device__ __forceinline__ void CpAsyncCommit() { asm volatile("cp.async.commit_group;\n" ::); }
// Waits until at most N of this thread's committed groups are still in flight.
template <int N>
__device__ __forceinline__ void CpAsyncWait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// ---- ldmatrix ----------------------------------------------------------------------------------

// Four 8×8 b16 matrices; lanes 8i..8i+7 give the row addresses of matrix i, r[i] receives it.
__device__ __forceinline__ void LdMatrixX4(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
// Same, transposed: reads row-major [k][n] memory as the col-major B operand (V in P·V).
__device__ __forceinline__ void LdMatrixX4Trans(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// ---- mma.sync m16n8k16, fp32 accumulate --------------------------------------------------------

template <typename T>
struct MmaOp;

template <>
struct MmaOp<__half> {
  static __device__ __forceinline__ void Run(float (&c)[4], const uint32_t (&a)[4], uint32_t b0,
                                             uint32_t b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
  // Two floats → one register of the A operand (lower half = first element).
  static __device__ __forceinline__ uint32_t Pack(float lo, float hi) {
    const __half2 h = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&h);
  }
};

template <>
struct MmaOp<__nv_bfloat16> {
  static __device__ __forceinline__ void Run(float (&c)[4], const uint32_t (&a)[4], uint32_t b0,
                                             uint32_t b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
  static __device__ __forceinline__ uint32_t Pack(float lo, float hi) {
    const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&h);
  }
};

// 8 packed dtype values (16 bytes) → 8 floats.
template <typename T>
__device__ __forceinline__ void Unpack8(const uint4& raw, float (&out)[8]);

template <>
__device__ __forceinline__ void Unpack8<__half>(const uint4& raw, float (&out)[8]) {
  const __half2* h = reinterpret_cast<const __half2*>(&raw);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 f = __half22float2(h[i]);
    out[2 * i] = f.x;
    out[2 * i + 1] = f.y;
  }
}

template <>
__device__ __forceinline__ void Unpack8<__nv_bfloat16>(const uint4& raw, float (&out)[8]) {
  const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&raw);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 f = __bfloat1622float2(h[i]);
    out[2 * i] = f.x;
    out[2 * i + 1] = f.y;
  }
}

// ---- swizzled shared-memory tiles ----------------------------------------------------------------

// A [rows][ROW_BYTES] tile of 16-byte chunks stored with chunk' = chunk ^ (row mod 8). The 8 rows
// one ldmatrix matrix reads (or 8 consecutive chunks one cp.async phase writes) then fall in 8
// different bank groups, since ROW_BYTES is a multiple of 128.
template <int ROW_BYTES>
__device__ __forceinline__ uint32_t SwizzledOffset(int row, int chunk) {
  static_assert(ROW_BYTES % 128 == 0, "rows must span whole 128-byte bank lines");
  return uint32_t(row * ROW_BYTES + ((chunk ^ (row & 7)) << 4));
}

// The ldmatrix addresses of one lane in a swizzled tile. The lane reads row `row` (further rows
// come in steps of 8, which keep row mod 8 and hence the swizzle) at chunks 2·pair + half. Within a
// 128-byte line there are only 4 chunk pairs, so 4 precomputed addresses plus compile-time
// immediates cover the whole tile: no XOR arithmetic in the unrolled mma loops.
template <int ROW_BYTES>
struct LaneTileAddress {
  uint32_t pair_address[4];

  __device__ __forceinline__ LaneTileAddress(uint32_t tile, int row, int half) {
#pragma unroll
    for (int j = 0; j < 4; ++j) pair_address[j] = tile + SwizzledOffset<ROW_BYTES>(row, 2 * j + half);
  }
  // Address of chunk 2·pair + half in row `row + extra_rows` (extra_rows: a multiple of 8).
  __device__ __forceinline__ uint32_t At(int pair, int extra_rows) const {
    return pair_address[pair % 4] + (pair / 4) * 128 + extra_rows * ROW_BYTES;
  }
};

}  // namespace prefixd::kernels::cuda
