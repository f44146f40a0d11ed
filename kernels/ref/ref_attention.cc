#include "ref/ref_attention.h"

namespace prefixd::kernels::ref {
namespace {

// HalfToFloat handles subnormals with ldexp; a table makes the conversion one load.
const float* HalfTable() {
  static const std::vector<float> table = [] {
    std::vector<float> t(1 << 16);
    for (uint32_t h = 0; h < (1u << 16); ++h) t[h] = HalfToFloat(uint16_t(h));
    return t;
  }();
  return table.data();
}

}  // namespace

void DecodeRow(DType dtype, const uint16_t* src, int n, float* dst) {
  if (dtype == DType::kFloat16) {
    const float* table = HalfTable();
    for (int i = 0; i < n; ++i) dst[i] = table[src[i]];
  } else {
    for (int i = 0; i < n; ++i) dst[i] = BFloat16ToFloat(src[i]);
  }
}

}  // namespace prefixd::kernels::ref
