// Whether this process can use a GPU, and how much memory a device has free. Any CUDA error in
// the count counts as "no GPU": the project machines have no driver (cudaGetDeviceCount returns
// error 35), and CI must skip GPU tests there, not fail.
#include <cuda_runtime.h>

#include "prefixd/common/cuda_check.h"
#include "prefixd/kernels/backend.h"

namespace prefixd::kernels {

int CudaDeviceCount() {
  // The answer cannot change within a process; asking once also keeps the error below from
  // being raised (and cleared) again on every call.
  static const int count = [] {
    int n = 0;
    const cudaError_t err = cudaGetDeviceCount(&n);
    if (err != cudaSuccess) {
      cudaGetLastError();  // clear the error so it does not surface at an unrelated later call
      return 0;
    }
    return n > 0 ? n : 0;
  }();
  return count;
}

bool CudaAvailable() { return CudaDeviceCount() > 0; }

DeviceMemory CudaDeviceMemory(int device) {
  DeviceMemory m;
  if (!CudaAvailable()) return m;
  PREFIXD_CHECK_ARG(device >= 0 && device < CudaDeviceCount(),
                    "CudaDeviceMemory: device " << device << " out of range [0, " << CudaDeviceCount() << ")");
  int current = 0;
  PREFIXD_CUDA_CHECK(cudaGetDevice(&current));
  PREFIXD_CUDA_CHECK(cudaSetDevice(device));
  size_t free_bytes = 0, total_bytes = 0;
  const cudaError_t err = cudaMemGetInfo(&free_bytes, &total_bytes);
  PREFIXD_CUDA_CHECK(cudaSetDevice(current));
  PREFIXD_CUDA_CHECK(err);
  m.free_bytes = int64_t(free_bytes);
  m.total_bytes = int64_t(total_bytes);
  return m;
}

}  // namespace prefixd::kernels
