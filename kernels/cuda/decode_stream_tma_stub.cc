// The TMA streaming decode kernel in a build without the sm_90a objects (CMake PREFIXD_WITH_SM90A=OFF
// or an nvcc older than 12.0): it never applies, and the cp.async streaming kernel runs instead.
#include "kernels/cuda/decode_stream_tma.h"
#include "prefixd/common/error.h"

#if !PREFIXD_HAVE_SM90A
namespace prefixd::kernels::cuda {
bool DecodeStreamTmaApplies(const DecodeAttentionParams&) { return false; }
void DecodeStreamTma(const DecodeAttentionParams&, cudaStream_t) {
  PREFIXD_THROW(ErrorKind::kUnsupported, "DecodeStreamTma: this build has no sm_90a kernels");
}
}  // namespace prefixd::kernels::cuda
#endif
