// Host fp16/bf16 conversions must round exactly like the CUDA intrinsics (nearest-even).
#include <gtest/gtest.h>

#include <cmath>

#include "prefixd/kernels/dtype.h"

namespace prefixd::kernels {
namespace {

TEST(DType, HalfRoundTripsEveryFiniteValue) {
  int checked = 0;
  for (uint32_t bits = 0; bits < 0x10000u; ++bits) {
    const uint16_t h = uint16_t(bits);
    const float f = HalfToFloat(h);
    if (std::isnan(f)) continue;
    ASSERT_EQ(FloatToHalf(f), h) << "half bits " << bits;
    ++checked;
  }
  EXPECT_EQ(checked, 0x10000 - 2 * 1023);  // all but the NaN encodings
}

TEST(DType, BFloat16RoundTripsEveryFiniteValue) {
  for (uint32_t bits = 0; bits < 0x10000u; ++bits) {
    const float f = BFloat16ToFloat(uint16_t(bits));
    if (std::isnan(f)) continue;
    ASSERT_EQ(FloatToBFloat16(f), uint16_t(bits)) << "bf16 bits " << bits;
  }
}

TEST(DType, RoundsToNearestEven) {
  // 1 + 2^-11 lies halfway between two halves: rounds down to even (1.0); 1 + 3·2^-11 rounds up.
  EXPECT_EQ(FloatToHalf(1.0f + std::ldexp(1.0f, -11)), FloatToHalf(1.0f));
  EXPECT_EQ(HalfToFloat(FloatToHalf(1.0f + 3 * std::ldexp(1.0f, -11))), 1.0f + std::ldexp(1.0f, -9));
  EXPECT_EQ(FloatToBFloat16(1.0f + std::ldexp(1.0f, -8)), FloatToBFloat16(1.0f));
  EXPECT_TRUE(std::isinf(HalfToFloat(FloatToHalf(70000.f))));
  EXPECT_EQ(HalfToFloat(FloatToHalf(65504.f)), 65504.f);
  EXPECT_EQ(HalfToFloat(FloatToHalf(std::ldexp(1.0f, -24))), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -26)), 0);  // below half the smallest subnormal
}

TEST(DType, ParseRejectsUnknownNames) {
  EXPECT_EQ(ParseDType("bf16"), DType::kBFloat16);
  EXPECT_EQ(ParseDType("fp16"), DType::kFloat16);
  EXPECT_THROW(ParseDType("fp8"), std::exception);
}

}  // namespace
}  // namespace prefixd::kernels
