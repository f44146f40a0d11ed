// MpiComm: the Comm on host buffers over MPI. What CI runs; also the oracle the NCCL Comm is
// tested against. Operations complete before returning (the stream argument is ignored).
#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>
#include <string>

#include "internal.h"
#include "prefixd/comm/bootstrap.h"
#include "prefixd/comm/mpi_check.h"
#include "prefixd/common/error.h"

namespace prefixd::comm {
namespace internal {

OwnedMpiComm::OwnedMpiComm(MPI_Comm parent) {
  PREFIXD_MPI_CHECK(MPI_Comm_dup(parent, &comm_));
  PREFIXD_MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
}

OwnedMpiComm::~OwnedMpiComm() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

void CheckAllToAllVArgs(int size, const std::vector<size_t>& send_bytes,
                        const std::vector<size_t>& send_offsets,
                        const std::vector<size_t>& recv_bytes,
                        const std::vector<size_t>& recv_offsets) {
  const size_t n = static_cast<size_t>(size);
  PREFIXD_CHECK_ARG(send_bytes.size() == n && send_offsets.size() == n && recv_bytes.size() == n &&
                        recv_offsets.size() == n,
                    "AllToAllV needs one count and offset per rank (" << size << "), got send "
                        << send_bytes.size() << "/" << send_offsets.size() << ", recv "
                        << recv_bytes.size() << "/" << recv_offsets.size());
}

void CrossCheckAllToAllVSizes(MPI_Comm comm, const std::vector<size_t>& send_bytes,
                              const std::vector<size_t>& recv_bytes) {
  int rank = 0, size = 0;
  PREFIXD_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  PREFIXD_MPI_CHECK(MPI_Comm_size(comm, &size));
  std::vector<uint64_t> mine(send_bytes.begin(), send_bytes.end());
  std::vector<uint64_t> incoming(size);
  PREFIXD_MPI_CHECK(MPI_Alltoall(mine.data(), 1, MPI_UINT64_T, incoming.data(), 1, MPI_UINT64_T, comm));
  // First bad (receiver, sender) pair, encoded receiver·size + sender; INT64_MAX when all agree.
  int64_t bad = INT64_MAX;
  for (int j = 0; j < size && bad == INT64_MAX; ++j)
    if (incoming[j] != recv_bytes[j]) bad = int64_t(rank) * size + j;
  int64_t first_bad = INT64_MAX;
  PREFIXD_MPI_CHECK(MPI_Allreduce(&bad, &first_bad, 1, MPI_INT64_T, MPI_MIN, comm));
  if (first_bad == INT64_MAX) return;
  const int receiver = static_cast<int>(first_bad / size), sender = static_cast<int>(first_bad % size);
  if (receiver == rank) {
    PREFIXD_THROW(ErrorKind::kInvalidArgument,
                  "AllToAllV byte counts disagree: rank " << sender << " sends " << incoming[sender]
                      << " bytes to rank " << rank << ", which expects " << recv_bytes[sender]);
  }
  PREFIXD_THROW(ErrorKind::kInvalidArgument,
                "AllToAllV byte counts disagree between sender rank " << sender << " and receiver rank "
                    << receiver << " (the receiver's error names the counts)");
}

}  // namespace internal

namespace {

constexpr int kExchangeTag = 0x7e5;

class MpiComm final : public Comm {
 public:
  // The duplicate is private: its messages can never be matched by the caller's own traffic.
  MpiComm(MPI_Comm comm, const CommOptions& options)
      : options_(CheckedOptions(options)), owned_(comm), comm_(owned_.get()) {
    PREFIXD_MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
    PREFIXD_MPI_CHECK(MPI_Comm_size(comm_, &size_));
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  MemoryKind memory() const override { return MemoryKind::kHost; }
  std::string name() const override { return "mpi"; }

  void AllGather(const void* send, void* recv, size_t bytes, void* /*stream*/) override {
    if (bytes == 0) return;
    char* out = static_cast<char*>(recv);
    const bool in_place = send == out + size_t(rank_) * bytes;
    if (bytes <= options_.max_message_bytes) {
      PREFIXD_MPI_CHECK(MPI_Allgather(in_place ? MPI_IN_PLACE : send, static_cast<int>(bytes),
                                      MPI_BYTE, recv, static_cast<int>(bytes), MPI_BYTE, comm_));
      return;
    }
    // Too big for one int count: the same block to everyone, point to point, in pieces.
    std::vector<size_t> send_bytes(size_, bytes), send_offsets(size_, 0), recv_bytes(size_, bytes),
        recv_offsets(size_);
    for (int j = 0; j < size_; ++j) recv_offsets[j] = size_t(j) * bytes;
    send_bytes[rank_] = recv_bytes[rank_] = 0;  // our own block: in place or copied below
    if (!in_place) std::memcpy(out + size_t(rank_) * bytes, send, bytes);
    PointToPoint(static_cast<const char*>(send), send_bytes, send_offsets, out, recv_bytes,
                 recv_offsets);
  }

  void AllToAllV(const void* send, const std::vector<size_t>& send_bytes,
                 const std::vector<size_t>& send_offsets, void* recv,
                 const std::vector<size_t>& recv_bytes, const std::vector<size_t>& recv_offsets,
                 void* /*stream*/) override {
    internal::CheckAllToAllVArgs(size_, send_bytes, send_offsets, recv_bytes, recv_offsets);
    if (options_.check_sizes) internal::CrossCheckAllToAllVSizes(comm_, send_bytes, recv_bytes);
    PREFIXD_CHECK_ARG(send_bytes[rank_] == recv_bytes[rank_],
                      "AllToAllV: rank " << rank_ << " sends itself " << send_bytes[rank_]
                                         << " bytes but expects " << recv_bytes[rank_]);
    PointToPoint(static_cast<const char*>(send), send_bytes, send_offsets, static_cast<char*>(recv),
                 recv_bytes, recv_offsets);
  }

  void AllReduceMax(float* data, size_t count, void* /*stream*/) override {
    AllReduce(data, count, MPI_MAX);
  }
  void AllReduceSum(float* data, size_t count, void* /*stream*/) override {
    AllReduce(data, count, MPI_SUM);
  }

  void ReduceScatterSum(const float* send, float* recv, size_t recv_count, void* /*stream*/) override {
    if (recv_count == 0) return;
    const size_t total = size_t(size_) * recv_count;
    const auto at = [](const float* p) { return reinterpret_cast<uintptr_t>(p); };
    PREFIXD_CHECK_ARG(at(recv + recv_count) <= at(send) || at(send + total) <= at(recv),
                      "ReduceScatterSum: send and recv buffers overlap");
    const size_t piece = MaxFloats();
    if (recv_count <= piece) {
      PREFIXD_MPI_CHECK(MPI_Reduce_scatter_block(send, recv, static_cast<int>(recv_count), MPI_FLOAT,
                                                 MPI_SUM, comm_));
      return;
    }
    // Piece by piece: gather the same column range of every rank's block into one contiguous
    // buffer, so that each piece is again a reduce-scatter of equal blocks.
    std::vector<float> packed;
    for (size_t begin = 0; begin < recv_count; begin += piece) {
      const size_t n = std::min(piece, recv_count - begin);
      packed.resize(size_t(size_) * n);
      for (int i = 0; i < size_; ++i)
        std::memcpy(packed.data() + size_t(i) * n, send + size_t(i) * recv_count + begin,
                    n * sizeof(float));
      PREFIXD_MPI_CHECK(MPI_Reduce_scatter_block(packed.data(), recv + begin, static_cast<int>(n),
                                                 MPI_FLOAT, MPI_SUM, comm_));
    }
  }

  void Broadcast(void* data, size_t bytes, int root, void* /*stream*/) override {
    PREFIXD_CHECK_ARG(root >= 0 && root < size_, "Broadcast root " << root << " not in [0, " << size_ << ")");
    char* p = static_cast<char*>(data);
    for (size_t begin = 0; begin < bytes; begin += options_.max_message_bytes) {
      const size_t n = std::min(options_.max_message_bytes, bytes - begin);
      PREFIXD_MPI_CHECK(MPI_Bcast(p + begin, static_cast<int>(n), MPI_BYTE, root, comm_));
    }
  }

  void Synchronize(void* /*stream*/) override {}
  void Abort() override {}  // nothing in flight between calls; MPI_Abort does the rest

 private:
  static CommOptions CheckedOptions(CommOptions options) {
    PREFIXD_CHECK_ARG(options.max_message_bytes >= sizeof(float),
                      "max_message_bytes " << options.max_message_bytes << " is below one float");
    options.max_message_bytes = std::min<size_t>(options.max_message_bytes, INT_MAX);
    return options;
  }

  size_t MaxFloats() const { return options_.max_message_bytes / sizeof(float); }

  void AllReduce(float* data, size_t count, MPI_Op op) {
    const size_t piece = MaxFloats();
    for (size_t begin = 0; begin < count; begin += piece) {
      const size_t n = std::min(piece, count - begin);
      PREFIXD_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, data + begin, static_cast<int>(n), MPI_FLOAT, op, comm_));
    }
  }

  // Non-blocking receives first (so no send ever waits for a receive to be posted), then sends,
  // then one wait. Messages above max_message_bytes go as several pieces with the same tag:
  // MPI keeps messages of one (sender, tag, comm) in order, so the pieces land in order.
  // Zero-byte messages are not sent at all; the counts agree on both sides by contract (and are
  // cross-checked when options_.check_sizes is on).
  void PointToPoint(const char* send, const std::vector<size_t>& send_bytes,
                    const std::vector<size_t>& send_offsets, char* recv,
                    const std::vector<size_t>& recv_bytes, const std::vector<size_t>& recv_offsets) {
    const size_t piece = options_.max_message_bytes;
    std::vector<MPI_Request> requests;
    for (int k = 1; k < size_; ++k) {
      const int j = (rank_ + size_ - k) % size_;  // staggered so that peers do not all hit rank 0 first
      for (size_t begin = 0; begin < recv_bytes[j]; begin += piece) {
        requests.emplace_back();
        PREFIXD_MPI_CHECK(MPI_Irecv(recv + recv_offsets[j] + begin,
                                    static_cast<int>(std::min(piece, recv_bytes[j] - begin)), MPI_BYTE,
                                    j, kExchangeTag, comm_, &requests.back()));
      }
    }
    for (int k = 1; k < size_; ++k) {
      const int j = (rank_ + k) % size_;
      for (size_t begin = 0; begin < send_bytes[j]; begin += piece) {
        requests.emplace_back();
        PREFIXD_MPI_CHECK(MPI_Isend(send + send_offsets[j] + begin,
                                    static_cast<int>(std::min(piece, send_bytes[j] - begin)), MPI_BYTE,
                                    j, kExchangeTag, comm_, &requests.back()));
      }
    }
    if (recv_bytes[rank_] > 0)
      std::memmove(recv + recv_offsets[rank_], send + send_offsets[rank_], recv_bytes[rank_]);
    PREFIXD_MPI_CHECK(MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE));
  }

  CommOptions options_;
  internal::OwnedMpiComm owned_;
  MPI_Comm comm_;
  int rank_ = 0, size_ = 1;
};

}  // namespace

std::unique_ptr<Comm> MakeMpiComm(MPI_Comm comm, const CommOptions& options) {
  return std::make_unique<MpiComm>(comm, options);
}

}  // namespace prefixd::comm
