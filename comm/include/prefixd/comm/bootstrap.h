// Bringing up a job: MPI (the control plane), device selection, and the Comm factories.
//
//   prefixd::comm::MpiSession session(&argc, &argv);     // MPI_Init_thread ... MPI_Finalize (RAII)
//   const int device = prefixd::comm::SelectLocalDevice(session);   // -1 without a GPU
//   auto comm = device >= 0 ? prefixd::comm::MakeNcclComm(MPI_COMM_WORLD, device, stream)
//                           : prefixd::comm::MakeMpiComm(MPI_COMM_WORLD);
//
// Most main()s should go through RunRankMain (fatal.h), which owns the session and turns an error
// on any rank into a non-zero exit of the whole job instead of a hang.
//
// Every factory and helper here is collective over the MPI communicator it is given: all of its
// ranks must call it, in the same order.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "prefixd/comm/comm.h"

namespace prefixd::comm {

// RAII for MPI_Init_thread / MPI_Finalize. Also: SetErrorRank(world rank) so that every
// prefixd::Error names its rank, and MPI_ERRORS_RETURN on MPI_COMM_WORLD (inherited by the
// communicators derived from it) so that MPI failures surface as exceptions through
// PREFIXD_MPI_CHECK instead of aborting inside MPI without prefixd's message.
// If MPI is already initialised (a test main did it), the session adopts it and does not
// finalise it. At most one session should own MPI per process.
class MpiSession {
 public:
  // MPI_THREAD_FUNNELED: only the thread that made the session calls MPI (NCCL's own threads
  // never do). Throws if MPI cannot give the level asked for.
  explicit MpiSession(int* argc, char*** argv, int thread_level = MPI_THREAD_FUNNELED);
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  int rank() const { return rank_; }                // in MPI_COMM_WORLD
  int size() const { return size_; }
  int local_rank() const { return local_rank_; }    // among the ranks of this host
  int local_size() const { return local_size_; }
  const std::string& host() const { return host_; }
  MPI_Comm world() const { return MPI_COMM_WORLD; }
  MPI_Comm node() const { return node_; }           // the ranks sharing this host's memory

 private:
  bool owns_mpi_ = false;
  int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1;
  std::string host_;
  MPI_Comm node_ = MPI_COMM_NULL;
};

// Node-local rank and size of the calling rank within `comm` (MPI_Comm_split_type SHARED).
// Collective over `comm`.
struct LocalRank {
  int rank = 0;
  int size = 1;
};
LocalRank NodeLocalRank(MPI_Comm comm);

// Number of usable CUDA devices; 0 when the build has no CUDA or no driver/GPU is present (any
// error of cudaGetDeviceCount counts as "no GPU": CI machines report "insufficient driver").
int CudaDeviceCount();

// The device a rank uses: local_rank % device_count (ranks of one host spread over its GPUs;
// more ranks than GPUs share them round-robin). -1 when device_count <= 0.
int DeviceForLocalRank(int local_rank, int device_count);

// Picks DeviceForLocalRank(session.local_rank(), CudaDeviceCount()) and makes it current
// (cudaSetDevice). Returns the device, or -1 (and changes nothing) without a GPU.
int SelectLocalDevice(const MpiSession& session);

// Options shared by both Comm implementations.
struct CommOptions {
  // AllToAllV cross-checks the byte counts of every (sender, receiver) pair over MPI before moving
  // data and throws kInvalidArgument on all ranks if they disagree (a mismatch would otherwise
  // hang or silently corrupt the next operation). Costs two small host collectives per call.
  bool check_sizes = true;
  // MpiComm only: messages larger than this are split (MPI counts are int). Tests make it tiny to
  // exercise the split path.
  size_t max_message_bytes = size_t(1) << 30;
  // NcclComm only: where every rank is on one host and every pair of GPUs has peer access,
  // AllGather and AllToAllV move their bytes with one kernel that writes straight into the peers'
  // memory (comm/cuda/peer_exchange.h: ~3-5× less latency than NCCL's kernels at the decode
  // step's sizes); pairs over peer_slot_bytes, other operations, other topologies and streams
  // being captured into a CUDA graph use NCCL. The environment variable PREFIXD_PEER_EXCHANGE=0|1
  // overrides peer_exchange.
  bool peer_exchange = true;
  size_t peer_slot_bytes = size_t(4) << 20;  // per (sender, receiver) pair
  // With the peer path, AllocRegistered hands out receive buffers from an arena of this many bytes
  // that the peers write into directly (no copy out of a slot); 0, or PREFIXD_PEER_DIRECT=0, turns
  // that off. Ignored with PREFIXD_NCCL_REGISTER=1 (NCCL's registered buffers instead).
  size_t peer_arena_bytes = size_t(64) << 20;
};

// Host-buffer Comm over a duplicate of `comm` (its traffic never mixes with the caller's control
// messages on `comm`). Collective over `comm`. The returned Comm must be destroyed before
// MPI_Finalize.
std::unique_ptr<Comm> MakeMpiComm(MPI_Comm comm, const CommOptions& options = {});

// Device-buffer Comm: rank 0 of `comm` makes the ncclUniqueId, MPI_Bcast's it, every rank calls
// ncclCommInitRank on `device` (made current). `stream` (cudaStream_t as void*) is the default
// stream: operations given stream == nullptr run on it. check_sizes defaults to on here too; turn
// it off on hot paths once the plans are trusted (it needs host MPI collectives per AllToAllV).
// Registered for AbortAllComms() until destroyed. Throws kUnsupported when the build has no CUDA.
// Collective over `comm`.
std::unique_ptr<Comm> MakeNcclComm(MPI_Comm comm, int device, void* stream,
                                   const CommOptions& options = {});

// True when this build has NCCL (MakeNcclComm can work given a GPU).
bool NcclBuilt();

// Comms that need aborting when a rank fails (NcclComm registers itself). AbortAllComms() calls
// Abort() on each; it is what RunRankMain does before MPI_Abort. Thread-safe.
void RegisterForAbort(Comm* comm);
void UnregisterForAbort(Comm* comm);
void AbortAllComms() noexcept;

// ---- Small typed control-plane helpers (MPI, host memory, collective over `comm`) ----

// `data` on `root` is sent to every rank; other ranks' vectors are resized to match.
void BroadcastBytes(MPI_Comm comm, std::vector<uint8_t>& data, int root = 0);
void BroadcastInts(MPI_Comm comm, std::vector<int32_t>& data, int root = 0);
void BroadcastString(MPI_Comm comm, std::string& text, int root = 0);

// Per-rank status, gathered on `root` (other ranks get an empty vector): e.g. "did your part of
// the plan load" before the step starts.
struct RankStatus {
  int32_t code = 0;      // 0 = ok
  std::string message;   // empty when ok
};
std::vector<RankStatus> GatherStatus(MPI_Comm comm, const RankStatus& mine, int root = 0);
// Every rank gets every rank's value.
std::vector<int32_t> AllGatherInt(MPI_Comm comm, int32_t value);

}  // namespace prefixd::comm
