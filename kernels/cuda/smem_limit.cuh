// Raising a kernel's dynamic shared-memory limit, in one place: a launch asking for more than
// 48 KiB needs cudaFuncSetAttribute first, once per kernel and device (the attribute is per device).
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>

#include "prefixd/common/cuda_check.h"

namespace prefixd::kernels::cuda {

// Sets KERNEL's cudaFuncAttributeMaxDynamicSharedMemorySize to `bytes` on the current device, the
// first time it is called there (later calls keep the first value: pass the same one each time).
template <auto KERNEL>
void RaiseDynamicSmemLimitOnce(int bytes) {
  static std::atomic<uint64_t> raised_on_device{0};
  int device = 0;
  PREFIXD_CUDA_CHECK(cudaGetDevice(&device));
  const uint64_t bit = device < 64 ? uint64_t(1) << device : 0;
  if (bit != 0 && (raised_on_device.load(std::memory_order_acquire) & bit)) return;
  PREFIXD_CUDA_CHECK(cudaFuncSetAttribute(KERNEL, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
  raised_on_device.fetch_or(bit, std::memory_order_acq_rel);
}

}  // namespace prefixd::kernels::cuda
