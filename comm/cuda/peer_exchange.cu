// PeerExchange (peer_exchange.h): the window's set-up over CUDA IPC and the exchange kernel.
#include "peer_exchange.h"

#include <cstdio>
#include <exception>

#include "prefixd/comm/bootstrap.h"
#include "prefixd/comm/mpi_check.h"
#include "prefixd/common/cuda_check.h"
#include "prefixd/common/error.h"

namespace prefixd::comm {
namespace {

constexpr int kMaxRanks = PeerExchange::kMaxRanks;
constexpr int kMaxBlocks = PeerExchange::kMaxBlocks;
constexpr int kThreads = 512;
// The window: per buffer parity, arrive flags [rank][block] and done flags [rank][block] (a flag
// is written by one peer only, with growing epochs: operations of one parity are ordered by the
// done wait, so no flag ever goes back even when operations run on several streams at once);
// then the two data buffers.
constexpr size_t kFlagWords = size_t(kMaxRanks) * kMaxBlocks;  // one table
constexpr size_t kDataOffset = 4 * kFlagWords * sizeof(uint32_t);

// Table of `parity` (0, 1) and kind (0 arrive, 1 done) in a window.
__device__ __forceinline__ uint32_t* Flags(char* window, uint32_t parity, int kind) {
  return reinterpret_cast<uint32_t*>(window) + (parity * 2 + kind) * kFlagWords;
}
// A block that has waited this long for a peer traps, so that a dead peer surfaces as a CUDA
// error (and the job aborts, fatal.h) instead of a hang.
constexpr uint64_t kSpinLimitNs = 20ull * 1000 * 1000 * 1000;

struct ExchangeParams {
  char* window[kMaxRanks];      // every rank's window as mapped here
  const char* send[kMaxRanks];  // per destination rank
  char* recv[kMaxRanks];        // per source rank
  uint64_t send_bytes[kMaxRanks];
  uint64_t recv_bytes[kMaxRanks];
  uint64_t slot_bytes;
  uint64_t buffer_bytes;
  uint32_t epoch;
  int rank, size;
};

__device__ __forceinline__ void StoreRelease(uint32_t* flag, uint32_t value) {
  asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(flag), "r"(value) : "memory");
}

__device__ __forceinline__ uint32_t LoadAcquire(const uint32_t* flag) {
  uint32_t value;
  asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(value) : "l"(flag) : "memory");
  return value;
}

__device__ __forceinline__ uint64_t GlobalTimerNs() {
  uint64_t t;
  asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t));
  return t;
}

// Waits until *flag ≥ target (epochs only grow).
__device__ void SpinUntil(const uint32_t* flag, uint32_t target, int peer, const char* what) {
  if (LoadAcquire(flag) >= target) return;
  const uint64_t start = GlobalTimerNs();
  while (LoadAcquire(flag) < target) {
    if (GlobalTimerNs() - start > kSpinLimitNs) {
      printf("prefixd PeerExchange: block %d waited 20 s for rank %d's %s flag (epoch %u): trapping\n",
             int(blockIdx.x), peer, what, target);
      __trap();
    }
  }
}

// Block b's share of a `bytes`-long copy: [b·share, (b+1)·share) with share a multiple of 16, so
// that every share keeps the alignment of the whole. L2-only loads: the source may be this
// rank's window, written by peers since this SM last looked.
__device__ void CopyShare(const char* src, char* dst, uint64_t bytes) {
  const uint64_t share = ((bytes + gridDim.x - 1) / gridDim.x + 15) & ~uint64_t(15);
  const uint64_t begin = uint64_t(blockIdx.x) * share;
  if (begin >= bytes) return;
  const uint64_t end = min(bytes, begin + share);
  src += begin;
  dst += begin;
  const uint64_t n = end - begin;
  const uintptr_t align = reinterpret_cast<uintptr_t>(src) | reinterpret_cast<uintptr_t>(dst);
  uint64_t done = 0;
  if ((align & 15) == 0) {
    const uint64_t vectors = n / 16;
    for (uint64_t i = threadIdx.x; i < vectors; i += blockDim.x)
      reinterpret_cast<uint4*>(dst)[i] = __ldcg(reinterpret_cast<const uint4*>(src) + i);
    done = vectors * 16;
  } else if ((align & 3) == 0) {
    const uint64_t words = n / 4;
    for (uint64_t i = threadIdx.x; i < words; i += blockDim.x)
      reinterpret_cast<uint32_t*>(dst)[i] = __ldcg(reinterpret_cast<const unsigned int*>(src) + i);
    done = words * 4;
  }
  for (uint64_t i = done + threadIdx.x; i < n; i += blockDim.x) dst[i] = src[i];
}

__global__ void __launch_bounds__(kThreads) PeerExchangeKernel(ExchangeParams p) {
  const int b = blockIdx.x, t = threadIdx.x;
  const uint32_t e = p.epoch;
  const uint32_t parity = e & 1;
  char* mine = p.window[p.rank];
  uint32_t* my_arrive = Flags(mine, parity, 0);
  uint32_t* my_done = Flags(mine, parity, 1);
  const uint64_t parity_offset = kDataOffset + parity * p.buffer_bytes;

  // 1. Each peer has read what this rank wrote into the same buffer two operations ago.
  if (e > 2 && t < p.size && t != p.rank && p.send_bytes[t] > 0 && p.send_bytes[t] <= p.slot_bytes)
    SpinUntil(my_done + t * kMaxBlocks + b, e - 2, t, "done");
  __syncthreads();
  // 2. This block's share of every peer's bytes, into slot [rank] of the peer's buffer; the own
  //    block straight to its destination.
  for (int j = 0; j < p.size; ++j) {
    const uint64_t bytes = p.send_bytes[j];
    if (bytes == 0) continue;
    if (j == p.rank) {
      if (p.send[j] != p.recv[j]) CopyShare(p.send[j], p.recv[j], bytes);
    } else if (bytes <= p.slot_bytes) {
      CopyShare(p.send[j], p.window[j] + parity_offset + uint64_t(p.rank) * p.slot_bytes, bytes);
    }
  }
  __syncthreads();
  // 3. Arrived: every peer learns that this block's share is in its buffer (the release orders the
  //    whole block's stores, made visible to thread t by the barrier, before the flag).
  if (t < p.size && t != p.rank) {
    __threadfence_system();
    StoreRelease(Flags(p.window[t], parity, 0) + p.rank * kMaxBlocks + b, e);
  }
  // 4. Every peer's share b has arrived here.
  if (t < p.size && t != p.rank) SpinUntil(my_arrive + t * kMaxBlocks + b, e, t, "arrive");
  __syncthreads();
  // 5. This block's share of every slot to its destination.
  for (int j = 0; j < p.size; ++j) {
    const uint64_t bytes = p.recv_bytes[j];
    if (j == p.rank || bytes == 0 || bytes > p.slot_bytes) continue;
    CopyShare(mine + parity_offset + uint64_t(j) * p.slot_bytes, p.recv[j], bytes);
  }
  __syncthreads();
  // 6. Done (to every peer, whatever it sent): each may write into this rank's buffer (e & 1)
  //    again.
  if (t < p.size && t != p.rank) StoreRelease(Flags(p.window[t], parity, 1) + p.rank * kMaxBlocks + b, e);
}

// True on every rank when `ok` is true on every rank.
bool AllAgree(MPI_Comm comm, bool ok) {
  int mine = ok ? 1 : 0, all = 0;
  PREFIXD_MPI_CHECK(MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, comm));
  return all != 0;
}

}  // namespace

PeerExchange::PeerExchange(MPI_Comm comm, int rank, int size, const PeerExchangeOptions& options)
    : comm_(comm), rank_(rank), size_(size), options_(options), peers_(size, nullptr) {}

std::unique_ptr<PeerExchange> PeerExchange::Create(MPI_Comm comm, int device, const PeerExchangeOptions& options) {
  PREFIXD_CHECK_ARG(options.blocks >= 1 && options.blocks <= kMaxBlocks,
                    "PeerExchange: blocks must be in [1, " << kMaxBlocks << "], got " << options.blocks);
  PREFIXD_CHECK_ARG(options.slot_bytes >= 16, "PeerExchange: slot_bytes must be at least 16");
  int rank = 0, size = 1;
  PREFIXD_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  PREFIXD_MPI_CHECK(MPI_Comm_size(comm, &size));
  // One host, few enough ranks, and peer access between every pair of their devices.
  const LocalRank local = NodeLocalRank(comm);
  if (size < 2 || size > kMaxRanks || !AllAgree(comm, local.size == size)) return nullptr;
  std::vector<int> devices(size);
  PREFIXD_MPI_CHECK(MPI_Allgather(&device, 1, MPI_INT, devices.data(), 1, MPI_INT, comm));
  bool reachable = true;
  for (int d : devices) {
    if (d == device) continue;
    int can = 0;
    if (cudaDeviceCanAccessPeer(&can, device, d) != cudaSuccess) {
      cudaGetLastError();
      can = 0;
    }
    reachable = reachable && can != 0;
  }
  if (!AllAgree(comm, reachable)) return nullptr;

  std::unique_ptr<PeerExchange> self(new PeerExchange(comm, rank, size, options));
  self->buffer_bytes_ = size_t(size) * options.slot_bytes;
  const size_t window_bytes = kDataOffset + 2 * self->buffer_bytes_;
  cudaIpcMemHandle_t handle{};
  bool ok = cudaMalloc(&self->window_, window_bytes) == cudaSuccess &&
            cudaMemset(self->window_, 0, kDataOffset) == cudaSuccess &&
            cudaDeviceSynchronize() == cudaSuccess && cudaIpcGetMemHandle(&handle, self->window_) == cudaSuccess;
  if (!ok) cudaGetLastError();
  if (!AllAgree(comm, ok)) return nullptr;  // the destructor frees what was made
  std::vector<cudaIpcMemHandle_t> handles(size);
  PREFIXD_MPI_CHECK(MPI_Allgather(&handle, sizeof(handle), MPI_BYTE, handles.data(), sizeof(handle), MPI_BYTE, comm));
  self->peers_[rank] = self->window_;
  for (int j = 0; j < size && ok; ++j) {
    if (j == rank) continue;
    ok = cudaIpcOpenMemHandle(&self->peers_[j], handles[j], cudaIpcMemLazyEnablePeerAccess) == cudaSuccess;
    if (!ok) {
      cudaGetLastError();
      self->peers_[j] = nullptr;
    }
  }
  if (!AllAgree(comm, ok)) return nullptr;
  return self;
}

PeerExchange::~PeerExchange() {
  // On the normal path every rank waits for its pending exchanges and for every peer's, so that
  // no window is unmapped or freed while a peer may still write to it. While an exception
  // unwinds (this rank failed; peers may be gone) no collective is attempted.
  if (std::uncaught_exceptions() == 0) {
    cudaDeviceSynchronize();
    MPI_Barrier(comm_);
  }
  for (int j = 0; j < size_; ++j)
    if (j != rank_ && peers_[j] != nullptr) cudaIpcCloseMemHandle(peers_[j]);
  if (window_ != nullptr) cudaFree(window_);
}

void PeerExchange::Run(const PeerTransfer& transfer, cudaStream_t stream) {
  PREFIXD_CHECK_INTERNAL(int(transfer.send.size()) == size_ && int(transfer.send_bytes.size()) == size_ &&
                             int(transfer.recv.size()) == size_ && int(transfer.recv_bytes.size()) == size_,
                         "PeerTransfer needs one entry per rank");
  ExchangeParams p{};
  for (int j = 0; j < size_; ++j) {
    p.window[j] = static_cast<char*>(peers_[j]);
    p.send[j] = static_cast<const char*>(transfer.send[j]);
    p.recv[j] = static_cast<char*>(transfer.recv[j]);
    p.send_bytes[j] = transfer.send_bytes[j];
    p.recv_bytes[j] = transfer.recv_bytes[j];
  }
  p.slot_bytes = options_.slot_bytes;
  p.buffer_bytes = buffer_bytes_;
  p.epoch = ++epoch_;
  p.rank = rank_;
  p.size = size_;
  PeerExchangeKernel<<<options_.blocks, kThreads, 0, stream>>>(p);
  PREFIXD_CUDA_CHECK_LAUNCH();
}

}  // namespace prefixd::comm
