#include "prefixd/common/error.h"

#include <unistd.h>

#include <atomic>

namespace prefixd {
namespace {
std::atomic<int> g_error_rank{-1};

std::string HostName() {
  char name[256] = {0};
  if (gethostname(name, sizeof(name) - 1) != 0) return "unknown-host";
  return name;
}
}  // namespace

const char* ErrorKindName(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kInvalidArgument: return "invalid argument";
    case ErrorKind::kOutOfMemory: return "out of memory";
    case ErrorKind::kNotFound: return "not found";
    case ErrorKind::kUnsupported: return "unsupported";
    case ErrorKind::kLibrary: return "library error";
    case ErrorKind::kInternal: return "internal error";
  }
  return "error";
}

const char kHostOutOfMemoryMessage[] =
    "out of host memory (std::bad_alloc): the sizes asked for need more memory than this machine has";

void SetErrorRank(int rank) { g_error_rank = rank; }
int ErrorRank() { return g_error_rank; }

void ThrowError(ErrorKind kind, const char* library, const std::string& message, const char* file,
                int line) {
  std::ostringstream out;
  out << "prefixd " << ErrorKindName(kind) << " [";
  if (g_error_rank >= 0) out << "rank " << g_error_rank << " on ";
  out << HostName() << "] " << library << " at " << file << ":" << line << ": " << message;
  throw Error(kind, out.str());
}

}  // namespace prefixd
