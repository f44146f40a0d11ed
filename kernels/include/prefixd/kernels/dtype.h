// Element types of queries, K/V and outputs, and exact host-side conversions.
//
// Attention inputs are fp16 or bf16; states are always fp32. The host conversions round to
// nearest-even exactly as the CUDA intrinsics (__float2half_rn, __float2bfloat16_rn) do, so the
// CPU backend and the GPU see bit-identical inputs.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

namespace prefixd::kernels {

enum class DType { kFloat16, kBFloat16 };

inline int DTypeBytes(DType) { return 2; }
inline const char* DTypeName(DType t) { return t == DType::kFloat16 ? "fp16" : "bf16"; }
DType ParseDType(const std::string& name);  // "fp16"/"float16"/"half" or "bf16"/"bfloat16"

inline uint32_t FloatBits(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }
inline float BitsFloat(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }

inline float BFloat16ToFloat(uint16_t h) { return BitsFloat(uint32_t(h) << 16); }
inline uint16_t FloatToBFloat16(float f) {
  uint32_t u = FloatBits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);                                          // round to nearest even
  return uint16_t(u >> 16);
}

float HalfToFloat(uint16_t h);
uint16_t FloatToHalf(float f);

inline float ToFloat(DType t, uint16_t bits) {
  return t == DType::kFloat16 ? HalfToFloat(bits) : BFloat16ToFloat(bits);
}
inline uint16_t FromFloat(DType t, float f) {
  return t == DType::kFloat16 ? FloatToHalf(f) : FloatToBFloat16(f);
}

}  // namespace prefixd::kernels
