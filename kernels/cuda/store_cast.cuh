// Four floats → four fp16/bf16 values: the final outputs' store, shared by the kernels that write o.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "prefixd/kernels/dtype.h"

namespace prefixd::kernels::cuda {

// x → out[index .. index + 3] in dtype (8 bytes, aligned because head_dim % 4 == 0).
__device__ __forceinline__ void StoreCast4(DType dtype, void* out, int64_t index, float4 x) {
  if (dtype == DType::kFloat16) {
    __half2* p = reinterpret_cast<__half2*>(static_cast<__half*>(out) + index);
    p[0] = __floats2half2_rn(x.x, x.y);
    p[1] = __floats2half2_rn(x.z, x.w);
  } else {
    __nv_bfloat162* p = reinterpret_cast<__nv_bfloat162*>(static_cast<__nv_bfloat16*>(out) + index);
    p[0] = __floats2bfloat162_rn(x.x, x.y);
    p[1] = __floats2bfloat162_rn(x.z, x.w);
  }
}

}  // namespace prefixd::kernels::cuda
