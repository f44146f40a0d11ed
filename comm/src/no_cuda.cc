// The CUDA-dependent parts of bootstrap.h for builds without CUDA: no devices, no NCCL.
#if !defined(PREFIXD_HAVE_CUDA)

#include "prefixd/comm/bootstrap.h"
#include "prefixd/common/error.h"

namespace prefixd::comm {

int CudaDeviceCount() { return 0; }
int SelectLocalDevice(const MpiSession&) { return -1; }
bool NcclBuilt() { return false; }

std::unique_ptr<Comm> MakeNcclComm(MPI_Comm, int, void*, const CommOptions&) {
  PREFIXD_THROW(ErrorKind::kUnsupported, "NCCL Comm requested, but prefixd was built without CUDA");
}

}  // namespace prefixd::comm

#endif  // !PREFIXD_HAVE_CUDA
