// How many CTAs of a kernel the device holds at once, asked once per kernel.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>

#include "prefixd/common/cuda_check.h"

namespace prefixd::kernels::cuda {

// CTAs of KERNEL (threads per CTA, dynamic shared memory) resident on the whole current device:
// occupancy per SM × SMs. Asked on the first call and cached per kernel, so a process driving
// GPUs of different kinds gets the first one's figure: use it as a performance hint only (e.g.
// how far ahead NextWaveItem prefetches), never for correctness.
template <auto KERNEL>
int ResidentCtasOnce(int threads, int smem_bytes) {
  static std::atomic<int> cached{0};
  int resident = cached.load(std::memory_order_acquire);
  if (resident > 0) return resident;
  int device = 0, sms = 0, per_sm = 0;
  PREFIXD_CUDA_CHECK(cudaGetDevice(&device));
  PREFIXD_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  PREFIXD_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, KERNEL, threads, size_t(smem_bytes)));
  resident = std::max(1, per_sm * sms);
  cached.store(resident, std::memory_order_release);
  return resident;
}

}  // namespace prefixd::kernels::cuda
