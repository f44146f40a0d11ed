// Programmatic dependent launch (PDL), the two halves every dependent kernel needs: the launch with
// programmatic stream serialisation, and the device-side wait for the grid it depends on.
// A dependent grid may be scheduled while the previous kernel on the stream drains (as that
// kernel's CTAs signal griddepcontrol.launch_dependents or exit); it must call
// WaitForPrimaryGrid before reading anything that kernel writes.
#pragma once

#include <cuda_runtime.h>

#include <utility>

#include "prefixd/common/cuda_check.h"

namespace prefixd::kernels::cuda {

// Waits until the grid this one programmatically depends on has completed and its writes are
// visible; returns at once for a normal launch (and before sm_90, which has no PDL).
__device__ __forceinline__ void WaitForPrimaryGrid() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

// Lets the next kernel on the stream, if launched as a programmatic dependent, be scheduled now
// rather than when this grid's CTAs exit (it still waits in WaitForPrimaryGrid for this grid's
// completion); a no-op before sm_90.
__device__ __forceinline__ void AllowDependentLaunch() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

// kernel<<<grid, block, smem_bytes, stream>>>(args...), as a programmatic dependent launch when
// `programmatic`.
template <typename... KernelArgs, typename... Args>
void LaunchMaybeProgrammatic(void (*kernel)(KernelArgs...), dim3 grid, dim3 block, size_t smem_bytes,
                             cudaStream_t stream, bool programmatic, Args&&... args) {
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = smem_bytes;
  config.stream = stream;
  cudaLaunchAttribute attribute[1];
  attribute[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute[0].val.programmaticStreamSerializationAllowed = 1;
  config.attrs = attribute;
  config.numAttrs = programmatic ? 1 : 0;
  PREFIXD_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...));
}

}  // namespace prefixd::kernels::cuda
