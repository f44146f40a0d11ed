// PREFIXD_MPI_CHECK: every MPI return code goes through here (file, line, rank, MPI's message).
#pragma once

#include <mpi.h>

#include "prefixd/common/error.h"

namespace prefixd::comm {
[[noreturn]] void ThrowMpiError(int code, const char* call, const char* file, int line);
}  // namespace prefixd::comm

#define PREFIXD_MPI_CHECK(call)                                               \
  do {                                                                        \
    const int prefixd_mpi_rc_ = (call);                                       \
    if (prefixd_mpi_rc_ != MPI_SUCCESS)                                       \
      ::prefixd::comm::ThrowMpiError(prefixd_mpi_rc_, #call, __FILE__, __LINE__); \
  } while (0)
