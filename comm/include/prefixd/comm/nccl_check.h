// PREFIXD_NCCL_CHECK: every NCCL return code goes through here (file, line, rank, NCCL's message
// and its last-error detail). Only for code built with CUDA/NCCL (comm/cuda/).
#pragma once

#include <nccl.h>

#include "prefixd/common/error.h"

namespace prefixd::comm {
// `comm` (may be null) selects whose ncclGetLastError detail to add.
[[noreturn]] void ThrowNcclError(ncclResult_t code, ncclComm_t comm, const char* call,
                                 const char* file, int line);
}  // namespace prefixd::comm

#define PREFIXD_NCCL_CHECK(call)                                                        \
  do {                                                                                  \
    const ncclResult_t prefixd_nccl_rc_ = (call);                                       \
    if (prefixd_nccl_rc_ != ncclSuccess)                                                \
      ::prefixd::comm::ThrowNcclError(prefixd_nccl_rc_, nullptr, #call, __FILE__, __LINE__); \
  } while (0)

// The same, naming the communicator so that its last-error detail is reported.
#define PREFIXD_NCCL_CHECK_COMM(nccl_comm, call)                                             \
  do {                                                                                  \
    const ncclResult_t prefixd_nccl_rc_ = (call);                                       \
    if (prefixd_nccl_rc_ != ncclSuccess)                                                \
      ::prefixd::comm::ThrowNcclError(prefixd_nccl_rc_, (nccl_comm), #call, __FILE__, __LINE__); \
  } while (0)
