// UploadBatch (upload_batch.h): the copy kernel and the host-side queue.
#include "kernels/cuda/upload_batch.h"

#include <algorithm>

#include "kernels/cuda/programmatic_launch.cuh"
#include "prefixd/common/cuda_check.h"
#include "prefixd/common/env.h"

namespace prefixd::kernels::cuda {
namespace {

constexpr int kThreads = 256;

// Thread i of the grid moves units i, i + stride, ... of the concatenated copies; every copy's
// loads are in flight together, so the batch costs about one bus round trip.
// Launched as a programmatic dependent of the kernel before it (UploadBatch::Launch): each thread
// loads its first unit from host memory (that round trip), then waits for that kernel, which may
// still read the destinations, and only then stores. The kernel after it (the step's first, which
// reads what arrives) may be scheduled at once and waits likewise.
__device__ __forceinline__ int CopyOf(const UploadBatch::Copies& c, uint32_t u) {
  int k = 0;
  while (u >= c.first_unit[k + 1]) ++k;  // at most kMaxCopies steps
  return k;
}

__global__ void UploadBatchKernel(const __grid_constant__ UploadBatch::Copies c) {
  AllowDependentLaunch();
  const uint32_t total = c.first_unit[c.n];
  const uint32_t stride = gridDim.x * blockDim.x;
  uint32_t u = blockIdx.x * blockDim.x + threadIdx.x;
  uint4 first = {};
  int k = -1;
  if (u < total) {
    k = CopyOf(c, u);
    const uint32_t i = u - c.first_unit[k];
    if (c.unit_shift[k] == 4) first = reinterpret_cast<const uint4*>(c.src[k])[i];
    else first.x = c.src[k][i];
  }
  WaitForPrimaryGrid();
  if (k < 0) return;
  {
    const uint32_t i = u - c.first_unit[k];
    if (c.unit_shift[k] == 4) reinterpret_cast<uint4*>(c.dst[k])[i] = first;
    else c.dst[k][i] = uint8_t(first.x);
  }
  for (u += stride; u < total; u += stride) {
    k = CopyOf(c, u);
    const uint32_t i = u - c.first_unit[k];
    if (c.unit_shift[k] == 4) reinterpret_cast<uint4*>(c.dst[k])[i] = reinterpret_cast<const uint4*>(c.src[k])[i];
    else c.dst[k][i] = c.src[k][i];
  }
}

}  // namespace

bool UploadBatch::Add(void* dst, const void* src, size_t bytes) {
  if (full() || bytes == 0 || bytes > kMaxCopyBytes) return false;
  cudaPointerAttributes attr;
  if (cudaPointerGetAttributes(&attr, src) != cudaSuccess) {
    (void)cudaGetLastError();  // not a pointer the runtime knows: not batched
    return false;
  }
  if (attr.type != cudaMemoryTypeHost || attr.devicePointer == nullptr) return false;
  const auto* device_src = static_cast<const uint8_t*>(attr.devicePointer);
  const bool vector = ((reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(device_src) | bytes) & 15) == 0;
  copies_.dst[n_] = static_cast<uint8_t*>(dst);
  copies_.src[n_] = device_src;
  copies_.unit_shift[n_] = vector ? 4 : 0;
  copies_.first_unit[n_ + 1] = copies_.first_unit[n_] + uint32_t(bytes >> copies_.unit_shift[n_]);
  copies_.n = ++n_;
  return true;
}

void UploadBatch::Launch(cudaStream_t stream) {
  if (n_ == 0) return;
  const uint32_t units = copies_.first_unit[n_];
  const int blocks = int(std::min<uint32_t>((units + kThreads - 1) / kThreads, 256));
  LaunchMaybeProgrammatic(UploadBatchKernel, dim3(std::max(blocks, 1)), dim3(kThreads), 0, stream, programmatic_,
                          copies_);
  copies_ = Copies{};
  n_ = 0;
}

bool StepPdlEnabled() { return EnvFlag("PREFIXD_STEP_PDL", true); }

}  // namespace prefixd::kernels::cuda
