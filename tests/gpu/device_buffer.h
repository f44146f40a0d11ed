// One device allocation owned by a GPU test, filled from and read back to host vectors (CUDA
// runtime calls, checked). Shared by the tests that launch kernels directly.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <vector>

#include "prefixd/common/cuda_check.h"

namespace prefixd::test {

class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t bytes) : bytes_(bytes) {
    if (bytes_ > 0) PREFIXD_CUDA_CHECK(cudaMalloc(&ptr_, bytes_));
  }
  ~DeviceBuffer() { if (ptr_) cudaFree(ptr_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  template <typename T>
  static DeviceBuffer From(const std::vector<T>& host) {
    DeviceBuffer buffer(host.size() * sizeof(T));
    if (!host.empty())
      PREFIXD_CUDA_CHECK(cudaMemcpy(buffer.ptr_, host.data(), buffer.bytes_, cudaMemcpyHostToDevice));
    return buffer;
  }
  DeviceBuffer(DeviceBuffer&& other) noexcept : ptr_(other.ptr_), bytes_(other.bytes_) {
    other.ptr_ = nullptr;
  }
  template <typename T>
  std::vector<T> ToHost() const {
    std::vector<T> host(bytes_ / sizeof(T));
    if (!host.empty())
      PREFIXD_CUDA_CHECK(cudaMemcpy(host.data(), ptr_, bytes_, cudaMemcpyDeviceToHost));
    return host;
  }
  void* get() const { return ptr_; }
  template <typename T>
  T* as() const { return static_cast<T*>(ptr_); }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace prefixd::test
