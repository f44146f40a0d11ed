// The fused cascade kernel in a build without the sm_90a objects (CMake PREFIXD_WITH_SM90A=OFF or
// an nvcc older than 12.0): it never applies, and the CUDA backend runs the two-kernel cascade.
#include "kernels/cuda/cascade_fused.h"
#include "prefixd/common/error.h"

#if !PREFIXD_HAVE_SM90A
namespace prefixd::kernels::cuda {
bool FusedCascadeSupportsShape(int, DType, int, int) { return false; }
bool FusedCascadeReady() { return false; }
void FusedCascade(const FusedCascadeParams&, cudaStream_t) {
  PREFIXD_THROW(ErrorKind::kUnsupported, "fused cascade: this build has no sm_90a kernels");
}
}  // namespace prefixd::kernels::cuda
#endif
