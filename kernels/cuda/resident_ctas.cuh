// How many CTAs of a kernel the device holds at once, and its SM count: asked once per kernel and
// device.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>

#include "prefixd/common/cuda_check.h"

namespace prefixd::kernels::cuda {

// CTAs of KERNEL (threads per CTA, dynamic shared memory) resident on one SM of the current device
// (its occupancy; at least 1). Asked on the first call per device and cached (per kernel and device:
// one process may drive GPUs of different kinds; the threads/smem of the first call are assumed
// for later ones, so pass the same each time). A performance hint only (e.g. how far ahead
// NextWaveItem prefetches, how many CTAs the early decode's SMs hold), never for correctness.
template <auto KERNEL>
int ResidentCtasPerSmOnce(int threads, int smem_bytes) {
  constexpr int kMaxDevices = 64;
  static std::atomic<int> cached[kMaxDevices];  // zero-initialised (static storage): 0 = not asked yet
  int device = 0;
  PREFIXD_CUDA_CHECK(cudaGetDevice(&device));
  std::atomic<int>* slot = device < kMaxDevices ? &cached[device] : nullptr;
  int per_sm = slot != nullptr ? slot->load(std::memory_order_acquire) : 0;
  if (per_sm > 0) return per_sm;
  PREFIXD_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, KERNEL, threads, size_t(smem_bytes)));
  per_sm = std::max(1, per_sm);
  if (slot != nullptr) slot->store(per_sm, std::memory_order_release);
  return per_sm;
}

// The current device's SM count, asked once per device.
inline int DeviceSmCountOnce() {
  constexpr int kMaxDevices = 64;
  static std::atomic<int> cached[kMaxDevices];
  int device = 0;
  PREFIXD_CUDA_CHECK(cudaGetDevice(&device));
  std::atomic<int>* slot = device < kMaxDevices ? &cached[device] : nullptr;
  int sms = slot != nullptr ? slot->load(std::memory_order_relaxed) : 0;
  if (sms > 0) return sms;
  PREFIXD_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  if (slot != nullptr) slot->store(sms, std::memory_order_relaxed);
  return sms;
}

// The same on the whole current device: per SM × SMs.
template <auto KERNEL>
int ResidentCtasOnce(int threads, int smem_bytes) {
  return ResidentCtasPerSmOnce<KERNEL>(threads, smem_bytes) * DeviceSmCountOnce();
}

}  // namespace prefixd::kernels::cuda
