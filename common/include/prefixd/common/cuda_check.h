// Checks for CUDA runtime calls, routed to prefixd's one error function (common/error.h).
//
//   PREFIXD_CUDA_CHECK(cudaMemcpyAsync(...));   // throws prefixd::Error (kLibrary, "CUDA") on failure
//   Kernel<<<grid, block, smem, stream>>>(...);
//   PREFIXD_CUDA_CHECK_LAUNCH();                 // launch-configuration errors (cudaGetLastError)
//
// For CUDA-compiled code in every module (kernels, comm, worker, bench); header-only, so
// prefixd_common itself does not link CUDA. Never include from a public plain-C++ header.
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "prefixd/common/error.h"

namespace prefixd {

[[noreturn]] inline void ThrowCudaError(cudaError_t err, const char* call, const char* file,
                                        int line) {
  std::string message = std::string(cudaGetErrorName(err)) + " (" + cudaGetErrorString(err) +
                        ") in `" + call + "`";
  ::prefixd::ThrowError(::prefixd::ErrorKind::kLibrary, "CUDA", message, file, line);
}

}  // namespace prefixd

#define PREFIXD_CUDA_CHECK(call)                                                      \
  do {                                                                                \
    const cudaError_t prefixd_cuda_err_ = (call);                                     \
    if (prefixd_cuda_err_ != cudaSuccess)                                             \
      ::prefixd::ThrowCudaError(prefixd_cuda_err_, #call, __FILE__, __LINE__); \
  } while (0)

// After a <<<...>>> launch: reports bad launch configurations (and earlier sticky errors) now,
// not at the next synchronising call. Does not synchronise.
#define PREFIXD_CUDA_CHECK_LAUNCH() PREFIXD_CUDA_CHECK(cudaGetLastError())
