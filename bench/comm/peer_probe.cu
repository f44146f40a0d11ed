// prefixd_peer_probe: what one host's GPUs can move between them, by SM copies over peer mappings
// (push: stores into the peers' memory; pull: loads from it) and by the copy engines, and what a
// flag round trip costs. One process drives every visible GPU (peer access enabled between all),
// so that the probe needs no MPI. It measures the ceilings behind comm/cuda/peer_exchange.cu:
//
//   prefixd_peer_probe [--bytes 16384,131072,1048576] [--blocks 8,24,64] [--iters 50]
//
// Copy rows: every GPU moves m bytes to (push) or from (pull) each of the others at once, as in an
// all-to-all; time per operation = median over GPUs of (events around `iters` back-to-back
// operations, repeated inside one kernel or queued as copies) / iters; GB/s = (GPUs − 1) · m / time,
// per GPU and direction. (Launching a kernel per operation on 8 GPUs from one thread costs ~30 µs:
// the host would be what is measured.) Kernels of different GPUs are not synchronised with each
// other: the rows are bandwidth ceilings, not latencies.
// Ping-pong rows: one thread on GPU 0 and one on GPU 1 bounce a flag 2000 times; µs per round trip.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "comm/cuda/system_scope_flags.cuh"
#include "prefixd/common/cuda_check.h"

namespace {

using prefixd::comm::LoadAcquire;
using prefixd::comm::LoadRelaxed;
using prefixd::comm::StoreRelaxed;
using prefixd::comm::StoreRelease;

constexpr int kMaxGpus = 8;

struct CopyArgs {
  const char* src[kMaxGpus];  // per segment
  char* dst[kMaxGpus];
  int segments;
  unsigned long long bytes;  // per segment, multiple of 16
  int reps;                  // the copy, repeated inside the kernel (one launch per timing)
};

// Every block copies its share of every segment; the 16-byte units of all segments are one index
// space so that `Unroll` loads are in flight per thread before their stores.
template <int Unroll>
__global__ void __launch_bounds__(512) CopyKernel(CopyArgs a) {
  const unsigned long long units = a.bytes / 16;
  const unsigned long long share = (units + gridDim.x - 1) / gridDim.x;
  const unsigned long long begin = min(units, blockIdx.x * share), end = min(units, begin + share);
  const unsigned long long per_seg = end - begin, total = per_seg * a.segments;
  for (int r = 0; r < a.reps; ++r)
  for (unsigned long long base = threadIdx.x; base < total; base += blockDim.x * Unroll) {
    uint4 v[Unroll];
#pragma unroll
    for (int u = 0; u < Unroll; ++u) {
      const unsigned long long i = base + u * blockDim.x;
      if (i < total) {
        const int s = int(i / per_seg);
        v[u] = __ldcg(reinterpret_cast<const uint4*>(a.src[s]) + begin + i % per_seg);
      }
    }
#pragma unroll
    for (int u = 0; u < Unroll; ++u) {
      const unsigned long long i = base + u * blockDim.x;
      if (i < total) {
        const int s = int(i / per_seg);
        reinterpret_cast<uint4*>(a.dst[s])[begin + i % per_seg] = v[u];
      }
    }
  }
}

// GPU `side` (0 or 1) of the ping-pong: side 0 writes the peer's flag first.
__global__ void PingPongKernel(uint32_t* mine, uint32_t* peer, int rounds, int side, int relaxed) {
  for (int i = 1; i <= rounds; ++i) {
    if (side == 0) relaxed ? StoreRelaxed(peer, i) : StoreRelease(peer, i);
    while ((relaxed ? LoadRelaxed(mine) : LoadAcquire(mine)) < uint32_t(i)) {
    }
    if (side == 1) relaxed ? StoreRelaxed(peer, i) : StoreRelease(peer, i);
  }
}

std::vector<long long> ParseList(const std::string& s) {
  std::vector<long long> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) out.push_back(std::atoll(item.c_str()));
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<long long> sizes = {16384, 131072, 270336, 1048576}, blocks = {8, 24, 64, 132};
  int iters = 50;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    if (k == "--bytes") sizes = ParseList(argv[i + 1]);
    else if (k == "--blocks") blocks = ParseList(argv[i + 1]);
    else if (k == "--iters") iters = std::atoi(argv[i + 1]);
    else {
      std::fprintf(stderr, "usage: %s [--bytes list] [--blocks list] [--iters n]\n", argv[0]);
      return 2;
    }
  }
  const auto in_range = [](const std::vector<long long>& list, long long lo, long long hi) {
    return !list.empty() && std::all_of(list.begin(), list.end(), [&](long long x) { return x >= lo && x <= hi; });
  };
  if (!in_range(sizes, 16, 1LL << 30) || !in_range(blocks, 1, 1024)) {
    std::fprintf(stderr,
                 "prefixd_peer_probe: --bytes must list sizes in [16, 2^30] and --blocks counts in [1, 1024]\n");
    return 2;
  }
  if (iters < 1 || iters > 100000) {
    std::fprintf(stderr, "prefixd_peer_probe: --iters must be in [1, 100000], got %d\n", iters);
    return 2;
  }
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n < 2) {  // nothing measured: not a success
    std::fprintf(stderr, "prefixd_peer_probe: needs at least 2 GPUs (found %d)\n", n);
    return 2;
  }
  n = std::min(n, kMaxGpus);
  for (int g = 0; g < n; ++g) {
    PREFIXD_CUDA_CHECK(cudaSetDevice(g));
    for (int j = 0; j < n; ++j)
      if (j != g) PREFIXD_CUDA_CHECK(cudaDeviceEnablePeerAccess(j, 0));
  }
  const size_t max_bytes = size_t(*std::max_element(sizes.begin(), sizes.end()));
  std::vector<char*> src(n), dst(n);
  std::vector<cudaStream_t> stream(n);
  std::vector<cudaEvent_t> start(n), stop(n);
  for (int g = 0; g < n; ++g) {
    PREFIXD_CUDA_CHECK(cudaSetDevice(g));
    PREFIXD_CUDA_CHECK(cudaMalloc(&src[g], max_bytes * n));
    PREFIXD_CUDA_CHECK(cudaMalloc(&dst[g], max_bytes * n));
    PREFIXD_CUDA_CHECK(cudaMemset(src[g], g + 1, max_bytes * n));
    PREFIXD_CUDA_CHECK(cudaStreamCreateWithFlags(&stream[g], cudaStreamNonBlocking));
    PREFIXD_CUDA_CHECK(cudaEventCreate(&start[g]));
    PREFIXD_CUDA_CHECK(cudaEventCreate(&stop[g]));
  }
  std::printf("# prefixd_peer_probe: %d GPUs, %d back-to-back operations per timing\n", n, iters);
  std::printf("%-6s %-8s %7s %10s %10s %10s\n", "mode", "unroll", "blocks", "m(bytes)", "us/op", "GB/s/GPU");
  // One operation of `mode` on every GPU.
  const auto launch = [&](const std::string& mode, int unroll, int nblocks, size_t m, int reps) {
    for (int g = 0; g < n; ++g) {
      PREFIXD_CUDA_CHECK(cudaSetDevice(g));
      if (mode == "ce") {
        for (int r = 0; r < reps; ++r)
        for (int j = 0; j < n; ++j)
          if (j != g)
            PREFIXD_CUDA_CHECK(cudaMemcpyPeerAsync(dst[j] + g * m, j, src[g] + j * m, g, m, stream[g]));
        continue;
      }
      CopyArgs a{};
      for (int j = 0; j < n; ++j) {
        if (j == g) continue;
        const bool push = mode == "push";
        a.src[a.segments] = push ? src[g] + j * m : src[j] + g * m;
        a.dst[a.segments] = push ? dst[j] + g * m : dst[g] + j * m;
        ++a.segments;
      }
      a.bytes = m;
      a.reps = reps;
      if (unroll == 1) CopyKernel<1><<<nblocks, 512, 0, stream[g]>>>(a);
      else if (unroll == 4) CopyKernel<4><<<nblocks, 512, 0, stream[g]>>>(a);
      else CopyKernel<8><<<nblocks, 512, 0, stream[g]>>>(a);
      PREFIXD_CUDA_CHECK_LAUNCH();
    }
  };
  const auto time_mode = [&](const std::string& mode, int unroll, int nblocks, size_t m) {
    launch(mode, unroll, nblocks, m, 5);
    for (int g = 0; g < n; ++g) {
      PREFIXD_CUDA_CHECK(cudaSetDevice(g));
      PREFIXD_CUDA_CHECK(cudaDeviceSynchronize());
      PREFIXD_CUDA_CHECK(cudaEventRecord(start[g], stream[g]));
    }
    launch(mode, unroll, nblocks, m, iters);
    std::vector<float> us(n);
    for (int g = 0; g < n; ++g) {
      PREFIXD_CUDA_CHECK(cudaSetDevice(g));
      PREFIXD_CUDA_CHECK(cudaEventRecord(stop[g], stream[g]));
    }
    for (int g = 0; g < n; ++g) {
      PREFIXD_CUDA_CHECK(cudaEventSynchronize(stop[g]));
      PREFIXD_CUDA_CHECK(cudaEventElapsedTime(&us[g], start[g], stop[g]));
      us[g] *= 1000.f / iters;
    }
    std::sort(us.begin(), us.end());
    const double t = us[n / 2];
    std::printf("%-6s %-8d %7d %10zu %10.2f %10.1f\n", mode.c_str(), unroll, nblocks, m, t, (n - 1) * m / t / 1e3);
    std::fflush(stdout);
  };
  for (const long long m : sizes) {
    for (const char* mode : {"push", "pull"})
      for (const int unroll : {1, 4, 8})
        for (const long long b : blocks) time_mode(mode, unroll, int(b), size_t(m));
    time_mode("ce", 0, 0, size_t(m));
  }
  // Flag round trips between GPUs 0 and 1.
  std::vector<uint32_t*> flag(2);
  for (int g = 0; g < 2; ++g) {
    PREFIXD_CUDA_CHECK(cudaSetDevice(g));
    PREFIXD_CUDA_CHECK(cudaMalloc(&flag[g], 256));
  }
  for (const int relaxed : {0, 1}) {
    const int rounds = 2000;
    for (int g = 0; g < 2; ++g) {
      PREFIXD_CUDA_CHECK(cudaSetDevice(g));
      PREFIXD_CUDA_CHECK(cudaMemset(flag[g], 0, 256));
      PREFIXD_CUDA_CHECK(cudaDeviceSynchronize());
    }
    PREFIXD_CUDA_CHECK(cudaSetDevice(1));
    PingPongKernel<<<1, 1, 0, stream[1]>>>(flag[1], flag[0], rounds, 1, relaxed);
    PREFIXD_CUDA_CHECK(cudaSetDevice(0));
    PREFIXD_CUDA_CHECK(cudaEventRecord(start[0], stream[0]));
    PingPongKernel<<<1, 1, 0, stream[0]>>>(flag[0], flag[1], rounds, 0, relaxed);
    PREFIXD_CUDA_CHECK(cudaEventRecord(stop[0], stream[0]));
    PREFIXD_CUDA_CHECK(cudaEventSynchronize(stop[0]));
    float ms = 0;
    PREFIXD_CUDA_CHECK(cudaEventElapsedTime(&ms, start[0], stop[0]));
    PREFIXD_CUDA_CHECK(cudaSetDevice(1));
    PREFIXD_CUDA_CHECK(cudaDeviceSynchronize());
    std::printf("pingpong %-8s round trip %.2f us\n", relaxed ? "relaxed" : "acq/rel", ms * 1e3 / rounds);
  }
  return 0;
}
