// NcclComm: the Comm on device buffers, stream-ordered NCCL (capturable in a CUDA graph, and
// overlappable with kernels on other streams). Also the CUDA-dependent parts of bootstrap.h.
#include <mpi.h>
#include <nccl.h>
#include <sched.h>

#include <cstdlib>
#include <exception>
#include <map>
#include <string>

#include "../src/internal.h"
#include "peer_exchange.h"
#include "prefixd/common/cuda_check.h"
#include "prefixd/common/env.h"
#include "prefixd/comm/bootstrap.h"
#include "prefixd/comm/mpi_check.h"
#include "prefixd/comm/nccl_check.h"
#include "prefixd/common/error.h"

namespace prefixd::comm {

void ThrowNcclError(ncclResult_t code, ncclComm_t comm, const char* call, const char* file, int line) {
  std::string message = std::string(call) + " failed (" + std::to_string(static_cast<int>(code)) +
                        "): " + ncclGetErrorString(code);
  const char* detail = ncclGetLastError(comm);
  if (detail != nullptr && detail[0] != '\0') message += std::string(" — ") + detail;
  ThrowError(ErrorKind::kLibrary, "NCCL", message, file, line);
}

int CudaDeviceCount() {
  int count = 0;
  // Any error (CI: "insufficient driver", no GPU) means no usable device.
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear it so that later checks do not report it
    return 0;
  }
  return count;
}

int SelectLocalDevice(const MpiSession& session) {
  const int device = DeviceForLocalRank(session.local_rank(), CudaDeviceCount());
  if (device >= 0) PREFIXD_CUDA_CHECK(cudaSetDevice(device));
  return device;
}

bool NcclBuilt() { return true; }

namespace {

class NcclComm final : public Comm {
 public:
  NcclComm(MPI_Comm comm, int device, cudaStream_t stream, const CommOptions& options)
      : device_(device), stream_(stream), options_(options), owned_(comm), mpi_(owned_.get()) {
    PREFIXD_MPI_CHECK(MPI_Comm_rank(mpi_, &rank_));
    PREFIXD_MPI_CHECK(MPI_Comm_size(mpi_, &size_));
    // Every rank checks its device before anyone enters ncclCommInitRank, and all agree on the
    // outcome: a rank without a device must not leave the others waiting inside NCCL's bootstrap.
    const int count = CudaDeviceCount();
    int ok = device >= 0 && device < count && cudaSetDevice(device) == cudaSuccess;
    int all_ok = 0;
    PREFIXD_MPI_CHECK(MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, mpi_));
    if (!ok) {
      PREFIXD_THROW(ErrorKind::kUnsupported, "NCCL Comm: device " << device << " is not usable ("
                                                 << count << " CUDA devices visible)");
    }
    if (!all_ok) PREFIXD_THROW(ErrorKind::kUnsupported, "NCCL Comm: another rank has no usable device");

    // Rank 0's id travels with its status so that a failed ncclGetUniqueId stops every rank.
    struct {
      int ok;
      ncclUniqueId id;
    } hello{};
    if (rank_ == 0) hello.ok = ncclGetUniqueId(&hello.id) == ncclSuccess;
    PREFIXD_MPI_CHECK(MPI_Bcast(&hello, sizeof(hello), MPI_BYTE, 0, mpi_));
    if (!hello.ok) PREFIXD_THROW(ErrorKind::kLibrary, "NCCL Comm: ncclGetUniqueId failed on rank 0");
    PREFIXD_NCCL_CHECK(ncclCommInitRank(&nccl_, size_, hello.id, rank_));
    RegisterForAbort(this);
    // Off by default: on 4 H200s it measured no faster (bench/scaling/README.md, session 4), and
    // with NCCL_P2P_USE_CUDA_MEMCPY=1 a registered run failed with a launch failure (run 17).
    register_ = EnvFlag("PREFIXD_NCCL_REGISTER", false);
    // The peer-memory fast path: every rank reads the same option and environment, and Create
    // answers alike on every rank.
    if (EnvFlag("PREFIXD_PEER_EXCHANGE", options_.peer_exchange)) {
      PeerExchangeOptions po;
      po.slot_bytes = options_.peer_slot_bytes;
      // PREFIXD_PEER_DIRECT=0 (A/B runs): every receive through a slot.
      const bool direct_setting = EnvFlag("PREFIXD_PEER_DIRECT", true);  // read (and checked) either way
      const bool direct = !register_ && direct_setting;
      po.arena_bytes = direct ? options_.peer_arena_bytes : 0;
      po.blocks = int(EnvInteger("PREFIXD_PEER_BLOCKS", 1, PeerExchange::kMaxBlocks, po.blocks));  // A/B runs
      peer_ = PeerExchange::Create(mpi_, device_, po);
    }
  }

  ~NcclComm() override {
    UnregisterForAbort(this);
    peer_.reset();  // before the communicator: its teardown waits for the peers' last exchanges
    if (nccl_ == nullptr) return;
    // Buffers still registered (their owner outlived this Comm): deregistered while the
    // communicator exists, then freed.
    for (auto& [ptr, handle] : registered_) {
      ncclCommDeregister(nccl_, handle);
      ncclMemFree(ptr);
    }
    registered_.clear();
    // Destroyed while an exception unwinds (an error on this rank, its peers possibly waiting in a
    // collective with it): abort. ncclCommDestroy would wait for the unfinished collective, which
    // the failed rank never completes, and the job would hang before RunRankMain could abort it.
    // On the normal path destroy, which lets pending work finish. Errors cannot be thrown here.
    if (std::uncaught_exceptions() > 0) {
      ncclCommAbort(nccl_);
    } else {
      ncclCommDestroy(nccl_);
    }
  }

  int rank() const override { return rank_; }
  uint64_t peer_operations() const override { return peer_ ? peer_->operations() : 0; }
  int size() const override { return size_; }
  MemoryKind memory() const override { return MemoryKind::kDevice; }
  std::string name() const override { return "nccl"; }

  void AllGather(const void* send, void* recv, size_t bytes, void* stream) override {
    if (bytes == 0) return;
    Live();
    const cudaStream_t s = Stream(stream);
    if (UsePeers(s) && peer_->Fits(bytes)) {  // bytes is the same on every rank: all take this branch
      PeerTransfer& t = transfer_;
      t.send.assign(size_, send);
      t.send_bytes.assign(size_, bytes);
      t.recv_bytes.assign(size_, bytes);
      t.recv.resize(size_);
      for (int j = 0; j < size_; ++j) t.recv[j] = static_cast<char*>(recv) + size_t(j) * bytes;
      peer_->Run(t, s);
      return;
    }
    PREFIXD_NCCL_CHECK_COMM(nccl_, ncclAllGather(send, recv, bytes, ncclChar, nccl_, s));
  }

  void AllToAllV(const void* send, const std::vector<size_t>& send_bytes,
                 const std::vector<size_t>& send_offsets, void* recv,
                 const std::vector<size_t>& recv_bytes, const std::vector<size_t>& recv_offsets,
                 void* stream) override {
    internal::CheckAllToAllVArgs(size_, send_bytes, send_offsets, recv_bytes, recv_offsets);
    if (options_.check_sizes) internal::CrossCheckAllToAllVSizes(mpi_, send_bytes, recv_bytes);
    PREFIXD_CHECK_ARG(send_bytes[rank_] == recv_bytes[rank_],
                      "AllToAllV: rank " << rank_ << " sends itself " << send_bytes[rank_]
                                         << " bytes but expects " << recv_bytes[rank_]);
    const cudaStream_t s = Stream(stream);
    const char* in = static_cast<const char*>(send);
    char* out = static_cast<char*>(recv);
    Live();
    // Pairs that fit a peer slot (and the own block) go through the peers' memory; a pair's
    // count is known to both of its ranks, so both judge it alike. The rest go through NCCL.
    const bool peers = UsePeers(s);
    if (peers) {
      PeerTransfer& t = transfer_;
      t.send_bytes = send_bytes;
      t.recv_bytes = recv_bytes;
      t.send.resize(size_);
      t.recv.resize(size_);
      bool any_nccl = false;
      for (int j = 0; j < size_; ++j) {
        t.send[j] = in + send_offsets[j];
        t.recv[j] = out + recv_offsets[j];
        if (j != rank_) any_nccl = any_nccl || !peer_->Fits(send_bytes[j]) || !peer_->Fits(recv_bytes[j]);
      }
      peer_->Run(t, s);
      if (!any_nccl) return;
    }
    // The rank's own block is a device copy; zero-byte pairs are skipped on both sides (the
    // counts agree by contract), so a sparse plan costs only the messages it has.
    PREFIXD_NCCL_CHECK_COMM(nccl_, ncclGroupStart());
    for (int j = 0; j < size_; ++j) {
      if (j == rank_) continue;
      if (send_bytes[j] > 0 && !(peers && peer_->Fits(send_bytes[j])))
        PREFIXD_NCCL_CHECK_COMM(nccl_, ncclSend(in + send_offsets[j], send_bytes[j], ncclChar, j, nccl_, s));
      if (recv_bytes[j] > 0 && !(peers && peer_->Fits(recv_bytes[j])))
        PREFIXD_NCCL_CHECK_COMM(nccl_, ncclRecv(out + recv_offsets[j], recv_bytes[j], ncclChar, j, nccl_, s));
    }
    PREFIXD_NCCL_CHECK_COMM(nccl_, ncclGroupEnd());
    if (recv_bytes[rank_] > 0 && !peers) {
      PREFIXD_CUDA_CHECK(cudaMemcpyAsync(out + recv_offsets[rank_], in + send_offsets[rank_],
                                              recv_bytes[rank_], cudaMemcpyDeviceToDevice, s));
    }
  }

  void AllReduceMax(float* data, size_t count, void* stream) override {
    if (count == 0) return;
    Live();
    PREFIXD_NCCL_CHECK_COMM(nccl_, ncclAllReduce(data, data, count, ncclFloat, ncclMax, nccl_, Stream(stream)));
  }

  void AllReduceSum(float* data, size_t count, void* stream) override {
    if (count == 0) return;
    Live();
    PREFIXD_NCCL_CHECK_COMM(nccl_, ncclAllReduce(data, data, count, ncclFloat, ncclSum, nccl_, Stream(stream)));
  }

  void ReduceScatterSum(const float* send, float* recv, size_t recv_count, void* stream) override {
    if (recv_count == 0) return;
    Live();
    PREFIXD_NCCL_CHECK_COMM(nccl_, ncclReduceScatter(send, recv, recv_count, ncclFloat, ncclSum, nccl_,
                                                      Stream(stream)));
  }

  void Broadcast(void* data, size_t bytes, int root, void* stream) override {
    PREFIXD_CHECK_ARG(root >= 0 && root < size_, "Broadcast root " << root << " not in [0, " << size_ << ")");
    if (bytes == 0) return;
    Live();
    PREFIXD_NCCL_CHECK_COMM(nccl_, ncclBroadcast(data, data, bytes, ncclChar, root, nccl_, Stream(stream)));
  }

  // Polls instead of cudaStreamSynchronize: if a peer died or NCCL hit an error, the stream would
  // never finish and a plain synchronise would hang this rank; polling sees NCCL's async error.
  void Synchronize(void* stream) override {
    const cudaStream_t s = Stream(stream);
    Live();
    while (true) {
      const cudaError_t status = cudaStreamQuery(s);
      if (status == cudaSuccess) return;
      if (status != cudaErrorNotReady) PREFIXD_CUDA_CHECK(status);
      ncclResult_t async = ncclSuccess;
      PREFIXD_NCCL_CHECK_COMM(nccl_, ncclCommGetAsyncError(nccl_, &async));
      if (async != ncclSuccess) ThrowNcclError(async, nccl_, "asynchronous NCCL error", __FILE__, __LINE__);
      sched_yield();
    }
  }

  void* AllocRegistered(size_t bytes) override {
    if (bytes == 0) return nullptr;
    // The peer path's receive arena (peers write straight into these buffers), where it has room.
    if (!register_) return peer_ ? peer_->AllocateReceive(bytes) : nullptr;
    ncclComm_t comm = Live();
    void* ptr = nullptr;
    PREFIXD_NCCL_CHECK_COMM(comm, ncclMemAlloc(&ptr, bytes));
    void* handle = nullptr;
    const ncclResult_t status = ncclCommRegister(comm, ptr, bytes, &handle);
    if (status != ncclSuccess) {
      ncclMemFree(ptr);
      ThrowNcclError(status, comm, "ncclCommRegister (PREFIXD_NCCL_REGISTER=0 turns registration off)", __FILE__,
                     __LINE__);
    }
    registered_.emplace(ptr, handle);
    return ptr;
  }

  // Called from destructors: never throws (a failure here leaks the buffer, nothing else).
  void FreeRegistered(void* ptr) noexcept override {
    if (peer_ && peer_->FreeReceive(ptr)) return;
    auto it = registered_.find(ptr);
    if (it == registered_.end()) return;
    if (nccl_ != nullptr) ncclCommDeregister(nccl_, it->second);  // after Abort: the handle died with it
    ncclMemFree(ptr);
    registered_.erase(it);
  }

  void Abort() override {
    if (nccl_ == nullptr) return;
    ncclComm_t comm = nccl_;
    nccl_ = nullptr;
    ncclCommAbort(comm);  // best effort, by contract: the job is going down
  }

 private:
  cudaStream_t Stream(void* stream) const {
    return stream != nullptr ? static_cast<cudaStream_t>(stream) : stream_;
  }
  // The peer path, unless the stream is being captured into a graph (PeerExchange's epochs are
  // kernel arguments, which a replay would repeat). Every rank captures alike, so all agree.
  bool UsePeers(cudaStream_t s) const {
    if (!peer_) return false;
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    PREFIXD_CUDA_CHECK(cudaStreamIsCapturing(s, &capture));
    return capture == cudaStreamCaptureStatusNone;
  }
  ncclComm_t Live() const {
    if (nccl_ == nullptr) PREFIXD_THROW(ErrorKind::kInternal, "NCCL Comm used after Abort()");
    return nccl_;
  }

  int device_ = -1;
  cudaStream_t stream_ = nullptr;
  CommOptions options_;
  internal::OwnedMpiComm owned_;  // control messages of this Comm (size checks, the NCCL id)
  MPI_Comm mpi_;
  ncclComm_t nccl_ = nullptr;
  int rank_ = 0, size_ = 1;
  bool register_ = false;                // PREFIXD_NCCL_REGISTER
  std::unique_ptr<PeerExchange> peer_;   // null: NCCL only
  PeerTransfer transfer_;                // the peer path's per-call arguments, kept: no allocation per call
  std::map<void*, void*> registered_;    // AllocRegistered's buffers → their registration handles
};

}  // namespace

std::unique_ptr<Comm> MakeNcclComm(MPI_Comm comm, int device, void* stream, const CommOptions& options) {
  return std::make_unique<NcclComm>(comm, device, static_cast<cudaStream_t>(stream), options);
}

}  // namespace prefixd::comm
