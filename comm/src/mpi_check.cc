#include "prefixd/comm/mpi_check.h"

#include <string>

namespace prefixd::comm {

void ThrowMpiError(int code, const char* call, const char* file, int line) {
  char text[MPI_MAX_ERROR_STRING] = {0};
  int len = 0;
  if (MPI_Error_string(code, text, &len) != MPI_SUCCESS) len = 0;
  ThrowError(ErrorKind::kLibrary, "MPI",
             std::string(call) + " failed (" + std::to_string(code) + "): " + std::string(text, len),
             file, line);
}

}  // namespace prefixd::comm
