// How many 2^x per clock the SM's special-function unit (MUFU) gives, per instruction form.
//
//   prefixd_exp2_probe
//
// Why: the sm_90a prefix kernel's softmax at head_dim 64 takes one MUFU ex2 per score, as much
// MUFU time as the tile's wgmma takes tensor time (bench/NOTES-prefix.md, sessions 27-28). Taking
// two fp16 scores per instruction (ex2.approx.f16x2; bench/kernel/results/s38/half-exp2.patch)
// pays only if that form runs at the f32 form's instruction rate, i.e. twice the values. This probe
// times long dependent-free chains of each form (f32, f16x2, bf16x2) on every SM and prints
// instructions and values per SM per clock (at the SM's maximum clock, as the device reports it).
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "prefixd/common/cuda_check.h"
#include "prefixd/common/error.h"
#include "prefixd/common/tool_main.h"

namespace {

constexpr int kIters = 4096;  // per thread and chain
constexpr int kChains = 8;    // independent chains per thread (enough to cover the MUFU latency)

enum class Form { kF32, kF16x2, kBf16x2 };

template <Form FORM>
__device__ __forceinline__ uint32_t Exp2(uint32_t x) {
  uint32_t y;
  if constexpr (FORM == Form::kF32) asm volatile("ex2.approx.ftz.f32 %0, %1;" : "=r"(y) : "r"(x));
  else if constexpr (FORM == Form::kF16x2) asm volatile("ex2.approx.f16x2 %0, %1;" : "=r"(y) : "r"(x));
  else asm volatile("ex2.approx.ftz.bf16x2 %0, %1;" : "=r"(y) : "r"(x));
  return y;
}

// Starting values below 0 in every form (negative sign bits), distinct per thread and chain; the
// chains converge towards 2^x's fixed point, never to NaN.
template <Form FORM>
__global__ void Exp2Chains(uint32_t* out) {
  const uint32_t seed = FORM == Form::kF32 ? 0xbc000000u : FORM == Form::kF16x2 ? 0xb800b800u : 0xbf00bf00u;
  uint32_t v[kChains];
#pragma unroll
  for (int c = 0; c < kChains; ++c) v[c] = seed + threadIdx.x + c;
  for (int it = 0; it < kIters; ++it)
#pragma unroll
    for (int c = 0; c < kChains; ++c) v[c] = Exp2<FORM>(v[c]);
  uint32_t acc = 0;
#pragma unroll
  for (int c = 0; c < kChains; ++c) acc ^= v[c];
  out[blockIdx.x * blockDim.x + threadIdx.x] = acc;  // keeps the chains alive
}

template <Form FORM>
float BestMs(int blocks, int threads, uint32_t* out, cudaEvent_t start, cudaEvent_t stop) {
  float best = 1e30f;
  for (int r = 0; r < 6; ++r) {  // the first is the warm-up
    PREFIXD_CUDA_CHECK(cudaEventRecord(start));
    Exp2Chains<FORM><<<blocks, threads>>>(out);
    PREFIXD_CUDA_CHECK_LAUNCH();
    PREFIXD_CUDA_CHECK(cudaEventRecord(stop));
    PREFIXD_CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0.f;
    PREFIXD_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    if (r > 0 && ms < best) best = ms;
  }
  return best;
}

int Run(int argc, char** argv) {
  if (argc > 1) {
    const std::string a = argv[1];
    PREFIXD_CHECK_ARG(a == "--help" || a == "-h", "unknown option '" << a << "' (it takes none; --help)");
    std::printf("usage: prefixd_exp2_probe   (no options: times ex2 f32, f16x2 and bf16x2 on every SM)\n");
    return 0;
  }
  int sms = 0, clock_khz = 0;
  PREFIXD_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  PREFIXD_CUDA_CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0));
  const int blocks = sms * 8, threads = 256;
  uint32_t* out = nullptr;
  PREFIXD_CUDA_CHECK(cudaMalloc(&out, size_t(blocks) * threads * sizeof(uint32_t)));
  cudaEvent_t start, stop;
  PREFIXD_CUDA_CHECK(cudaEventCreate(&start));
  PREFIXD_CUDA_CHECK(cudaEventCreate(&stop));
  const float ms[3] = {BestMs<Form::kF32>(blocks, threads, out, start, stop),
                       BestMs<Form::kF16x2>(blocks, threads, out, start, stop),
                       BestMs<Form::kBf16x2>(blocks, threads, out, start, stop)};
  const char* names[3] = {"ex2.approx.ftz.f32", "ex2.approx.f16x2", "ex2.approx.ftz.bf16x2"};
  const double insts = double(blocks) * threads * kIters * kChains;
  const double clocks_per_ms = double(clock_khz);  // per SM
  std::printf("# prefixd_exp2_probe: %d SMs, max clock %.0f MHz; %d x %d threads, %d chains x %d each\n", sms,
              clock_khz / 1e3, blocks, threads, kChains, kIters);
  std::printf("%-24s %9s %16s %18s\n", "form", "ms", "inst/SM/clock", "values/SM/clock");
  for (int f = 0; f < 3; ++f) {
    const double per_sm_clock = insts / (ms[f] * clocks_per_ms) / sms;
    std::printf("%-24s %9.3f %16.2f %18.2f\n", names[f], ms[f], per_sm_clock, per_sm_clock * (f == 0 ? 1 : 2));
  }
  PREFIXD_CUDA_CHECK(cudaEventDestroy(start));
  PREFIXD_CUDA_CHECK(cudaEventDestroy(stop));
  PREFIXD_CUDA_CHECK(cudaFree(out));
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return prefixd::RunToolMain("prefixd_exp2_probe", Run, argc, argv); }
