// PeerExchange (peer_exchange.h): the window's set-up over CUDA IPC and the exchange kernel.
#include "peer_exchange.h"
#include "system_scope_flags.cuh"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iterator>
#include <map>
#include <string>

#include "prefixd/comm/bootstrap.h"
#include "prefixd/comm/mpi_check.h"
#include "prefixd/common/cuda_check.h"
#include "prefixd/common/env.h"
#include "prefixd/common/error.h"

namespace prefixd::comm {
namespace {

constexpr int kMaxRanks = PeerExchange::kMaxRanks;
constexpr int kMaxBlocks = PeerExchange::kMaxBlocks;
constexpr int kThreads = 512;
// The window: arrive flags [rank][block] (a flag is written by one peer only, with growing epochs:
// each rank runs its operations in issue order, also across streams (Run), so no flag ever goes
// back), then one post per rank (written by that rank as the receiver of the pair), then the data
// buffer (one slot per rank), then the receive arena.
constexpr size_t kFlagWords = size_t(kMaxRanks) * kMaxBlocks;
struct Post {
  uint64_t offset;  // where the sender's bytes go: an offset into the receiver's arena, or kToSlot
  uint32_t epoch;   // the pair's operation this post is for (written last, with release)
  uint32_t unused;
};
constexpr uint64_t kToSlot = ~uint64_t(0);
constexpr size_t kPostOffset = kFlagWords * sizeof(uint32_t);
constexpr size_t kDataOffset = (kPostOffset + kMaxRanks * sizeof(Post) + 255) / 256 * 256;
constexpr size_t kArenaAlign = 256;

__device__ __forceinline__ uint32_t* Arrive(char* window) { return reinterpret_cast<uint32_t*>(window); }
__device__ __forceinline__ Post* Posts(char* window) { return reinterpret_cast<Post*>(window + kPostOffset); }
// A block that has waited this long for a peer traps, so that a dead peer surfaces as a CUDA
// error (and the job aborts, fatal.h) instead of a hang.
constexpr uint64_t kSpinLimitNs = 20ull * 1000 * 1000 * 1000;

struct ExchangeParams {
  char* window[kMaxRanks];      // every rank's window as mapped here
  const char* send[kMaxRanks];  // per destination rank
  char* recv[kMaxRanks];        // per source rank
  uint64_t send_bytes[kMaxRanks];
  uint64_t recv_bytes[kMaxRanks];
  uint64_t recv_offset[kMaxRanks];  // per source rank: recv's offset in this rank's arena, or kToSlot
  uint64_t slot_bytes;
  uint64_t arena_offset;            // where the arena starts in a window
  uint32_t epoch[kMaxRanks];  // per peer: this operation's number for the pair; 0: the pair sits out
  int rank, size;
  uint64_t* stats;  // PREFIXD_PEER_STATS: block 0's phase times of this operation (kStatPhases), or null
};

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

// One copy of an exchange: `bytes` from src to dst; every block moves its share of it.
struct Segment {
  const char* src;
  char* dst;
  uint64_t bytes;
};

constexpr int kUnroll = 4;  // 16-byte units in flight per thread

// This block's share of every segment: [b·share, (b+1)·share) with share a multiple of 16, so that
// a share keeps its segment's alignment. The 16-byte units of all segments form one loop with
// kUnroll loads in flight per thread before their stores (a load-store chain per unit would make
// the copy latency-bound: ~1 µs per round at these sizes). A side that is only 4-byte aligned (the
// states' rows are 516 bytes) moves its unit as four words; the other side keeps 16-byte accesses,
// so stores into a peer's slot are always whole 16-byte NVLink writes. Tails under 16 bytes, and
// segments not 4-byte aligned, go byte by byte. L2-only loads: a source may be this rank's window,
// written by peers since this SM last looked.
__device__ void CopySegments(const Segment* segs, int n) {
  __shared__ const char* src[kMaxRanks];
  __shared__ char* dst[kMaxRanks];
  __shared__ uint64_t len[kMaxRanks], first_unit[kMaxRanks + 1];
  __shared__ uint32_t mode[kMaxRanks];  // bit 0: src 16-aligned, bit 1: dst 16-aligned, bit 2: bytes only
  if (threadIdx.x == 0) {
    uint64_t units = 0;
    for (int j = 0; j < n; ++j) {
      const uint64_t bytes = segs[j].bytes;
      const uint64_t share = ((bytes + gridDim.x - 1) / gridDim.x + 15) & ~uint64_t(15);
      const uint64_t begin = min(bytes, uint64_t(blockIdx.x) * share), end = min(bytes, begin + share);
      src[j] = segs[j].src + begin;
      dst[j] = segs[j].dst + begin;
      len[j] = end - begin;
      const uintptr_t s = reinterpret_cast<uintptr_t>(src[j]), d = reinterpret_cast<uintptr_t>(dst[j]);
      const bool words = ((s | d) & 3) == 0;
      mode[j] = ((s & 15) == 0 ? 1u : 0u) | ((d & 15) == 0 ? 2u : 0u) | (words ? 0u : 4u);
      first_unit[j] = units;
      units += words ? len[j] / 16 : 0;
    }
    first_unit[n] = units;
  }
  __syncthreads();
  const uint64_t total = first_unit[n];
  for (uint64_t base = threadIdx.x; base < total; base += uint64_t(blockDim.x) * kUnroll) {
    uint4 v[kUnroll];
    int seg[kUnroll];
    uint64_t off[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const uint64_t i = base + uint64_t(u) * blockDim.x;
      seg[u] = -1;
      if (i >= total) continue;
      int j = 0;
      while (first_unit[j + 1] <= i) ++j;
      seg[u] = j;
      off[u] = (i - first_unit[j]) * 16;
      if (mode[j] & 1u) {
        v[u] = __ldcg(reinterpret_cast<const uint4*>(src[j] + off[u]));
      } else {
        const unsigned int* w = reinterpret_cast<const unsigned int*>(src[j] + off[u]);
        v[u] = make_uint4(__ldcg(w), __ldcg(w + 1), __ldcg(w + 2), __ldcg(w + 3));
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int j = seg[u];
      if (j < 0) continue;
      if (mode[j] & 2u) {
        *reinterpret_cast<uint4*>(dst[j] + off[u]) = v[u];
      } else {
        uint32_t* w = reinterpret_cast<uint32_t*>(dst[j] + off[u]);
        w[0] = v[u].x, w[1] = v[u].y, w[2] = v[u].z, w[3] = v[u].w;
      }
    }
  }
  for (int j = 0; j < n; ++j) {
    const uint64_t from = (mode[j] & 4u) ? 0 : len[j] / 16 * 16;
    for (uint64_t i = from + threadIdx.x; i < len[j]; i += blockDim.x) dst[j][i] = src[j][i];
  }
  __syncthreads();  // the shared arrays are rewritten by the next call
}

// Block 0 notes the time it reaches phase k of the operation (PREFIXD_PEER_STATS).
__device__ __forceinline__ void NotePhase(const ExchangeParams& p, int k) {
  if (p.stats != nullptr && blockIdx.x == 0 && threadIdx.x == 0) p.stats[k] = GlobalTimerNs();
}

__global__ void __launch_bounds__(kThreads) PeerExchangeKernel(ExchangeParams p) {
  const int b = blockIdx.x, t = threadIdx.x;
  NotePhase(p, 0);
  char* mine = p.window[p.rank];
  // Each pair counts its own operations (a rank with nothing to move with a peer may skip a call,
  // as with NCCL's point-to-point), so epochs and flags are per pair. Thread t speaks for peer t.
  const bool pair = t < p.size && t != p.rank && p.epoch[t] != 0;
  const uint32_t e_t = pair ? p.epoch[t] : 0;
  // 1. Post, to every peer that sends here, where its bytes go. This rank has finished its earlier
  //    operations (issue order), so the place is free. Block 0 posts; every block reads the posts.
  if (b == 0 && pair && p.recv_bytes[t] > 0 && p.recv_bytes[t] <= p.slot_bytes) {
    Post* post = Posts(p.window[t]) + p.rank;
    StoreRelaxed64(&post->offset, p.recv_offset[t]);
    StoreRelease(&post->epoch, e_t);  // orders the offset before it
  }
  // 2. Where this rank's bytes for each peer go: the peer's post for this operation.
  __shared__ char* to_peer[kMaxRanks];
  if (pair && p.send_bytes[t] > 0 && p.send_bytes[t] <= p.slot_bytes) {
    Post* post = Posts(mine) + t;
    SpinUntil(&post->epoch, e_t, t, "post");
    const uint64_t offset = LoadRelaxed64(&post->offset);  // after the acquire of its epoch
    to_peer[t] = offset == kToSlot ? p.window[t] + kDataOffset + uint64_t(p.rank) * p.slot_bytes
                                   : p.window[t] + p.arena_offset + offset;
  }
  __syncthreads();
  NotePhase(p, 1);
  // 3. This block's share of every peer's bytes, to the place its post names; the own block
  //    straight to its destination.
  __shared__ Segment segs[kMaxRanks];
  __shared__ int num_segs;
  if (t == 0) {
    int n = 0;
    for (int j = 0; j < p.size; ++j) {
      const uint64_t bytes = p.send_bytes[j];
      // The own block goes straight to its destination, whatever its size (no slot involved).
      if (bytes == 0 || (j != p.rank && (bytes > p.slot_bytes || p.epoch[j] == 0)) ||
          (j == p.rank && p.send[j] == p.recv[j]))
        continue;
      segs[n++] = Segment{p.send[j], j == p.rank ? p.recv[j] : to_peer[j], bytes};
    }
    num_segs = n;
  }
  __syncthreads();
  CopySegments(segs, num_segs);
  // 4. Arrived: every peer of an active pair learns that this block's share has landed (the
  //    release orders the whole block's stores, made visible to thread t by the barrier, before
  //    the flag).
  if (pair) {
    __threadfence_system();
    StoreRelease(Arrive(p.window[t]) + p.rank * kMaxBlocks + b, e_t);
  }
  NotePhase(p, 2);
  // 5. Every such peer's share b has arrived here.
  if (pair) SpinUntil(Arrive(mine) + t * kMaxBlocks + b, e_t, t, "arrive");
  __syncthreads();
  NotePhase(p, 3);
  // 6. This block's share of every slot used to its destination (bytes that landed in place need
  //    nothing more).
  if (t == 0) {
    int n = 0;
    for (int j = 0; j < p.size; ++j) {
      const uint64_t bytes = p.recv_bytes[j];
      if (j == p.rank || bytes == 0 || bytes > p.slot_bytes || p.epoch[j] == 0 || p.recv_offset[j] != kToSlot)
        continue;
      segs[n++] = Segment{mine + kDataOffset + uint64_t(j) * p.slot_bytes, p.recv[j], bytes};
    }
    num_segs = n;
  }
  __syncthreads();
  CopySegments(segs, num_segs);
  NotePhase(p, 4);
}

// True on every rank when `ok` is true on every rank.
bool AllAgree(MPI_Comm comm, bool ok) {
  int mine = ok ? 1 : 0, all = 0;
  PREFIXD_MPI_CHECK(MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, comm));
  return all != 0;
}

}  // namespace

PeerExchange::PeerExchange(MPI_Comm comm, int rank, int size, const PeerExchangeOptions& options)
    : comm_(comm), rank_(rank), size_(size), options_(options), peers_(size, nullptr), pair_epoch_(size, 0) {}

// PREFIXD_PEER_STATS=1: per operation size, the medians of block 0's phases, printed by every rank
// at teardown (a diagnostic of where an exchange's time goes: waiting for peers or moving bytes).
void PeerExchange::PrintStats() {
  const uint64_t ops = std::min<uint64_t>(operations_, kStatSlots);
  std::vector<uint64_t> t(ops * kStatPhases);
  if (cudaMemcpy(t.data(), stats_, t.size() * sizeof(uint64_t), cudaMemcpyDeviceToHost) != cudaSuccess) {
    cudaGetLastError();
    return;
  }
  std::map<uint64_t, std::vector<std::array<double, kStatPhases>>> by_bytes;
  for (uint64_t i = 0; i < ops; ++i) {
    std::array<double, kStatPhases> d{};  // the phases' lengths, then the whole
    for (int k = 1; k < kStatPhases; ++k) d[k - 1] = double(t[i * kStatPhases + k] - t[i * kStatPhases + k - 1]) / 1e3;
    d[kStatPhases - 1] = double(t[i * kStatPhases + kStatPhases - 1] - t[i * kStatPhases]) / 1e3;
    by_bytes[stat_bytes_[i]].push_back(d);
  }
  for (auto& [bytes, rows] : by_bytes) {
    std::array<double, kStatPhases> median{};
    for (int k = 0; k < kStatPhases; ++k) {
      std::vector<double> v;
      for (const auto& r : rows) v.push_back(r[k]);
      std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
      median[k] = v[v.size() / 2];
    }
    std::fprintf(stderr,
                 "prefixd PeerExchange rank %d: %zu ops sending %llu B: median µs post+wait-post %.2f, push+flag %.2f, "
                 "wait-arrive %.2f, copy-out %.2f, total %.2f\n",
                 rank_, rows.size(), (unsigned long long)bytes, median[0], median[1], median[2], median[3], median[4]);
  }
}

std::unique_ptr<PeerExchange> PeerExchange::Create(MPI_Comm comm, int device, const PeerExchangeOptions& options) {
  PREFIXD_CHECK_ARG(options.blocks >= 1 && options.blocks <= kMaxBlocks,
                    "PeerExchange: blocks must be in [1, " << kMaxBlocks << "], got " << options.blocks);
  PREFIXD_CHECK_ARG(options.slot_bytes >= 16, "PeerExchange: slot_bytes must be at least 16");
  const bool stats_on = EnvFlag("PREFIXD_PEER_STATS", false);
  int rank = 0, size = 1;
  PREFIXD_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  PREFIXD_MPI_CHECK(MPI_Comm_size(comm, &size));
  // Every rank must cut the exchanges alike: the same slots, the same blocks.
  const long long mine[2] = {(long long)options.slot_bytes, options.blocks};
  long long lo[2], hi[2];
  PREFIXD_MPI_CHECK(MPI_Allreduce(mine, lo, 2, MPI_LONG_LONG, MPI_MIN, comm));
  PREFIXD_MPI_CHECK(MPI_Allreduce(mine, hi, 2, MPI_LONG_LONG, MPI_MAX, comm));
  PREFIXD_CHECK_ARG(lo[0] == hi[0] && lo[1] == hi[1],
                    "PeerExchange: ranks disagree on slot bytes (" << lo[0] << ".." << hi[0] << ") or blocks ("
                                                                    << lo[1] << ".." << hi[1] << ")");
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
  self->arena_offset_ = (kDataOffset + self->buffer_bytes_ + kArenaAlign - 1) / kArenaAlign * kArenaAlign;
  self->arena_bytes_ = options.arena_bytes / kArenaAlign * kArenaAlign;
  if (self->arena_bytes_ > 0) self->arena_free_.emplace(0, self->arena_bytes_);
  const size_t window_bytes = self->arena_offset_ + self->arena_bytes_;
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
  PREFIXD_CUDA_CHECK(cudaEventCreateWithFlags(&self->last_done_, cudaEventDisableTiming));
  if (stats_on) {
    PREFIXD_CUDA_CHECK(cudaMalloc(&self->stats_, kStatSlots * kStatPhases * sizeof(uint64_t)));
    self->stat_bytes_.assign(kStatSlots, 0);
  }
  return self;
}

PeerExchange::~PeerExchange() {
  // On the normal path every rank waits for its pending exchanges and for every peer's, so that
  // no window is unmapped or freed while a peer may still write to it. While an exception
  // unwinds (this rank failed; peers may be gone) no collective is attempted.
  if (std::uncaught_exceptions() == 0) {
    cudaDeviceSynchronize();
    if (stats_ != nullptr) PrintStats();
    MPI_Barrier(comm_);
  }
  if (stats_ != nullptr) cudaFree(stats_);
  if (last_done_ != nullptr) cudaEventDestroy(last_done_);
  for (int j = 0; j < size_; ++j)
    if (j != rank_ && peers_[j] != nullptr) cudaIpcCloseMemHandle(peers_[j]);
  if (window_ != nullptr) cudaFree(window_);
}

void* PeerExchange::AllocateReceive(size_t bytes) {
  if (bytes == 0) return nullptr;
  const size_t need = (bytes + kArenaAlign - 1) / kArenaAlign * kArenaAlign;
  for (auto it = arena_free_.begin(); it != arena_free_.end(); ++it) {  // first fit
    if (it->second < need) continue;
    const size_t offset = it->first, left = it->second - need;
    arena_free_.erase(it);
    if (left > 0) arena_free_.emplace(offset + need, left);
    arena_used_.emplace(offset, need);
    return static_cast<char*>(window_) + arena_offset_ + offset;
  }
  return nullptr;
}

bool PeerExchange::FreeReceive(void* ptr) noexcept {
  const uintptr_t arena = reinterpret_cast<uintptr_t>(window_) + arena_offset_;
  const uintptr_t at = reinterpret_cast<uintptr_t>(ptr);
  if (ptr == nullptr || at < arena) return false;
  const auto used = arena_used_.find(size_t(at - arena));
  if (used == arena_used_.end()) return false;
  // As cudaFree: nothing in flight on this device may still write into (or read) the range.
  cudaDeviceSynchronize();
  size_t offset = used->first, bytes = used->second;
  arena_used_.erase(used);
  // Merge with the free neighbours.
  auto next = arena_free_.lower_bound(offset);
  if (next != arena_free_.end() && offset + bytes == next->first) {
    bytes += next->second;
    next = arena_free_.erase(next);
  }
  if (next != arena_free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == offset) {
      offset = prev->first;
      bytes += prev->second;
      arena_free_.erase(prev);
    }
  }
  arena_free_.emplace(offset, bytes);
  return true;
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
  p.arena_offset = arena_offset_;
  // A receive that lies wholly in the arena lands in place; any other goes through this rank's slot.
  const uintptr_t arena = reinterpret_cast<uintptr_t>(window_) + arena_offset_;
  for (int j = 0; j < size_; ++j) {
    const uintptr_t at = reinterpret_cast<uintptr_t>(transfer.recv[j]);
    const bool in_place =
        at >= arena && at - arena <= arena_bytes_ && transfer.recv_bytes[j] <= arena_bytes_ - (at - arena);
    p.recv_offset[j] = in_place ? uint64_t(at - arena) : kToSlot;
  }
  // A pair takes part when some direction of it moves bytes through the peer path; both of its ranks
  // see the same two counts, so both count the operation.
  for (int j = 0; j < size_; ++j) {
    const bool active = j != rank_ && ((transfer.send_bytes[j] > 0 && Fits(transfer.send_bytes[j])) ||
                                       (transfer.recv_bytes[j] > 0 && Fits(transfer.recv_bytes[j])));
    p.epoch[j] = active ? ++pair_epoch_[j] : 0;
  }
  if (stats_ != nullptr && operations_ < kStatSlots) {
    p.stats = stats_ + operations_ * kStatPhases;
    uint64_t bytes = 0;
    for (int j = 0; j < size_; ++j) bytes += p.epoch[j] != 0 || j == rank_ ? transfer.send_bytes[j] : 0;
    stat_bytes_[operations_] = bytes;
  }
  ++operations_;
  p.rank = rank_;
  p.size = size_;
  // Operations run on the device in the order they were issued, whatever their streams. The
  // flags assume it: if this rank's operation e + 2 ran before e (another stream, ready sooner),
  // its arrive flag e + 2 would satisfy a peer waiting in e (which would then copy e + 2's bytes),
  // and e's late flag would then lower it below e + 2, where that peer waits for ever. Seen as a
  // hang of the engine's send-first schedule in three chunks, whose exchanges use two streams.
  if (operations_ > 1 && last_stream_ != stream) PREFIXD_CUDA_CHECK(cudaStreamWaitEvent(stream, last_done_, 0));
  PeerExchangeKernel<<<options_.blocks, kThreads, 0, stream>>>(p);
  PREFIXD_CUDA_CHECK_LAUNCH();
  PREFIXD_CUDA_CHECK(cudaEventRecord(last_done_, stream));
  last_stream_ = stream;
}

}  // namespace prefixd::comm
