// CUDA runtime checks for comm/cuda (comm must not depend on kernels/, which has its own).
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "prefixd/common/error.h"

namespace prefixd::comm {
[[noreturn]] inline void ThrowCommCudaError(cudaError_t err, const char* call, const char* file,
                                            int line) {
  ThrowError(ErrorKind::kLibrary, "CUDA",
             std::string(cudaGetErrorName(err)) + " (" + cudaGetErrorString(err) + ") in `" + call + "`",
             file, line);
}
}  // namespace prefixd::comm

#define PREFIXD_COMM_CUDA_CHECK(call)                                                   \
  do {                                                                                  \
    const cudaError_t prefixd_comm_cuda_err_ = (call);                                  \
    if (prefixd_comm_cuda_err_ != cudaSuccess)                                          \
      ::prefixd::comm::ThrowCommCudaError(prefixd_comm_cuda_err_, #call, __FILE__, __LINE__); \
  } while (0)
