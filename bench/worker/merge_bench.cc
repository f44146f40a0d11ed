// The distributed step's final merge alone: worker::MergeExchangedStates on the GPU, the n-ary ⊕
// of each own row's n partial states (one from this rank, n − 1 received), at the shapes the
// scaling benchmark's configurations give it (32/8 heads → 32 query heads, head_dim 128; B = 128
// requests over N GPUs → 128 / N own rows, n = N).
//
//   prefixd_merge_bench [--gpus 2,4,8] [--batch 128] [--heads 32] [--head-dim 128] [--iters 200]
//                       [--warmup 20]
//
// Per row: the kernel's time with the L2 flushed before each iteration (256 MiB write) and with
// the states left in L2 from the previous iteration (in the step they have just been written
// there by the exchange), CUDA events, median; the bytes it reads and writes; and its check
// against the CPU backend on the same inputs (a mismatch exits 1).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <random>
#include <string>
#include <vector>

#include <cxxopts.hpp>

#include "bench/kernel/bench_cuda.h"
#include "prefixd/common/error.h"
#include "prefixd/common/tool_main.h"
#include "prefixd/kernels/backend.h"
#include "prefixd/worker/worker_ops.h"

namespace {

using prefixd::kernels::Backend;

struct Shape {
  int n, rows, heads, head_dim;
};

double MedianUs(std::vector<float> ms) {
  std::sort(ms.begin(), ms.end());
  return double(ms[ms.size() / 2]) * 1e3;
}

// One shape: inputs as the step lays them out (own row j's contribution 0 is local row j, the
// others the received rows k·rows + j), timed flushed and warm, checked against the CPU backend.
bool RunShape(Backend& gpu, Backend& cpu, const Shape& sh, const prefixd::bench::TimingOptions& timing) {
  const int64_t vw = int64_t(sh.heads) * sh.head_dim, row = vw + sh.heads;
  const int recv_rows = (sh.n - 1) * sh.rows;
  std::mt19937_64 rng(0x5eed + sh.n);
  std::uniform_real_distribution<float> unit(-1.f, 1.f), lse(-10.f, 10.f);
  std::vector<float> packed(size_t(std::max(1, recv_rows)) * row), v_local(size_t(sh.rows) * vw),
      s_local(size_t(sh.rows) * sh.heads);
  for (int r = 0; r < recv_rows; ++r) {
    for (int64_t e = 0; e < vw; ++e) packed[r * row + e] = unit(rng);
    for (int h = 0; h < sh.heads; ++h) packed[r * row + vw + h] = lse(rng);
  }
  for (float& x : v_local) x = unit(rng);
  for (float& x : s_local) x = lse(rng);
  std::vector<int32_t> idx(size_t(sh.n) * sh.rows);
  for (int k = 0; k < sh.n; ++k)
    for (int j = 0; j < sh.rows; ++j) idx[size_t(k) * sh.rows + j] = k == 0 ? -2 - j : (k - 1) * sh.rows + j;

  auto upload = [&](const auto& host) {
    void* p = gpu.Alloc(host.size() * sizeof(host[0]));
    gpu.CopyToDevice(p, host.data(), host.size() * sizeof(host[0]));
    return p;
  };
  auto* d_packed = static_cast<float*>(upload(packed));
  auto* d_v_local = static_cast<float*>(upload(v_local));
  auto* d_s_local = static_cast<float*>(upload(s_local));
  auto* d_idx = static_cast<int32_t*>(upload(idx));
  const std::vector<float> nan_v(size_t(sh.rows) * vw, std::nanf("")), nan_s(size_t(sh.rows) * sh.heads, std::nanf(""));
  auto* d_v_out = static_cast<float*>(upload(nan_v));
  auto* d_s_out = static_cast<float*>(upload(nan_s));
  auto merge = [&] {
    prefixd::worker::MergeExchangedStates(gpu, d_packed, d_v_local, d_s_local, d_idx, sh.n, sh.rows, sh.heads,
                                          sh.head_dim, d_v_out, d_s_out);
  };
  prefixd::bench::TimingOptions flushed = timing, warm = timing;
  flushed.flush_l2 = true;
  warm.flush_l2 = false;
  const double flushed_us = MedianUs(prefixd::bench::TimeOnStream(gpu.stream(), merge, flushed));
  const double warm_us = MedianUs(prefixd::bench::TimeOnStream(gpu.stream(), merge, warm));
  const double empty_us = prefixd::bench::EmptyRegionUs(gpu.stream(), flushed);

  // Check: the same merge on the CPU backend.
  std::vector<float> v_gpu(nan_v.size()), s_gpu(nan_s.size()), v_cpu(nan_v.size()), s_cpu(nan_s.size());
  gpu.Synchronize();
  gpu.CopyToHost(v_gpu.data(), d_v_out, v_gpu.size() * 4);
  gpu.CopyToHost(s_gpu.data(), d_s_out, s_gpu.size() * 4);
  prefixd::worker::MergeExchangedStates(cpu, packed.data(), v_local.data(), s_local.data(), idx.data(), sh.n, sh.rows,
                                        sh.heads, sh.head_dim, v_cpu.data(), s_cpu.data());
  double worst = 0;
  bool nan = false;
  for (size_t i = 0; i < v_gpu.size(); ++i) {
    nan = nan || std::isnan(v_gpu[i]);
    worst = std::max(worst, double(std::abs(v_gpu[i] - v_cpu[i])) / (1.0 + std::abs(v_cpu[i])));
  }
  for (size_t i = 0; i < s_gpu.size(); ++i) {
    nan = nan || std::isnan(s_gpu[i]);
    worst = std::max(worst, double(std::abs(s_gpu[i] - s_cpu[i])) / (1.0 + std::abs(s_cpu[i])));
  }
  const bool ok = !nan && worst < 1e-5;
  // Bytes: n states (v and s) per own row read, one written.
  const double bytes = double(sh.n + 1) * sh.rows * row * 4 + double(sh.n) * sh.rows * 4;
  std::printf("%4d %5d %5d %4d %12.2f %10.2f %10.2f %10.1f %9.3f %10.2e %s\n", sh.n, sh.rows, sh.heads, sh.head_dim,
              flushed_us, warm_us, empty_us, bytes / 1e6, bytes / (warm_us * 1e-6) / 1e9, worst,
              ok ? "ok" : "WRONG");
  for (void* p : {static_cast<void*>(d_packed), static_cast<void*>(d_v_local), static_cast<void*>(d_s_local),
                  static_cast<void*>(d_idx), static_cast<void*>(d_v_out), static_cast<void*>(d_s_out)})
    gpu.Free(p);
  return ok;
}

int Run(int argc, char** argv) {
  cxxopts::Options options("prefixd_merge_bench",
                           "Times the distributed step's final merge (worker::MergeExchangedStates) on the GPU");
  options.add_options()
      ("gpus", "GPU counts N of the step: own rows = batch / N, contributions n = N",
       cxxopts::value<std::vector<int>>()->default_value("2,4,8"))
      ("batch", "requests of the step", cxxopts::value<int>()->default_value("128"))
      ("heads", "query heads", cxxopts::value<int>()->default_value("32"))
      ("head-dim", "head dimension", cxxopts::value<int>()->default_value("128"))
      ("iters", "timed iterations (median reported)", cxxopts::value<int>()->default_value("200"))
      ("warmup", "untimed iterations first", cxxopts::value<int>()->default_value("20"))
      ("h,help", "print this help");
  const auto args = options.parse(argc, argv);
  if (args.count("help")) {
    std::printf("%s\n", options.help().c_str());
    return 0;
  }
  const int batch = args["batch"].as<int>(), heads = args["heads"].as<int>(), head_dim = args["head-dim"].as<int>();
  PREFIXD_CHECK_ARG(batch > 0 && heads > 0, "--batch and --heads must be positive");
  PREFIXD_CHECK_ARG(head_dim == 64 || head_dim == 128 || head_dim == 256, "--head-dim must be 64, 128 or 256");
  prefixd::bench::TimingOptions timing;
  timing.iters = args["iters"].as<int>();
  timing.warmups = args["warmup"].as<int>();
  PREFIXD_CHECK_ARG(timing.iters > 0 && timing.warmups >= 1, "--iters and --warmup must be ≥ 1 (the first run is untimed)");
  std::vector<Shape> shapes;
  for (int g : args["gpus"].as<std::vector<int>>()) {
    PREFIXD_CHECK_ARG(g >= 2 && batch % g == 0, "--gpus: each count must be >= 2 and divide --batch, got " << g);
    shapes.push_back({g, batch / g, heads, head_dim});
  }
  if (!prefixd::kernels::CudaAvailable())
    PREFIXD_THROW(prefixd::ErrorKind::kUnsupported, "prefixd_merge_bench needs a GPU (none usable here)");
  auto gpu = prefixd::kernels::MakeCudaBackend();
  auto cpu = prefixd::kernels::MakeCpuBackend();
  std::printf("# prefixd_merge_bench on %s: median of %d after %d warm-ups; flushed = L2 flushed (256 MiB write)\n"
              "#   before each iteration; warm = states left in L2; empty = an empty kernel's region, flushed\n",
              gpu->Describe().c_str(), timing.iters, timing.warmups);
  std::printf("%4s %5s %5s %4s %12s %10s %10s %10s %9s %10s %s\n", "n", "rows", "heads", "D", "flushed us", "warm us",
              "empty us", "MB", "GB/s warm", "rel err", "check");
  bool ok = true;
  for (const Shape& sh : shapes) ok = RunShape(*gpu, *cpu, sh, timing) && ok;
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) { return prefixd::RunToolMain("prefixd_merge_bench", Run, argc, argv); }
