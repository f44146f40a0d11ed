#include "prefixd/kernels/dtype.h"

#include <cmath>

#include "prefixd/common/error.h"

namespace prefixd::kernels {

DType ParseDType(const std::string& name) {
  if (name == "fp16" || name == "float16" || name == "half") return DType::kFloat16;
  if (name == "bf16" || name == "bfloat16") return DType::kBFloat16;
  PREFIXD_THROW(ErrorKind::kInvalidArgument, "unknown dtype '" << name << "' (use fp16 or bf16)");
}

float HalfToFloat(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return BitsFloat(sign | 0x7f800000u | (mant << 13));  // inf / NaN
  if (exp == 0) {                                                        // zero / subnormal
    const float mag = std::ldexp(float(mant), -24);
    return sign ? -mag : mag;
  }
  return BitsFloat(sign | ((exp + 112u) << 23) | (mant << 13));
}

uint16_t FloatToHalf(float f) {
  const uint32_t u = FloatBits(f);
  const uint16_t sign = uint16_t((u >> 16) & 0x8000u);
  const uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return uint16_t(sign | 0x7e00u);  // NaN
  if (abs >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // rounds to >= 65520: inf
  if (abs < 0x38800000u) {                                 // below the smallest normal half
    // Subnormal half: value = m * 2^-24; round |f| * 2^24 to nearest even integer.
    const float scaled = BitsFloat(abs) * 16777216.0f;  // exact: power-of-two scaling
    const float rounded = std::nearbyint(scaled);       // default rounding mode: nearest even
    return uint16_t(sign | uint16_t(rounded));
  }
  // Normal: drop 13 mantissa bits with round-to-nearest-even, re-bias the exponent by -112.
  uint32_t v = abs + 0xfffu + ((abs >> 13) & 1u);
  v -= 112u << 23;
  return uint16_t(sign | uint16_t(v >> 13));
}

}  // namespace prefixd::kernels
