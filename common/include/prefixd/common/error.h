// One error type for all of prefixd, and the macro family that raises it.
//
// Library code never calls exit(): it throws prefixd::Error, which carries where it happened
// (file:line), on which MPI rank and host, which library reported it (CUDA, NCCL, MPI or prefixd
// itself) and that library's message. main() functions map it to a non-zero exit code.
// The per-library macros (PREFIXD_CUDA_CHECK, PREFIXD_NCCL_CHECK, PREFIXD_MPI_CHECK) live next to
// the code that includes those libraries and all route to ThrowError below.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace prefixd {

// What kind of failure, so that callers can tell bad input (an error reply to one request) from
// a broken device or network (the whole job must stop).
enum class ErrorKind {
  kInvalidArgument,  // bad shapes, out-of-range indices, malformed config or request
  kOutOfMemory,      // no KV pages (or device memory) left
  kNotFound,         // unknown prefix, request or file
  kUnsupported,      // a valid request this build cannot serve (e.g. head_dim 96, no CUDA)
  kLibrary,          // CUDA / NCCL / MPI returned an error
  kInternal,         // a broken invariant: a bug in prefixd
};

const char* ErrorKindName(ErrorKind kind);

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& what) : std::runtime_error(what), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

// The message for a std::bad_alloc that reaches a tool's outermost catch: sizes (flags, a workload)
// that fit every bound but not this machine's memory.
extern const char kHostOutOfMemoryMessage[];

// The rank printed in error messages; comm's bootstrap sets it once MPI is up (-1 = unknown).
void SetErrorRank(int rank);
int ErrorRank();

// Builds "prefixd error [rank R on HOST] LIB at FILE:LINE: MESSAGE" and throws.
[[noreturn]] void ThrowError(ErrorKind kind, const char* library, const std::string& message,
                             const char* file, int line);

}  // namespace prefixd

// PREFIXD_CHECK(cond) << "message" style is awkward with exceptions; use a message expression.
// Example: PREFIXD_CHECK_ARG(head_dim == 64 || head_dim == 128, "head_dim " << head_dim << " ...");
#define PREFIXD_THROW(kind, msg_expr)                                              \
  do {                                                                             \
    std::ostringstream prefixd_msg_;                                               \
    prefixd_msg_ << msg_expr;                                                      \
    ::prefixd::ThrowError((kind), "prefixd", prefixd_msg_.str(), __FILE__, __LINE__); \
  } while (0)

#define PREFIXD_CHECK_ARG(cond, msg_expr) \
  do {                                    \
    if (!(cond)) PREFIXD_THROW(::prefixd::ErrorKind::kInvalidArgument, msg_expr); \
  } while (0)

#define PREFIXD_CHECK_INTERNAL(cond, msg_expr) \
  do {                                         \
    if (!(cond)) PREFIXD_THROW(::prefixd::ErrorKind::kInternal, "invariant `" #cond "` broken: " << msg_expr); \
  } while (0)
