// What the kernel benchmark's two halves share (kernel_bench.cc: one cascade step per shape
// against the device's ceilings; planner_check.cc: the planner check, the calibration and the
// offline fit): the shapes, a row of results, the command line's settings, the batches they time,
// the sampled check against the CPU backend and, with CUDA, the timing method and a step's device
// buffers.
#pragma once

#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "prefixd/kernels/backend.h"
#include "prefixd/kernels/plan.h"

#ifdef PREFIXD_HAVE_CUDA
#include "bench/kernel/bench_cuda.h"
#include "kernels/cuda/cuda_backend.h"
#endif

namespace prefixd::bench {

using kernels::Backend;
using kernels::CascadePlan;
using kernels::DecodeBatch;
using kernels::DType;
using kernels::KvPoolShape;

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct Shape {
  DType dtype = DType::kFloat16;
  int page_size = 16, h_qo = 32, h_kv = 32, head_dim = 128, batch = 64, prefix = 8192, suffix = 256;
};

struct Row {
  Shape shape;
  int prefix_items = 0, decode_items = 0, slots = 0, merged_requests = 0;
  double prefix_us = kNaN, suffix_us = kNaN, merge_us = kNaN, total_us = kNaN, graph_us = kNaN, base_us = kNaN;
  double prefix_floor_us = kNaN, suffix_floor_us = kNaN;
  // --read-floor: the faster of two plain reads (no arithmetic, one launch; bench_cuda.h) of the
  // step's K/V bytes, each read once, timed in the same process and method as the step. What a
  // memory-bound step cannot beat by much: it holds the method's own costs (the empty region, the
  // flush's write-back) and nothing of the kernels'.
  double read_us = kNaN;
  // The same bytes as two launches back to back, the prefix's then the suffix's (ld.global.nc): what
  // splitting a step into two kernels costs under the method before any arithmetic or dependency.
  double read_split_us = kNaN;
  // ... and as two launches overlapped the way the cascade's are (EnqueuePlainReadPdlPair: the
  // second a programmatic dependent that reads, then waits for the first): a two-kernel step's least.
  double read_pdl_us = kNaN;
  // ... and each part's bytes alone (ld.global.nc, one launch): the yardsticks of the prefix part
  // (prefix_us) and of the suffix part (suffix_us), each timed alone like them.
  double read_prefix_us = kNaN, read_suffix_us = kNaN;
  double tflops = kNaN, gbs = kNaN, suffix_gbs = kNaN, suffix_pct_copy = kNaN, ratio = kNaN, base_ratio = kNaN,
         speedup = kNaN;
  int checked_requests = 0;
  double check_v_err = 0, check_s_err = 0;  // worst over every checked output of the shape
  int wrong = 0;                            // outputs (cascade, graph, baseline) that failed the check
  std::string note;
  std::string variant;  // --variants: the variant's name ("" without --variants)
  bool fused = false;   // the step ran as the one-launch fused kernel (PREFIXD_FUSED=1)
};

// A variant of the CUDA backend for --variants: environment settings applied (on top of the
// process's own environment) before a fresh backend is made for each (shape, variant).
struct Variant {
  std::string name;
  std::vector<std::pair<std::string, std::string>> env;
};

struct Config {
  std::vector<Shape> shapes;
  int warmups = 5, iters = 30, check = 2;
  bool flush = true, baseline = true, graph = true, fuse = true;
  bool read_floor = false;  // --read-floor
  bool output_forms = false;  // --output-forms
  bool without_merge = false;  // --without-merge
  bool measured_choice = false;  // --measured-choice: the step's plan as the worker makes it on CUDA
  bool plain_first = false;  // --planner-order plain-first: the planner check's order before session 83
#ifdef PREFIXD_HAVE_CUDA
  FlushMode flush_mode = FlushMode::kWrite;
#endif
  int64_t copy_bytes = int64_t(4) << 30;
  int gemm_n = 8192;
  int gemm_reps = 10;
  int settle_ms = 1000;  // idle after the ceilings (--settle-ms)
  std::vector<Variant> variants;  // empty: the backend as the environment sets it, once
  std::vector<std::string> beside;  // --beside: loads timed beside a concurrent plan's prefix part
};

// printf of one number, "-" for NaN.
std::string Fmt(const char* fmt, double x);
// The median of timed iterations (the upper one of an even count).
double Median(std::vector<float> v);
// Relative error bounds of fp32-accumulated attention outputs per input dtype (as the GPU tests).
double Tolerance(DType dtype);
inline constexpr double kLseTol = 5e-4;

// One group: requests 0..B-1 share the prefix (pages [0, ceil(P/page))); each request's suffix
// pages are scattered over the rest of the pool (shuffled), the last page partly filled when
// S % page_size != 0.
// *pool: one layer of exactly the pages the batch uses (plus one), validated.
DecodeBatch MakeBatch(const Shape& s, std::mt19937_64& rng, KvPoolShape* pool);

// Requests whose outputs are checked: the first, the last, and random ones between (all when small).
std::vector<int> SampleRequests(int batch, int count, std::mt19937_64& rng);

struct HostStates {
  std::vector<float> v, s;  // [rows][D], [rows]
};

// The CPU backend's answer for the sampled requests (a sub-batch with the same prefix and pages).
HostStates CpuReference(const KvPoolShape& pool, const std::vector<uint16_t>& k, const std::vector<uint16_t>& v,
                        const DecodeBatch& batch, const std::vector<int>& sample, const std::vector<uint16_t>& q);

// Compares the sampled rows of a full-batch result with the reference; records the worst errors.
bool CheckRows(const HostStates& got_all, const HostStates& want, const std::vector<int>& sample, int h, int d,
               DType dtype, Row* row);

#ifdef PREFIXD_HAVE_CUDA
// The benchmark's timing method from the command line.
TimingOptions TimingFor(const Config& cfg);

// Device buffers of one timed cascade step: the pool's K and V, the queries (random, fixed by
// `seed`) and every output; freed, after a sync, when it goes out of scope.
class DeviceStep {
 public:
  DeviceStep(kernels::cuda::CudaBackend& gpu, const KvPoolShape& pool, int rows, int head_dim, DType dtype,
             uint64_t seed)
      : gpu_(gpu) {
    const int64_t kv_elems = pool.ElementsPerArray(), n = int64_t(rows) * head_dim;
    args.kv = kernels::KvPoolView{pool, Alloc(kv_elems * 2), Alloc(kv_elems * 2)};
    args.q = Alloc(n * 2);
    args.o = Alloc(n * 2);
    args.v_out = static_cast<float*>(Alloc(n * 4));
    args.s_out = static_cast<float*>(Alloc(int64_t(rows) * 4));
    FillRandom(args.kv.k, kv_elems, dtype, 1.f, seed + 1, gpu.stream());
    FillRandom(args.kv.v, kv_elems, dtype, 1.f, seed + 2, gpu.stream());
    FillRandom(const_cast<void*>(args.q), n, dtype, 1.f, seed + 3, gpu.stream());
  }
  ~DeviceStep() {
    gpu_.Synchronize();
    for (void* p : owned_) gpu_.Free(p);
  }
  DeviceStep(const DeviceStep&) = delete;
  DeviceStep& operator=(const DeviceStep&) = delete;

  kernels::CascadeArgs args;

 private:
  void* Alloc(int64_t bytes) {
    owned_.push_back(gpu_.Alloc(size_t(bytes)));
    return owned_.back();
  }
  kernels::cuda::CudaBackend& gpu_;
  std::vector<void*> owned_;
};
#endif

}  // namespace prefixd::bench
