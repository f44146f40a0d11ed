#include "bench/kernel/beside_load.h"

#include <cuda_runtime.h>

#include "prefixd/common/cuda_check.h"
#include "prefixd/common/error.h"

namespace prefixd::bench {
namespace {

constexpr size_t kDramBytes = size_t(2) << 30;
constexpr size_t kL2Bytes = size_t(16) << 20;
constexpr int kThreads = 1024;
constexpr uint64_t kSelfStopNs = 50'000'000;  // 50 ms: never left running if Stop is not queued

__device__ __forceinline__ uint64_t GlobalTimerNs() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Runs `load` until *flag reaches `generation` (or for kSelfStopNs). Each CTA reserves its SM's
// shared memory (dynamic, not touched) so that no CTA of the timed kernel shares its SM. Thread 0
// of CTA 0 adds its SM clock cycles and nanoseconds over the run to clocks[0..1]: the clock is the
// chip's, so their ratio is the clock the timed kernel ran at beside this load.
__global__ void __launch_bounds__(kThreads) BesideKernel(BesideLoad load, const volatile uint32_t* flag,
                                                         uint32_t generation, const uint4* data, int64_t words,
                                                         uint4* sink, unsigned long long* clocks) {
  const uint64_t start = GlobalTimerNs();
  const long long start_cycles = clock64();
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  uint32_t acc = 0;
  float f[4] = {float(threadIdx.x), 1.f, 2.f, 3.f};
  while (*flag < generation && GlobalTimerNs() - start < kSelfStopNs) {
    switch (load) {
      case BesideLoad::kSpin: __nanosleep(500); break;
      case BesideLoad::kFma:
#pragma unroll 8
        for (int k = 0; k < 256; ++k)
#pragma unroll
          for (int c = 0; c < 4; ++c) f[c] = fmaf(f[c], 0.9999f, 0.5f);
        break;
      case BesideLoad::kDram:
      case BesideLoad::kL2:
#pragma unroll
        for (int k = 0; k < 8; ++k) {
          const uint4 v = __ldcs(data + i);  // streaming (evict-first) loads, like the decode's
          acc ^= v.x ^ v.y ^ v.z ^ v.w;
          i += stride;
          if (i >= words) i -= words;
        }
        break;
      case BesideLoad::kNone: return;
    }
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    atomicAdd(&clocks[0], static_cast<unsigned long long>(clock64() - start_cycles));
    atomicAdd(&clocks[1], static_cast<unsigned long long>(GlobalTimerNs() - start));
  }
  if (acc == 0x9e3779b9u && f[0] + f[1] + f[2] + f[3] == 1.2345f) sink[0] = make_uint4(acc, 0, 0, 0);  // never
}

__global__ void RaiseFlagKernel(uint32_t* flag, uint32_t generation) { *flag = generation; }

}  // namespace

const char* BesideLoadName(BesideLoad load) {
  switch (load) {
    case BesideLoad::kNone: return "none";
    case BesideLoad::kSpin: return "spin";
    case BesideLoad::kFma: return "fma";
    case BesideLoad::kDram: return "dram";
    case BesideLoad::kL2: return "l2";
  }
  return "?";
}

BesideLoad ParseBesideLoad(const std::string& name) {
  for (BesideLoad load : {BesideLoad::kNone, BesideLoad::kSpin, BesideLoad::kFma, BesideLoad::kDram, BesideLoad::kL2})
    if (name == BesideLoadName(load)) return load;
  PREFIXD_THROW(ErrorKind::kInvalidArgument, "--beside: unknown load '" << name << "' (none, spin, fma, dram or l2)");
}

BesideRunner::BesideRunner(int ctas) : ctas_(ctas) {
  PREFIXD_CHECK_ARG(ctas >= 1, "BesideRunner: ctas must be ≥ 1, got " << ctas);
  cudaStream_t side = nullptr;
  PREFIXD_CUDA_CHECK(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
  side_ = side;
  cudaEvent_t started = nullptr, ended = nullptr;
  PREFIXD_CUDA_CHECK(cudaEventCreateWithFlags(&started, cudaEventDisableTiming));
  PREFIXD_CUDA_CHECK(cudaEventCreateWithFlags(&ended, cudaEventDisableTiming));
  started_ = started;
  ended_ = ended;
  PREFIXD_CUDA_CHECK(cudaMalloc(&flag_, sizeof(uint32_t)));
  PREFIXD_CUDA_CHECK(cudaMemset(flag_, 0, sizeof(uint32_t)));
  PREFIXD_CUDA_CHECK(cudaMalloc(&dram_, kDramBytes));
  PREFIXD_CUDA_CHECK(cudaMemset(dram_, 0x3c, kDramBytes));
  PREFIXD_CUDA_CHECK(cudaMalloc(&l2_, kL2Bytes));
  PREFIXD_CUDA_CHECK(cudaMemset(l2_, 0x5a, kL2Bytes));
  PREFIXD_CUDA_CHECK(cudaMalloc(&sink_, sizeof(uint4)));
  PREFIXD_CUDA_CHECK(cudaMalloc(&clocks_, kClockWords * sizeof(unsigned long long)));
  PREFIXD_CUDA_CHECK(cudaMemset(clocks_, 0, kClockWords * sizeof(unsigned long long)));
  int device = 0;
  PREFIXD_CUDA_CHECK(cudaGetDevice(&device));
  PREFIXD_CUDA_CHECK(cudaDeviceGetAttribute(&smem_bytes_, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  PREFIXD_CUDA_CHECK(cudaFuncSetAttribute(BesideKernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes_));
}

BesideRunner::~BesideRunner() {
  cudaStreamSynchronize(static_cast<cudaStream_t>(side_));
  cudaFree(clocks_);
  cudaFree(sink_);
  cudaFree(l2_);
  cudaFree(dram_);
  cudaFree(flag_);
  cudaEventDestroy(static_cast<cudaEvent_t>(ended_));
  cudaEventDestroy(static_cast<cudaEvent_t>(started_));
  cudaStreamDestroy(static_cast<cudaStream_t>(side_));
}

void BesideRunner::Start(void* stream, BesideLoad load) {
  auto main = static_cast<cudaStream_t>(stream);
  auto side = static_cast<cudaStream_t>(side_);
  ++generation_;
  PREFIXD_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(started_), main));
  PREFIXD_CUDA_CHECK(cudaStreamWaitEvent(side, static_cast<cudaEvent_t>(started_), 0));
  if (load != BesideLoad::kNone) {
    const bool dram = load == BesideLoad::kDram;
    BesideKernel<<<ctas_, kThreads, size_t(smem_bytes_), side>>>(load, flag_, generation_,
                                                   static_cast<const uint4*>(dram ? dram_ : l2_),
                                                   int64_t((dram ? kDramBytes : kL2Bytes) / sizeof(uint4)),
                                                   static_cast<uint4*>(sink_), clocks_ + 2 * int(load));
    PREFIXD_CUDA_CHECK_LAUNCH();
  }
  PREFIXD_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(ended_), side));
}

double BesideRunner::MeanClockMhz(BesideLoad load) const {
  PREFIXD_CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(side_)));
  unsigned long long host[kClockWords];
  PREFIXD_CUDA_CHECK(cudaMemcpy(host, clocks_, sizeof(host), cudaMemcpyDeviceToHost));
  const unsigned long long cycles = host[2 * int(load)], ns = host[2 * int(load) + 1];
  return ns == 0 ? 0.0 : 1e3 * double(cycles) / double(ns);
}

void BesideRunner::Stop(void* stream) {
  auto main = static_cast<cudaStream_t>(stream);
  RaiseFlagKernel<<<1, 1, 0, main>>>(flag_, generation_);
  PREFIXD_CUDA_CHECK_LAUNCH();
  PREFIXD_CUDA_CHECK(cudaStreamWaitEvent(main, static_cast<cudaEvent_t>(ended_), 0));
}

}  // namespace prefixd::bench
