// Timing probe of the multi-query prefix attention kernels alone, against cuBLAS's fp16 GEMM rate
// measured in the same run.
//
//   prefixd_prefix_probe [--iters 30] [--warmup 5] [--settle-ms 1000] [--csv FILE] [--quick]
//                        [--kernel mma,wgmma,wgmma-plain,wgmma-s3]   (default: all, one row each)
//                        [--flush memset|read|none]   (L2 state before each timed launch)
//                        [--diag]   (only the fixed-cost diagnostics: three L2 states, short prefixes)
//                        [--timeline]  (after each wgmma row: when its CTAs reach each phase, one
//                                       launch after the row's flush; PrefixAttentionParams::timeline)
//                        [--shape HQO/HKV:B:P[:D[:bf16]]]...  (only these shapes, "default" variant)
//                        [--chunks N]  (KV chunks per row tile instead of the probe's own choice)
//                        [--balance CTAS]  (the items balanced over CTAS CTAs where the planner's
//                                       rule applies: prefixd/kernels/prefix_balance.h; with
//                                       --timeline also the exit times of the idle SMs' chains)
//                        [--balance-overhead TILES]  (its item cost, PlanOptions::
//                                       balance_item_overhead_tiles, instead of the default)
//
// Kernels (PrefixAttention's selection, kernels/cuda/sm90a/prefix_attention_sm90a.h): "mma" the
// mma.sync kernel; "wgmma" the sm_90a wgmma + TMA kernel as launched by default; "wgmma-plain" its
// simple schedule (PREFIXD_SM90A_SCHEDULE=plain: no ping-pong, no S/P·V overlap); "wgmma-s3" the
// default with the deeper K/V ring (PREFIXD_SM90A_STAGES=3). The "kernel" column names the kernel
// that actually ran (a wgmma request on a shape or GPU it does not apply to runs mma.sync).
//
// Per shape (H_qo/H_kv, batch B, prefix P, head_dim D, dtype): one group of B requests sharing a
// P-token prefix; work items = KV heads × row tiles × KV chunks, the KV split chosen per kernel as
// a planner would (see RunShape: a full last wave for mma.sync, the shortest busiest CTA for the
// persistent wgmma kernel; variant "planner": what the CUDA backend's planner does today). Each timed launch is
// preceded by a 256 MiB memset that flushes L2; the median of --iters launches is reported with
// TFLOP/s = 4·B·H_qo·P·D / t and its share of the GEMM rate. A few rows of every shape are checked
// against a float64 host computation (the chunks' states merged with ⊕); the exit code is non-zero
// if any check fails. Rows starting with '#' are metadata.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "prefixd/common/cuda_check.h"
#include "kernels/cuda/prefix_attention.cuh"
#include "kernels/cuda/sm90a/prefix_attention_sm90a.h"
#include "prefixd/common/error.h"
#include "prefixd/common/tool_main.h"
#include "prefixd/kernels/plan.h"
#include "prefixd/kernels/prefix_balance.h"
#include "prefixd/kernels/state.h"

namespace prefixd::kernels::cuda {
namespace {

#define PROBE_CUBLAS_CHECK(call)                                                        \
  do {                                                                                  \
    const cublasStatus_t st_ = (call);                                                  \
    if (st_ != CUBLAS_STATUS_SUCCESS)                                                   \
      ::prefixd::ThrowError(ErrorKind::kLibrary, "cuBLAS",                              \
                            std::string("status ") + std::to_string(int(st_)) + " in `" #call "`", \
                            __FILE__, __LINE__);                                        \
  } while (0)

// Uniform values in [-1, 1] from a hash of the index: fresh random data without a host pass.
__global__ void FillRandomKernel(uint16_t* out, int64_t n, uint64_t seed, bool bf16) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    uint64_t x = (uint64_t(i) + 1) * 0x9E3779B97F4A7C15ull ^ seed;
    x ^= x >> 31;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 29;
    const float u = float(x >> 40) * (2.f / 16777216.f) - 1.f;
    if (bf16) {
      const __nv_bfloat16 b = __float2bfloat16_rn(u);
      out[i] = *reinterpret_cast<const uint16_t*>(&b);
    } else {
      const __half h = __float2half_rn(u);
      out[i] = *reinterpret_cast<const uint16_t*>(&h);
    }
  }
}

void FillRandom(void* out, int64_t n, uint64_t seed, DType dtype) {
  FillRandomKernel<<<1024, 256>>>(static_cast<uint16_t*>(out), n, seed, dtype == DType::kBFloat16);
  PREFIXD_CUDA_CHECK_LAUNCH();
}

struct DeviceMemory {
  void* ptr = nullptr;
  explicit DeviceMemory(size_t bytes) { PREFIXD_CUDA_CHECK(cudaMalloc(&ptr, bytes)); }
  ~DeviceMemory() { cudaFree(ptr); }
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;
};

struct Options {
  int iters = 30, warmup = 5;
  int settle_ms = 1000;               // --settle-ms: idle after the GEMM, before the first shape
  std::string csv;
  bool quick = false;
  bool diag = false;                 // --diag: the fixed-cost diagnostics only
  bool timeline = false;             // --timeline: per-phase globaltimer stamps of one wgmma launch
  std::string flush = "memset";      // how L2 is flushed before each timed launch (--flush)
  int chunks = 0;                    // --chunks: KV chunks per row tile (0: the probe chooses)
  int balance = 0;                   // --balance: the items balanced over this many CTAs (prefix_balance.h)
  double balance_overhead = -1;      // --balance-overhead: PlanOptions::balance_item_overhead_tiles (<0: default)
  std::vector<std::string> kernels = {"mma", "wgmma", "wgmma-plain", "wgmma-s3"};
};

bool KnownKernel(const std::string& k) {
  return k == "mma" || k == "wgmma" || k == "wgmma-plain" || k == "wgmma-s3";
}

// Points PrefixAttention's selection at one kernel (environment knobs of the launcher).
void SelectKernel(const std::string& kernel) {
  setenv("PREFIXD_PREFIX_KERNEL", kernel == "mma" ? "mma" : "wgmma", 1);
  if (kernel == "wgmma-s3") setenv("PREFIXD_SM90A_STAGES", "3", 1);
  else unsetenv("PREFIXD_SM90A_STAGES");
  if (kernel == "wgmma-plain") setenv("PREFIXD_SM90A_SCHEDULE", "plain", 1);
  else unsetenv("PREFIXD_SM90A_SCHEDULE");
}

// Reads the flush buffer: evicts everything else from L2 and leaves only clean lines behind (a
// memset flush leaves ~L2-size of dirty lines that the timed kernel then pays to write back).
__global__ void ReadFlushKernel(const int4* buf, int64_t n, int* sink) {
  int4 acc = make_int4(0, 0, 0, 0);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const int4 v = buf[i];
    acc.x ^= v.x, acc.y ^= v.y, acc.z ^= v.z, acc.w ^= v.w;
  }
  if ((acc.x ^ acc.y ^ acc.z ^ acc.w) == 0x7fffffff) *sink = 1;  // keeps the loads; never true in practice
}
__global__ void EmptyKernel() {}

// Median time (ms) of fn, each run after an L2 flush (opt.flush: memset, read or none).
double MedianMs(const Options& opt, cudaStream_t stream, void* flush, size_t flush_bytes,
                const std::function<void()>& fn) {
  cudaEvent_t start, stop;
  PREFIXD_CUDA_CHECK(cudaEventCreate(&start));
  PREFIXD_CUDA_CHECK(cudaEventCreate(&stop));
  std::vector<float> ms;
  for (int i = 0; i < opt.warmup + opt.iters; ++i) {
    if (opt.flush == "memset") {
      PREFIXD_CUDA_CHECK(cudaMemsetAsync(flush, i & 0xff, flush_bytes, stream));
    } else if (opt.flush == "read") {
      // The first 4 bytes double as the sink (never written in practice).
      ReadFlushKernel<<<1056, 512, 0, stream>>>(static_cast<const int4*>(flush) + 1,
                                                int64_t(flush_bytes / 16) - 1, static_cast<int*>(flush));
      PREFIXD_CUDA_CHECK_LAUNCH();
    }
    PREFIXD_CUDA_CHECK(cudaEventRecord(start, stream));
    fn();
    PREFIXD_CUDA_CHECK(cudaEventRecord(stop, stream));
    PREFIXD_CUDA_CHECK(cudaEventSynchronize(stop));
    float t = 0;
    PREFIXD_CUDA_CHECK(cudaEventElapsedTime(&t, start, stop));
    if (i >= opt.warmup) ms.push_back(t);
  }
  PREFIXD_CUDA_CHECK(cudaEventDestroy(start));
  PREFIXD_CUDA_CHECK(cudaEventDestroy(stop));
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

double GemmTflops(const Options& opt, cudaStream_t stream, void* flush, size_t flush_bytes) {
  const int n = 8192;
  DeviceMemory a(size_t(n) * n * 2), b(size_t(n) * n * 2), c(size_t(n) * n * 2);
  FillRandom(a.ptr, int64_t(n) * n, 1, DType::kFloat16);
  FillRandom(b.ptr, int64_t(n) * n, 2, DType::kFloat16);
  cublasHandle_t handle;
  PROBE_CUBLAS_CHECK(cublasCreate(&handle));
  PROBE_CUBLAS_CHECK(cublasSetStream(handle, stream));
  const float alpha = 1.f, beta = 0.f;
  const double ms = MedianMs(opt, stream, flush, flush_bytes, [&] {
    PROBE_CUBLAS_CHECK(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, a.ptr,
                                    CUDA_R_16F, n, b.ptr, CUDA_R_16F, n, &beta, c.ptr, CUDA_R_16F,
                                    n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  });
  PROBE_CUBLAS_CHECK(cublasDestroy(handle));
  return 2.0 * n * n * double(n) / (ms * 1e-3) / 1e12;
}

struct Shape {
  int h_qo, h_kv, batch, prefix, head_dim;
  DType dtype;
  // "default": PrefixAttention, items of PrefixAttentionTileRows rows (what a planner does);
  // "small": items of ≤ 64 rows with max_item_rows set (the small-tile kernel);
  // "n32": experiment, the default tile with 32-token KV tiles (fewer registers, twice the barriers).
  const char* variant;
};

// --shape HQO/HKV:B:P[:D[:fp16|bf16]] (D 128 and fp16 when left out); false when malformed.
bool ParseShape(const std::string& text, Shape* out) {
  int h_qo = 0, h_kv = 0, b = 0, p = 0, d = 128, used = 0;
  char dtype[8] = "fp16";
  const int n = std::sscanf(text.c_str(), "%d/%d:%d:%d%n:%d%n:%7[a-z0-9]%n", &h_qo, &h_kv, &b, &p, &used, &d, &used,
                            dtype, &used);
  const bool bf16 = std::string(dtype) == "bf16";
  if (n < 4 || size_t(used) != text.size() || h_qo <= 0 || h_kv <= 0 || h_qo % h_kv != 0 || b <= 0 || p <= 0 ||
      (d != 64 && d != 128 && d != 256) || (!bf16 && std::string(dtype) != "fp16"))
    return false;
  *out = {h_qo, h_kv, b, p, d, bf16 ? DType::kBFloat16 : DType::kFloat16, "default"};
  return true;
}

// Host value of one dtype element.
double ToDouble(uint16_t bits, DType dtype) { return ToFloat(dtype, bits); }

struct Result {
  double us = 0, tflops = 0, max_rel_err = 0, max_lse_err = 0;
  int items = 0, chunk = 0, tile_rows = 0, ctas_per_sm = 0;
  std::string ran;  // the kernel PrefixAttention ran
  bool ok = false;
};

using N32Config = PrefixTileConfig<__half, 128, 2, 4, 32>;

Result RunShape(const Shape& sh, const Options& opt, cudaStream_t stream, void* flush,
                size_t flush_bytes, int num_sms) {
  Result res;
  const std::string variant = sh.variant;
  const bool n32 = variant == "n32";
  const int d = sh.head_dim, g = sh.h_qo / sh.h_kv;
  res.tile_rows = variant == "small" ? PrefixAttentionSmallTileRows() : PrefixAttentionTileRows(d);
  const int row_hint = variant == "small" ? res.tile_rows : 0;
  res.ctas_per_sm = n32 ? PrefixAttentionConfigCtasPerSm<N32Config>()
                        : PrefixAttentionCtasPerSm(d, sh.dtype, PrefixKernelSettings::FromEnvironment().kernel, row_hint);

  // KV split (chunk boundaries multiples of 64):
  //  - "planner": what PlanCascade does with the CUDA backend's target_items = 2 · SMs: the most
  //    chunks that keep items ≤ target, chunks of ≥ 512 tokens (PlanOptions::min_prefix_chunk);
  //  - several CTAs per SM (mma.sync): at least one full wave, then the fullest last wave;
  //  - one persistent CTA per SM (wgmma): the fewest KV tiles on the busiest CTA, counting one
  //    extra tile per item for its fixed cost (Q load, pipeline fill and drain, epilogue).
  const int rows = sh.batch * g;
  const int row_tiles = (rows + res.tile_rows - 1) / res.tile_rows;
  const int base = sh.h_kv * row_tiles;
  const int wave = num_sms * res.ctas_per_sm;
  auto chunks_for = [&](int c) {
    const int len = ((sh.prefix + c - 1) / c + 63) / 64 * 64;
    return (sh.prefix + len - 1) / len;
  };
  int best_chunks = 1;
  if (variant == "planner") {
    for (int c = 1; c <= sh.prefix / 512; ++c)
      if (base * chunks_for(c) <= 2 * num_sms) best_chunks = chunks_for(c);
  } else if (res.ctas_per_sm > 1 || n32) {
    double best_eff = -1;
    for (int c = std::max(1, (wave + base - 1) / base); c <= std::max(1, 4 * ((wave + base - 1) / base)); ++c) {
      const int items = base * chunks_for(c);
      const double eff = double(items) / (double((items + wave - 1) / wave) * wave);
      if (eff > best_eff + 1e-9) best_eff = eff, best_chunks = chunks_for(c);
    }
  } else {
    int64_t best_cost = INT64_MAX;
    for (int c = 1; c <= std::max(1, 4 * ((wave + base - 1) / base)); ++c) {
      const int chunks = chunks_for(c);
      const int len = ((sh.prefix + chunks - 1) / chunks + 63) / 64 * 64;
      const int64_t rounds = (int64_t(base) * chunks + wave - 1) / wave;
      const int64_t cost = rounds * ((len + 127) / 128 + 1);
      if (cost < best_cost) best_cost = cost, best_chunks = chunks;
    }
  }
  if (opt.chunks > 0) best_chunks = chunks_for(opt.chunks);
  const int chunk_len = ((sh.prefix + best_chunks - 1) / best_chunks + 63) / 64 * 64;
  int num_chunks = (sh.prefix + chunk_len - 1) / chunk_len;
  res.chunk = chunk_len;

  std::vector<PrefixWorkItem> items;
  for (int kv_head = 0; kv_head < sh.h_kv; ++kv_head)
    for (int c = 0; c < num_chunks; ++c)
      for (int r = 0; r < rows; r += res.tile_rows)  // row tiles sharing K/V side by side
        items.push_back({0, kv_head, r, std::min(rows, r + res.tile_rows), c * chunk_len,
                         std::min(sh.prefix, (c + 1) * chunk_len), c});
  // --balance: BalancePrefixGrid on a plan of just these items (the planner's rule, its defaults).
  int balanced_ctas = 0;
  if (opt.balance > 0) {
    CascadePlan plan;
    plan.head_dim = d;
    plan.groups = {PrefixGroup{PrefixRun{0, sh.prefix}, 0, sh.batch}};
    plan.group_num_chunks = {num_chunks};
    plan.prefix_items = items;
    PlanOptions o;
    o.balance_prefix_ctas = opt.balance;
    if (opt.balance_overhead >= 0) o.balance_item_overhead_tiles = opt.balance_overhead;
    if (BalancePrefixGrid(&plan, o)) {
      items = plan.prefix_items;
      num_chunks = plan.group_num_chunks[0];
      balanced_ctas = plan.prefix_balanced_ctas;
    }
    std::printf("# balance over %d CTAs: %s (%zu items, %d chunks per row tile, the last [%d, %d))\n", opt.balance,
                balanced_ctas > 0 ? "balanced" : "not applied", items.size(), num_chunks, items.back().kv_begin,
                items.back().kv_end);
  }
  res.items = int(items.size());
  std::vector<int32_t> indptr(sh.batch + 1);
  for (int r = 0; r <= sh.batch; ++r) indptr[r] = r * num_chunks;
  PrefixGroup group;
  group.prefix = {0, sh.prefix};
  group.first_request = 0;
  group.num_requests = sh.batch;

  const int page_size = 16;
  const int64_t token_stride = int64_t(sh.h_kv) * d;
  const int64_t kv_elems = int64_t(sh.prefix) * token_stride;
  const int64_t q_elems = int64_t(sh.batch) * sh.h_qo * d;
  const int64_t states = int64_t(sh.batch) * num_chunks * sh.h_qo;
  DeviceMemory k(kv_elems * 2), v(kv_elems * 2), q(q_elems * 2);
  DeviceMemory items_d(items.size() * sizeof(PrefixWorkItem)), group_d(sizeof(PrefixGroup)),
      indptr_d(indptr.size() * 4), out_v(states * d * 4), out_s(states * 4);
  FillRandom(k.ptr, kv_elems, 11, sh.dtype);
  FillRandom(v.ptr, kv_elems, 12, sh.dtype);
  FillRandom(q.ptr, q_elems, 13, sh.dtype);
  PREFIXD_CUDA_CHECK(cudaMemcpy(items_d.ptr, items.data(), items.size() * sizeof(PrefixWorkItem),
                                cudaMemcpyHostToDevice));
  PREFIXD_CUDA_CHECK(cudaMemcpy(group_d.ptr, &group, sizeof(group), cudaMemcpyHostToDevice));
  PREFIXD_CUDA_CHECK(cudaMemcpy(indptr_d.ptr, indptr.data(), indptr.size() * 4, cudaMemcpyHostToDevice));
  PREFIXD_CUDA_CHECK(cudaMemset(out_v.ptr, 0xFF, states * d * 4));
  PREFIXD_CUDA_CHECK(cudaMemset(out_s.ptr, 0xFF, states * 4));

  PrefixAttentionParams p;
  p.settings = PrefixKernelSettings::FromEnvironment();  // SelectKernel's variables
  p.k = k.ptr;
  p.v = v.ptr;
  p.token_stride = token_stride;
  p.page_size = page_size;
  p.q = q.ptr;
  p.num_requests = sh.batch;  // as the CUDA backend passes it
  p.num_qo_heads = sh.h_qo;
  p.num_kv_heads = sh.h_kv;
  p.head_dim = d;
  p.dtype = sh.dtype;
  const double sm_scale = 1.0 / std::sqrt(double(d));
  p.sm_scale_log2 = float(sm_scale / std::log(2.0));
  p.items = static_cast<const PrefixWorkItem*>(items_d.ptr);
  p.num_items = res.items;
  p.groups = static_cast<const PrefixGroup*>(group_d.ptr);
  p.state_indptr = static_cast<const int32_t*>(indptr_d.ptr);
  p.partial_v = static_cast<float*>(out_v.ptr);
  p.partial_s = static_cast<float*>(out_s.ptr);
  p.max_item_rows = row_hint;
  p.balanced_ctas = balanced_ctas;

  res.ran = n32 ? "mma" : PrefixKernelPathName(SelectPrefixKernel(p));
  auto launch = [&] {
    if (n32) LaunchPrefixAttentionConfig<N32Config>(p, stream);
    else PrefixAttention(p, stream);
  };
  const double ms = MedianMs(opt, stream, flush, flush_bytes, launch);
  PREFIXD_CUDA_CHECK(cudaStreamSynchronize(stream));
  if (opt.timeline && res.ran == std::string("wgmma")) {
    // One more launch after the same flush, stamped: per phase, the median and the latest CTA, in
    // µs after the earliest CTA's entry (the launch itself, before the first CTA runs, is not seen).
    constexpr int kSlots = 8;  // prefix_attention_sm90a.cuh, TimelineSlot
    const char* names[kSlots] = {"entry",      "ring ready",    "producer start", "Q loaded",
                                 "first K tile", "tiles done", "epilogue done",  "exit"};
    DeviceMemory stamps(size_t(num_sms) * kSlots * 8);
    PREFIXD_CUDA_CHECK(cudaMemset(stamps.ptr, 0, size_t(num_sms) * kSlots * 8));
    p.timeline = static_cast<unsigned long long*>(stamps.ptr);
    const double stamped_ms = MedianMs(opt, stream, flush, flush_bytes, launch);  // every launch stamps; the last stays
    PREFIXD_CUDA_CHECK(cudaStreamSynchronize(stream));
    p.timeline = nullptr;
    std::vector<unsigned long long> t(size_t(num_sms) * kSlots);
    PREFIXD_CUDA_CHECK(cudaMemcpy(t.data(), stamps.ptr, t.size() * 8, cudaMemcpyDeviceToHost));
    unsigned long long t0 = ~0ull;
    int ctas = 0;
    for (int b = 0; b < num_sms; ++b)
      if (t[size_t(b) * kSlots] != 0) t0 = std::min(t0, t[size_t(b) * kSlots]), ++ctas;
    std::printf("# timeline %s P=%d (%d CTAs, %.1f us between events):", sh.variant, sh.prefix, ctas, stamped_ms * 1e3);
    for (int slot = 0; slot < kSlots; ++slot) {
      std::vector<double> us;
      for (int b = 0; b < num_sms; ++b)
        if (t[size_t(b) * kSlots + slot] != 0) us.push_back((t[size_t(b) * kSlots + slot] - t0) * 1e-3);
      if (us.empty()) continue;
      std::sort(us.begin(), us.end());
      const auto at = [&](double q) { return us[std::min(us.size() - 1, size_t(q * us.size()))]; };
      std::printf("\n#   %-14s min %6.2f  p10 %6.2f  median %6.2f  p90 %6.2f  max %6.2f", names[slot], us.front(),
                  at(0.1), at(0.5), at(0.9), us.back());
    }
    std::printf("\n");
    if (balanced_ctas > 0) {  // exits of the CTAs of one item and of each CTA of a longer chain
      double one_item_max = 0;
      std::string chains;
      for (int b = 0; b < balanced_ctas && b < num_sms; ++b) {
        const unsigned long long at = t[size_t(b) * kSlots + kSlots - 1];
        if (at == 0) continue;
        const double us = (at - t0) * 1e-3;
        if (items[size_t(b)].cta_next < 0) one_item_max = std::max(one_item_max, us);
        else chains += " " + std::to_string(us).substr(0, 6);
      }
      std::printf("# exits: one-item CTAs latest %.2f us; chain CTAs%s\n", one_item_max, chains.c_str());
    }
  }
  res.us = ms * 1e3;
  res.tflops = 4.0 * sh.batch * sh.h_qo * double(sh.prefix) * d / (ms * 1e-3) / 1e12;

  // Check a few (request, head) rows: merge their chunk states and compare with float64.
  std::mt19937_64 rng(uint64_t(sh.batch) * 131 + sh.prefix + d);
  const int checks = 3;
  res.ok = true;
  for (int ci = 0; ci < checks; ++ci) {
    const int request = int(rng() % sh.batch), head = int(rng() % sh.h_qo), kv_head = head / g;
    std::vector<uint16_t> qh(d), kh(size_t(sh.prefix) * d), vh(size_t(sh.prefix) * d);
    PREFIXD_CUDA_CHECK(cudaMemcpy(qh.data(), static_cast<uint16_t*>(q.ptr) + (int64_t(request) * sh.h_qo + head) * d,
                                  d * 2, cudaMemcpyDeviceToHost));
    PREFIXD_CUDA_CHECK(cudaMemcpy2D(kh.data(), d * 2, static_cast<uint16_t*>(k.ptr) + int64_t(kv_head) * d,
                                    token_stride * 2, d * 2, sh.prefix, cudaMemcpyDeviceToHost));
    PREFIXD_CUDA_CHECK(cudaMemcpy2D(vh.data(), d * 2, static_cast<uint16_t*>(v.ptr) + int64_t(kv_head) * d,
                                    token_stride * 2, d * 2, sh.prefix, cudaMemcpyDeviceToHost));
    std::vector<double> scores(sh.prefix), want(d, 0.0);
    double m = -INFINITY;
    for (int t = 0; t < sh.prefix; ++t) {
      double dot = 0;
      for (int i = 0; i < d; ++i) dot += ToDouble(qh[i], sh.dtype) * ToDouble(kh[size_t(t) * d + i], sh.dtype);
      scores[t] = dot * sm_scale;
      m = std::max(m, scores[t]);
    }
    double sum = 0;
    for (int t = 0; t < sh.prefix; ++t) {
      const double w = std::exp(scores[t] - m);
      sum += w;
      for (int i = 0; i < d; ++i) want[i] += w * ToDouble(vh[size_t(t) * d + i], sh.dtype);
    }
    for (double& x : want) x /= sum;
    const double want_s = (m + std::log(sum)) / std::log(2.0);

    std::vector<float> pv(size_t(num_chunks) * d), ps(num_chunks);
    for (int c = 0; c < num_chunks; ++c) {
      const int64_t state = int64_t(indptr[request] + c) * sh.h_qo + head;
      PREFIXD_CUDA_CHECK(cudaMemcpy(&pv[size_t(c) * d], static_cast<float*>(out_v.ptr) + state * d,
                                    d * 4, cudaMemcpyDeviceToHost));
      PREFIXD_CUDA_CHECK(cudaMemcpy(&ps[c], static_cast<float*>(out_s.ptr) + state, 4,
                                    cudaMemcpyDeviceToHost));
    }
    std::vector<double> vd(pv.begin(), pv.end()), sd(ps.begin(), ps.end()), got(d);
    double got_s = 0;
    MergeStates<double>(vd.data(), d, sd.data(), 1, num_chunks, d, got.data(), &got_s);
    double num = 0, den = 0;
    for (int i = 0; i < d; ++i) num += (got[i] - want[i]) * (got[i] - want[i]), den += want[i] * want[i];
    const double rel = std::isfinite(num) ? std::sqrt(num / den) : INFINITY;
    const double lse_err = std::isfinite(got_s) ? std::abs(got_s - want_s) : INFINITY;
    res.max_rel_err = std::max(res.max_rel_err, rel);
    res.max_lse_err = std::max(res.max_lse_err, lse_err);
  }
  const double tol = sh.dtype == DType::kFloat16 ? 2e-3 : 1e-2;
  res.ok = res.max_rel_err <= tol && res.max_lse_err <= 1e-3 * std::max(1.0, std::log2(double(sh.prefix)));
  return res;
}

int Main(int argc, char** argv) {
  Options opt;
  std::vector<Shape> shapes_given;  // --shape
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    // A numeric flag's value: the whole text a number within [lo, hi], or a message and exit 2.
    auto number = [&](const char* what, double lo, double hi, bool integer, double* out) {
      char* end = nullptr;
      const char* text = argv[++i];
      const double v = integer ? double(std::strtol(text, &end, 10)) : std::strtod(text, &end);
      if (end == text || *end != '\0' || !(v >= lo && v <= hi)) {
        std::fprintf(stderr, "bad %s '%s' (%s in [%g, %g])\n", a.c_str(), text, what, lo, hi);
        return false;
      }
      *out = v;
      return true;
    };
    double v = 0;
    if (a == "--iters" && i + 1 < argc) {
      if (!number("a count", 1, 1e6, true, &v)) return 2;
      opt.iters = int(v);
    } else if (a == "--warmup" && i + 1 < argc) {
      if (!number("a count", 0, 1e6, true, &v)) return 2;
      opt.warmup = int(v);
    } else if (a == "--settle-ms" && i + 1 < argc) {
      if (!number("milliseconds", 0, 60000, true, &v)) return 2;
      opt.settle_ms = int(v);
    } else if (a == "--csv" && i + 1 < argc) opt.csv = argv[++i];
    else if (a == "--quick") opt.quick = true;
    else if (a == "--diag") opt.diag = true;
    else if (a == "--timeline") opt.timeline = true;
    else if (a == "--shape" && i + 1 < argc) {
      Shape sh;
      if (!ParseShape(argv[++i], &sh)) {
        std::fprintf(stderr, "bad --shape '%s' (HQO/HKV:B:P[:D[:fp16|bf16]], e.g. 32/8:16:32768:128:bf16)\n", argv[i]);
        return 2;
      }
      shapes_given.push_back(sh);
    } else if (a == "--balance" && i + 1 < argc) {
      if (!number("a CTA count, 0 for none", 0, 1 << 16, true, &v)) return 2;
      opt.balance = int(v);
    } else if (a == "--balance-overhead" && i + 1 < argc) {
      if (!number("KV tiles", 0, 1000, false, &v)) return 2;
      opt.balance_overhead = v;
    } else if (a == "--chunks" && i + 1 < argc) {
      if (!number("a positive count", 1, 1 << 20, true, &v)) return 2;
      opt.chunks = int(v);
    }
    else if (a == "--flush" && i + 1 < argc && (std::string(argv[i + 1]) == "memset" ||
                                                 std::string(argv[i + 1]) == "read" ||
                                                 std::string(argv[i + 1]) == "none"))
      opt.flush = argv[++i];
    else if (a == "--kernel" && i + 1 < argc) {
      opt.kernels.clear();
      std::string list = argv[++i];
      for (size_t pos = 0; pos <= list.size();) {
        const size_t comma = std::min(list.find(',', pos), list.size());
        const std::string k = list.substr(pos, comma - pos);
        if (!KnownKernel(k)) {
          std::fprintf(stderr, "unknown kernel '%s' (mma, wgmma, wgmma-plain, wgmma-s3)\n", k.c_str());
          return 2;
        }
        opt.kernels.push_back(k);
        pos = comma + 1;
      }
    } else {
      std::fprintf(stderr,
                   "usage: %s [--iters N] [--warmup N] [--settle-ms N] [--csv FILE] [--quick] [--kernel LIST] "
                   "[--flush memset|read|none] [--diag] [--timeline] [--shape HQO/HKV:B:P[:D[:bf16]]]... "
                   "[--chunks N] [--balance CTAS] [--balance-overhead TILES]\n",
                   argv[0]);
      return 2;
    }
  }
  // Each kernel of --kernel sets these itself (SelectKernel), so values from the environment would
  // be silently replaced: say so instead (session 42 timed a "deep ring" that was the default one).
  for (const char* knob : {"PREFIXD_SM90A_STAGES", "PREFIXD_SM90A_SCHEDULE"})
    if (std::getenv(knob) != nullptr)
      std::fprintf(stderr, "prefixd_prefix_probe: %s=%s from the environment is ignored: the kernel list "
                   "decides it (--kernel wgmma-s3: the deeper ring, wgmma-plain: the plain schedule)\n",
                   knob, std::getenv(knob));
  cudaDeviceProp prop;
  PREFIXD_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  int clock_khz = 0;
  PREFIXD_CUDA_CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0));
  std::printf("# device: %s, %d SMs, L2 %d MiB, max clock %.0f MHz\n", prop.name,
              prop.multiProcessorCount, prop.l2CacheSize >> 20, clock_khz / 1e3);
  std::printf("# timing: median of %d launches after %d warm-up, each after a 256 MiB L2 flush (%s)\n",
              opt.iters, opt.warmup, opt.diag ? "per variant" : opt.flush.c_str());
  cudaStream_t stream;
  PREFIXD_CUDA_CHECK(cudaStreamCreate(&stream));
  const size_t flush_bytes = size_t(256) << 20;
  DeviceMemory flush(flush_bytes);

  const double gemm = GemmTflops(opt, stream, flush.ptr, flush_bytes);
  std::printf("# cuBLAS fp16 GEMM 8192^3 (fp32 compute): %.1f TFLOP/s; then %d ms idle (--settle-ms)\n", gemm,
              opt.settle_ms);
  // The GEMM's sustained full-power load leaves the SM clock lowered for a while: without a pause
  // the first shape read 214-266 µs where the later ones read 214 (H200, bench/RESULTS.md session 43).
  std::this_thread::sleep_for(std::chrono::milliseconds(opt.settle_ms));

  std::vector<Shape> shapes;
  const DType f16 = DType::kFloat16, b16 = DType::kBFloat16;
  for (int h_kv : {32, 8})
    for (int b : {64, 256})
      for (int p : {8192, 32768}) shapes.push_back({32, h_kv, b, p, 128, f16, "default"});
  for (int d : {64, 256})
    for (int h_kv : {32, 8}) shapes.push_back({32, h_kv, 256, 32768, d, f16, "default"});
  for (int h_kv : {32, 8}) shapes.push_back({32, h_kv, 256, 32768, 128, b16, "default"});
  for (int p : {8192, 32768}) shapes.push_back({32, 32, 64, p, 128, f16, "small"});
  shapes.push_back({32, 32, 256, 32768, 128, f16, "small"});
  for (int h_kv : {32, 8}) shapes.push_back({32, h_kv, 256, 32768, 128, f16, "n32"});
  // The foundation issue's GQA shape with the items today's CUDA backend plans (2 · SMs target),
  // and shorter prefixes: time against KV tiles per item shows the fixed cost per launch/item.
  for (int p : {8192, 32768}) shapes.push_back({32, 8, 64, p, 128, f16, "planner"});
  for (int p : {1024, 2048, 4096}) shapes.push_back({32, 8, 64, p, 128, f16, "default"});
  shapes.push_back({32, 8, 64, 8192, 128, b16, "default"});
  for (int p : {8192, 32768}) shapes.push_back({32, 8, 64, p, 64, f16, "default"});
  if (opt.quick) shapes.resize(2);
  if (!shapes_given.empty()) shapes = shapes_given;
  if (opt.diag) {
    // Fixed-cost diagnostics: the GQA shape at three prefix lengths under three L2 states before
    // each launch (the variant column names it): after a 256 MiB memset (the default; leaves
    // L2-size of dirty lines), after a 256 MiB read (clean L2, K/V not cached), and with no flush
    // (K/V of the previous launch still in L2 where they fit). Plus an empty kernel per state.
    shapes.clear();
    opt.kernels = {"mma", "wgmma"};
    for (const char* mode : {"memset", "read", "none"}) {
      Options o = opt;
      o.flush = mode;
      const double us = 1e3 * MedianMs(o, stream, flush.ptr, flush_bytes, [&] {
        EmptyKernel<<<132, 384, 0, stream>>>();
        PREFIXD_CUDA_CHECK_LAUNCH();
      });
      std::printf("# flush %-6s: empty kernel (132 x 384 threads) %.1f us\n", mode, us);
      for (int p : {1024, 8192, 32768}) shapes.push_back({32, 8, 64, p, 128, f16, mode});
    }
  }

  FILE* csv = opt.csv.empty() ? nullptr : std::fopen(opt.csv.c_str(), "w");
  if (csv)
    std::fprintf(csv, "kernel,ran,variant,dtype,head_dim,h_qo,h_kv,batch,prefix,tile_rows,ctas_per_sm,items,"
                      "chunk,us,tflops,pct_gemm,max_rel_err,max_lse_err,ok\n");
  std::printf("%-11s %-8s %-5s %4s %7s %5s %6s %5s %4s %6s %6s %10s %8s %7s %9s %5s\n", "kernel", "variant",
              "dtype", "D", "Hqo/Hkv", "B", "P", "rows", "c/SM", "items", "chunk", "us", "TFLOP/s", "%GEMM",
              "rel_err", "check");
  int failures = 0;
  for (const Shape& sh : shapes) {
    for (const std::string& kernel : opt.kernels) {
      if (std::string(sh.variant) == "n32" && kernel != "mma") continue;  // an mma.sync experiment
      SelectKernel(kernel);
      Result r;
      Options shape_opt = opt;
      if (opt.diag) shape_opt.flush = sh.variant;
      try {
        r = RunShape(sh, shape_opt, stream, flush.ptr, flush_bytes, prop.multiProcessorCount);
      } catch (const Error& e) {  // one kernel failing (not a CUDA fault) must not hide the others
        std::printf("# %s on %s D=%d B=%d P=%d: %s\n", kernel.c_str(), sh.variant, sh.head_dim, sh.batch,
                    sh.prefix, e.what());
        r.ran = kernel;
        r.ok = false;
      }
      failures += r.ok ? 0 : 1;
      // The variant asked for when a wgmma kernel ran; "mma" when the launcher fell back.
      const std::string ran = r.ran == "wgmma" ? kernel : r.ran;
      const std::string heads = std::to_string(sh.h_qo) + "/" + std::to_string(sh.h_kv);
      std::printf("%-11s %-8s %-5s %4d %7s %5d %6d %5d %4d %6d %6d %10.1f %8.1f %6.1f%% %9.2e %5s\n",
                  ran.c_str(), sh.variant, DTypeName(sh.dtype), sh.head_dim, heads.c_str(), sh.batch, sh.prefix,
                  r.tile_rows, r.ctas_per_sm, r.items, r.chunk, r.us, r.tflops, 100.0 * r.tflops / gemm,
                  r.max_rel_err, r.ok ? "OK" : "FAIL");
      std::fflush(stdout);
      if (csv)
        std::fprintf(csv, "%s,%s,%s,%s,%d,%d,%d,%d,%d,%d,%d,%d,%d,%.2f,%.2f,%.2f,%.3e,%.3e,%d\n", kernel.c_str(),
                     ran.c_str(), sh.variant, DTypeName(sh.dtype), sh.head_dim, sh.h_qo, sh.h_kv, sh.batch,
                     sh.prefix, r.tile_rows, r.ctas_per_sm, r.items, r.chunk, r.us, r.tflops,
                     100.0 * r.tflops / gemm, r.max_rel_err, r.max_lse_err, r.ok ? 1 : 0);
    }
  }
  if (csv) std::fclose(csv);
  PREFIXD_CUDA_CHECK(cudaStreamDestroy(stream));
  std::printf("# checks failed: %d %s\n", failures, failures == 0 ? "OK" : "FAIL");
  return failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace prefixd::kernels::cuda

int main(int argc, char** argv) {
  return prefixd::RunToolMain("prefixd_prefix_probe", prefixd::kernels::cuda::Main, argc, argv, 1);
}
