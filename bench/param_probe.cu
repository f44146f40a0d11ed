// What a kernel's launch parameters cost on the GPU, by their size.
//
//   prefixd_param_probe [--iters 30] [--warmup 5]
//
// Why: session 33 carried each prefix CTA's first work item in an 11 KiB __grid_constant__ block
// and measured the step ~1 µs slower per launch than the items saved (bench/RESULTS.md, session 33);
// a compact block of <= 4 KiB was left untried. This probe times, under the kernel benchmark's
// method (stream held by a spin kernel until all is queued, the 256 MiB L2 flush before each
// iteration, CUDA events, median), a region of one launch and a region of two launches of a
// 132-CTA kernel that does nothing but read one word of its parameter block per CTA (so the block
// must reach every CTA), for blocks of 16 bytes to 31 KiB. The difference to the 16-byte block is
// what the parameters cost a launch on the device; host-side launch cost is not in the region.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench/kernel/bench_cuda.h"
#include "prefixd/common/cuda_check.h"
#include "prefixd/common/error.h"
#include "prefixd/common/tool_main.h"

namespace {

template <int BYTES>
struct ParamBlock {
  uint32_t word[BYTES / 4];
};

constexpr int kCtas = 132;

// One word per CTA, read from the parameter space and written out, so the block must be loaded.
template <int BYTES>
__global__ void ReadParamKernel(const __grid_constant__ ParamBlock<BYTES> block, uint32_t* out) {
  if (threadIdx.x == 0) out[blockIdx.x] = block.word[(blockIdx.x * 7) % (BYTES / 4)];
}

struct Row {
  int bytes;
  double one_us, two_us;
};

template <int BYTES>
Row TimeBlock(cudaStream_t stream, uint32_t* out, const prefixd::bench::TimingOptions& o) {
  static ParamBlock<BYTES> block;  // static: a 31 KiB block does not belong on the host stack
  for (int i = 0; i < BYTES / 4; ++i) block.word[i] = uint32_t(i * 2654435761u);
  auto launch = [&] {
    ReadParamKernel<BYTES><<<kCtas, 128, 0, stream>>>(block, out);
    PREFIXD_CUDA_CHECK_LAUNCH();
  };
  const std::vector<float> one = prefixd::bench::TimeOnStream(stream, launch, o);
  const std::vector<float> two = prefixd::bench::TimeOnStream(stream, [&] { launch(); launch(); }, o);
  // The kernel must have read the block: CTA 0 writes word 0.
  uint32_t first = 1;
  PREFIXD_CUDA_CHECK(cudaMemcpy(&first, out, sizeof(first), cudaMemcpyDeviceToHost));
  PREFIXD_CHECK_INTERNAL(first == block.word[0], "the parameter block did not reach the kernel (" << BYTES << " bytes)");
  auto median_us = [](std::vector<float> v) {
    std::sort(v.begin(), v.end());
    return double(v[v.size() / 2]) * 1e3;
  };
  return {BYTES, median_us(one), median_us(two)};
}

int Run(int argc, char** argv) {
  prefixd::bench::TimingOptions o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> int {
      PREFIXD_CHECK_ARG(i + 1 < argc, a << " needs a value");
      const int v = std::atoi(argv[++i]);
      PREFIXD_CHECK_ARG(v > 0 && v <= 100000, a << " must be in [1, 100000], got '" << argv[i] << "'");
      return v;
    };
    if (a == "--iters") o.iters = value();
    else if (a == "--warmup") o.warmups = value();
    else if (a == "--help" || a == "-h") {
      std::printf("usage: prefixd_param_probe [--iters 30] [--warmup 5]\n");
      return 0;
    } else PREFIXD_CHECK_ARG(false, "unknown option '" << a << "' (--help lists them)");
  }
  cudaStream_t stream;
  PREFIXD_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  uint32_t* out = nullptr;
  PREFIXD_CUDA_CHECK(cudaMalloc(&out, kCtas * sizeof(uint32_t)));
  std::vector<Row> rows;
  rows.push_back(TimeBlock<16>(stream, out, o));
  rows.push_back(TimeBlock<1024>(stream, out, o));
  rows.push_back(TimeBlock<2048>(stream, out, o));
  rows.push_back(TimeBlock<4096>(stream, out, o));
  rows.push_back(TimeBlock<8192>(stream, out, o));
  rows.push_back(TimeBlock<11264>(stream, out, o));
  rows.push_back(TimeBlock<16384>(stream, out, o));
  rows.push_back(TimeBlock<31744>(stream, out, o));
  std::printf("# prefixd_param_probe: a 132-CTA kernel reading one word of a __grid_constant__ block per CTA;\n"
              "#   median of %d, L2 flushed (256 MiB write) before each region, stream held until queued\n",
              o.iters);
  std::printf("%8s %12s %12s %14s %14s\n", "bytes", "1 launch us", "2 launches", "1: - 16 B", "2: - 16 B");
  for (const Row& r : rows)
    std::printf("%8d %12.2f %12.2f %+14.2f %+14.2f\n", r.bytes, r.one_us, r.two_us, r.one_us - rows[0].one_us,
                r.two_us - rows[0].two_us);
  PREFIXD_CUDA_CHECK(cudaFree(out));
  PREFIXD_CUDA_CHECK(cudaStreamDestroy(stream));
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return prefixd::RunToolMain("prefixd_param_probe", Run, argc, argv); }
