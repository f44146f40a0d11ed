// Built only when nvcc is absent: the CUDA backend does not exist, and says so.
#include "prefixd/common/error.h"
#include "prefixd/kernels/backend.h"

namespace prefixd::kernels {

std::unique_ptr<Backend> MakeCudaBackend(const BackendOptions&) {
  PREFIXD_THROW(ErrorKind::kUnsupported, "this build of prefixd has no CUDA backend (nvcc was not found at configure time)");
}
bool CudaAvailable() { return false; }
int CudaDeviceCount() { return 0; }
DeviceMemory CudaDeviceMemory(int) { return {}; }

}  // namespace prefixd::kernels
