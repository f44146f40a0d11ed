// GPU timing support of prefixd_kernel_bench (bench_cuda.cu): plain C++ interface, CUDA inside.
// Built only with the CUDA backend; kernel_bench.cc calls it under PREFIXD_HAVE_CUDA.
//
// Method (the project's benchmark rule): CUDA events around each iteration; launch cost excluded
// by holding the stream with a spin kernel until every timed iteration is queued; L2 flushed by a
// 256 MiB write before each timed iteration unless disabled; warm-ups first; the median reported.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "prefixd/kernels/dtype.h"

namespace prefixd::bench {

struct TimingOptions {
  int warmups = 5;
  int iters = 30;
  bool flush_l2 = true;
};

// Times fn (which only enqueues work on `stream`) iters times; returns each iteration's
// milliseconds. Throws prefixd::Error when the stream hold times out (a hung GPU is reported,
// not waited on forever).
std::vector<float> TimeOnStream(void* stream, const std::function<void()>& fn, const TimingOptions& options);

// Uniform random values in [-scale, scale] written as dtype, on `stream` (asynchronous).
void FillRandom(void* ptr, int64_t count, kernels::DType dtype, float scale, uint64_t seed, void* stream);

// Ceilings measured on this device: device-to-device copy of `bytes` (bytes read + bytes written
// per second), and cuBLAS fp16 GEMM n×n×n (fp32 accumulation) on random data, in FLOP/s.
double MeasureCopyBandwidth(int64_t bytes, int reps);
double MeasureGemmRate(int n, int reps);

// A CUDA graph of what fn enqueues on `stream` (captured in global mode: any call unsafe during
// capture fails it); Launch enqueues one replay.
class CapturedGraph {
 public:
  CapturedGraph(void* stream, const std::function<void()>& fn);
  ~CapturedGraph();
  CapturedGraph(const CapturedGraph&) = delete;
  CapturedGraph& operator=(const CapturedGraph&) = delete;
  void Launch();

 private:
  void* stream_;
  void* graph_ = nullptr;
  void* exec_ = nullptr;
};

}  // namespace prefixd::bench
