// PeerExchange: NcclComm's fast path for the two operations on the decode step's critical path
// (AllGather of the queries, AllToAllV of the partial states) when every rank of the communicator
// is on one host and every pair of its GPUs can reach each other's memory (NVLink / NVSwitch).
//
// Why: NCCL's kernels cost 10-25 µs per operation at the step's sizes (128 KiB - 1 MiB per rank)
// however few bytes move (bench/comm/README.md): ring steps and proxy hand-offs. Here one kernel
// writes each peer's bytes straight into that peer's memory with 16-byte stores and meets the
// peers at per-block flags. Measured (bench/comm/README.md, session 15): inside the 8-GPU step the
// version that staged every receive in a slot took 19 µs (queries, 1 MiB per rank) and 26 µs
// (states, 1.8 MiB), of which 7-9 µs were the copy out of the slots and the flags saying so; hence
// the receive arena below (session 16). PREFIXD_PEER_STATS=1 prints where each operation's time
// goes. Tried and not kept, as no faster inside the step: receivers pulling from a peer-mapped
// arena, and data that carries its own epoch (no flags).
//
// How (the scheme of vLLM's and TensorRT-LLM's custom all-reduce, with the receiver naming the
// destination):
//  - every rank owns one device window, mapped into every peer through CUDA IPC: arrive flags
//    [rank][block], one post per rank, one data buffer with a slot per rank, and a receive arena;
//  - the pair's operation e, at the receiver's start: it posts (epoch e, where the sender's bytes
//    go) into the sender's window: into the receive buffer itself where that lies in its arena
//    (AllocateReceive: no copy afterwards), else into the sender's slot of its data buffer. Since
//    a rank runs its operations in issue order, the post also says that the operations before e
//    are finished there: its slots and receive buffers may be written;
//  - the sender's block b waits for that post, writes its b-th share to the place it names, and
//    raises its arrive flag [sender][b] = e in the receiver's window (release, system scope);
//  - the receiver's block b waits until every active peer's arrive flag [peer][b] reaches e
//    (acquire) and copies its b-th share of any slot to the destination.
// Pairs whose bytes exceed a slot are left to the caller (NCCL); the decision per pair is the
// same on both sides because both know the pair's byte count. The receive arena needs no such
// agreement: each receiver decides per pair and says so in its post.
//
// Synchronisation is per pair of ranks, as with NCCL's point-to-point: a pair takes part in an
// operation when some direction of it moves bytes through the peer path, and counts its operations
// (its epoch); a rank with nothing to move with anyone may skip a call. The ranks of a pair must
// issue their common operations in the same order; each rank's operations run in the order it
// issued them, also across streams (Run orders a stream change behind the previous operation).
// Not for CUDA-graph capture: the epochs are
// kernel arguments, so a replayed graph would repeat them; NcclComm uses NCCL while a stream
// captures.
#pragma once

#include <cuda_runtime.h>
#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

namespace prefixd::comm {

struct PeerExchangeOptions {
  size_t slot_bytes = size_t(4) << 20;  // per (sender, receiver) pair and buffer
  int blocks = 24;                      // CTAs of the exchange kernel (≤ kMaxBlocks)
  size_t arena_bytes = size_t(64) << 20;  // receive buffers peers write into directly (0: none)
};

// One operation, seen from this rank: to each rank j go send_bytes[j] bytes from send[j]
// (j == this rank: a local copy to recv[j], skipped when the pointers are equal); from each
// rank j come recv_bytes[j] bytes to recv[j]. Pairs with bytes over slot_bytes() are skipped
// (both directions are judged by the same count, so both sides skip them).
struct PeerTransfer {
  std::vector<const void*> send;
  std::vector<size_t> send_bytes;
  std::vector<void*> recv;
  std::vector<size_t> recv_bytes;
};

class PeerExchange {
 public:
  static constexpr int kMaxRanks = 16;
  static constexpr int kMaxBlocks = 64;

  // Collective over `comm`. nullptr on every rank when any rank cannot take part (ranks on
  // several hosts, more than kMaxRanks ranks, a GPU pair without peer access, an IPC failure);
  // the same answer on every rank.
  static std::unique_ptr<PeerExchange> Create(MPI_Comm comm, int device, const PeerExchangeOptions& options);
  ~PeerExchange();
  PeerExchange(const PeerExchange&) = delete;
  PeerExchange& operator=(const PeerExchange&) = delete;

  size_t slot_bytes() const { return options_.slot_bytes; }
  bool Fits(size_t bytes) const { return bytes <= options_.slot_bytes; }
  // Enqueues the operation on `stream` (one kernel). Throws on launch errors.
  void Run(const PeerTransfer& transfer, cudaStream_t stream);
  uint64_t operations() const { return operations_; }

  // A receive buffer in this rank's arena: peers write its bytes straight into it (no copy out of
  // a slot). nullptr when the arena cannot hold `bytes` (the caller then allocates elsewhere, and
  // the path stages through slots). Freed with FreeReceive, which waits for the device first
  // (as cudaFree does: no operation still in flight may be writing into it).
  void* AllocateReceive(size_t bytes);
  // False (and nothing done) when ptr is not from AllocateReceive.
  bool FreeReceive(void* ptr) noexcept;

 private:
  PeerExchange(MPI_Comm comm, int rank, int size, const PeerExchangeOptions& options);
  void PrintStats();

  MPI_Comm comm_;  // the caller's (owned by NcclComm); used for the teardown barrier only
  int rank_ = 0, size_ = 1;
  PeerExchangeOptions options_;
  size_t buffer_bytes_ = 0;  // the data buffer: size × slot_bytes
  size_t arena_offset_ = 0;  // where the receive arena starts in a window
  size_t arena_bytes_ = 0;   // its size (options.arena_bytes, aligned down)
  void* window_ = nullptr;   // this rank's window (cudaMalloc)
  std::map<size_t, size_t> arena_free_;  // free ranges of the arena: offset → bytes
  std::map<size_t, size_t> arena_used_;  // allocated ranges: offset → bytes
  std::vector<void*> peers_;  // every rank's window as mapped here (peers_[rank_] == window_)
  std::vector<uint32_t> pair_epoch_;  // per peer: operations in which the pair took part
  uint64_t operations_ = 0;           // Run calls so far
  cudaStream_t last_stream_ = nullptr;  // the last operation's stream (0 may be the legacy stream)
  cudaEvent_t last_done_ = nullptr;     // recorded behind the last operation
  // PREFIXD_PEER_STATS=1 (a diagnostic): block 0's times at the kernel's phases, for the first
  // kStatSlots operations, printed per operation size at teardown.
  static constexpr int kStatPhases = 5;
  static constexpr uint64_t kStatSlots = 8192;
  uint64_t* stats_ = nullptr;         // device, kStatSlots × kStatPhases
  std::vector<uint64_t> stat_bytes_;  // per operation: bytes this rank sent (slots and own block)
};

}  // namespace prefixd::comm
