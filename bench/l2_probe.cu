// What a streaming read pays for the dirty lines an L2 flush leaves behind, per load cache policy.
//
//   prefixd_l2_probe [--iters 30] [--warmup 5] [--mib 16,64,128,256]
//
// The issue's method flushes L2 with a 256 MiB write before each timed iteration, so L2 starts every
// timed step full of dirty lines; a kernel whose reads allocate in L2 evicts them and pays their
// write-back (~50 MB at H200 sizes) inside its own time. This probe times one plain streaming read
// of N MiB (16-byte loads, every SM, 4 loads in flight per thread) after three L2 states:
//   write  the 256 MiB write (the method: dirty lines),
//   clean  the write, then a 256 MiB read of another buffer (L2 full of clean lines),
//   none   no flush (the read's own data partly still in L2 when N is small),
// once per load form: default caching, ld.global.nc, the .lu qualifier, an L2 cache-hint policy
// (createpolicy evict_first), cp.async with that policy (the decode kernel's form), and bulk copies
// (TMA; the prefix kernel's form) without and with it, and the bulk reader on 128 CTAs with its
// chunks interleaved or in one contiguous run per CTA (the prefix kernel's share), and contiguous
// on every SM. dirty_us = t(write) − t(clean) is what the flush's dirty lines cost that read: the
// question is whether any load form avoids it (a read that does not displace the dirty lines).
// Median of --iters, CUDA events around the read kernel alone; the empty kernel under the same
// events is printed for reference. --ctas and --l2-hit print other tables instead (L2HitTable: the
// L2-hit read rate, alone and beside a DRAM stream on other SMs).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "prefixd/common/cuda_check.h"
#include "prefixd/common/tool_main.h"
#include "bench/plain_read.cuh"

namespace {

using prefixd::bench::plain_read::BulkReadKernel;
using prefixd::bench::plain_read::kBulkChunk;
using prefixd::bench::plain_read::kBulkStages;
using prefixd::bench::plain_read::kThreads;
using prefixd::bench::plain_read::LoadForm;
using prefixd::bench::plain_read::Spans;
using prefixd::bench::plain_read::StreamReadKernel;

constexpr const char* kFormNames[] = {"default",
                                      "ld.nc",
                                      "ld.lu",
                                      "policy evict_first",
                                      "cp.async+policy",
                                      "bulk (TMA) plain",
                                      "bulk (TMA)+policy",
                                      "bulk 128 CTAs",
                                      "bulk 128 contiguous",
                                      "bulk SMs contiguous"};

__global__ void EmptyKernel() {}

__global__ void FillKernel(uint32_t* out, int64_t n, uint32_t seed) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    uint32_t x = uint32_t(i) * 2654435761u ^ seed;
    x ^= x >> 15;
    x *= 2246822519u;
    x ^= x >> 13;
    out[i] = x;
  }
}

using ReadLauncher = void (*)(const uint4*, int64_t, uint32_t*, int grid, cudaStream_t);
template <LoadForm FORM>
void LaunchRead(const uint4* data, int64_t n16, uint32_t* sink, int grid, cudaStream_t s) {
  StreamReadKernel<FORM><<<grid, kThreads, 0, s>>>(Spans{reinterpret_cast<const uint8_t*>(data), n16 * 16}, sink);
}
template <bool POLICY>
void LaunchBulk(const uint4* data, int64_t n16, uint32_t* sink, int grid, cudaStream_t s) {
  constexpr int smem = kBulkStages * kBulkChunk;
  static bool raised = false;
  if (!raised) {
    PREFIXD_CUDA_CHECK(cudaFuncSetAttribute(BulkReadKernel<POLICY>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    raised = true;
  }
  BulkReadKernel<POLICY><<<grid / 8, kThreads, smem, s>>>(Spans{reinterpret_cast<const uint8_t*>(data), n16 * 16}, sink);
}
// The bulk reader (no cache hint) on `ctas` CTAs (at most one per SM), each CTA's chunks either
// every ctas-th (CONTIGUOUS false) or one contiguous run, as a prefix-kernel CTA streams one item
// (the prefix kernel's grid at 32/32 B16 P8192: 128 CTAs, one 1 MiB item each).
template <bool CONTIGUOUS, int CTAS>
void LaunchBulkShare(const uint4* data, int64_t n16, uint32_t* sink, int grid, cudaStream_t s) {
  constexpr int smem = kBulkStages * kBulkChunk;
  static bool raised = false;
  if (!raised) {
    PREFIXD_CUDA_CHECK(cudaFuncSetAttribute(BulkReadKernel<false, kBulkStages, CONTIGUOUS>,
                                            cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    raised = true;
  }
  const int ctas = CTAS > 0 ? std::min(CTAS, grid / 8) : grid / 8;
  BulkReadKernel<false, kBulkStages, CONTIGUOUS>
      <<<ctas, kThreads, smem, s>>>(Spans{reinterpret_cast<const uint8_t*>(data), n16 * 16}, sink);
}
// The per-SM table (--ctas): the evict-first bulk reader on `ctas` CTAs, one per SM (their shared
// memory keeps a second off), with STAGES chunks of 32 KiB in flight each.
template <int STAGES>
void LaunchBulkOnCtas(const uint4* data, int64_t n16, uint32_t* sink, int ctas, cudaStream_t s, int64_t wrap = 0) {
  constexpr int smem = STAGES * kBulkChunk;
  static bool raised = false;
  if (!raised) {
    PREFIXD_CUDA_CHECK(cudaFuncSetAttribute(BulkReadKernel<true, STAGES>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    raised = true;
  }
  BulkReadKernel<true, STAGES><<<ctas, kThreads, smem, s>>>(Spans{reinterpret_cast<const uint8_t*>(data), n16 * 16}, sink,
                                                             wrap);
  PREFIXD_CUDA_CHECK_LAUNCH();
}

constexpr ReadLauncher kLaunchers[] = {LaunchRead<LoadForm::kDefault>,          LaunchRead<LoadForm::kNonCoherent>,
                                       LaunchRead<LoadForm::kLastUse>,          LaunchRead<LoadForm::kPolicyEvictFirst>,
                                       LaunchRead<LoadForm::kCpAsyncPolicy>,    LaunchBulk<false>,
                                       LaunchBulk<true>,                        LaunchBulkShare<false, 128>,
                                       LaunchBulkShare<true, 128>,              LaunchBulkShare<true, 0>};

static_assert(sizeof(kLaunchers) / sizeof(kLaunchers[0]) == sizeof(kFormNames) / sizeof(kFormNames[0]),
              "one name per load form");

std::vector<int> ParseList(const char* s) {
  std::vector<int> out;
  for (const char* p = s; *p;) {
    char* end = nullptr;
    const long v = std::strtol(p, &end, 10);
    if (end == p || v <= 0) {
      std::fprintf(stderr, "prefixd_l2_probe: bad list '%s' (positive integers, comma separated)\n", s);
      std::exit(2);
    }
    out.push_back(int(v));
    p = *end == ',' ? end + 1 : end;
  }
  return out;
}

// The L2-hit table (--l2-hit): the bulk reader (no cache hint, 128 KiB in flight, one CTA per SM) on
// SMs − beside CTAs reading N MiB ~1 GiB / N times over (the prefix kernel's K/V tiles, which its
// row-tile slots read from L2 in turn), alone, and with an evict-first bulk reader of 1 GiB from
// DRAM on `beside` CTAs of a second stream launched first (the decode beside the prefix). Its events
// time the L2 reader only; the DRAM reader's own time is printed beside it (it must outlast the L2
// read for the row to say what it means). Data: `data` ≥ max N MiB.
int L2HitTable(const cudaDeviceProp& prop, const std::vector<int>& mib, int beside, int iters, int warmup,
               const uint8_t* data, uint32_t* sink, cudaStream_t s) {
  constexpr int kStages = 4, kSmem = kStages * kBulkChunk;
  constexpr int64_t kDramBytes = int64_t(1) << 30;
  const int readers = prop.multiProcessorCount - beside;
  if (beside < 1 || readers < 1) {
    std::fprintf(stderr, "prefixd_l2_probe: --beside must be 1..%d\n", prop.multiProcessorCount - 1);
    return 2;
  }
  PREFIXD_CUDA_CHECK(cudaFuncSetAttribute(BulkReadKernel<false, kStages>, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
  PREFIXD_CUDA_CHECK(cudaFuncSetAttribute(BulkReadKernel<true, kStages>, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
  uint8_t* dram = nullptr;
  PREFIXD_CUDA_CHECK(cudaMalloc(&dram, kDramBytes));
  FillKernel<<<1024, 256>>>(reinterpret_cast<uint32_t*>(dram), kDramBytes / 4, 4242u);
  PREFIXD_CUDA_CHECK_LAUNCH();
  cudaStream_t s2;
  PREFIXD_CUDA_CHECK(cudaStreamCreate(&s2));
  cudaEvent_t ev[4];
  for (cudaEvent_t& e : ev) PREFIXD_CUDA_CHECK(cudaEventCreate(&e));
  std::printf("#\n# L2-hit reads on %d CTAs, alone and beside a 1 GiB DRAM stream on %d CTAs (median of %d)\n",
              readers, beside, iters);
  std::printf("# %6s %6s | %9s %9s | %9s %9s | %11s\n", "MiB", "passes", "alone_us", "alone_TB/s", "beside_us",
              "beside_TB/s", "dram_us");
  for (int m : mib) {
    const int64_t wrap = int64_t(m) << 20, passes = std::max<int64_t>(1, kDramBytes / wrap);
    const int64_t bytes = wrap * passes;
    float result[2] = {0, 0}, dram_us = 0;
    for (int with_dram = 0; with_dram < 2; ++with_dram) {
      std::vector<float> t, d;
      for (int it = 0; it < warmup + iters; ++it) {
        PREFIXD_CUDA_CHECK(cudaStreamSynchronize(s2));
        if (with_dram) {
          PREFIXD_CUDA_CHECK(cudaEventRecord(ev[2], s2));
          BulkReadKernel<true, kStages><<<beside, kThreads, kSmem, s2>>>(Spans{dram, kDramBytes}, sink, 0);
          PREFIXD_CUDA_CHECK(cudaEventRecord(ev[3], s2));
        }
        PREFIXD_CUDA_CHECK(cudaEventRecord(ev[0], s));
        BulkReadKernel<false, kStages><<<readers, kThreads, kSmem, s>>>(Spans{data, bytes}, sink, wrap);
        PREFIXD_CUDA_CHECK(cudaEventRecord(ev[1], s));
        PREFIXD_CUDA_CHECK(cudaStreamSynchronize(s));
        PREFIXD_CUDA_CHECK(cudaStreamSynchronize(s2));
        PREFIXD_CUDA_CHECK_LAUNCH();
        float ms = 0;
        PREFIXD_CUDA_CHECK(cudaEventElapsedTime(&ms, ev[0], ev[1]));
        if (it >= warmup) t.push_back(ms * 1000.f);
        if (with_dram) {
          PREFIXD_CUDA_CHECK(cudaEventElapsedTime(&ms, ev[2], ev[3]));
          if (it >= warmup) d.push_back(ms * 1000.f);
        }
      }
      std::nth_element(t.begin(), t.begin() + t.size() / 2, t.end());
      result[with_dram] = t[t.size() / 2];
      if (with_dram) {
        std::nth_element(d.begin(), d.begin() + d.size() / 2, d.end());
        dram_us = d[d.size() / 2];
      }
    }
    std::printf("  %6d %6lld | %9.1f %9.2f | %9.1f %9.2f | %11.1f\n", m, static_cast<long long>(passes), result[0],
                double(bytes) / (result[0] * 1e6), result[1], double(bytes) / (result[1] * 1e6), dram_us);
  }
  for (cudaEvent_t e : ev) PREFIXD_CUDA_CHECK(cudaEventDestroy(e));
  PREFIXD_CUDA_CHECK(cudaStreamDestroy(s2));
  PREFIXD_CUDA_CHECK(cudaFree(dram));
  return 0;
}

int Run(int argc, char** argv) {
  int iters = 30, warmup = 5;
  std::vector<int> mib = {16, 64, 128, 256};
  std::vector<int> ctas;    // --ctas: the per-SM table instead
  std::vector<int> l2_hit;  // --l2-hit: the L2-hit table instead
  int beside = 20;          // its HBM reader's CTAs (--beside)
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::printf("usage: prefixd_l2_probe [--iters 30] [--warmup 5] [--mib 16,64,128,256] [--ctas 8,16,...]\n"
                  "                        [--l2-hit 8,16,32 [--beside 20]]\n"
                  "  times a streaming read of N MiB after an L2 flush that leaves dirty lines (write),\n"
                  "  clean lines (clean) or none, per load cache policy (see bench/l2_probe.cu);\n"
                  "  with --ctas: the read of each N MiB by only k SMs (bulk copies, evict-first, one CTA\n"
                  "  per SM, 128 or 192 KiB in flight each): how much DRAM bandwidth k SMs can pull;\n"
                  "  with --l2-hit 8,16,32 [--beside 20]: the L2-hit read rate of SMs - k CTAs (one per SM)\n"
                  "  reading N MiB over and over, alone and beside an evict-first stream of 1 GiB from\n"
                  "  DRAM on k more CTAs (the concurrent step's decode beside its prefix)\n");
      return 0;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "prefixd_l2_probe: %s needs a value (--help)\n", a.c_str());
      return 2;
    }
    if (a == "--iters") iters = std::max(1, std::atoi(argv[++i]));
    else if (a == "--warmup") warmup = std::max(0, std::atoi(argv[++i]));
    else if (a == "--mib") mib = ParseList(argv[++i]);
    else if (a == "--ctas") ctas = ParseList(argv[++i]);
    else if (a == "--l2-hit") l2_hit = ParseList(argv[++i]);
    else if (a == "--beside") beside = ParseList(argv[++i]).front();
    else {
      std::fprintf(stderr, "prefixd_l2_probe: unknown option %s (--help)\n", a.c_str());
      return 2;
    }
  }
  int device_count = 0;
  if (cudaGetDeviceCount(&device_count) != cudaSuccess || device_count == 0) {
    std::fprintf(stderr, "prefixd_l2_probe: no CUDA device\n");
    return 1;
  }
  cudaDeviceProp prop{};
  PREFIXD_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  int max_mib = *std::max_element(mib.begin(), mib.end());
  for (int m : l2_hit) max_mib = std::max(max_mib, m);
  constexpr int64_t kFlushBytes = int64_t(256) << 20;
  uint8_t *flush = nullptr, *clean = nullptr, *data = nullptr;
  uint32_t* sink = nullptr;
  PREFIXD_CUDA_CHECK(cudaMalloc(&flush, kFlushBytes));
  PREFIXD_CUDA_CHECK(cudaMalloc(&clean, kFlushBytes));
  PREFIXD_CUDA_CHECK(cudaMalloc(&data, int64_t(max_mib) << 20));
  PREFIXD_CUDA_CHECK(cudaMalloc(&sink, 1 << 20));
  FillKernel<<<1024, 256>>>(reinterpret_cast<uint32_t*>(data), (int64_t(max_mib) << 20) / 4, 12345u);
  FillKernel<<<1024, 256>>>(reinterpret_cast<uint32_t*>(clean), kFlushBytes / 4, 777u);
  PREFIXD_CUDA_CHECK_LAUNCH();
  PREFIXD_CUDA_CHECK(cudaDeviceSynchronize());
  cudaStream_t s;
  PREFIXD_CUDA_CHECK(cudaStreamCreate(&s));
  cudaEvent_t start, stop;
  PREFIXD_CUDA_CHECK(cudaEventCreate(&start));
  PREFIXD_CUDA_CHECK(cudaEventCreate(&stop));
  const int grid = prop.multiProcessorCount * 8;

  // One timed region: L2 state `mode` (0 write, 1 clean, 2 none), then the events around `body`.
  auto time_us = [&](int mode, auto body) {
    std::vector<float> t;
    for (int it = 0; it < warmup + iters; ++it) {
      if (mode <= 1) PREFIXD_CUDA_CHECK(cudaMemsetAsync(flush, it & 0xff, kFlushBytes, s));
      if (mode == 1) LaunchRead<LoadForm::kDefault>(reinterpret_cast<const uint4*>(clean), kFlushBytes / 16, sink, grid, s);
      PREFIXD_CUDA_CHECK(cudaEventRecord(start, s));
      body();
      PREFIXD_CUDA_CHECK(cudaEventRecord(stop, s));
      PREFIXD_CUDA_CHECK(cudaEventSynchronize(stop));
      PREFIXD_CUDA_CHECK_LAUNCH();
      float ms = 0;
      PREFIXD_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
      if (it >= warmup) t.push_back(ms * 1000.f);
    }
    std::nth_element(t.begin(), t.begin() + t.size() / 2, t.end());
    return t[t.size() / 2];
  };

  std::printf("# prefixd_l2_probe: %s (%d SMs, L2 %d MiB); median of %d after %d warm-ups; grid %d x %d threads\n",
              prop.name, prop.multiProcessorCount, prop.l2CacheSize >> 20, iters, warmup, grid, kThreads);
  std::printf("# empty kernel between the events: write %.1f us, clean %.1f us, none %.1f us\n",
              time_us(0, [&] { EmptyKernel<<<1, 32, 0, s>>>(); }), time_us(1, [&] { EmptyKernel<<<1, 32, 0, s>>>(); }),
              time_us(2, [&] { EmptyKernel<<<1, 32, 0, s>>>(); }));
  if (!l2_hit.empty()) return L2HitTable(prop, l2_hit, beside, iters, warmup, data, sink, s);
  if (!ctas.empty()) {
    std::printf("#\n# %5s %6s %6s | %9s %9s | %9s %9s | %11s\n", "SMs", "KiB", "MiB", "write_us", "none_us",
                "write_GB/s", "none_GB/s", "none_GB/s/SM");
    for (int m : mib)
      for (int k : ctas)
        for (int stages : {4, 6}) {
          const int64_t n16 = (int64_t(m) << 20) / 16;
          auto read = [&] {
            if (stages == 4) LaunchBulkOnCtas<4>(reinterpret_cast<const uint4*>(data), n16, sink, k, s);
            else LaunchBulkOnCtas<6>(reinterpret_cast<const uint4*>(data), n16, sink, k, s);
          };
          const float w = time_us(0, read), n = time_us(2, read);
          const double bytes = double(int64_t(m) << 20);
          std::printf("  %5d %6d %6d | %9.1f %9.1f | %9.0f %9.0f | %11.1f\n", k, stages * kBulkChunk >> 10, m, w, n,
                      bytes / (w * 1e3), bytes / (n * 1e3), bytes / (n * 1e3) / k);
        }
    return 0;
  }
  std::printf("#\n# %-20s %6s | %9s %9s %9s | %8s | %9s\n", "load form", "MiB", "write_us", "clean_us", "none_us",
              "dirty_us", "clean_GB/s");
  for (int m : mib) {
    const int64_t n16 = (int64_t(m) << 20) / 16;
    for (int f = 0; f < int(sizeof(kLaunchers) / sizeof(kLaunchers[0])); ++f) {
      auto read = [&] { kLaunchers[f](reinterpret_cast<const uint4*>(data), n16, sink, grid, s); };
      const float w = time_us(0, read), c = time_us(1, read), n = time_us(2, read);
      std::printf("  %-20s %6d | %9.1f %9.1f %9.1f | %8.1f | %9.0f\n", kFormNames[f], m, w, c, n, w - c,
                  double(int64_t(m) << 20) / (c * 1e3));
    }
  }
  return 0;
}

}  // namespace

// A CUDA error (PREFIXD_CUDA_CHECK) is reported and exits 1.
int main(int argc, char** argv) { return prefixd::RunToolMain("prefixd_l2_probe", Run, argc, argv, 1); }
