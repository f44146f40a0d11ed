// GPU timing support of prefixd_kernel_bench (bench_cuda.cu): plain C++ interface, CUDA inside.
// Built only with the CUDA backend; the kernel bench (kernel_bench.cc, planner_check.cc) calls it
// under PREFIXD_HAVE_CUDA.
//
// Method (the project's benchmark rule): CUDA events around each iteration; launch cost excluded
// by holding the stream with a spin kernel until every timed iteration is queued; L2 flushed before
// each timed iteration unless disabled; warm-ups first; the median reported.
//
// Two flushes: kWrite (the original) writes 256 MiB, which leaves L2 full of DIRTY lines, so the
// timed work also pays for writing ~50 MB of the flush buffer back to HBM as its own reads evict
// them (about 11 µs of HBM time on an H200); kClean writes the same 256 MiB, then reads another
// 256 MiB, so the timed work starts from a cold L2 holding only clean lines.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "prefixd/kernels/dtype.h"

namespace prefixd::bench {

enum class FlushMode { kNone, kWrite, kClean };
const char* FlushModeName(FlushMode mode);

struct TimingOptions {
  int warmups = 5;
  int iters = 30;
  bool flush_l2 = true;
  FlushMode flush = FlushMode::kWrite;  // when flush_l2
};

// Times fn (which only enqueues work on `stream`) iters times; returns each iteration's
// milliseconds. Throws prefixd::Error when the stream hold times out (a hung GPU is reported,
// not waited on forever).
std::vector<float> TimeOnStream(void* stream, const std::function<void()>& fn, const TimingOptions& options);
// The same for several functions, interleaved iteration by iteration (warm-ups too), one vector
// of milliseconds per function: so that a drift of the GPU's clock over the run (it slows under a
// long compute-bound load: the head_dim-256 prefix kernel +2.5% over 105 launches, bench/RESULTS.md
// session 54) biases none of them against another.
std::vector<std::vector<float>> TimeOnStreamInterleaved(void* stream, const std::vector<std::function<void()>>& fns,
                                                        const TimingOptions& options);

// Median time of an empty kernel under the same method (the floor of any timed region).
double EmptyRegionUs(void* stream, const TimingOptions& options);

// The yardstick of a memory-bound step (--read-floor): enqueues one plain read of [a, a + a_bytes)
// and [b, b + b_bytes) in a single launch, with no arithmetic, in one of two forms — bulk copies
// (TMA) with an L2 evict-first policy, one CTA per SM, 128 KiB in flight each (the prefix kernel's
// load form), or 16-byte ld.global.nc loads from every thread of 8 CTAs per SM (session 38's fastest
// read of 128 MiB after the flush). Sizes must be multiples of 16 bytes.
enum class PlainReadForm { kBulkEvictFirst, kNonCoherentLoads };
void EnqueuePlainRead(PlainReadForm form, const void* a, int64_t a_bytes, const void* b, int64_t b_bytes, void* stream,
                      uint32_t* xor_out = nullptr);
// Two ld.global.nc reads as the cascade's two kernels are launched: the first (spans a1, b1)
// triggers the second at its start; the second (a2, b2), a programmatic dependent launch, reads its
// bytes and then waits for the first's completion. The least any two-kernel step whose second kernel
// needs the first's results pays for its bytes under the method.
void EnqueuePlainReadPdlPair(const void* a1, const void* b1, int64_t bytes1, const void* a2, const void* b2,
                             int64_t bytes2, void* stream, uint32_t* xor_out = nullptr);
// Checks that every plain-read form above reads each 16-byte piece of its spans exactly once: the
// XOR of what each read on random data (spans of uneven sizes, chunk tails, an empty span) against
// the host's. Throws prefixd::Error naming the form on a mismatch; returns the bytes checked.
int64_t CheckPlainReads(void* stream);

// Uniform random values in [-scale, scale] written as dtype, on `stream` (asynchronous).
void FillRandom(void* ptr, int64_t count, kernels::DType dtype, float scale, uint64_t seed, void* stream);

// Ceilings measured on this device: device-to-device copy of `bytes` (bytes read + bytes written
// per second), and cuBLAS GEMM n×n×n (fp32 accumulation) on random data of `dtype` (fp16: the
// issue's ceiling; bf16 only as information), in FLOP/s.
double MeasureCopyBandwidth(int64_t bytes, int reps);
double MeasureGemmRate(int n, int reps, kernels::DType dtype = kernels::DType::kFloat16);

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
