// Comm implementations against a serial computation, for any number of ranks.
//
// Every rank generates EVERY rank's random inputs from one seed (rank 0's, broadcast), so each
// rank can compute the serial answer for itself and check its own outputs. The same assertions run
// on each backend through `Comm&`:
//   mpi         MpiComm with default options
//   mpi_pieces  MpiComm with max_message_bytes = 12, so every large-message split path runs
//   nccl        NcclComm on device buffers (skipped, on every rank, unless each rank has a GPU),
//               with its one-host peer-memory path where the GPUs allow it (the default)
//   nccl_nopeer NcclComm with the peer path off: NCCL for everything
//   nccl_smallslot  the peer path with 1 KiB slots, so that larger pairs go through NCCL in the
//               same AllToAllV (the mixed path)
//   nccl_direct the peer path with every device buffer from Comm::AllocRegistered: its receive
//               arena, which the peers write into in place (no slot)
//   nccl_direct_odd  the same on odd ranks only: pairs where one side receives in place and the
//               other through its slot
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

#if defined(PREFIXD_HAVE_CUDA)
#include <cuda_runtime.h>
#endif

#include "prefixd/comm/bootstrap.h"
#include "prefixd/comm/comm.h"
#include "prefixd/comm/mpi_check.h"
#include "prefixd/comm/state_reduction.h"
#include "prefixd/common/error.h"
#include "support/test_support.h"

namespace prefixd::comm {
namespace {

int WorldRank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}
int WorldSize() {
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

// Rank 0's seed on every rank; printed on failure.
uint64_t SharedSeed() {
  uint64_t seed = test::TestSeed();
  MPI_Bcast(&seed, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  return seed;
}

// Random generator for the inputs of `rank` in test case `salt`, identical on every rank.
std::mt19937_64 RankRng(uint64_t seed, int rank, int salt = 0) {
  std::seed_seq seq{seed, uint64_t(rank) + 1, uint64_t(salt) + 7};
  return std::mt19937_64(seq);
}

std::vector<uint8_t> RandomBytes(std::mt19937_64& rng, size_t n) {
  std::vector<uint8_t> out(n);
  for (auto& b : out) b = static_cast<uint8_t>(rng());
  return out;
}

std::vector<float> RandomFloats(std::mt19937_64& rng, size_t n, float lo = -4.f, float hi = 4.f) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> out(n);
  for (auto& x : out) x = dist(rng);
  return out;
}

// A size that is 0 about a quarter of the time (empty messages must work everywhere).
size_t RandomSize(std::mt19937_64& rng, size_t max) {
  if (rng() % 4 == 0) return 0;
  return 1 + rng() % max;
}

// ---- Buffers in the Comm's memory ----

// The Comm whose AllocRegistered device buffers come from while a test runs (the nccl_direct
// backends), or null: cudaMalloc.
Comm* g_buffers_from = nullptr;

class Buffer {
 public:
  Buffer(MemoryKind kind, size_t bytes) : kind_(kind), bytes_(bytes) {
    if (kind_ == MemoryKind::kHost) {
      host_.resize(std::max<size_t>(bytes, 1));
      return;
    }
#if defined(PREFIXD_HAVE_CUDA)
    if (g_buffers_from != nullptr) {
      device_ = g_buffers_from->AllocRegistered(std::max<size_t>(bytes, 1));
      registered_ = g_buffers_from;
      if (device_ != nullptr) return;
      registered_ = nullptr;
    }
    if (cudaMalloc(&device_, std::max<size_t>(bytes, 1)) != cudaSuccess)
      PREFIXD_THROW(ErrorKind::kOutOfMemory, "cudaMalloc of " << bytes << " bytes failed");
#else
    PREFIXD_THROW(ErrorKind::kUnsupported, "device buffer without CUDA");
#endif
  }
  ~Buffer() {
#if defined(PREFIXD_HAVE_CUDA)
    if (registered_ != nullptr) registered_->FreeRegistered(device_);
    else if (device_ != nullptr) cudaFree(device_);
#endif
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void* data() { return kind_ == MemoryKind::kHost ? static_cast<void*>(host_.data()) : device_; }
  template <typename T>
  T* as() { return static_cast<T*>(data()); }

  void Upload(const void* src, size_t bytes, size_t offset = 0) {
    if (bytes == 0) return;
    if (kind_ == MemoryKind::kHost) {
      std::memcpy(host_.data() + offset, src, bytes);
      return;
    }
#if defined(PREFIXD_HAVE_CUDA)
    // From pageable memory cudaMemcpy may return before its DMA has landed, and the Comm's
    // non-blocking stream does not wait for the legacy stream: synchronise the device.
    if (cudaMemcpy(static_cast<char*>(device_) + offset, src, bytes, cudaMemcpyHostToDevice) != cudaSuccess ||
        cudaDeviceSynchronize() != cudaSuccess)
      PREFIXD_THROW(ErrorKind::kLibrary, "upload failed");
#endif
  }
  template <typename T>
  void Upload(const std::vector<T>& src) { Upload(src.data(), src.size() * sizeof(T)); }

  template <typename T>
  std::vector<T> Download(size_t count) {
    std::vector<T> out(count);
    if (count == 0) return out;
    if (kind_ == MemoryKind::kHost) {
      std::memcpy(out.data(), host_.data(), count * sizeof(T));
      return out;
    }
#if defined(PREFIXD_HAVE_CUDA)
    if (cudaMemcpy(out.data(), device_, count * sizeof(T), cudaMemcpyDeviceToHost) != cudaSuccess)
      PREFIXD_THROW(ErrorKind::kLibrary, "download failed");
#endif
    return out;
  }

 private:
  MemoryKind kind_;
  size_t bytes_;
  std::vector<uint8_t> host_;
  void* device_ = nullptr;
  Comm* registered_ = nullptr;  // device_ came from its AllocRegistered
};

// ---- The backends, one Comm each for the whole suite ----

// Decided on every rank together, so that all ranks skip or none does.
bool AllRanksHaveGpu(std::string* reason) {
  const int devices = CudaDeviceCount();
  const LocalRank local = NodeLocalRank(MPI_COMM_WORLD);
  int ok = NcclBuilt() && devices >= local.size;
  int all = 0;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!all) {
    *reason = !NcclBuilt() ? "built without CUDA/NCCL"
              : devices == 0
                  ? "no usable CUDA GPU (cudaGetDeviceCount failed or returned 0)"
                  : "fewer GPUs than ranks on some host (NCCL needs one GPU per rank)";
  }
  return all != 0;
}

struct BackendState {
  std::unique_ptr<Comm> comm;
  std::string skip_reason;  // non-empty: this backend is skipped
#if defined(PREFIXD_HAVE_CUDA)
  cudaStream_t stream = nullptr;
#endif
};

class CommTest : public testing::TestWithParam<std::string> {
 public:
  static void TearDownTestSuite() {
    for (auto& [name, state] : *backends_) {
      state.comm.reset();
#if defined(PREFIXD_HAVE_CUDA)
      if (state.stream != nullptr) cudaStreamDestroy(state.stream);
#endif
    }
    backends_->clear();
  }

 protected:
  void SetUp() override {
    BackendState& state = Get(GetParam());
    if (!state.skip_reason.empty()) GTEST_SKIP() << state.skip_reason;
    comm_ = state.comm.get();
    seed_ = SharedSeed();
    const std::string& name = GetParam();
    if (name == "nccl_direct" || (name == "nccl_direct_odd" && comm_->rank() % 2 == 1)) g_buffers_from = comm_;
  }
  void TearDown() override { g_buffers_from = nullptr; }

  Comm& comm() { return *comm_; }
  MemoryKind memory() const { return comm_->memory(); }

  // Stream-ordered backends finish before results are read.
  void Finish() { comm_->Synchronize(nullptr); }

  Comm* comm_ = nullptr;
  uint64_t seed_ = 0;

 private:
  static BackendState& Get(const std::string& name) {
    auto it = backends_->find(name);
    if (it != backends_->end()) return it->second;
    BackendState& state = (*backends_)[name];
    if (name == "mpi") {
      state.comm = MakeMpiComm(MPI_COMM_WORLD);
    } else if (name == "mpi_pieces") {
      CommOptions options;
      options.max_message_bytes = 12;
      state.comm = MakeMpiComm(MPI_COMM_WORLD, options);
    } else if (name.rfind("nccl", 0) == 0) {
      if (AllRanksHaveGpu(&state.skip_reason)) {
#if defined(PREFIXD_HAVE_CUDA)
        const LocalRank local = NodeLocalRank(MPI_COMM_WORLD);
        const int device = DeviceForLocalRank(local.rank, CudaDeviceCount());
        cudaSetDevice(device);
        cudaStreamCreateWithFlags(&state.stream, cudaStreamNonBlocking);
        CommOptions options;
        options.peer_exchange = name != "nccl_nopeer";
        if (name == "nccl_smallslot") options.peer_slot_bytes = 1024;
        state.comm = MakeNcclComm(MPI_COMM_WORLD, device, state.stream, options);
#endif
      }
    }
    return state;
  }
  static inline std::map<std::string, BackendState>* backends_ = new std::map<std::string, BackendState>;
};

// ---- Collectives ----

TEST_P(CommTest, Identity) {
  EXPECT_EQ(comm().rank(), WorldRank());
  EXPECT_EQ(comm().size(), WorldSize());
  EXPECT_EQ(comm().name(), GetParam().rfind("nccl", 0) == 0 ? "nccl" : "mpi");
}

TEST_P(CommTest, AllGatherMatchesSerial) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  const int n = comm().size(), me = comm().rank();
  auto shared = RankRng(seed_, -1);
  for (int round = 0; round < 4; ++round) {
    const size_t bytes = round == 0 ? 0 : RandomSize(shared, 3000);  // same on every rank
    std::vector<uint8_t> expected;
    std::vector<uint8_t> mine;
    for (int r = 0; r < n; ++r) {
      auto rng = RankRng(seed_, r, round);
      auto block = RandomBytes(rng, bytes);
      if (r == me) mine = block;
      expected.insert(expected.end(), block.begin(), block.end());
    }
    Buffer send(memory(), bytes), recv(memory(), n * bytes);
    send.Upload(mine);
    comm().AllGather(send.data(), recv.data(), bytes, nullptr);
    Finish();
    EXPECT_EQ(recv.Download<uint8_t>(n * bytes), expected) << "round " << round << ", " << bytes << " bytes";

    // In place: this rank's block already sits at its slot of recv.
    Buffer inplace(memory(), n * bytes);
    inplace.Upload(mine.data(), bytes, size_t(me) * bytes);
    comm().AllGather(inplace.as<char>() + size_t(me) * bytes, inplace.data(), bytes, nullptr);
    Finish();
    EXPECT_EQ(inplace.Download<uint8_t>(n * bytes), expected) << "in place, round " << round;
  }
}

// Random per-pair byte counts (many zeros), blocks placed in the receive buffer in reverse rank
// order with random gaps; the gaps must come back untouched.
TEST_P(CommTest, AllToAllVMatchesSerial) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  const int n = comm().size(), me = comm().rank();
  auto shared = RankRng(seed_, -1);
  for (int round = 0; round < 5; ++round) {
    // counts[i][j]: bytes from rank i to rank j; round 0 is all empty.
    std::vector<std::vector<size_t>> counts(n, std::vector<size_t>(n));
    for (auto& row : counts)
      for (auto& c : row) c = round == 0 ? 0 : RandomSize(shared, round == 4 ? 20000 : 700);

    // Send layout: blocks in rank order with gaps of 0..15 bytes.
    auto layout = [&](const std::vector<size_t>& bytes, bool reverse, std::vector<size_t>* offsets) {
      offsets->assign(n, 0);
      size_t at = 0;
      for (int k = 0; k < n; ++k) {
        const int j = reverse ? n - 1 - k : k;
        at += shared() % 16;
        (*offsets)[j] = at;
        at += bytes[j];
      }
      return at + shared() % 16;
    };
    std::vector<std::vector<size_t>> send_offsets(n);
    std::vector<size_t> send_total(n);
    for (int i = 0; i < n; ++i) send_total[i] = layout(counts[i], false, &send_offsets[i]);
    std::vector<size_t> recv_bytes(n), recv_offsets;
    for (int j = 0; j < n; ++j) recv_bytes[j] = counts[j][me];
    const size_t recv_total = layout(recv_bytes, true, &recv_offsets);

    std::vector<std::vector<uint8_t>> payload(n);  // rank i's whole send buffer
    for (int i = 0; i < n; ++i) {
      auto rng = RankRng(seed_, i, 100 + round);
      payload[i] = RandomBytes(rng, send_total[i]);
    }
    const uint8_t kSentinel = 0xA5;
    std::vector<uint8_t> expected(recv_total, kSentinel);
    for (int j = 0; j < n; ++j)  // (an empty vector's data() may be null: no memcpy of 0 bytes from it)
      if (recv_bytes[j] > 0)
        std::memcpy(expected.data() + recv_offsets[j], payload[j].data() + send_offsets[j][me], recv_bytes[j]);

    Buffer send(memory(), send_total[me]), recv(memory(), recv_total);
    send.Upload(payload[me]);
    recv.Upload(std::vector<uint8_t>(recv_total, kSentinel));
    comm().AllToAllV(send.data(), counts[me], send_offsets[me], recv.data(), recv_bytes, recv_offsets,
                     nullptr);
    Finish();
    EXPECT_EQ(recv.Download<uint8_t>(recv_total), expected) << "round " << round;
  }
}

TEST_P(CommTest, AllToAllVCountMismatchThrowsOnEveryRank) {
  const int n = comm().size(), me = comm().rank();
  // Rank n-1 believes rank 0 sends it 5 bytes; rank 0 sends 4.
  std::vector<size_t> send_bytes(n, 0), recv_bytes(n, 0), offsets(n, 0);
  if (me == 0) send_bytes[n - 1] = 4;
  if (me == n - 1) recv_bytes[0] = 5;
  Buffer send(memory(), 8), recv(memory(), 8);
  EXPECT_THROW(comm().AllToAllV(send.data(), send_bytes, offsets, recv.data(), recv_bytes, offsets, nullptr),
               prefixd::Error);
  // Wrong vector lengths are refused locally (no communication happens).
  EXPECT_THROW(comm().AllToAllV(send.data(), std::vector<size_t>(n + 1), offsets, recv.data(), recv_bytes,
                                offsets, nullptr),
               prefixd::Error);
  // The Comm stays usable afterwards.
  Buffer one(memory(), sizeof(float));
  one.Upload(std::vector<float>{1.f});
  comm().AllReduceSum(one.as<float>(), 1, nullptr);
  Finish();
  EXPECT_EQ(one.Download<float>(1)[0], float(n));
}

TEST_P(CommTest, AllReduceMatchesSerial) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  const int n = comm().size(), me = comm().rank();
  auto shared = RankRng(seed_, -1);
  for (int round = 0; round < 4; ++round) {
    const size_t count = round == 0 ? 0 : RandomSize(shared, 5000);
    std::vector<double> sum(count, 0.0);
    std::vector<float> max(count, -std::numeric_limits<float>::infinity()), mine;
    for (int r = 0; r < n; ++r) {
      auto rng = RankRng(seed_, r, 200 + round);
      auto x = RandomFloats(rng, count);
      // Empty states carry s = -inf; the max must handle it (all-empty columns stay -inf).
      for (size_t i = 0; i < count; ++i)
        if (rng() % 5 == 0) x[i] = -std::numeric_limits<float>::infinity();
      for (size_t i = 0; i < count; ++i) {
        max[i] = std::max(max[i], x[i]);
        if (std::isfinite(x[i])) sum[i] += x[i];
      }
      if (r == me) mine = x;
    }
    std::vector<float> finite = mine;
    for (auto& x : finite)
      if (!std::isfinite(x)) x = 0.f;

    Buffer a(memory(), count * sizeof(float)), b(memory(), count * sizeof(float));
    a.Upload(mine);
    b.Upload(finite);
    comm().AllReduceMax(a.as<float>(), count, nullptr);
    comm().AllReduceSum(b.as<float>(), count, nullptr);
    Finish();
    EXPECT_EQ(a.Download<float>(count), max) << "round " << round;
    const auto got = b.Download<float>(count);
    int bad = 0;
    for (size_t i = 0; i < count; ++i)
      if (!(std::fabs(got[i] - sum[i]) <= 1e-5 * n * 4 + 1e-6 * std::fabs(sum[i]))) ++bad;
    EXPECT_EQ(bad, 0) << "sum differs from serial in " << bad << " of " << count << ", round " << round;
  }
}

TEST_P(CommTest, ReduceScatterSumMatchesSerial) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  const int n = comm().size(), me = comm().rank();
  auto shared = RankRng(seed_, -1);
  for (int round = 0; round < 4; ++round) {
    const size_t count = round == 0 ? 0 : RandomSize(shared, 2000);  // per rank
    std::vector<double> expected(count, 0.0);
    std::vector<float> mine;
    for (int r = 0; r < n; ++r) {
      auto rng = RankRng(seed_, r, 300 + round);
      auto x = RandomFloats(rng, n * count);
      for (size_t i = 0; i < count; ++i) expected[i] += x[size_t(me) * count + i];
      if (r == me) mine = x;
    }
    Buffer send(memory(), n * count * sizeof(float)), recv(memory(), count * sizeof(float));
    send.Upload(mine);
    comm().ReduceScatterSum(send.as<float>(), recv.as<float>(), count, nullptr);
    Finish();
    const auto got = recv.Download<float>(count);
    int bad = 0;
    for (size_t i = 0; i < count; ++i)
      if (!(std::fabs(got[i] - expected[i]) <= 1e-5 * n * 4)) ++bad;
    EXPECT_EQ(bad, 0) << bad << " of " << count << " differ, round " << round;
  }
}

TEST_P(CommTest, BroadcastFromEveryRoot) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  const int n = comm().size(), me = comm().rank();
  auto shared = RankRng(seed_, -1);
  for (int root = 0; root < n; ++root) {
    const size_t bytes = RandomSize(shared, 4000);
    auto rng = RankRng(seed_, root, 400);
    const auto expected = RandomBytes(rng, bytes);
    Buffer data(memory(), bytes);
    data.Upload(me == root ? expected : std::vector<uint8_t>(bytes, 0));
    comm().Broadcast(data.data(), bytes, root, nullptr);
    Finish();
    EXPECT_EQ(data.Download<uint8_t>(bytes), expected) << "root " << root;
  }
}

// Back-to-back operations of different kinds and sizes without waiting in between: ordering on
// the stream (NCCL) and message matching (MPI pieces) must keep them apart.
TEST_P(CommTest, MixedSequenceWithoutIntermediateWaits) {
  const int n = comm().size(), me = comm().rank();
  const size_t count = 257;
  Buffer sums(memory(), count * sizeof(float)), gathered(memory(), n * count * sizeof(float));
  std::vector<float> ones(count, float(me + 1));
  sums.Upload(ones);
  for (int k = 0; k < 3; ++k) comm().AllReduceSum(sums.as<float>(), count, nullptr);
  comm().AllGather(sums.data(), gathered.data(), count * sizeof(float), nullptr);
  Finish();
  // After 3 sums each value is (Σ (r+1)) · n², the same from every rank.
  const float expected = float(n * (n + 1) / 2) * float(n) * float(n);
  const auto got = gathered.Download<float>(n * count);
  EXPECT_EQ(std::count(got.begin(), got.end(), expected), long(n * count));
}

#if defined(PREFIXD_HAVE_CUDA)
// True on every rank when all ranks share one host and every pair of their GPUs has peer access:
// where NcclComm's peer path must be taken.
bool PeerPathPossible() {
  const LocalRank local = NodeLocalRank(MPI_COMM_WORLD);
  int device = 0;
  cudaGetDevice(&device);
  std::vector<int32_t> devices = AllGatherInt(MPI_COMM_WORLD, device);
  int ok = local.size == WorldSize() && WorldSize() >= 2;
  for (int d : devices) {
    int can = 1;
    if (d != device && (cudaDeviceCanAccessPeer(&can, device, d) != cudaSuccess || !can)) ok = 0;
  }
  int all = 0;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return all != 0;
}
#endif

// The byte layout of an all-to-all whose blocks are packed in rank order on both sides, from
// count(i, j) = bytes from rank i to rank j, as rank `me` sees it.
struct PackedLayout {
  std::vector<size_t> send_bytes, send_offsets, recv_bytes, recv_offsets;
  size_t send_total = 0, recv_total = 0;
};
template <typename Count>
PackedLayout PackedInRankOrder(int n, int me, Count count) {
  PackedLayout l;
  for (int j = 0; j < n; ++j) {
    l.send_bytes.push_back(count(me, j)), l.send_offsets.push_back(l.send_total), l.send_total += l.send_bytes[j];
    l.recv_bytes.push_back(count(j, me)), l.recv_offsets.push_back(l.recv_total), l.recv_total += l.recv_bytes[j];
  }
  return l;
}

// The exchanges of a stream-ordered Comm, many queued at once on two streams (no wait in
// between): each operation meets the peer path's slots (or, on the nccl_direct backends, the
// receive buffers) while peers may still be in the previous one, so a sender must wait for its
// receiver's post; and the peer path keeps each rank's operations in
// issue order across the two streams. Every operation has its own output buffers, checked at the
// end. (The engine's send-first schedule in three chunks hung when that order was not kept; its
// MPI cases cover it on GPUs.)
TEST_P(CommTest, ExchangesInFlightOnTwoStreams) {
  if (memory() != MemoryKind::kDevice) GTEST_SKIP() << "MPI completes every operation before it returns";
#if defined(PREFIXD_HAVE_CUDA)
  const int n = comm().size(), me = comm().rank();
  cudaStream_t second = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&second, cudaStreamNonBlocking), cudaSuccess);
  auto value = [](int rank, int round, size_t i) { return uint8_t((rank * 131 + round * 17 + i * 7 + i / 251) & 255); };
  const int rounds = 16;
  std::vector<std::unique_ptr<Buffer>> gathered, exchanged;
  std::vector<size_t> gather_bytes(rounds);
  std::vector<std::vector<size_t>> recv_counts(rounds);
  std::vector<std::unique_ptr<Buffer>> inputs;
  for (int k = 0; k < rounds; ++k) {
    void* stream = k % 2 == 0 ? nullptr : second;
    // All-gather: 1-6000 bytes, the same on every rank.
    const size_t bytes = 1 + (size_t(k) * 977) % 6000;
    gather_bytes[k] = bytes;
    std::vector<uint8_t> mine(bytes);
    for (size_t i = 0; i < bytes; ++i) mine[i] = value(me, k, i);
    inputs.push_back(std::make_unique<Buffer>(memory(), bytes));
    inputs.back()->Upload(mine);
    gathered.push_back(std::make_unique<Buffer>(memory(), n * bytes));
    comm().AllGather(inputs.back()->data(), gathered.back()->data(), bytes, stream);
    // All-to-all: count (i → j) = 1 + (7i + 3j + 5k) mod 3000, blocks packed in rank order.
    const PackedLayout l =
        PackedInRankOrder(n, me, [&](int i, int j) { return size_t(1 + (7 * i + 3 * j + 5 * k) % 3000); });
    std::vector<uint8_t> payload(l.send_total);
    for (int j = 0; j < n; ++j)
      for (size_t i = 0; i < l.send_bytes[j]; ++i) payload[l.send_offsets[j] + i] = value(me * 8 + j, k, i);
    inputs.push_back(std::make_unique<Buffer>(memory(), l.send_total));
    inputs.back()->Upload(payload);
    exchanged.push_back(std::make_unique<Buffer>(memory(), l.recv_total));
    recv_counts[k] = l.recv_bytes;
    comm().AllToAllV(inputs.back()->data(), l.send_bytes, l.send_offsets, exchanged.back()->data(), l.recv_bytes,
                     l.recv_offsets, stream);
  }
  comm().Synchronize(nullptr);
  comm().Synchronize(second);
  cudaStreamDestroy(second);
  for (int k = 0; k < rounds; ++k) {
    const size_t bytes = gather_bytes[k];
    const auto got = gathered[k]->Download<uint8_t>(n * bytes);
    size_t bad = 0;
    for (int r = 0; r < n; ++r)
      for (size_t i = 0; i < bytes; ++i) bad += got[r * bytes + i] != value(r, k, i);
    EXPECT_EQ(bad, 0u) << "all-gather of round " << k;
    size_t total = 0;
    for (size_t c : recv_counts[k]) total += c;
    const auto recv = exchanged[k]->Download<uint8_t>(total);
    bad = 0;
    size_t at = 0;
    for (int j = 0; j < n; ++j)
      for (size_t i = 0; i < recv_counts[k][j]; ++i) bad += recv[at++] != value(j * 8 + me, k, i);
    EXPECT_EQ(bad, 0u) << "all-to-all of round " << k;
  }
#endif
}

// Operations issued on two streams run in issue order even when the first stream is held up. Here
// every rank holds stream A for 50 ms (a host function), then issues two exchanges on A and two
// on B; in B's first, ranks send only to higher ranks, so a rank receives from its lower peers
// and sends them nothing. Were B's exchange to overtake A's on the peer path, such a rank would
// tell those peers "arrived" for B's operation before A's (it waits for nothing before saying
// so), a peer would take that for A's, and A's later flag would undo it: the peer hangs (the
// path's 20 s trap) or reads bytes not yet sent. This hung the engine's send-first schedule in
// three chunks before PeerExchange::Run kept the order.
TEST_P(CommTest, OperationsKeepIssueOrderAcrossStreams) {
  if (memory() != MemoryKind::kDevice) GTEST_SKIP() << "MPI completes every operation before it returns";
#if defined(PREFIXD_HAVE_CUDA)
  const int n = comm().size(), me = comm().rank();
  cudaStream_t a = nullptr, b = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking), cudaSuccess);
  auto value = [](int from, int to, int op, size_t i) { return uint8_t((from * 59 + to * 13 + op * 101 + i * 3) & 255); };
  // Op k's counts from rank i to rank j (op 2: only upwards).
  auto count = [](int k, int i, int j) -> size_t {
    if (k == 2 && i >= j) return 0;
    return 200 + size_t((i * 31 + j * 17 + k * 7) % 700);
  };
  const size_t gather_bytes = 1000;
  // Every buffer made and filled first: uploads synchronise the device, which would order the
  // operations by themselves.
  std::vector<std::unique_ptr<Buffer>> inputs, outputs;
  std::vector<PackedLayout> layouts(4);
  for (int k = 0; k < 4; ++k) {
    if (k % 2 == 1) {  // all-gather: every pair, both ways
      std::vector<uint8_t> mine(gather_bytes);
      for (size_t i = 0; i < gather_bytes; ++i) mine[i] = value(me, 0, k, i);
      inputs.push_back(std::make_unique<Buffer>(memory(), gather_bytes));
      inputs.back()->Upload(mine);
      outputs.push_back(std::make_unique<Buffer>(memory(), n * gather_bytes));
      continue;
    }
    layouts[k] = PackedInRankOrder(n, me, [&](int i, int j) { return count(k, i, j); });
    const PackedLayout& l = layouts[k];
    std::vector<uint8_t> payload(l.send_total);
    for (int j = 0; j < n; ++j)
      for (size_t i = 0; i < l.send_bytes[j]; ++i) payload[l.send_offsets[j] + i] = value(me, j, k, i);
    inputs.push_back(std::make_unique<Buffer>(memory(), std::max<size_t>(l.send_total, 1)));
    inputs.back()->Upload(payload);
    outputs.push_back(std::make_unique<Buffer>(memory(), std::max<size_t>(l.recv_total, 1)));
  }
  MPI_Barrier(MPI_COMM_WORLD);
  ASSERT_EQ(cudaLaunchHostFunc(
                a, [](void*) { std::this_thread::sleep_for(std::chrono::milliseconds(50)); }, nullptr),
            cudaSuccess);
  for (int k = 0; k < 4; ++k) {
    void* stream = k < 2 ? a : b;
    if (k % 2 == 1) {
      comm().AllGather(inputs[k]->data(), outputs[k]->data(), gather_bytes, stream);
    } else {
      const PackedLayout& l = layouts[k];
      comm().AllToAllV(inputs[k]->data(), l.send_bytes, l.send_offsets, outputs[k]->data(), l.recv_bytes,
                       l.recv_offsets, stream);
    }
  }
  comm().Synchronize(a);
  comm().Synchronize(b);
  for (int k = 0; k < 4; ++k) {
    size_t bad = 0;
    if (k % 2 == 1) {
      const auto got = outputs[k]->Download<uint8_t>(n * gather_bytes);
      for (int r = 0; r < n; ++r)
        for (size_t i = 0; i < gather_bytes; ++i) bad += got[r * gather_bytes + i] != value(r, 0, k, i);
    } else {
      const PackedLayout& l = layouts[k];
      const auto got = outputs[k]->Download<uint8_t>(l.recv_total);
      for (int j = 0; j < n; ++j)
        for (size_t i = 0; i < l.recv_bytes[j]; ++i) bad += got[l.recv_offsets[j] + i] != value(j, me, k, i);
    }
    EXPECT_EQ(bad, 0u) << "operation " << k << (k < 2 ? " (stream A)" : " (stream B)");
  }
  cudaStreamDestroy(a);
  cudaStreamDestroy(b);
#endif
}

// As with NCCL's point-to-point, a rank that moves nothing with anyone may skip an AllToAllV
// while the others exchange: here the last rank sits out every other round. (MPI's Comm is a
// collective over all ranks, so only the stream-ordered backends are tested.)
TEST_P(CommTest, AllToAllVRankWithNothingMaySkip) {
  if (memory() != MemoryKind::kDevice) GTEST_SKIP() << "MpiComm's AllToAllV is collective over every rank";
  const int n = comm().size(), me = comm().rank();
  if (n < 3) GTEST_SKIP() << "needs 3 ranks: two that exchange and one that skips";
#if defined(PREFIXD_HAVE_CUDA)
  // Its own Comm, as the backend's but without the size cross-check (an MPI collective, which a
  // skipping rank would leave the others waiting in).
  int device = 0;
  cudaGetDevice(&device);
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  CommOptions options;
  options.check_sizes = false;
  options.peer_exchange = GetParam() != "nccl_nopeer";
  if (GetParam() == "nccl_smallslot") options.peer_slot_bytes = 1024;
  std::unique_ptr<Comm> own = MakeNcclComm(MPI_COMM_WORLD, device, stream, options);
  auto value = [](int from, int to, int round, size_t i) { return uint8_t((from * 37 + to * 11 + round * 5 + i) & 255); };
  const int rounds = 6;
  std::vector<std::unique_ptr<Buffer>> sends, recvs;
  std::vector<std::vector<size_t>> recv_counts(rounds);
  for (int k = 0; k < rounds; ++k) {
    const bool skipper_out = k % 2 == 0;  // the last rank sits out the even rounds
    const PackedLayout l = PackedInRankOrder(n, me, [&](int i, int j) -> size_t {
      if (skipper_out && (i == n - 1 || j == n - 1)) return 0;
      return 64 + size_t((i * 13 + j * 7 + k * 3) % 900);
    });
    std::vector<uint8_t> payload(l.send_total);
    for (int j = 0; j < n; ++j)
      for (size_t i = 0; i < l.send_bytes[j]; ++i) payload[l.send_offsets[j] + i] = value(me, j, k, i);
    sends.push_back(std::make_unique<Buffer>(memory(), l.send_total));
    sends.back()->Upload(payload);
    recvs.push_back(std::make_unique<Buffer>(memory(), l.recv_total));
    recv_counts[k] = l.recv_bytes;
    if (skipper_out && me == n - 1) continue;  // nothing to move: this rank does not call
    own->AllToAllV(sends.back()->data(), l.send_bytes, l.send_offsets, recvs.back()->data(), l.recv_bytes,
                   l.recv_offsets, nullptr);
  }
  own->Synchronize(nullptr);
  for (int k = 0; k < rounds; ++k) {
    size_t total = 0;
    for (size_t c : recv_counts[k]) total += c;
    const auto got = recvs[k]->Download<uint8_t>(total);
    size_t bad = 0, at = 0;
    for (int j = 0; j < n; ++j)
      for (size_t i = 0; i < recv_counts[k][j]; ++i) bad += got[at++] != value(j, me, k, i);
    EXPECT_EQ(bad, 0u) << "round " << k;
  }
  own.reset();
  cudaStreamDestroy(stream);
#endif
}

// The peer path carries the exchanges wherever it can (one host, peer access), and only then.
TEST_P(CommTest, PeerPathTakenWhereThePlatformAllows) {
  if (memory() != MemoryKind::kDevice) GTEST_SKIP() << "the peer path is NcclComm's";
#if defined(PREFIXD_HAVE_CUDA)
  const bool possible = PeerPathPossible();
  const char* env = std::getenv("PREFIXD_PEER_EXCHANGE");
  if (env != nullptr) GTEST_SKIP() << "PREFIXD_PEER_EXCHANGE is set: the backends' options do not decide";
  const uint64_t before = comm().peer_operations();
  Buffer send(memory(), 64), recv(memory(), 64 * comm().size());
  send.Upload(std::vector<uint8_t>(64, 1));
  comm().AllGather(send.data(), recv.data(), 64, nullptr);
  Finish();
  const bool expected = possible && GetParam() != "nccl_nopeer";
  EXPECT_EQ(comm().peer_operations() > before, expected)
      << "peer path possible here: " << possible << ", backend " << GetParam();
#endif
}

// With the peer path, AllocRegistered hands out receive buffers from the path's arena (the
// nccl_direct backends' buffers come from there), apart from each other, reusable once freed,
// and nullptr once the arena cannot hold a request (the caller then allocates elsewhere).
TEST_P(CommTest, ReceiveArenaHandsOutDisjointReusableBuffers) {
  if (memory() != MemoryKind::kDevice) GTEST_SKIP() << "the receive arena is NcclComm's";
#if defined(PREFIXD_HAVE_CUDA)
  for (const char* v : {"PREFIXD_PEER_EXCHANGE", "PREFIXD_PEER_DIRECT", "PREFIXD_NCCL_REGISTER"})
    if (std::getenv(v) != nullptr) GTEST_SKIP() << v << " is set: the backends' options do not decide";
  void* a = comm().AllocRegistered(1000);
  const bool expected = PeerPathPossible() && GetParam() != "nccl_nopeer";
  ASSERT_EQ(a != nullptr, expected) << "peer path possible here: " << PeerPathPossible() << ", backend " << GetParam();
  if (a == nullptr) return;
  void* b = comm().AllocRegistered(5000);
  ASSERT_NE(b, nullptr);
  const auto* pa = static_cast<const char*>(a);
  const auto* pb = static_cast<const char*>(b);
  EXPECT_TRUE(pa + 1000 <= pb || pb + 5000 <= pa) << "overlapping receive buffers";
  EXPECT_EQ(comm().AllocRegistered(size_t(1) << 40), nullptr) << "more than the arena holds";
  comm().FreeRegistered(a);
  void* c = comm().AllocRegistered(1000);
  EXPECT_EQ(c, a) << "a freed range is handed out again (first fit)";
  comm().FreeRegistered(c);
  comm().FreeRegistered(b);
#endif
}

INSTANTIATE_TEST_SUITE_P(Backends, CommTest,
                         testing::Values("mpi", "mpi_pieces", "nccl", "nccl_nopeer", "nccl_smallslot", "nccl_direct",
                                         "nccl_direct_odd"),
                         [](const testing::TestParamInfo<std::string>& info) { return info.param; });


// ---- Exchange byte layout (state_reduction.h), no communication: a hand-checked case ----

TEST(ExchangeLayout, PeerMajorBytesHandExample) {
  // 3 ranks: 1 item to rank 0, none to rank 1, 1 to rank 2; 1, 2 and 1 items from them.
  const ExchangeBytes b = PeerMajorBytes({1, 0, 1}, {1, 2, 1}, 10);
  EXPECT_EQ(b.send_bytes, (std::vector<size_t>{10, 0, 10}));
  EXPECT_EQ(b.send_offsets, (std::vector<size_t>{0, 10, 10}));
  EXPECT_EQ(b.recv_bytes, (std::vector<size_t>{10, 20, 10}));
  EXPECT_EQ(b.recv_offsets, (std::vector<size_t>{0, 10, 30}));
  EXPECT_THROW(PeerMajorBytes({1, 0}, {1, 2, 1}, 10), prefixd::Error);
  EXPECT_THROW(PeerMajorBytes({1, -1, 0}, {1, 2, 1}, 10), prefixd::Error);
}

// ---- Control-plane helpers ----

TEST(Bootstrap, BroadcastHelpers) {
  const uint64_t seed = SharedSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  auto rng = RankRng(seed, 0, 500);
  const auto bytes = RandomBytes(rng, RandomSize(rng, 10000));
  std::vector<int32_t> ints(RandomSize(rng, 1000));
  for (auto& x : ints) x = static_cast<int32_t>(rng());
  const std::string text = "plan step " + std::to_string(rng());

  const bool root = WorldRank() == 0;
  std::vector<uint8_t> b = root ? bytes : std::vector<uint8_t>{1, 2, 3};
  std::vector<int32_t> i = root ? ints : std::vector<int32_t>{};
  std::string t = root ? text : "stale";
  BroadcastBytes(MPI_COMM_WORLD, b);
  BroadcastInts(MPI_COMM_WORLD, i);
  BroadcastString(MPI_COMM_WORLD, t);
  EXPECT_EQ(b, bytes);
  EXPECT_EQ(i, ints);
  EXPECT_EQ(t, text);
}

TEST(Bootstrap, GatherStatusAndAllGatherInt) {
  const int n = WorldSize(), me = WorldRank();
  RankStatus mine;
  mine.code = me % 2 == 1 ? 10 + me : 0;
  mine.message = me % 2 == 1 ? "rank " + std::to_string(me) + " cannot load its shard" : "";
  const auto all = GatherStatus(MPI_COMM_WORLD, mine, 0);
  if (me == 0) {
    ASSERT_EQ(all.size(), size_t(n));
    for (int r = 0; r < n; ++r) {
      EXPECT_EQ(all[r].code, r % 2 == 1 ? 10 + r : 0);
      EXPECT_EQ(all[r].message, r % 2 == 1 ? "rank " + std::to_string(r) + " cannot load its shard" : "");
    }
  } else {
    EXPECT_TRUE(all.empty());
  }
  const auto values = AllGatherInt(MPI_COMM_WORLD, 3 * me + 1);
  ASSERT_EQ(values.size(), size_t(n));
  for (int r = 0; r < n; ++r) EXPECT_EQ(values[r], 3 * r + 1);
}

TEST(Bootstrap, NodeLocalRanksAreDenseAndDevicesRoundRobin) {
  const LocalRank local = NodeLocalRank(MPI_COMM_WORLD);
  EXPECT_GE(local.rank, 0);
  EXPECT_LT(local.rank, local.size);
  // Every local rank 0..local.size-1 appears exactly once on a host (all ranks run on one here
  // under ctest, but the check holds per host in general: count ranks with our local size).
  const auto locals = AllGatherInt(MPI_COMM_WORLD, local.rank);
  std::vector<int> seen(local.size, 0);
  for (int r : locals)
    if (r < local.size) ++seen[r];
  for (int c : seen) EXPECT_GE(c, 1);

  EXPECT_EQ(DeviceForLocalRank(0, 0), -1);
  EXPECT_EQ(DeviceForLocalRank(5, 0), -1);
  EXPECT_EQ(DeviceForLocalRank(0, 8), 0);
  EXPECT_EQ(DeviceForLocalRank(9, 8), 1);
  EXPECT_EQ(DeviceForLocalRank(3, 2), 1);
  EXPECT_THROW(DeviceForLocalRank(-1, 2), prefixd::Error);
  EXPECT_GE(CudaDeviceCount(), 0);
}

TEST(Bootstrap, NcclCommWithoutGpuIsRefusedOnEveryRank) {
  // Only where no rank sees a GPU (with too few GPUs NCCL itself refuses, as a library error).
  int gpu_here = CudaDeviceCount() > 0, gpu_anywhere = 0;
  MPI_Allreduce(&gpu_here, &gpu_anywhere, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (gpu_anywhere) GTEST_SKIP() << "a rank has a GPU; the no-GPU refusal path is not reachable";
  try {
    MakeNcclComm(MPI_COMM_WORLD, 0, nullptr);
    ADD_FAILURE() << "MakeNcclComm succeeded without a GPU";
  } catch (const prefixd::Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUnsupported) << e.what();
  }
}

TEST(Bootstrap, MpiErrorsBecomeExceptionsNamingTheRank) {
  // MPI_ERRORS_RETURN is installed by the session: a bad root is an exception, not an abort.
  int x = 0;
  try {
    PREFIXD_MPI_CHECK(MPI_Bcast(&x, 1, MPI_INT, WorldSize() + 5, MPI_COMM_WORLD));
    ADD_FAILURE() << "MPI_Bcast with an invalid root succeeded";
  } catch (const prefixd::Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kLibrary);
    EXPECT_NE(std::string(e.what()).find("rank " + std::to_string(WorldRank())), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("MPI"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace prefixd::comm
