// Fail loudly, never hang: the one entry point for prefixd's MPI main()s.
//
//   int main(int argc, char** argv) {
//     return prefixd::comm::RunRankMain(argc, argv, [&](prefixd::comm::MpiSession& session) {
//       ...            // throw on error; return 0 on success
//       return 0;
//     });
//   }
//
// If the body throws (prefixd::Error, whose message already names rank, host and file:line, or
// any std::exception) or returns non-zero on ANY rank, that rank prints the message to stderr,
// aborts every registered Comm (ncclCommAbort, so that no GPU stays stuck in a collective) and
// calls MPI_Abort(MPI_COMM_WORLD, code): the other ranks are killed wherever they wait, and
// mpirun exits non-zero. A non-zero return is therefore not a quiet exit: return 0 from every rank
// when the job succeeded, and throw (or return non-zero) when it did not.
// A rank that dies without reaching this code (SIGKILL, segfault) is detected by mpirun, which
// kills the remaining ranks and names the dead one.
//
// Unwinding comes first: the body's locals are destroyed before RunRankMain sees the exception.
// A NcclComm destroyed while an exception is in flight therefore aborts itself (ncclCommAbort)
// instead of ncclCommDestroy, which would wait for a collective the peers never finish. Destructors
// that wait on the GPU (cudaStreamSynchronize, cudaFree of buffers an unfinished NCCL collective
// still uses) can hang the same way: make the NcclComm AFTER the buffers and streams it works on,
// so that it is destroyed (aborted) before them, and do not synchronise in destructors.
#pragma once

#include <functional>

#include "prefixd/comm/bootstrap.h"
#include "prefixd/common/error.h"

namespace prefixd::comm {

// Exit codes of a failed job (what MPI_Abort passes to mpirun), by error kind.
enum ExitCode : int {
  kExitOk = 0,
  kExitFailure = 1,           // a std::exception that is not a prefixd::Error, or body returned 1
  kExitInvalidArgument = 2,
  kExitNotFound = 3,
  kExitUnsupported = 4,
  kExitOutOfMemory = 5,
  kExitLibrary = 6,           // CUDA / NCCL / MPI
  kExitInternal = 7,
};
int ExitCodeFor(ErrorKind kind);

// Runs body(session) with MPI up (MPI_THREAD_FUNNELED); see above. Returns 0 after MPI_Finalize
// on success; on failure it does not return (MPI_Abort), except when MPI itself could not start,
// where it prints and returns kExitLibrary.
int RunRankMain(int argc, char** argv, const std::function<int(MpiSession&)>& body);

// What RunRankMain does on a failure, for main()s that manage MPI themselves: prints `message`
// (prefixed with the rank if it does not name one), aborts the registered Comms, MPI_Abort(code).
[[noreturn]] void AbortJob(const std::string& message, int code) noexcept;

}  // namespace prefixd::comm
