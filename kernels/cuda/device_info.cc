// Whether this process can use a GPU. Any CUDA error counts as "no GPU": the project machines have
// no driver (cudaGetDeviceCount returns error 35), and CI must skip GPU tests there, not fail.
#include <cuda_runtime.h>

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

}  // namespace prefixd::kernels
