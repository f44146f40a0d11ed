#include "prefixd/comm/fatal.h"

#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <new>
#include <string>

namespace prefixd::comm {

int ExitCodeFor(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kInvalidArgument: return kExitInvalidArgument;
    case ErrorKind::kNotFound: return kExitNotFound;
    case ErrorKind::kUnsupported: return kExitUnsupported;
    case ErrorKind::kOutOfMemory: return kExitOutOfMemory;
    case ErrorKind::kLibrary: return kExitLibrary;
    case ErrorKind::kInternal: return kExitInternal;
  }
  return kExitFailure;
}

void AbortJob(const std::string& message, int code) noexcept {
  // One fprintf + fflush: the line reaches mpirun's output before MPI_Abort kills this process.
  if (message.find("rank ") == std::string::npos && ErrorRank() >= 0) {
    std::fprintf(stderr, "prefixd: rank %d failed: %s\n", ErrorRank(), message.c_str());
  } else {
    std::fprintf(stderr, "%s\n", message.c_str());
  }
  std::fflush(stderr);
  std::fflush(stdout);
  AbortAllComms();
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Abort(MPI_COMM_WORLD, code == 0 ? kExitFailure : code);
  // MPI_Abort does not return; if MPI is not (or no longer) up, exit this process directly.
  std::_Exit(code == 0 ? kExitFailure : code);
}

int RunRankMain(int argc, char** argv, const std::function<int(MpiSession&)>& body) {
  std::unique_ptr<MpiSession> session;
  try {
    session = std::make_unique<MpiSession>(&argc, &argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return kExitLibrary;
  }
  int rc = 0;
  try {
    rc = body(*session);
  } catch (const Error& e) {
    AbortJob(e.what(), ExitCodeFor(e.kind()));
  } catch (const std::bad_alloc&) {
    AbortJob(kHostOutOfMemoryMessage, kExitOutOfMemory);
  } catch (const std::exception& e) {
    AbortJob(std::string("unexpected exception: ") + e.what(), kExitFailure);
  } catch (...) {
    AbortJob("unknown exception", kExitFailure);
  }
  if (rc != 0) AbortJob("exit code " + std::to_string(rc), rc);
  session.reset();  // MPI_Finalize; Comms made in body are gone by now
  return 0;
}

}  // namespace prefixd::comm
