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

// `single_rank`: the job has one rank, so the CUDA backend may offer the planner its concurrent
// prefix/decode mode (kernels::BackendOptions::concurrent_prefix_decode).
std::unique_ptr<kernels::Backend> MakeRankBackend(const RankDevice& device, bool single_rank);

// Device memory a GPU keeps beside its KV pool: the backends' workspaces (tens of MiB for the
// main job's default workload), NCCL's buffers (a few hundred MiB) and what the CUDA context grows
// by: max(2 GiB, 5% of the device).
int64_t ReservedDeviceBytes(int64_t total_bytes);
// Pages of page_bytes that fit in free_bytes of a device of total_bytes beside its reserve (≥ 0).
int64_t PagesThatFit(int64_t free_bytes, int64_t total_bytes, int64_t page_bytes);
// Host memory a CPU-backend rank keeps beside its KV pool, of its share of the host's available
// memory: its workspaces, the main job's unshared check, MPI's buffers and whatever else runs on the
// host (the CPU backend is a development backend, not the machine's only tenant): half of it (no
// fixed floor, so that a small machine still runs small workloads).
int64_t ReservedHostBytes(int64_t share_bytes);
// The host's available memory (Linux: MemAvailable of /proc/meminfo; elsewhere free pages).
int64_t HostAvailableBytes();

// Room for a KV pool of `pool`'s shape (its num_pages aside) on every rank of `comm`: what the
// fullest one holds. On GPUs, its free device memory beside ReservedDeviceBytes; on the CPU
// backend, its share of the host's available memory (divided among the ranks on that host) beside
// ReservedHostBytes, so that a workload too large for the host is capped or refused with the figures
// instead of failing in an allocation. Collective over `comm`.
struct KvPoolRoom {
  bool host = false;           // the CPU backend: the figures are host memory
  int64_t pages = 0;           // pages that fit on every rank
  int64_t free_bytes = 0;      // the fullest rank's free device memory, or its share of the host's
  int64_t reserved_bytes = 0;  // of which kept beside the pool (ReservedDeviceBytes, ReservedHostBytes)
};
KvPoolRoom FindKvPoolRoom(MPI_Comm comm, const RankDevice& device, const kernels::KvPoolShape& pool);
// Why a pool of `pool`'s shape and num_pages does not fit in `room`, for an error or a notice: "N KV
// pages per rank (X GiB), but the fullest rank's GPU has F GiB free, of which R stay for
// workspaces and NCCL: room for P pages of S (K and V of T tokens in L layers)"; on the CPU
// backend "... but the fullest rank's share of host memory is F GiB, of which R stay for
// workspaces: ...".
std::string KvPoolShortfall(const kernels::KvPoolShape& pool, const KvPoolRoom& room);
// Bytes as "1.50 GiB" (from 1 GiB) or "12.00 MiB".
std::string FormatBytes(double bytes);

// The Engine over `control` (collective), with chunks − 1 extra pipeline backends (and one split
// backend per chunk when options.worker.split_own_rows is set). NCCL's
// per-call size cross-check is off: the worker's layouts agree by construction (tested), and the
// check would add host collectives to every exchange.
std::unique_ptr<Engine> MakeEngine(const EngineOptions& options, const RankDevice& device, MPI_Comm control,
                                   int chunks);

}  // namespace prefixd::coordinator
