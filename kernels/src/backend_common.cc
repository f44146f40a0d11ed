#include "prefixd/kernels/backend.h"

namespace prefixd::kernels {

const char* BackendKindName(BackendKind kind) {
  switch (kind) {
    case BackendKind::kCpu: return "cpu";
    case BackendKind::kCuda: return "cuda";
  }
  return "unknown";
}

}  // namespace prefixd::kernels
