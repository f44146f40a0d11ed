// Bringing up an Engine on every rank of a job, the same way in the main job and the benchmarks:
// the backend is chosen identically on every rank (CUDA only when every rank has a GPU), the
// data-plane Comm matches it (NCCL on device buffers, MPI on host buffers), and pipeline chunks
// get their extra backends.
#pragma once

#include <mpi.h>

#include <memory>
#include <string>

#include "prefixd/comm/bootstrap.h"
#include "prefixd/coordinator/engine.h"

namespace prefixd::coordinator {

struct RankDevice {
  bool cuda = false;
  int device = -1;  // CUDA device of this rank (node-local rank % devices), -1 for the CPU backend
};

// `flag`: "auto" (CUDA when every rank has a GPU, else the CPU backend), "cuda" (throws on a rank
// without a GPU) or "cpu". Collective over MPI_COMM_WORLD.
RankDevice ChooseRankDevice(const comm::MpiSession& session, const std::string& flag);

std::unique_ptr<kernels::Backend> MakeRankBackend(const RankDevice& device);

// The Engine over `control` (collective), with chunks − 1 extra pipeline backends (and one split
// backend per chunk when options.worker.split_own_rows is set). NCCL's
// per-call size cross-check is off: the worker's layouts agree by construction (tested), and the
// check would add host collectives to every exchange.
std::unique_ptr<Engine> MakeEngine(const EngineOptions& options, const RankDevice& device, MPI_Comm control,
                                   int chunks);

}  // namespace prefixd::coordinator
