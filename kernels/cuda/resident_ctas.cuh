// How many CTAs of a kernel the device holds at once, asked once per kernel.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>

#include "prefixd/common/cuda_check.h"

namespace prefixd::kernels::cuda {

// CTAs of KERNEL (threads per CTA, dynamic shared memory) resident on the whole current device:
// occupancy per SM × SMs. Asked on the first call per device and cached (per kernel and device:
// one process may drive GPUs of different kinds; the threads/smem of the first call are assumed
// for later ones, so pass the same each time). A performance hint only (e.g. how far ahead
// NextWaveItem prefetches), never for correctness.
template <auto KERNEL>
int ResidentCtasOnce(int threads, int smem_bytes) {
  constexpr int kMaxDevices = 64;
  static std::atomic<int> cached[kMaxDevices];  // zero-initialised (static storage): 0 = not asked yet
  int device = 0;
  PREFIXD_CUDA_CHECK(cudaGetDevice(&device));
  std::atomic<int>* slot = device < kMaxDevices ? &cached[device] : nullptr;
  int resident = slot != nullptr ? slot->load(std::memory_order_acquire) : 0;
  if (resident > 0) return resident;
  int sms = 0, per_sm = 0;
  PREFIXD_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  PREFIXD_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, KERNEL, threads, size_t(smem_bytes)));
  resident = std::max(1, per_sm * sms);
  if (slot != nullptr) slot->store(resident, std::memory_order_release);
  return resident;
}

}  // namespace prefixd::kernels::cuda
