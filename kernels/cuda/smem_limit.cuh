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
// max_shared_carveout: also prefer the largest shared-memory carveout, for a kernel whose SMs must
// keep room for another kernel's CTAs beside its own. Without it the narrow prefix CTA had almost
// no decode CTA beside it (bench/RESULTS.md, session 22, runs 1-2: −9 against −95 µs over 24
// shapes), as if the driver gave the SM only the carveout this kernel's own CTA needs.
template <auto KERNEL>
void RaiseDynamicSmemLimitOnce(int bytes, bool max_shared_carveout = false) {
  static std::atomic<uint64_t> raised_on_device{0};
  int device = 0;
  PREFIXD_CUDA_CHECK(cudaGetDevice(&device));
  const uint64_t bit = device < 64 ? uint64_t(1) << device : 0;
  if (bit != 0 && (raised_on_device.load(std::memory_order_acquire) & bit)) return;
  PREFIXD_CUDA_CHECK(cudaFuncSetAttribute(KERNEL, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
  if (max_shared_carveout)
    PREFIXD_CUDA_CHECK(
        cudaFuncSetAttribute(KERNEL, cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared));
  raised_on_device.fetch_or(bit, std::memory_order_acq_rel);
}

}  // namespace prefixd::kernels::cuda
