// prefixd_comm_bench: latency of the NCCL collectives the distributed step could use, on the
// buffer kinds NCCL offers, so that the state and query exchanges pick the fastest (nccl-tests
// style, but only the shapes and memory kinds prefixd cares about).
//
//   mpirun -np 4 prefixd_comm_bench --bytes 16384,262144,540672,1048576
//
// Per message size m (bytes a rank sends to each peer, or contributes) and buffer kind:
//   a2a      grouped ncclSend/ncclRecv, m bytes to every peer (the engine's AllToAllV)
//   gather   ncclAllGather in place, m bytes per rank
//   rs       ncclReduceScatter (float sum), m bytes received per rank
//   ar_max   ncclAllReduce (float max) of m bytes
//   ar_sum   ncclAllReduce (float sum) of m bytes
// Buffer kinds: plain (cudaMalloc), reg (ncclMemAlloc + ncclCommRegister), sym (ncclMemAlloc +
// ncclCommWindowRegister(NCCL_WIN_COLL_SYMMETRIC): NCCL's symmetric kernels, 2.27+), and peer
// (cudaMalloc, moved by prefixd's own Comm: NcclComm's one-host peer-memory path,
// comm/cuda/peer_exchange.h, staged through its slots; a2a and gather only), and direct (the same
// path, the buffer from that Comm's AllocRegistered: its receive arena, written in place).
// Time per operation: CUDA events around -n back-to-back operations after -w warm-ups, median of
// --repeats such loops, the slowest rank's. Every operation's result is checked once (random
// contents per rank; a mismatch exits non-zero).
#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <cxxopts.hpp>

#include "prefixd/comm/bootstrap.h"
#include "prefixd/comm/comm.h"
#include "prefixd/comm/mpi_check.h"
#include "prefixd/comm/nccl_check.h"
#include "prefixd/common/cuda_check.h"
#include "prefixd/common/error.h"

namespace {

enum class BufferKind { kPlain, kRegistered, kSymmetric, kPeer, kDirect };

const char* KindName(BufferKind k) {
  switch (k) {
    case BufferKind::kPlain: return "plain";
    case BufferKind::kRegistered: return "reg";
    case BufferKind::kSymmetric: return "sym";
    case BufferKind::kPeer: return "peer";
    case BufferKind::kDirect: return "direct";
  }
  return "?";
}

// One device buffer of the given kind; registration is collective (every rank makes the same calls).
class Buffer {
 public:
  Buffer(ncclComm_t comm, BufferKind kind, size_t bytes, prefixd::comm::Comm* arena)
      : comm_(comm), kind_(kind), bytes_(bytes), arena_(arena) {
    if (kind == BufferKind::kDirect) {
      ptr_ = arena->AllocRegistered(bytes);
      PREFIXD_CHECK_ARG(ptr_ != nullptr, "--kinds direct: the receive arena cannot hold " << bytes << " bytes");
      return;
    }
    if (kind == BufferKind::kPlain || kind == BufferKind::kPeer) {
      PREFIXD_CUDA_CHECK(cudaMalloc(&ptr_, bytes));
      return;
    }
    PREFIXD_NCCL_CHECK_COMM(comm, ncclMemAlloc(&ptr_, bytes));
    if (kind == BufferKind::kRegistered) {
      PREFIXD_NCCL_CHECK_COMM(comm, ncclCommRegister(comm, ptr_, bytes, &handle_));
    } else {
      PREFIXD_NCCL_CHECK_COMM(comm, ncclCommWindowRegister(comm, ptr_, bytes, &window_, NCCL_WIN_COLL_SYMMETRIC));
    }
  }
  ~Buffer() {
    if (kind_ == BufferKind::kDirect) {
      arena_->FreeRegistered(ptr_);
      return;
    }
    if (kind_ == BufferKind::kPlain || kind_ == BufferKind::kPeer) {
      cudaFree(ptr_);
      return;
    }
    if (handle_ != nullptr) ncclCommDeregister(comm_, handle_);
    if (window_ != nullptr) ncclCommWindowDeregister(comm_, window_);
    ncclMemFree(ptr_);
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  char* data() const { return static_cast<char*>(ptr_); }
  size_t bytes() const { return bytes_; }

 private:
  ncclComm_t comm_;
  BufferKind kind_;
  size_t bytes_;
  prefixd::comm::Comm* arena_;
  void* ptr_ = nullptr;
  void* handle_ = nullptr;
  ncclWindow_t window_ = nullptr;
};

std::vector<std::string> Split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

float Value(int rank, size_t i) { return float(int((rank * 7919 + i * 104729) % 2003) - 1001) * 0.25f; }

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int rc = 0;
  try {
    cxxopts::Options options("prefixd_comm_bench", "NCCL collective latency per buffer kind (see the file's header)");
    options.add_options()("bytes", "message sizes m in bytes (per peer / per rank), comma-separated",
                          cxxopts::value<std::string>()->default_value("16384,262144,540672,1048576,2097152"))(
        "ops", "operations: a2a, gather, rs, ar_max, ar_sum", cxxopts::value<std::string>()->default_value("a2a,gather,rs,ar_max,ar_sum"))(
        "kinds", "buffer kinds: plain, reg, sym, peer, direct", cxxopts::value<std::string>()->default_value("plain,reg,sym,peer,direct"))(
        "n", "operations per timed loop", cxxopts::value<int>()->default_value("50"))(
        "w", "warm-up operations", cxxopts::value<int>()->default_value("20"))(
        "repeats", "timed loops (median taken)", cxxopts::value<int>()->default_value("7"))("h,help", "this help");
    const auto args = options.parse(argc, argv);
    if (args.count("help")) {
      if (rank == 0) std::printf("%s\n", options.help().c_str());
      MPI_Finalize();
      return 0;
    }
    const int n = args["n"].as<int>(), warm = args["w"].as<int>(), repeats = args["repeats"].as<int>();
    PREFIXD_CHECK_ARG(n > 0 && warm >= 0 && repeats > 0, "-n and --repeats must be positive, -w ≥ 0");
    std::vector<size_t> sizes;
    for (const std::string& s : Split(args["bytes"].as<std::string>())) {
      const long long v = std::stoll(s);
      PREFIXD_CHECK_ARG(v > 0 && v % 4 == 0, "--bytes: " << s << " must be a positive multiple of 4");
      sizes.push_back(size_t(v));
    }
    std::vector<BufferKind> kinds;
    for (const std::string& k : Split(args["kinds"].as<std::string>())) {
      if (k == "plain") kinds.push_back(BufferKind::kPlain);
      else if (k == "reg") kinds.push_back(BufferKind::kRegistered);
      else if (k == "sym") kinds.push_back(BufferKind::kSymmetric);
      else if (k == "peer") kinds.push_back(BufferKind::kPeer);
      else if (k == "direct") kinds.push_back(BufferKind::kDirect);
      else PREFIXD_CHECK_ARG(false, "--kinds: unknown kind '" << k << "'");
    }
    const std::vector<std::string> ops = Split(args["ops"].as<std::string>());
    for (const std::string& op : ops)
      PREFIXD_CHECK_ARG(op == "a2a" || op == "gather" || op == "rs" || op == "ar_max" || op == "ar_sum",
                        "--ops: unknown operation '" << op << "'");

    int devices = 0;
    PREFIXD_CUDA_CHECK(cudaGetDeviceCount(&devices));
    PREFIXD_CHECK_ARG(devices > 0, "no CUDA device");
    PREFIXD_CUDA_CHECK(cudaSetDevice(rank % devices));
    ncclUniqueId id;
    if (rank == 0) PREFIXD_NCCL_CHECK(ncclGetUniqueId(&id));
    PREFIXD_MPI_CHECK(MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD));
    ncclComm_t comm = nullptr;
    PREFIXD_NCCL_CHECK(ncclCommInitRank(&comm, size, id, rank));
    cudaStream_t stream;
    PREFIXD_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    // prefixd's Comm for the peer kinds (its peer path where the GPUs allow; NCCL otherwise).
    std::unique_ptr<prefixd::comm::Comm> prefixd_comm;
    const auto ours = [](BufferKind k) { return k == BufferKind::kPeer || k == BufferKind::kDirect; };
    if (std::any_of(kinds.begin(), kinds.end(), ours)) {
      prefixd::comm::CommOptions co;
      co.check_sizes = false;
      prefixd_comm = prefixd::comm::MakeNcclComm(MPI_COMM_WORLD, rank % devices, stream, co);
      // No receive arena (no peer path here, or PREFIXD_PEER_DIRECT=0): the direct kind is skipped.
      void* probe = prefixd_comm->AllocRegistered(16);
      if (probe != nullptr) {
        prefixd_comm->FreeRegistered(probe);
      } else if (std::find(kinds.begin(), kinds.end(), BufferKind::kDirect) != kinds.end()) {
        if (rank == 0) std::printf("# direct: no receive arena here (peer path off or impossible), skipped\n");
        kinds.erase(std::find(kinds.begin(), kinds.end(), BufferKind::kDirect));
      }
    }
    cudaEvent_t start, stop;
    PREFIXD_CUDA_CHECK(cudaEventCreate(&start));
    PREFIXD_CUDA_CHECK(cudaEventCreate(&stop));
    if (rank == 0) {
      int version = 0;
      ncclGetVersion(&version);
      std::printf("# prefixd_comm_bench: %d ranks, NCCL %d, %d ops per loop, %d warm-ups, median of %d loops, slowest rank\n",
                  size, version, n, warm, repeats);
      std::printf("%-8s %-6s %10s %10s\n", "op", "kind", "m_bytes", "us");
    }

    for (const std::string& op : ops)
      for (const size_t m : sizes)
        for (const BufferKind kind : kinds) {
          if (ours(kind) && op != "a2a" && op != "gather") continue;
          const size_t floats = m / 4;
          // One buffer holds send and receive parts, so that a symmetric window covers both (NCCL's
          // rule: every rank passes the same offsets in the same window).
          size_t send_off = 0, recv_off = 0, total = 0;
          if (op == "a2a") {
            send_off = 0, recv_off = m * size, total = 2 * m * size;
          } else if (op == "gather") {
            send_off = m * rank, recv_off = 0, total = m * size;  // in place
          } else if (op == "rs") {
            send_off = 0, recv_off = m * size, total = m * size + m;
          } else {
            send_off = 0, recv_off = 0, total = m;  // all-reduce in place
          }
          total = (total + 4095) / 4096 * 4096;
          Buffer buf(comm, kind, total, prefixd_comm.get());
          std::vector<float> host(total / 4);
          std::mt19937 rng(1234 + rank);
          std::uniform_real_distribution<float> dist(-4.f, 4.f);
          for (auto& x : host) x = dist(rng);
          // Rank-dependent exact values where the check needs them.
          if (op == "a2a")
            for (int j = 0; j < size; ++j)
              for (size_t i = 0; i < floats; ++i) host[j * floats + i] = Value(rank, j * floats + i);
          if (op == "gather")
            for (size_t i = 0; i < floats; ++i) host[rank * floats + i] = Value(rank, i);
          if (op == "rs")
            for (size_t i = 0; i < floats * size; ++i) host[i] = Value(rank, i);
          if (op == "ar_max" || op == "ar_sum")
            for (size_t i = 0; i < floats; ++i) host[i] = Value(rank, i);
          const auto upload = [&] {
            PREFIXD_CUDA_CHECK(cudaMemcpy(buf.data(), host.data(), total, cudaMemcpyHostToDevice));
            // From pageable memory cudaMemcpy may return before its DMA has landed, and `stream`
            // does not wait for the legacy stream: without this the exchange can read stale bytes.
            PREFIXD_CUDA_CHECK(cudaDeviceSynchronize());
          };
          char* base = buf.data();
          std::vector<size_t> pair_bytes(size, m), offsets_send(size), offsets_recv(size);
          pair_bytes[rank] = 0;  // as the NCCL rows: no self block
          for (int j = 0; j < size; ++j) offsets_send[j] = send_off + j * m, offsets_recv[j] = recv_off + j * m;
          const auto run = [&] {
            if (ours(kind)) {
              if (op == "a2a")
                prefixd_comm->AllToAllV(base, pair_bytes, offsets_send, base, pair_bytes, offsets_recv, stream);
              else
                prefixd_comm->AllGather(base + send_off, base, m, stream);
            } else if (op == "a2a") {
              PREFIXD_NCCL_CHECK_COMM(comm, ncclGroupStart());
              for (int j = 0; j < size; ++j) {
                if (j == rank) continue;
                PREFIXD_NCCL_CHECK_COMM(comm, ncclSend(base + send_off + j * m, m, ncclChar, j, comm, stream));
                PREFIXD_NCCL_CHECK_COMM(comm, ncclRecv(base + recv_off + j * m, m, ncclChar, j, comm, stream));
              }
              PREFIXD_NCCL_CHECK_COMM(comm, ncclGroupEnd());
            } else if (op == "gather") {
              PREFIXD_NCCL_CHECK_COMM(comm, ncclAllGather(base + send_off, base, m, ncclChar, comm, stream));
            } else if (op == "rs") {
              PREFIXD_NCCL_CHECK_COMM(
                  comm, ncclReduceScatter(base, base + recv_off, floats, ncclFloat, ncclSum, comm, stream));
            } else {
              PREFIXD_NCCL_CHECK_COMM(comm, ncclAllReduce(base, base, floats, ncclFloat,
                                                          op == "ar_max" ? ncclMax : ncclSum, comm, stream));
            }
          };
          // Check once on fresh contents.
          upload();
          run();
          PREFIXD_CUDA_CHECK(cudaStreamSynchronize(stream));
          std::vector<float> got(total / 4);
          PREFIXD_CUDA_CHECK(cudaMemcpy(got.data(), base, total, cudaMemcpyDeviceToHost));
          double worst = 0;
          for (size_t i = 0; i < floats; ++i)
            for (int j = 0; j < size; ++j) {
              double want = 0, have = 0;
              if (op == "a2a") {
                if (j == rank) continue;
                want = Value(j, rank * floats + i), have = got[(recv_off / 4) + j * floats + i];
              } else if (op == "gather") {
                want = Value(j, i), have = got[j * floats + i];
              } else if (op == "rs") {
                if (j > 0) continue;
                for (int k = 0; k < size; ++k) want += Value(k, rank * floats + i);
                have = got[recv_off / 4 + i];
              } else {
                if (j > 0) continue;
                want = op == "ar_max" ? -1e30 : 0;
                for (int k = 0; k < size; ++k) want = op == "ar_max" ? std::max(want, double(Value(k, i))) : want + Value(k, i);
                have = got[i];
              }
              const double err = std::isfinite(have) ? std::fabs(have - want) / std::max(1.0, std::fabs(want)) : 1e30;
              worst = std::max(worst, err);
            }
          int bad = worst > 1e-5, any_bad = 0;
          PREFIXD_MPI_CHECK(MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
          if (any_bad) {
            if (rank == 0) std::printf("%-8s %-6s %10zu   WRONG (worst relative error on some rank > 1e-5)\n", op.c_str(), KindName(kind), m);
            rc = 1;
            continue;
          }
          for (int i = 0; i < warm; ++i) run();
          std::vector<double> loops;
          for (int r = 0; r < repeats; ++r) {
            PREFIXD_CUDA_CHECK(cudaStreamSynchronize(stream));
            PREFIXD_MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
            PREFIXD_CUDA_CHECK(cudaEventRecord(start, stream));
            for (int i = 0; i < n; ++i) run();
            PREFIXD_CUDA_CHECK(cudaEventRecord(stop, stream));
            PREFIXD_CUDA_CHECK(cudaEventSynchronize(stop));
            float ms = 0;
            PREFIXD_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
            loops.push_back(ms * 1e3 / n);
          }
          std::sort(loops.begin(), loops.end());
          double us = loops[loops.size() / 2], slowest = 0;
          PREFIXD_MPI_CHECK(MPI_Allreduce(&us, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
          if (rank == 0) std::printf("%-8s %-6s %10zu %10.2f\n", op.c_str(), KindName(kind), m, slowest);
          std::fflush(stdout);
        }
    PREFIXD_CUDA_CHECK(cudaStreamSynchronize(stream));
    if (rank == 0 && prefixd_comm) std::printf("# peer rows: %llu operations through the peer path\n",
                                              (unsigned long long)prefixd_comm->peer_operations());
    prefixd_comm.reset();
    ncclCommDestroy(comm);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: %s\n", rank, e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();
  return rc;
}
