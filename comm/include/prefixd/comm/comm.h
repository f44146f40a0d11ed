// The state-exchange interface: stream-ordered, asynchronous collectives over the ranks of a job.
//
// Two exact implementations behind one interface (ggml-style backends):
//  - MpiComm: host buffers, MPI point-to-point/collectives; what CI runs with the CPU backend.
//  - NcclComm: device buffers, NCCL on the worker's CUDA stream (capturable, overlappable).
// MPI is always the control plane (bootstrap, plans, request metadata): see bootstrap.h.
//
// Buffers live in the memory of the backend the Comm was made for (host for MpiComm, device for
// NcclComm). `stream` is the cudaStream_t (as void*) for NCCL and ignored by MPI, whose
// operations complete before returning. Every call is collective over all ranks of the Comm,
// with per-rank sizes allowed to be 0.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace prefixd::comm {

enum class MemoryKind { kHost, kDevice };

class Comm {
 public:
  virtual ~Comm() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual MemoryKind memory() const = 0;
  virtual std::string name() const = 0;  // "mpi" or "nccl"

  // Every rank contributes `bytes` bytes; recv holds size() · bytes, rank-major.
  virtual void AllGather(const void* send, void* recv, size_t bytes, void* stream) = 0;
  // Personalised exchange (grouped send/recv): to rank j go send_bytes[j] bytes starting at
  // send + send_offsets[j]; from rank j come recv_bytes[j] bytes to recv + recv_offsets[j].
  virtual void AllToAllV(const void* send, const std::vector<size_t>& send_bytes,
                         const std::vector<size_t>& send_offsets, void* recv,
                         const std::vector<size_t>& recv_bytes,
                         const std::vector<size_t>& recv_offsets, void* stream) = 0;
  // In-place element-wise all-reduce of `count` floats.
  virtual void AllReduceMax(float* data, size_t count, void* stream) = 0;
  virtual void AllReduceSum(float* data, size_t count, void* stream) = 0;
  // send holds size() · recv_count floats; rank i receives the sum of block i.
  virtual void ReduceScatterSum(const float* send, float* recv, size_t recv_count, void* stream) = 0;
  virtual void Broadcast(void* data, size_t bytes, int root, void* stream) = 0;
  // Waits until the operations enqueued on `stream` are done (no-op for MPI).
  virtual void Synchronize(void* stream) = 0;
  // Best-effort, non-blocking teardown after an error on this rank (ncclCommAbort); the caller
  // then aborts MPI so that no rank hangs in a collective.
  virtual void Abort() = 0;

  // Memory for exchange buffers that this Comm moves without staging copies. NcclComm with its
  // peer path: a receive arena the peers write into directly (the peer path's copy out of a slot
  // disappears; each rank decides for itself, no agreement needed). NcclComm with
  // PREFIXD_NCCL_REGISTER=1: ncclMemAlloc + ncclCommRegister, so that point-to-point transfers
  // between GPUs of one host go straight from the sender's buffer to the receiver's; NCCL's rule
  // there: a transfer uses registered buffers on every rank or on none, so all ranks must ask for
  // the same buffers. nullptr where the Comm has no such memory, or none left (MPI; NCCL without
  // either): the caller then allocates as usual. Freed with FreeRegistered, before the Comm is
  // destroyed.
  virtual void* AllocRegistered(size_t bytes) {
    (void)bytes;
    return nullptr;
  }
  virtual void FreeRegistered(void* ptr) noexcept { (void)ptr; }

  // Operations moved through the peers' memory so far (NcclComm's one-host fast path,
  // CommOptions::peer_exchange); 0 for Comms without one. For tests and reports.
  virtual uint64_t peer_operations() const { return 0; }
};

}  // namespace prefixd::comm
