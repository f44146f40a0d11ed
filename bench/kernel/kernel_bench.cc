// prefixd_kernel_bench: times one cascade decode step (one layer) per shape and sets it against the
// device's own ceilings, nccl-tests style: `#` metadata lines, one fixed-width row per shape, a
// footer with the number of wrong results, exit status 1 when any result is wrong.
//
// Per shape (one prefix group of B requests sharing a P-token prefix, each with S suffix tokens):
// time of the prefix part (multi-query kernel), the suffix part (paged decode kernel, which also
// finishes the requests the plan lets it: plan.h's fused merge), the merge (only for the plan's
// merge_requests; 0 when there are none, as with S ≤ 256 here), the whole RunCascade and its
// CUDA-graph replay (timed interleaved), and the non-cascade baseline (every request decodes
// prefix + suffix through its own page table); the floors from the measured copy bandwidth and GEMM
// rate; and a check of the results against the CPU backend on a sample of requests.
//
// Without a GPU it runs the CPU backend on a small shape (so the README's command works anywhere),
// timed with the host clock and labelled as such.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <memory>
#include <numeric>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <cstdlib>
#include <map>
#include <utility>

#include <cxxopts.hpp>

#include "bench/kernel/planner_log.h"
#include "prefixd/common/error.h"
#include "prefixd/common/tool_main.h"
#include "prefixd/kernels/backend.h"
#include "prefixd/kernels/cost_model.h"
#include "prefixd/kernels/measured_choice.h"
#include "prefixd/kernels/plan.h"

#ifdef PREFIXD_HAVE_CUDA
#include "bench/kernel/bench_cuda.h"
#include "bench/kernel/beside_load.h"
#include "kernels/cuda/cuda_backend.h"
#endif

namespace prefixd::bench {
namespace {

using kernels::Backend;
using kernels::CascadePlan;
using kernels::DecodeBatch;
using kernels::DType;
using kernels::KvPoolShape;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

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

struct Ceilings {
  double copy_bw = kNaN;  // bytes (read + written) per second
  double gemm = kNaN;     // FLOP/s
};

// A variant of the CUDA backend for --variants: environment settings applied (on top of the
// process's own environment) before a fresh backend is made for each (shape, variant).
struct Variant {
  std::string name;
  std::vector<std::pair<std::string, std::string>> env;
};

// Named sets of the backend's environment toggles; a variant is a '+'-joined list of these names
// and/or raw NAME=VALUE settings, e.g. "trigger+w1" or "PREFIXD_PREFIX_TARGET_ITEMS=112+trigger".
const std::map<std::string, std::vector<std::pair<std::string, std::string>>>& VariantPresets() {
  static const std::map<std::string, std::vector<std::pair<std::string, std::string>>> presets = {
      {"default", {}},
      {"trigger", {{"PREFIXD_PREFIX_PDL_TRIGGER", "1"}}},          // prefix kernel triggers the decode launch (default)
      {"notrigger", {{"PREFIXD_PREFIX_PDL_TRIGGER", "0"}}},        // decode launches when the prefix grid exits
      {"nopdl", {{"PREFIXD_DECODE_PDL", "0"}}},                    // decode launched normally
      {"w1", {{"PREFIXD_DECODE_WARPS", "1"}}},                     // 1-warp decode CTAs
      {"w2", {{"PREFIXD_DECODE_WARPS", "2"}}},
      {"w4", {{"PREFIXD_DECODE_WARPS", "4"}}},
      {"noevict", {{"PREFIXD_DECODE_EVICT_FIRST", "0"}}},
      {"noprefetch", {{"PREFIXD_DECODE_PREFETCH", "0"}}},
      // One decode CTA per SM looping over the items, as the streaming kernel / item by item.
      {"persistent", {{"PREFIXD_DECODE_PERSISTENT", "1"}, {"PREFIXD_DECODE_STREAM", "1"}}},
      {"persistent-items", {{"PREFIXD_DECODE_PERSISTENT", "1"}, {"PREFIXD_DECODE_STREAM", "0"}}},
      {"tma", {{"PREFIXD_DECODE_PERSISTENT", "1"}, {"PREFIXD_DECODE_STREAM", "1"}, {"PREFIXD_DECODE_TMA", "1"}}},
      {"stages3", {{"PREFIXD_SM90A_STAGES", "3"}}},                // deeper prefix K/V ring
      {"kvfirst", {{"PREFIXD_SM90A_KV_POLICY", "first"}}},         // prefix K/V loads: L2 evict_first hint
      {"kvlast", {{"PREFIXD_SM90A_KV_POLICY", "last"}}},           // prefix K/V loads: L2 evict_last hint
      {"plain", {{"PREFIXD_SM90A_SCHEDULE", "plain"}}},            // prefix without the FA3 overlap
      {"qcp", {{"PREFIXD_SM90A_Q_TMA", "0"}}},                     // prefix Q gathered by cp.async, not TMA
      {"nowarm", {{"PREFIXD_DECODE_WARMUP", "0"}}},                // no decode start pulled into L2 by the prefix kernel
      {"warm0", {{"PREFIXD_DECODE_WARMUP_MIB", "0"}}},             // ... with none of its K/V rows (default: 4 MiB)
      {"warm8", {{"PREFIXD_DECODE_WARMUP_MIB", "8"}}},             // ... with up to 8 MiB of them
      {"mma-prefix", {{"PREFIXD_PREFIX_KERNEL", "mma"}}},
      {"narrow", {{"PREFIXD_SM90A_CONSUMERS", "1"}}},              // the narrow prefix CTA, whatever the items' rows
      {"wide", {{"PREFIXD_SM90A_CONSUMERS", "2"}}},                // the wide prefix CTA, whatever the items' rows
      // Concurrent prefix/decode (cuda_backend.h): prefix grid capped at SMs − k, decode beside it
      // on the other k SMs, unfused merge after the join.
      // The one-launch fused cascade (cuda_backend.h), and its suffix warps' L2 prefetch distance.
      {"fused", {{"PREFIXD_FUSED", "1"}}},
      {"fused-l2a1", {{"PREFIXD_FUSED", "1"}, {"PREFIXD_FUSED_L2_AHEAD", "1"}}},
      {"fused-l2a3", {{"PREFIXD_FUSED", "1"}, {"PREFIXD_FUSED_L2_AHEAD", "3"}}},
      {"fused-mk", {{"PREFIXD_FUSED", "1"}, {"PREFIXD_FUSED_MERGE", "kernel"}}},
      {"conc16", {{"PREFIXD_CONCURRENT_DECODE_SMS", "16"}}},
      {"conc32", {{"PREFIXD_CONCURRENT_DECODE_SMS", "32"}}},
      {"conc48", {{"PREFIXD_CONCURRENT_DECODE_SMS", "48"}}},
      {"conc64", {{"PREFIXD_CONCURRENT_DECODE_SMS", "64"}}},
  };
  return presets;
}

// The presets' names, comma-separated, for --help.
std::string PresetNames() {
  std::string names;
  for (const auto& [name, settings] : VariantPresets()) names += (names.empty() ? "" : ", ") + name;
  return names;
}

Variant ParseVariant(const std::string& text) {
  Variant v;
  v.name = text;
  std::stringstream parts(text);
  for (std::string part; std::getline(parts, part, '+');) {
    const size_t eq = part.find('=');
    if (eq != std::string::npos) {
      PREFIXD_CHECK_ARG(eq > 0, "--variants: bad setting '" << part << "' in '" << text << "'");
      v.env.emplace_back(part.substr(0, eq), part.substr(eq + 1));
      continue;
    }
    const auto it = VariantPresets().find(part);
    if (it == VariantPresets().end())
      PREFIXD_THROW(::prefixd::ErrorKind::kInvalidArgument,
                    "--variants: unknown variant '" << part << "' (presets: " << PresetNames() << "; or NAME=VALUE)");
    v.env.insert(v.env.end(), it->second.begin(), it->second.end());
  }
  return v;
}

// Sets a variant's environment, first restoring every name any variant touches to the value the
// process started with (unset if it had none).
class VariantEnvironment {
 public:
  explicit VariantEnvironment(const std::vector<Variant>& variants) {
    for (const Variant& v : variants)
      for (const auto& [name, value] : v.env)
        if (!original_.count(name)) {
          const char* now = std::getenv(name.c_str());
          original_[name] = now ? std::make_pair(true, std::string(now)) : std::make_pair(false, std::string());
        }
  }
  ~VariantEnvironment() { Restore(); }
  void Apply(const Variant& v) {
    Restore();
    for (const auto& [name, value] : v.env) setenv(name.c_str(), value.c_str(), 1);
  }
  void Restore() {
    for (const auto& [name, was] : original_) {
      if (was.first) setenv(name.c_str(), was.second.c_str(), 1);
      else unsetenv(name.c_str());
    }
  }

 private:
  std::map<std::string, std::pair<bool, std::string>> original_;
};

struct Config {
  std::vector<Shape> shapes;
  int warmups = 5, iters = 30, check = 2;
  bool flush = true, baseline = true, graph = true, fuse = true;
  bool read_floor = false;  // --read-floor
  bool output_forms = false;  // --output-forms
  bool without_merge = false;  // --without-merge
  bool measured_choice = false;  // --measured-choice: the step's plan as the worker makes it on CUDA
  kernels::MeasuredChoiceOptions measured_options;  // --mc-queries, --mc-confirm
  bool constant_queries = false;  // --queries constant: the step's own queries as the planner's timing fills them
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

std::string Fmt(const char* fmt, double x) {
  if (std::isnan(x)) return "-";
  char buf[64];
  std::snprintf(buf, sizeof(buf), fmt, x);
  return buf;
}

double Median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Relative error bounds of fp32-accumulated attention outputs per input dtype (as the GPU tests).
double Tolerance(DType dtype) { return dtype == DType::kFloat16 ? 2e-3 : 1e-2; }
constexpr double kLseTol = 5e-4;

// One group: requests 0..B-1 share the prefix (pages [0, ceil(P/page))); each request's suffix
// pages are scattered over the rest of the pool (shuffled), the last page partly filled when
// S % page_size != 0.
// *pool: one layer of exactly the pages the batch uses (plus one), validated.
DecodeBatch MakeBatch(const Shape& s, std::mt19937_64& rng, KvPoolShape* pool) {
  const int prefix_pages = (s.prefix + s.page_size - 1) / s.page_size;
  const int suffix_pages = (s.suffix + s.page_size - 1) / s.page_size;
  *pool = KvPoolShape{1, kernels::OneGroupPoolPages(s.prefix, s.batch, s.suffix, s.page_size), s.page_size, s.h_kv,
                      s.head_dim, s.dtype};
  pool->Validate();
  std::vector<int32_t> pages(size_t(s.batch) * suffix_pages);
  std::iota(pages.begin(), pages.end(), prefix_pages);
  std::shuffle(pages.begin(), pages.end(), rng);
  DecodeBatch batch;
  batch.num_qo_heads = s.h_qo;
  batch.groups.push_back(kernels::PrefixGroup{kernels::PrefixRun{0, s.prefix}, 0, s.batch});
  for (int r = 0; r < s.batch; ++r) {
    std::vector<int32_t> own(pages.begin() + int64_t(r) * suffix_pages, pages.begin() + int64_t(r + 1) * suffix_pages);
    batch.suffix.AddSeq(own, s.suffix == 0 ? 0 : (s.suffix - 1) % s.page_size + 1);
  }
  return batch;
}

// The non-cascade form: no shared prefix; each request's table lists the prefix pages, then its
// own. Needs a whole-page prefix (a partial page cannot sit in the middle of a page table).
DecodeBatch Flatten(const DecodeBatch& batch, const Shape& s) {
  DecodeBatch flat;
  flat.num_qo_heads = batch.num_qo_heads;
  flat.groups.push_back(kernels::PrefixGroup{kernels::PrefixRun{0, 0}, 0, s.batch});
  const int prefix_pages = s.prefix / s.page_size;
  for (int r = 0; r < s.batch; ++r) {
    std::vector<int32_t> pages(prefix_pages);
    std::iota(pages.begin(), pages.end(), 0);
    pages.insert(pages.end(), batch.suffix.indices.begin() + batch.suffix.indptr[r],
                 batch.suffix.indices.begin() + batch.suffix.indptr[r + 1]);
    flat.suffix.AddSeq(pages, batch.suffix.num_pages(r) > 0 ? batch.suffix.last_page_len[r] : s.page_size);
  }
  return flat;
}

// Requests whose outputs are checked: the first, the last, and random ones between (all when small).
std::vector<int> SampleRequests(int batch, int count, std::mt19937_64& rng) {
  std::vector<int> all(batch);
  std::iota(all.begin(), all.end(), 0);
  if (count >= batch) return all;
  std::vector<int> sample = {0, batch - 1};
  std::shuffle(all.begin() + 1, all.end() - 1, rng);
  for (int i = 1; int(sample.size()) < count; ++i) sample.push_back(all[i]);
  sample.resize(std::min<size_t>(sample.size(), size_t(count)));
  std::sort(sample.begin(), sample.end());
  sample.erase(std::unique(sample.begin(), sample.end()), sample.end());
  return sample;
}

struct HostStates {
  std::vector<float> v, s;  // [rows][D], [rows]
};

// The CPU backend's answer for the sampled requests (a sub-batch with the same prefix and pages).
HostStates CpuReference(const KvPoolShape& pool, const std::vector<uint16_t>& k, const std::vector<uint16_t>& v,
                        const DecodeBatch& batch, const std::vector<int>& sample, const std::vector<uint16_t>& q) {
  const int h = batch.num_qo_heads, d = pool.head_dim;
  DecodeBatch sub;
  sub.num_qo_heads = h;
  sub.groups.push_back(kernels::PrefixGroup{batch.groups[0].prefix, 0, int32_t(sample.size())});
  std::vector<uint16_t> q_sub;
  for (int r : sample) {
    sub.suffix.AddSeq(std::vector<int32_t>(batch.suffix.indices.begin() + batch.suffix.indptr[r],
                                           batch.suffix.indices.begin() + batch.suffix.indptr[r + 1]),
                      batch.suffix.last_page_len[r]);
    q_sub.insert(q_sub.end(), q.begin() + int64_t(r) * h * d, q.begin() + int64_t(r + 1) * h * d);
  }
  auto cpu = kernels::MakeCpuBackend();
  cpu->LoadPlan(kernels::PlanCascade(sub, pool, cpu->DefaultPlanOptions()));
  HostStates out{std::vector<float>(sample.size() * h * d), std::vector<float>(sample.size() * h)};
  kernels::CascadeArgs args;
  args.kv = kernels::KvPoolView{pool, const_cast<uint16_t*>(k.data()), const_cast<uint16_t*>(v.data())};
  args.q = q_sub.data();
  args.v_out = out.v.data();
  args.s_out = out.s.data();
  cpu->RunCascade(args);
  return out;
}

// Compares the sampled rows of a full-batch result with the reference; records the worst errors.
bool CheckRows(const HostStates& got_all, const HostStates& want, const std::vector<int>& sample, int h, int d,
               DType dtype, Row* row) {
  double num = 0, den = 0, s_err = 0;
  bool finite = true;
  for (size_t i = 0; i < sample.size(); ++i)
    for (int head = 0; head < h; ++head) {
      const int64_t got_row = int64_t(sample[i]) * h + head, want_row = int64_t(i) * h + head;
      for (int e = 0; e < d; ++e) {
        const double g = got_all.v[got_row * d + e], w = want.v[want_row * d + e];
        finite &= std::isfinite(g);
        num += (g - w) * (g - w);
        den += w * w;
      }
      const double gs = got_all.s[got_row], ws = want.s[want_row];
      if (std::isinf(ws)) finite &= std::isinf(gs) && gs < 0;
      else {
        finite &= std::isfinite(gs);
        s_err = std::max(s_err, std::abs(gs - ws) / std::max(1.0, std::abs(ws)));
      }
    }
  const double v_err = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  row->check_v_err = std::max(row->check_v_err, std::isfinite(v_err) ? v_err : 1e30);
  row->check_s_err = std::max(row->check_s_err, s_err);
  const bool ok = finite && v_err <= Tolerance(dtype) && s_err <= kLseTol;
  if (!ok) ++row->wrong;
  return ok;
}

void ComputeDerived(const Ceilings& c, Row* r) {
  const Shape& s = r->shape;
  const double bytes = kernels::DTypeBytes(s.dtype);
  const double prefix_flops = 4.0 * s.batch * s.h_qo * double(s.prefix) * s.head_dim;
  const double suffix_flops = 4.0 * s.batch * s.h_qo * double(s.suffix) * s.head_dim;
  const double prefix_bytes = 2.0 * s.prefix * s.h_kv * s.head_dim * bytes;
  const double suffix_bytes = 2.0 * s.batch * double(s.suffix) * s.h_kv * s.head_dim * bytes;
  r->prefix_floor_us = std::max(prefix_flops / c.gemm, prefix_bytes / c.copy_bw) * 1e6;
  r->suffix_floor_us = std::max(suffix_flops / c.gemm, suffix_bytes / c.copy_bw) * 1e6;
  const double floor_us = r->prefix_floor_us + r->suffix_floor_us;
  r->tflops = (prefix_flops + suffix_flops) / (r->total_us * 1e-6) / 1e12;
  r->gbs = (prefix_bytes + suffix_bytes) / (r->total_us * 1e-6) / 1e9;
  r->suffix_gbs = suffix_bytes / (r->suffix_us * 1e-6) / 1e9;
  r->suffix_pct_copy = 100.0 * r->suffix_gbs * 1e9 / c.copy_bw;
  r->ratio = r->total_us / floor_us;
  r->base_ratio = r->base_us / floor_us;
  r->speedup = r->base_us / r->total_us;
}

// ---------------------------------------------------------------------------------------------
// GPU runs.

#ifdef PREFIXD_HAVE_CUDA
// The benchmark's timing method from the command line.
TimingOptions TimingFor(const Config& cfg) {
  TimingOptions t;
  t.warmups = cfg.warmups;
  t.iters = cfg.iters;
  t.flush_l2 = cfg.flush;
  t.flush = cfg.flush_mode;
  return t;
}

// Device buffers of one timed cascade step: the pool's K and V, the queries (random, fixed by
// `seed`; or every byte 0x3C, as the measured choice's constant timing queries) and every output;
// freed, after a sync, when it goes out of scope.
class DeviceStep {
 public:
  DeviceStep(kernels::cuda::CudaBackend& gpu, const KvPoolShape& pool, int rows, int head_dim, DType dtype,
             uint64_t seed, bool constant_queries)
      : gpu_(gpu) {
    const int64_t kv_elems = pool.ElementsPerArray(), n = int64_t(rows) * head_dim;
    args.kv = kernels::KvPoolView{pool, Alloc(kv_elems * 2), Alloc(kv_elems * 2)};
    args.q = Alloc(n * 2);
    args.o = Alloc(n * 2);
    args.v_out = static_cast<float*>(Alloc(n * 4));
    args.s_out = static_cast<float*>(Alloc(int64_t(rows) * 4));
    FillRandom(args.kv.k, kv_elems, dtype, 1.f, seed + 1, gpu.stream());
    FillRandom(args.kv.v, kv_elems, dtype, 1.f, seed + 2, gpu.stream());
    if (constant_queries) gpu.Fill(const_cast<void*>(args.q), 0x3C, size_t(n) * 2);
    else FillRandom(const_cast<void*>(args.q), n, dtype, 1.f, seed + 3, gpu.stream());
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


#ifdef PREFIXD_HAVE_CUDA
// --output-forms' check: the step with all three outputs, then each form with every output
// poisoned first; a form must write its outputs bit for bit as the full step does and leave the
// one it was not given untouched (still the poison).
bool OutputFormsMatch(kernels::cuda::CudaBackend& gpu, const kernels::CascadeArgs& all,
                      const kernels::CascadeArgs& o_s, const kernels::CascadeArgs& v_s, int64_t n, int64_t rows) {
  struct Outputs {
    std::vector<uint16_t> o;
    std::vector<float> v, s;
  };
  auto run = [&](const kernels::CascadeArgs& a) {
    gpu.Fill(all.o, 0xFF, n * 2);
    gpu.Fill(all.v_out, 0xFF, n * 4);
    gpu.Fill(all.s_out, 0xFF, rows * 4);
    gpu.RunCascade(a);
    gpu.Synchronize();
    Outputs out{std::vector<uint16_t>(size_t(n)), std::vector<float>(size_t(n)), std::vector<float>(size_t(rows))};
    gpu.CopyToHost(out.o.data(), all.o, n * 2);
    gpu.CopyToHost(out.v.data(), all.v_out, n * 4);
    gpu.CopyToHost(out.s.data(), all.s_out, rows * 4);
    return out;
  };
  auto same_bits = [](const void* a, const void* b, size_t bytes) { return std::memcmp(a, b, bytes) == 0; };
  auto all_poison = [](const void* p, size_t bytes) {
    const auto* c = static_cast<const uint8_t*>(p);
    return std::all_of(c, c + bytes, [](uint8_t x) { return x == 0xFF; });
  };
  const Outputs want = run(all), got_o_s = run(o_s), got_v_s = run(v_s);
  return same_bits(want.o.data(), got_o_s.o.data(), size_t(n) * 2) &&
         same_bits(want.s.data(), got_o_s.s.data(), size_t(rows) * 4) && all_poison(got_o_s.v.data(), size_t(n) * 4) &&
         same_bits(want.v.data(), got_v_s.v.data(), size_t(n) * 4) &&
         same_bits(want.s.data(), got_v_s.s.data(), size_t(rows) * 4) && all_poison(got_v_s.o.data(), size_t(n) * 2);
}

Row RunGpuShape(kernels::cuda::CudaBackend& gpu, const Shape& s, const Config& cfg, uint64_t seed) {
  Row row;
  row.shape = s;
  std::mt19937_64 rng(seed);
  KvPoolShape pool;
  const DecodeBatch batch = MakeBatch(s, rng, &pool);
  void* stream = gpu.stream();
  const int64_t kv_elems = pool.ElementsPerArray(), rows = int64_t(s.batch) * s.h_qo, n = rows * s.head_dim;
  DeviceStep step(gpu, pool, int(rows), s.head_dim, s.dtype, seed, cfg.constant_queries);
  kernels::CascadeArgs& args = step.args;

  kernels::PlanOptions plan_options = gpu.DefaultPlanOptions();
  // Concurrent prefix/decode never fuses the merge (LoadPlan would unfuse the plan): plan it unfused
  // so that merged_requests and the merge part's time say what runs.
  plan_options.fuse_merge = cfg.fuse && gpu.concurrent_decode_sms() == 0;
  // --measured-choice: the plan the worker runs on CUDA (WorkerOptions::measure_plan_choice), from a
  // fresh MeasuredPlanner per shape: where the model's choice is a near tie, its candidates timed
  // by the planner's own method (on this step's pool) and the fastest kept. The note names what it
  // kept and each candidate's time by that method.
  const CascadePlan plan = [&] {
    if (!cfg.measured_choice) return kernels::PlanCascade(batch, pool, plan_options);
    kernels::MeasuredPlanner planner(cfg.measured_options);
    kernels::MeasuredChoiceReport report;
    CascadePlan chosen = planner.Plan(batch, pool, plan_options, gpu, args.kv, &report);
    row.note += std::string(" measured-choice(") + kernels::PlanCandidateName(report.chosen);
    if (report.timed)
      for (size_t i = 0; i < report.candidates.size(); ++i)
        row.note += std::string(i == 0 ? "; timed " : ", ") + kernels::PlanCandidateName(report.candidates[i]) +
                    Fmt(" %.1f us", report.measured_us[i]);
    else
      row.note += "; no near tie";
    if (report.confirm_timed)
      row.note += std::string("; again ") + kernels::PlanCandidateName(report.confirm_winner) +
                  Fmt(" %.1f us", report.confirm_winner_us) + Fmt(", cascade %.1f us", report.confirm_cascade_us) +
                  (report.confirmed ? ": kept" : ": overturned");
    row.note += ")";
    return chosen;
  }();
  if (plan.concurrent_decode_sms > 0 && gpu.concurrent_decode_sms() == 0)
    row.note += " concurrent(k=" + std::to_string(plan.concurrent_decode_sms) +
                (plan.concurrent_decode_tma ? ", TMA decode)" : ")");  // the planner's choice
  row.prefix_items = int(plan.prefix_items.size());
  row.decode_items = int(plan.decode_items.size());
  row.slots = plan.num_slots();
  row.merged_requests = int(plan.merge_requests.size());
  gpu.LoadPlan(plan);

  const TimingOptions t = TimingFor(cfg);
  using CB = kernels::cuda::CudaBackend;
  // Every timed region of the row: its parts alone, the step and (cfg.graph) the step's CUDA-graph
  // replay, timed interleaved (TimeOnStreamInterleaved) so that the clock's drift over a long
  // compute-bound run favours none of them (session 54: the one timed last carried it).
  std::vector<std::function<void()>> regions;
  std::vector<double*> results;
  auto timed = [&](double* us, std::function<void()> fn) {
    regions.push_back(std::move(fn));
    results.push_back(us);
  };
  row.prefix_us = row.suffix_us = row.merge_us = 0;
  if (gpu.fused_plan_loaded()) {
    // The fused cascade (PREFIXD_FUSED=1): the parts are the fused kernel fed only the prefix
    // items, or only the decode items (partial states, no ⊕, no arrival counters); the ⊕ is inside
    // the whole step.
    row.fused = true;
    row.note += " fused";
    if (row.prefix_items > 0) timed(&row.prefix_us, [&] { gpu.RunFusedItemsOnly(args, CB::kPrefixPart); });
    if (row.decode_items > 0) timed(&row.suffix_us, [&] { gpu.RunFusedItemsOnly(args, CB::kDecodePart); });
  } else {
    if (row.prefix_items > 0) timed(&row.prefix_us, [&] { gpu.RunCascadeParts(args, CB::kPrefixPart); });
    if (row.decode_items > 0) timed(&row.suffix_us, [&] { gpu.RunCascadeParts(args, CB::kDecodePart); });
    // No merge launch at all when the decode kernel finishes every request.
    if (!plan.merge_requests.empty()) timed(&row.merge_us, [&] { gpu.RunCascadeParts(args, CB::kMergePart); });
  }
  // --beside: the prefix part again with each synthetic load on the k SMs a concurrent plan leaves
  // to its decode (beside_load.h), to tell what slows it there.
  std::unique_ptr<BesideRunner> beside;
  std::vector<BesideLoad> beside_loads;
  for (const std::string& name : cfg.beside) beside_loads.push_back(ParseBesideLoad(name));
  std::vector<double> beside_us(beside_loads.size(), 0.0);
  if (!beside_loads.empty() && plan.concurrent_decode_sms > 0 && row.prefix_items > 0 && !gpu.fused_plan_loaded()) {
    beside = std::make_unique<BesideRunner>(plan.concurrent_decode_sms);
    for (size_t i = 0; i < beside_loads.size(); ++i) {
      const BesideLoad load = beside_loads[i];
      timed(&beside_us[i], [&, load] {
        beside->Start(stream, load);
        gpu.RunCascadeParts(args, CB::kPrefixPart);
        beside->Stop(stream);
      });
    }
  } else if (!beside_loads.empty()) {
    row.note += " beside(not a concurrent plan)";
  }
  timed(&row.total_us, [&] { gpu.RunCascade(args); });
  // --read-floor: the step's K/V bytes (the floor's: prefix and suffix tokens, each once) from the
  // pool's K and V arrays, which hold them and one spare page; MakeBatch puts the prefix's pages
  // first, so its tokens are the arrays' first prefix_bytes. (The regions run after this block:
  // everything they use is captured by value.)
  double read_bulk_us = kNaN, read_nc_us = kNaN;
  if (cfg.read_floor) {
    const int64_t token_bytes = int64_t(s.h_kv) * s.head_dim * kernels::DTypeBytes(s.dtype);
    const int64_t prefix_bytes = int64_t(s.prefix) * token_bytes;
    const int64_t suffix_bytes = int64_t(s.batch) * s.suffix * token_bytes;
    const int64_t step_bytes = prefix_bytes + suffix_bytes;  // per array (K, V)
    PREFIXD_CHECK_INTERNAL(step_bytes <= kv_elems * 2, "--read-floor: the pool holds " << kv_elems * 2
                                                                                       << " bytes per array, the step "
                                                                                       << step_bytes);
    const void* k = args.kv.k;
    const void* v = args.kv.v;
    const void* k_suffix = static_cast<const uint8_t*>(k) + prefix_bytes;
    const void* v_suffix = static_cast<const uint8_t*>(v) + prefix_bytes;
    auto read_all = [=](PlainReadForm form) { EnqueuePlainRead(form, k, step_bytes, v, step_bytes, stream); };
    auto read_prefix = [=] {
      EnqueuePlainRead(PlainReadForm::kNonCoherentLoads, k, prefix_bytes, v, prefix_bytes, stream);
    };
    auto read_suffix = [=] {
      EnqueuePlainRead(PlainReadForm::kNonCoherentLoads, k_suffix, suffix_bytes, v_suffix, suffix_bytes, stream);
    };
    timed(&read_bulk_us, [=] { read_all(PlainReadForm::kBulkEvictFirst); });
    timed(&read_nc_us, [=] { read_all(PlainReadForm::kNonCoherentLoads); });
    timed(&row.read_split_us, [=] {
      read_prefix();
      read_suffix();
    });
    timed(&row.read_prefix_us, read_prefix);
    timed(&row.read_suffix_us, read_suffix);
    timed(&row.read_pdl_us,
          [=] { EnqueuePlainReadPdlPair(k, v, prefix_bytes, k_suffix, v_suffix, suffix_bytes, stream); });
  }
  // --output-forms: the step writing one copy of its output instead of all three (o in the input
  // dtype, fp32 v and s): o and s, what FlashInfer's cascade returns, and v and s, what the
  // distributed engine's worker asks for (it passes no o). Checked after the timing.
  kernels::CascadeArgs args_o_s = args, args_v_s = args;
  args_o_s.v_out = nullptr;
  args_v_s.o = nullptr;
  double o_s_us = kNaN, v_s_us = kNaN;
  if (cfg.output_forms) {
    timed(&o_s_us, [&] { gpu.RunCascade(args_o_s); });
    timed(&v_s_us, [&] { gpu.RunCascade(args_v_s); });
  }
  // --without-merge: the step's prefix and decode parts as the step runs them (a concurrent plan's
  // two grids side by side and their join), without the merge kernel after them: total_us minus
  // this is what the merge costs inside the step (its launch after the join, its ramp and its
  // reads), to price a merge inside the step's own launch. The outputs of merged requests are then
  // not written; nothing is checked after it.
  double without_merge_us = kNaN;
  const bool time_without_merge = cfg.without_merge && !gpu.fused_plan_loaded() && !plan.merge_requests.empty();
  if (time_without_merge) timed(&without_merge_us, [&] { gpu.RunCascadeParts(args, CB::kPrefixPart | CB::kDecodePart); });
  std::unique_ptr<CapturedGraph> graph;
  if (cfg.graph) {
    graph = std::make_unique<CapturedGraph>(stream, [&] { gpu.RunCascade(args); });
    timed(&row.graph_us, [&] { graph->Launch(); });
  }
  const std::vector<std::vector<float>> ms = TimeOnStreamInterleaved(stream, regions, t);
  for (size_t i = 0; i < regions.size(); ++i) *results[i] = Median(ms[i]) * 1e3;
  if (cfg.read_floor) {
    row.read_us = std::min(read_bulk_us, read_nc_us);
    row.note += Fmt(" read-floor %.1f us", row.read_us) + Fmt(" (bulk %.1f", read_bulk_us) +
                Fmt(", ld.nc %.1f", read_nc_us) + Fmt("; as two launches %.1f", row.read_split_us) +
                Fmt(", the second a PDL dependent %.1f", row.read_pdl_us) +
                Fmt("; the prefix's bytes %.1f", row.read_prefix_us) + Fmt(", the suffix's %.1f)", row.read_suffix_us);
  }
  if (time_without_merge) row.note += Fmt(" without-merge %.1f us", without_merge_us);
  else if (cfg.without_merge) row.note += " without-merge(no merge kernel in this plan)";
  if (cfg.output_forms) {
    row.note += Fmt(" outputs o+s %.1f us", o_s_us) + Fmt(", v+s %.1f", v_s_us);
    if (!OutputFormsMatch(gpu, args, args_o_s, args_v_s, n, rows)) {
      row.note += " output-forms-wrong";
      ++row.wrong;
    }
  }
  if (beside) {
    char text[64];
    row.note += " beside(k=" + std::to_string(plan.concurrent_decode_sms) + ", prefix us:";
    for (size_t i = 0; i < beside_loads.size(); ++i) {
      const char* name = BesideLoadName(beside_loads[i]);
      const double mhz = beside->MeanClockMhz(beside_loads[i]);
      if (mhz > 0) std::snprintf(text, sizeof(text), " %s %.1f (%.0f MHz)", name, beside_us[i], mhz);
      else std::snprintf(text, sizeof(text), " %s %.1f", name, beside_us[i]);
      row.note += text;
    }
    row.note += ")";
  }

  // Check: outputs poisoned, one step (and one graph replay), sampled rows vs the CPU backend.
  std::vector<int> sample;
  HostStates want;
  std::vector<uint16_t> k_host, v_host, q_host;
  auto run_and_download = [&](const std::function<void()>& step) {
    gpu.Fill(args.v_out, 0xFF, n * 4);
    gpu.Fill(args.s_out, 0xFF, rows * 4);
    step();
    gpu.Synchronize();
    HostStates got{std::vector<float>(n), std::vector<float>(rows)};
    gpu.CopyToHost(got.v.data(), args.v_out, n * 4);
    gpu.CopyToHost(got.s.data(), args.s_out, rows * 4);
    return got;
  };
  if (cfg.check > 0) {
    sample = SampleRequests(s.batch, cfg.check, rng);
    k_host.resize(kv_elems);
    v_host.resize(kv_elems);
    q_host.resize(n);
    gpu.CopyToHost(k_host.data(), args.kv.k, kv_elems * 2);
    gpu.CopyToHost(v_host.data(), args.kv.v, kv_elems * 2);
    gpu.CopyToHost(q_host.data(), args.q, n * 2);
    want = CpuReference(pool, k_host, v_host, batch, sample, q_host);
    row.checked_requests = int(sample.size());
    if (!CheckRows(run_and_download([&] { gpu.RunCascade(args); }), want, sample, s.h_qo, s.head_dim, s.dtype, &row))
      row.note += " cascade-wrong";
    if (graph && !CheckRows(run_and_download([&] { graph->Launch(); }), want, sample, s.h_qo, s.head_dim, s.dtype, &row))
      row.note += " graph-wrong";
  }
  graph.reset();

  if (cfg.baseline && s.prefix % s.page_size == 0) {
    const CascadePlan flat = kernels::PlanCascade(Flatten(batch, s), pool, plan_options);
    gpu.LoadPlan(flat);
    // Another plan, so not among the interleaved regions above.
    row.base_us = Median(TimeOnStream(stream, [&] { gpu.RunCascade(args); }, t)) * 1e3;
    if (cfg.check > 0 &&
        !CheckRows(run_and_download([&] { gpu.RunCascade(args); }), want, sample, s.h_qo, s.head_dim, s.dtype, &row))
      row.note += " baseline-wrong";
  } else if (cfg.baseline) {
    row.note += " no-baseline(prefix-not-whole-pages)";
  }
  return row;
}
#endif

// ---------------------------------------------------------------------------------------------
// CPU runs (no GPU): the reference backend, host clock, total step only.

Row RunCpuShape(Backend& cpu, const Shape& s, const Config& cfg, uint64_t seed) {
  Row row;
  row.shape = s;
  std::mt19937_64 rng(seed);
  KvPoolShape pool;
  const DecodeBatch batch = MakeBatch(s, rng, &pool);
  const int64_t kv_elems = pool.ElementsPerArray(), rows = int64_t(s.batch) * s.h_qo, n = rows * s.head_dim;
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  auto random_bits = [&](int64_t count) {
    std::vector<uint16_t> x(count);
    for (auto& e : x) e = kernels::FromFloat(s.dtype, dist(rng));
    return x;
  };
  std::vector<uint16_t> k = random_bits(kv_elems), v = random_bits(kv_elems), q = random_bits(n);
  HostStates out{std::vector<float>(n), std::vector<float>(rows)};
  kernels::CascadeArgs args;
  args.kv = kernels::KvPoolView{pool, k.data(), v.data()};
  args.q = q.data();
  args.v_out = out.v.data();
  args.s_out = out.s.data();
  auto time_us = [&](const std::function<void()>& fn) {
    for (int i = 0; i < cfg.warmups; ++i) fn();
    std::vector<float> us(cfg.iters);
    for (auto& u : us) {
      const auto t0 = std::chrono::steady_clock::now();
      fn();
      u = float(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    }
    return Median(us);
  };
  const CascadePlan plan = kernels::PlanCascade(batch, pool, cpu.DefaultPlanOptions());
  row.prefix_items = int(plan.prefix_items.size());
  row.decode_items = int(plan.decode_items.size());
  row.slots = plan.num_slots();
  cpu.LoadPlan(plan);
  row.total_us = time_us([&] { cpu.RunCascade(args); });
  const HostStates cascade = out;
  if (cfg.baseline && s.prefix % s.page_size == 0) {
    cpu.LoadPlan(kernels::PlanCascade(Flatten(batch, s), pool, cpu.DefaultPlanOptions()));
    row.base_us = time_us([&] { cpu.RunCascade(args); });
    if (cfg.check > 0) {  // the non-cascade answer must equal the cascade one (all requests)
      std::vector<int> all(s.batch);
      std::iota(all.begin(), all.end(), 0);
      row.checked_requests = s.batch;
      if (!CheckRows(out, cascade, all, s.h_qo, s.head_dim, s.dtype, &row)) row.note += " baseline-wrong";
    }
  } else if (cfg.baseline) {  // as on the GPU: the check is against that baseline, so it is skipped too
    row.note += " no-baseline(prefix-not-whole-pages)";
  }
  return row;
}

// ---------------------------------------------------------------------------------------------
// Output.


void PrintHeader() {
  std::printf("#\n# %5s %4s %7s %4s %5s %6s %5s | %9s %9s %8s %9s %9s | %7s %7s %7s %6s | %9s %9s %6s | %10s %6s %6s | %s\n",
              "dtype", "page", "Hqo/Hkv", "D", "B", "P", "S", "prefix_us", "suffix_us", "merge_us", "total_us",
              "graph_us", "TFLOP/s", "GB/s", "sfxGB/s", "%copy", "pfx_flr", "sfx_flr", "ratio", "base_us", "b_rat",
              "speedup", "check");
}

void PrintRow(const Row& r) {
  const Shape& s = r.shape;
  std::string heads = std::to_string(s.h_qo) + "/" + std::to_string(s.h_kv);
  std::string check = r.checked_requests == 0 ? "skipped"
                      : r.wrong == 0          ? "OK"
                                              : "WRONG";
  if (r.checked_requests > 0) check += Fmt(" (%.1e", r.check_v_err) + Fmt(", %.1e)", r.check_s_err);
  check += r.note;
  if (!r.variant.empty()) check += " [" + r.variant + "]";
  std::printf("  %5s %4d %7s %4d %5d %6d %5d | %9s %9s %8s %9s %9s | %7s %7s %7s %6s | %9s %9s %6s | %10s %6s %6s | %s\n",
              kernels::DTypeName(s.dtype), s.page_size, heads.c_str(), s.head_dim, s.batch, s.prefix, s.suffix,
              Fmt("%.1f", r.prefix_us).c_str(), Fmt("%.1f", r.suffix_us).c_str(), Fmt("%.1f", r.merge_us).c_str(),
              Fmt("%.1f", r.total_us).c_str(), Fmt("%.1f", r.graph_us).c_str(), Fmt("%.1f", r.tflops).c_str(),
              Fmt("%.0f", r.gbs).c_str(), Fmt("%.0f", r.suffix_gbs).c_str(), Fmt("%.1f", r.suffix_pct_copy).c_str(),
              Fmt("%.1f", r.prefix_floor_us).c_str(), Fmt("%.1f", r.suffix_floor_us).c_str(),
              Fmt("%.2f", r.ratio).c_str(), Fmt("%.1f", r.base_us).c_str(), Fmt("%.2f", r.base_ratio).c_str(),
              Fmt("%.2f", r.speedup).c_str(), check.c_str());
  std::fflush(stdout);
}

const char* kCsvFields =
    "dtype,page_size,h_qo,h_kv,head_dim,batch,prefix,suffix,prefix_items,decode_items,slots,merged_requests,prefix_us,suffix_us,"
    "merge_us,total_us,graph_us,tflops,gbs,suffix_gbs,suffix_pct_copy,prefix_floor_us,suffix_floor_us,ratio,base_us,"
    "base_ratio,speedup,checked_requests,check_v_err,check_s_err,wrong,read_us,read_split_us,read_pdl_us,read_prefix_us,read_suffix_us";

std::vector<double> Numbers(const Row& r) {
  const Shape& s = r.shape;
  return {double(s.page_size), double(s.h_qo), double(s.h_kv), double(s.head_dim), double(s.batch), double(s.prefix),
          double(s.suffix), double(r.prefix_items), double(r.decode_items), double(r.slots), double(r.merged_requests),
          r.prefix_us, r.suffix_us,
          r.merge_us, r.total_us, r.graph_us, r.tflops, r.gbs, r.suffix_gbs, r.suffix_pct_copy, r.prefix_floor_us,
          r.suffix_floor_us, r.ratio, r.base_us, r.base_ratio, r.speedup, double(r.checked_requests), r.check_v_err,
          r.check_s_err, double(r.wrong), r.read_us, r.read_split_us, r.read_pdl_us, r.read_prefix_us, r.read_suffix_us};
}

std::string Num(double x) {
  if (std::isnan(x)) return "null";
  std::ostringstream o;
  o.precision(6);
  o << x;
  return o.str();
}

void WriteCsv(const std::string& path, const std::vector<Row>& rows) {
  std::ofstream f(path);
  PREFIXD_CHECK_ARG(f.good(), "cannot write " << path);
  f << kCsvFields << ",variant\n";
  for (const Row& r : rows) {
    f << kernels::DTypeName(r.shape.dtype);
    for (double x : Numbers(r)) f << "," << (std::isnan(x) ? "" : Num(x));
    f << "," << r.variant << "\n";
  }
}

void WriteJson(const std::string& path, const std::vector<Row>& rows, const std::string& device, const Ceilings& c,
               const Config& cfg) {
  std::ofstream f(path);
  PREFIXD_CHECK_ARG(f.good(), "cannot write " << path);
  f << "{\n  \"device\": \"" << device << "\",\n  \"copy_bw_bytes_per_s\": " << Num(c.copy_bw)
    << ",\n  \"gemm_flops_per_s\": " << Num(c.gemm) << ",\n  \"warmups\": " << cfg.warmups
    << ",\n  \"iters\": " << cfg.iters << ",\n  \"l2_flush\": " << (cfg.flush ? "true" : "false")
    << ",\n  \"rows\": [\n";
  std::vector<std::string> names;
  std::stringstream fields(kCsvFields);
  for (std::string name; std::getline(fields, name, ',');) names.push_back(name);
  for (size_t i = 0; i < rows.size(); ++i) {
    const std::vector<double> x = Numbers(rows[i]);
    f << "    {\"dtype\": \"" << kernels::DTypeName(rows[i].shape.dtype) << "\"";
    for (size_t j = 0; j < x.size(); ++j) f << ", \"" << names[j + 1] << "\": " << Num(x[j]);
    f << ", \"variant\": \"" << rows[i].variant << "\"}" << (i + 1 < rows.size() ? "," : "") << "\n";
  }
  f << "  ]\n}\n";
}

// --variants: one line per shape, one column per variant: total µs (ratio), and the difference
// to the first variant; then the same for the suffix part alone. Printed last, after every row.
void PrintVariantTable(const std::vector<Row>& rows, const std::vector<Variant>& variants) {
  if (variants.empty()) return;
  const size_t nv = variants.size();
  std::printf("#\n# variants (same run, same method; interleaved per shape; each a fresh backend):\n");
  for (const Variant& v : variants) {
    std::string env;
    for (const auto& [name, value] : v.env) env += " " + name + "=" + value;
    std::printf("#   %-24s%s\n", v.name.c_str(), env.empty() ? " (environment as given)" : env.c_str());
  }
  for (int part = 0; part < 3; ++part) {
    const char* what = part == 0 ? "total us (ratio) [delta vs first]" : part == 1 ? "prefix part us" : "suffix part us";
    std::printf("#\n# %-30s | %s\n", "shape", what);
    std::printf("# %-30s", "");
    for (const Variant& v : variants) std::printf(" | %-24s", v.name.substr(0, 24).c_str());
    std::printf("\n");
    for (size_t i = 0; i + nv <= rows.size(); i += nv) {
      const Shape& s = rows[i].shape;
      char shape[64];
      std::snprintf(shape, sizeof(shape), "%s %d/%d D%d B%d P%d S%d", kernels::DTypeName(s.dtype), s.h_qo, s.h_kv,
                    s.head_dim, s.batch, s.prefix, s.suffix);
      std::printf("  %-30s", shape);
      for (size_t j = 0; j < nv; ++j) {
        const Row& r = rows[i + j];
        std::string cell;
        if (part == 0) {
          cell = Fmt("%.1f", r.total_us) + Fmt(" (%.2f)", r.ratio);
          if (j > 0) cell += Fmt(" %+.1f", r.total_us - rows[i].total_us);
        } else {
          const double x = part == 1 ? r.prefix_us : r.suffix_us, x0 = part == 1 ? rows[i].prefix_us : rows[i].suffix_us;
          cell = Fmt("%.1f", x);
          if (j > 0) cell += Fmt(" %+.1f", x - x0);
        }
        if (r.wrong > 0) cell += " WRONG";
        std::printf(" | %-24s", cell.c_str());
      }
      std::printf("\n");
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Planner check and calibration (kernels/cost_model.h, PlanOptions::choose_layout).
//
// --planner-check: per shape, the whole step timed up to five ways: the cascade (today's plan),
// plain decode (the prefix pages in every request's page table, no prefix items), the cascade with
// the narrow prefix CTA's items (PlanOptions::narrow_tile_rows) and the cascade with half the
// prefix item target (a smaller prefix grid: more SMs free for the decode), each where it differs
// from the cascade, and the planner's choice (choose_layout with the cost model); ratio = choice /
// the fastest of the others, which the performance issue bounds by 1.05 against plain decode. A
// choice identical to one of the other plans reuses its time.
// --calibrate FILE: per shape, the parts of those layouts timed alone (prefix, decode, merge) and
// their totals; the model's parameters fitted to them (FitCostModel, starting from --cost-model or
// the H200 defaults) and written to FILE. With both, the check runs with the fitted parameters.


struct PlannerPlans {
  DecodeBatch batch;
  KvPoolShape pool;
  CascadePlan cascade, plain, narrow, half, choice;
  kernels::PlanOptions choose;  // the options the choice was planned with (choose_layout, the model)
  bool has_plain = false;   // the prefix fills whole pages
  bool has_narrow = false;  // the narrow CTA's items differ from the cascade's
  bool has_half = false;    // half the prefix item target changes the cascade
  kernels::PlanReport report;
  double pred_cascade = kNaN, pred_plain = kNaN, pred_narrow = kNaN, pred_half = kNaN, pred_choice = kNaN;
  bool choice_is_cascade = false, choice_is_plain = false, choice_is_narrow = false, choice_is_half = false;
  std::string choice_name;
};

PlannerPlans MakePlannerPlans(const Shape& s, uint64_t seed, const kernels::PlanOptions& base,
                              const kernels::CostModelParams& params) {
  PlannerPlans p;
  std::mt19937_64 rng(seed);
  p.batch = MakeBatch(s, rng, &p.pool);
  kernels::PlanOptions fixed = base;
  fixed.choose_layout = false;
  p.cascade = kernels::PlanCascade(p.batch, p.pool, fixed);
  p.pred_cascade = kernels::PredictCost(p.cascade, params).total_us;
  // The other plans are compared with it by their schedules (kernels::ScheduleKey): a layout that
  // runs the cascade's work the same way is the cascade, not a rival timed again.
  const std::vector<int32_t> cascade_flat = kernels::ScheduleKey(p.cascade);
  p.has_plain = kernels::CanPlanPlain(p.batch.groups[0], s.page_size);
  if (p.has_plain) {
    p.plain = kernels::PlanCascade(kernels::PlainLayout(p.batch, {1}, s.page_size), p.pool, fixed);
    p.pred_plain = kernels::PredictCost(p.plain, params).total_us;
  }
  // The narrow cascade where the planner may choose it (PlanOptions::narrow_head_dim too), and the
  // half-target cascade: the layouts the measured choice times too (PlanCandidateLayout).
  if (std::optional<CascadePlan> narrow = kernels::PlanCandidateLayout(kernels::PlanCandidate::kNarrow, p.batch, p.pool, fixed)) {
    p.narrow = std::move(*narrow);
    p.has_narrow = kernels::ScheduleKey(p.narrow) != cascade_flat;
    if (p.has_narrow) p.pred_narrow = kernels::PredictCost(p.narrow, params).total_us;
  }
  p.half = *kernels::PlanCandidateLayout(kernels::PlanCandidate::kHalfTarget, p.batch, p.pool, fixed);
  p.has_half = kernels::ScheduleKey(p.half) != cascade_flat;
  if (p.has_half) p.pred_half = kernels::PredictCost(p.half, params).total_us;
  p.choose = fixed;
  p.choose.choose_layout = true;
  p.choose.cost_model = std::make_shared<kernels::CostModelParams>(params);
  p.choice = kernels::PlanCascade(p.batch, p.pool, p.choose, &p.report);
  p.pred_choice = p.report.predicted_us;
  const std::vector<int32_t> flat = kernels::ScheduleKey(p.choice);
  p.choice_is_cascade = flat == cascade_flat;
  p.choice_is_plain = p.has_plain && flat == kernels::ScheduleKey(p.plain);
  p.choice_is_narrow = p.has_narrow && flat == kernels::ScheduleKey(p.narrow);
  p.choice_is_half = p.has_half && flat == kernels::ScheduleKey(p.half);
  p.choice_name = p.report.group_plain.empty() || !p.report.group_plain[0] ? "cascade" : "plain";
  if (p.choice_is_narrow) p.choice_name = "narrow";
  else if (!p.choice_is_cascade && !p.choice_is_plain)
    p.choice_name += " t" + std::to_string(p.report.prefix_target_items) +
                     (p.report.min_prefix_chunk != base.min_prefix_chunk ? " c" + std::to_string(p.report.min_prefix_chunk)
                                                                         : std::string()) +
                     (p.report.min_decode_chunk == std::numeric_limits<int>::max() ? " nosplit" : "") +
                     (p.report.prefix_tile_rows != base.prefix_tile_rows ? " r" + std::to_string(p.report.prefix_tile_rows)
                                                                         : std::string());
  if (p.report.concurrent_decode_sms > 0)
    p.choice_name += " k" + std::to_string(p.report.concurrent_decode_sms) + (p.report.concurrent_decode_tma ? " tma" : "");
  return p;
}

struct PlannerRow {
  Shape shape;
  PlannerPlans plans;
  double cascade_us = kNaN, plain_us = kNaN, narrow_us = kNaN, half_us = kNaN, choice_us = kNaN;
  // The measured choice (kernels::MeasuredPlanner, fresh per shape): what it kept ("-": no near
  // tie, the model's choice), and that plan's time by this bench's method (not the planner's own).
  std::string measured_name = "-";
  double measured_us = kNaN;
  bool measured_confirm_timed = false, measured_overturned = false;  // its second timing ran; it kept the cascade
  int wrong = 0;
  // The fastest of the timed layouts (cascade, plain, narrow, half).
  double FastestTimed() const {
    double best = cascade_us;
    for (const double us : {plain_us, narrow_us, half_us})
      if (!std::isnan(us)) best = std::min(best, us);
    return best;
  }
  double Ratio() const { return choice_us / FastestTimed(); }
  // The performance issue's own bar: the choice against plain decode alone (1 where no plain plan).
  double RatioToPlain() const { return std::isnan(plain_us) ? 1.0 : choice_us / plain_us; }
  // The item 4: the choice against the better of the cascade and plain decode.
  double RatioToBetterOfTwo() const {
    return choice_us / (std::isnan(plain_us) ? cascade_us : std::min(cascade_us, plain_us));
  }
  // The same two for the measured choice.
  double MeasuredToPlain() const { return std::isnan(plain_us) ? 1.0 : measured_us / plain_us; }
  double MeasuredRatio() const { return measured_us / FastestTimed(); }
  double MeasuredToBetterOfTwo() const {
    return measured_us / (std::isnan(plain_us) ? cascade_us : std::min(cascade_us, plain_us));
  }
};

void PrintPlannerHeader(bool measured) {
  std::printf("#\n# %5s %7s %4s %5s %6s %5s | %10s %10s %10s %-22s | %10s %10s %10s | %6s | %-5s | %10s %11s | %8s %9s | "
              "%11s %-8s %6s\n",
              "dtype", "Hqo/Hkv", "D", "B", "P", "S", "cascade_us", "plain_us", "choice_us", "choice", "pred_casc",
              "pred_plain", "pred_choice", measured ? "ratio" : "-", measured ? "check" : "", "narrow_us",
              "pred_narrow", "half_us", "pred_half", "measured_us", "measured", "m_rat2");
}

void PrintPlannerRow(const PlannerRow& r, bool measured) {
  const Shape& s = r.shape;
  const std::string heads = std::to_string(s.h_qo) + "/" + std::to_string(s.h_kv);
  std::string status;
  if (measured) status = r.wrong ? "WRONG" : r.Ratio() > 1.05 ? "SLOW" : "OK";
  // The narrow and half cascades' columns come last, so that logs parsed by their first columns
  // (planner_offline_eval.py) read the same.
  std::printf("  %5s %7s %4d %5d %6d %5d | %10s %10s %10s %-22s | %10s %10s %10s | %6s | %-5s | %10s %11s | %8s %9s | "
              "%11s %-8s %6s\n",
              kernels::DTypeName(s.dtype), heads.c_str(), s.head_dim, s.batch, s.prefix, s.suffix,
              Fmt("%.1f", r.cascade_us).c_str(), Fmt("%.1f", r.plain_us).c_str(), Fmt("%.1f", r.choice_us).c_str(),
              r.plans.choice_name.c_str(), Fmt("%.1f", r.plans.pred_cascade).c_str(),
              Fmt("%.1f", r.plans.pred_plain).c_str(), Fmt("%.1f", r.plans.pred_choice).c_str(),
              measured ? Fmt("%.3f", r.Ratio()).c_str() : "-", status.c_str(), Fmt("%.1f", r.narrow_us).c_str(),
              Fmt("%.1f", r.plans.pred_narrow).c_str(), Fmt("%.1f", r.half_us).c_str(),
              Fmt("%.1f", r.plans.pred_half).c_str(), Fmt("%.1f", r.measured_us).c_str(), r.measured_name.c_str(),
              measured ? Fmt("%.3f", r.MeasuredToBetterOfTwo()).c_str() : "-");
  std::fflush(stdout);
}

#ifdef PREFIXD_HAVE_CUDA
// Times the plans of one shape on the GPU (same data and method as RunGpuShape). With samples,
// every part of every layout is timed alone and recorded for the calibration; with known
// (cascade_us, plain_us) from an earlier pass, only a choice that differs from both is timed.
PlannerRow RunPlannerShape(kernels::cuda::CudaBackend& gpu, const Shape& s, const Config& cfg, uint64_t seed,
                           const kernels::PlanOptions& base, const kernels::CostModelParams& params,
                           std::vector<kernels::CostSample>* samples, const PlannerRow* known) {
  PlannerRow row;
  row.shape = s;
  row.plans = MakePlannerPlans(s, seed, base, params);
  const PlannerPlans& p = row.plans;
  void* stream = gpu.stream();
  const int64_t kv_elems = p.pool.ElementsPerArray(), rows = int64_t(s.batch) * s.h_qo, n = rows * s.head_dim;
  DeviceStep step(gpu, p.pool, int(rows), s.head_dim, s.dtype, seed, cfg.constant_queries);
  kernels::CascadeArgs& args = step.args;

  const TimingOptions t = TimingFor(cfg);
  using CB = kernels::cuda::CudaBackend;
  auto time_us = [&](const std::function<void()>& fn) { return Median(TimeOnStream(stream, fn, t)) * 1e3; };
  auto label = [&](const char* layout, const char* part) {
    char text[160];
    std::snprintf(text, sizeof(text), "%s %d/%d D%d B%d P%d S%d %s %s", kernels::DTypeName(s.dtype), s.h_qo, s.h_kv,
                  s.head_dim, s.batch, s.prefix, s.suffix, layout, part);
    return std::string(text);
  };
  // The whole step of one plan; with samples also its parts alone.
  auto measure = [&](const CascadePlan& plan, const char* layout) {
    gpu.LoadPlan(plan);
    const double total = time_us([&] { gpu.RunCascade(args); });
    if (samples) {
      const kernels::PlanProfile profile = kernels::ProfilePlan(plan, params);
      auto add = [&](kernels::CostPart part, double us) {
        samples->push_back(kernels::CostSample{profile, part, us, 1.0, label(layout, kernels::CostPartName(part))});
      };
      add(kernels::CostPart::kTotal, total);
      if (!plan.prefix_items.empty())
        add(kernels::CostPart::kPrefix, time_us([&] { gpu.RunCascadeParts(args, CB::kPrefixPart); }));
      if (!plan.decode_items.empty())
        add(kernels::CostPart::kDecode, time_us([&] { gpu.RunCascadeParts(args, CB::kDecodePart); }));
      if (!plan.merge_requests.empty())
        add(kernels::CostPart::kMerge, time_us([&] { gpu.RunCascadeParts(args, CB::kMergePart); }));
    }
    return total;
  };
  // Plain decode is timed last (unless cfg.plain_first): at long prefixes its step is 10-100 times
  // the cascade's (22-26 ms at 32/32 B256 P32768), ~0.9 s of sustained load when timed second,
  // before the narrow and half-target cascades. There the half-target cascade, the same GPU work
  // as the cascade (128 items on 128 CTAs either way), read 12-37% slower than the cascade timed
  // before plain (s77, s82), while the measured choice's interleaved timing read the two within
  // 0.5% (s77, s81): a clock lowered by the load before it, as sessions 43, 54 and 57 saw after
  // long runs, is the likely cause (bench/RESULTS.md, session 83; s83-run1.sh times both orders).
  // The sampled check after the timings idles the GPU on the CPU reference before the next shape.
  auto time_plan = [&](const CascadePlan& plan) {
    gpu.LoadPlan(plan);
    return time_us([&] { gpu.RunCascade(args); });
  };
  const bool time_plain = !known && p.has_plain;
  if (known) {
    row.cascade_us = known->cascade_us;
    row.plain_us = known->plain_us;
    row.narrow_us = known->narrow_us;
    row.half_us = known->half_us;
  } else {
    row.cascade_us = measure(p.cascade, "cascade");
    if (time_plain && cfg.plain_first) row.plain_us = measure(p.plain, "plain");
    if (p.has_narrow) row.narrow_us = measure(p.narrow, "narrow");
    if (p.has_half) row.half_us = measure(p.half, "half");
  }
  const bool choice_own = !p.choice_is_cascade && !p.choice_is_plain && !p.choice_is_narrow && !p.choice_is_half;
  if (choice_own) row.choice_us = time_plan(p.choice);

  // The measured choice: a fresh MeasuredPlanner times the near ties its own way (median of 7,
  // flushed), then the plan it kept is timed here like the others (or takes their time).
  kernels::MeasuredPlanner measured_planner(cfg.measured_options);
  kernels::MeasuredChoiceReport measured_report;
  const CascadePlan measured = measured_planner.Plan(p.batch, p.pool, p.choose, gpu, args.kv, &measured_report);
  if (measured_report.timed) row.measured_name = kernels::PlanCandidateName(measured_report.chosen);
  row.measured_confirm_timed = measured_report.confirm_timed;
  row.measured_overturned = measured_report.confirm_timed && !measured_report.confirmed;
  const std::vector<int32_t> measured_flat = kernels::ScheduleKey(measured);
  const bool measured_is_choice = measured_flat == kernels::ScheduleKey(p.choice);
  const bool measured_is_cascade = measured_flat == kernels::ScheduleKey(p.cascade);
  const bool measured_is_plain = p.has_plain && measured_flat == kernels::ScheduleKey(p.plain);
  const bool measured_is_half = p.has_half && measured_flat == kernels::ScheduleKey(p.half);
  const bool measured_is_narrow = p.has_narrow && measured_flat == kernels::ScheduleKey(p.narrow);
  const bool measured_own =
      !measured_is_choice && !measured_is_cascade && !measured_is_plain && !measured_is_half && !measured_is_narrow;
  if (measured_own) row.measured_us = time_plan(measured);

  if (time_plain && !cfg.plain_first) row.plain_us = measure(p.plain, "plain");
  if (p.choice_is_cascade) row.choice_us = row.cascade_us;
  else if (p.choice_is_plain) row.choice_us = row.plain_us;
  else if (p.choice_is_narrow) row.choice_us = row.narrow_us;
  else if (p.choice_is_half) row.choice_us = row.half_us;
  if (measured_is_choice) row.measured_us = row.choice_us;
  else if (measured_is_cascade) row.measured_us = row.cascade_us;
  else if (measured_is_plain) row.measured_us = row.plain_us;
  else if (measured_is_half) row.measured_us = row.half_us;
  else if (measured_is_narrow) row.measured_us = row.narrow_us;

  // Check the chosen plans' outputs (poisoned first) against the CPU backend on sampled requests.
  if (cfg.check > 0) {
    std::mt19937_64 rng(seed + 7);
    const std::vector<int> sample = SampleRequests(s.batch, cfg.check, rng);
    std::vector<uint16_t> k_host(kv_elems), v_host(kv_elems), q_host(n);
    gpu.CopyToHost(k_host.data(), args.kv.k, kv_elems * 2);
    gpu.CopyToHost(v_host.data(), args.kv.v, kv_elems * 2);
    gpu.CopyToHost(q_host.data(), args.q, n * 2);
    const HostStates want = CpuReference(p.pool, k_host, v_host, p.batch, sample, q_host);
    for (const CascadePlan* plan : {&p.choice, &measured}) {
      gpu.LoadPlan(*plan);
      gpu.Fill(args.v_out, 0xFF, n * 4);
      gpu.Fill(args.s_out, 0xFF, rows * 4);
      gpu.RunCascade(args);
      gpu.Synchronize();
      HostStates got{std::vector<float>(n), std::vector<float>(rows)};
      gpu.CopyToHost(got.v.data(), args.v_out, n * 4);
      gpu.CopyToHost(got.s.data(), args.s_out, rows * 4);
      Row check_row;
      if (!CheckRows(got, want, sample, s.h_qo, s.head_dim, s.dtype, &check_row)) row.wrong = 1;
      if (measured_is_choice) break;  // the same plan: checked once
    }
  }
  return row;
}
#endif

// Runs --calibrate and/or --planner-check over cfg.shapes; returns the process exit status.
// `params`: the --cost-model file's (model_given) or the built-in H200 parameters; without a file,
// the backend's own model where its options carry one (its TMA decode's warps, DefaultPlanOptions).
int RunPlannerModes(Backend* backend, bool use_gpu, const Config& cfg, uint64_t seed0, bool check,
                    const std::string& calibrate_path, kernels::CostModelParams params, bool model_given) {
  const bool calibrate = !calibrate_path.empty();
  kernels::PlanOptions base = kernels::H200BackendPlanOptions();
  if (use_gpu) base = backend->DefaultPlanOptions();
  if (!model_given && base.cost_model) params = *base.cost_model;
  std::printf("# plan options: target_items %d, prefix_target_items %d, prefix_tile_rows %d (narrow %d), "
              "min_prefix_chunk %d (fine %d), min_decode_chunk %d, tiny prefix %d tokens (plain within %.0f%%; "
              "head_dim %d)%s\n",
              base.target_items, base.prefix_target_items, base.prefix_tile_rows, base.narrow_tile_rows,
              base.min_prefix_chunk,
              base.fine_prefix_chunk, base.min_decode_chunk, base.tiny_prefix_tokens, base.tiny_prefix_margin * 100,
              base.tiny_prefix_head_dim,
              use_gpu ? "" : " (the CUDA backend's on a 132-SM H200; no GPU here)");
  if (!use_gpu) {
    PREFIXD_CHECK_ARG(!calibrate, "--calibrate needs a GPU (it times the CUDA backend's parts)");
    std::printf("# NO GPU: the planner's choices and the cost model's predictions only (nothing timed)\n");
    PrintPlannerHeader(false);
    for (size_t i = 0; i < cfg.shapes.size(); ++i) {
      PlannerRow row;
      row.shape = cfg.shapes[i];
      row.plans = MakePlannerPlans(cfg.shapes[i], seed0 + 1000 * i, base, params);
      PrintPlannerRow(row, false);
    }
    return 0;
  }
  int status = 0;
#ifdef PREFIXD_HAVE_CUDA
  auto& gpu = static_cast<kernels::cuda::CudaBackend&>(*backend);
  std::vector<PlannerRow> first_pass;
  if (calibrate) {
    std::vector<kernels::CostSample> samples;
    std::printf("# calibration: every part of the cascade, the plain layout, the narrow and the half cascade timed "
                "alone, and their totals\n");
    PrintPlannerHeader(false);
    for (size_t i = 0; i < cfg.shapes.size(); ++i) {
      first_pass.push_back(RunPlannerShape(gpu, cfg.shapes[i], cfg, seed0 + 1000 * i, base, params, &samples, nullptr));
      PrintPlannerRow(first_pass.back(), false);
      status |= first_pass.back().wrong;
    }
    const double before = kernels::CostFitError(samples, params);
    const kernels::CostModelParams fitted = kernels::FitCostModel(samples, params);
    const double after = kernels::CostFitError(samples, fitted);
    std::printf("#\n# calibration samples (%zu): measured us, predicted before / after the fit\n", samples.size());
    for (const kernels::CostSample& s : samples)
      std::printf("#   %-60s %10.1f %10.1f %10.1f\n", s.label.c_str(), s.measured_us,
                  kernels::PredictPart(s.profile, params, s.part), kernels::PredictPart(s.profile, fitted, s.part));
    std::printf("# fit: RMS ln(predicted/measured) %.4f -> %.4f; parameters written to %s:\n%s", before, after,
                calibrate_path.c_str(), fitted.ToText().c_str());
    fitted.Save(calibrate_path);
    params = fitted;
  }
  if (check) {
    std::printf("#\n# planner check: choice / min(cascade, plain, narrow, half) must be <= 1.05 on every shape\n");
    std::printf("# layouts timed one after the other: %s\n",
                cfg.plain_first ? "cascade, plain, narrow, half, then the choice and the measured choice where "
                                  "plans of their own (--planner-order plain-first)"
                                : "cascade, narrow, half, the choice and the measured choice where plans of their "
                                  "own, then plain decode (--planner-order plain-last)");
    std::printf("# measured choice: %s queries, second timing of a switch off the cascade: %s\n",
                kernels::TimingQueriesName(cfg.measured_options.queries),
                cfg.measured_options.confirm_rounds > 0
                    ? (std::to_string(cfg.measured_options.confirm_rounds) + " rounds").c_str()
                    : "off");
    PrintPlannerHeader(true);
    int slow = 0, wrong = 0, slower_than_plain = 0, slower_than_two = 0;
    double worst = 0, worst_to_plain = 0, worst_to_two = 0;
    int measured_timed = 0, measured_over_plain = 0, measured_over_two = 0, measured_over_all = 0;
    int measured_confirmed = 0, measured_overturned = 0;
    double measured_worst_plain = 0, measured_worst_two = 0, measured_worst_all = 0;
    for (size_t i = 0; i < cfg.shapes.size(); ++i) {
      const PlannerRow* known = calibrate ? &first_pass[i] : nullptr;
      const PlannerRow row = RunPlannerShape(gpu, cfg.shapes[i], cfg, seed0 + 1000 * i, base, params, nullptr, known);
      PrintPlannerRow(row, true);
      slow += row.Ratio() > 1.05;
      slower_than_plain += row.RatioToPlain() > 1.05;
      slower_than_two += row.RatioToBetterOfTwo() > 1.05;
      worst_to_two = std::max(worst_to_two, row.RatioToBetterOfTwo());
      wrong += row.wrong;
      worst = std::max(worst, row.Ratio());
      worst_to_plain = std::max(worst_to_plain, row.RatioToPlain());
      measured_timed += row.measured_name != "-";
      measured_confirmed += row.measured_confirm_timed;
      measured_overturned += row.measured_overturned;
      measured_over_plain += row.MeasuredToPlain() > 1.05;
      measured_over_two += row.MeasuredToBetterOfTwo() > 1.05;
      measured_worst_plain = std::max(measured_worst_plain, row.MeasuredToPlain());
      measured_worst_two = std::max(measured_worst_two, row.MeasuredToBetterOfTwo());
      measured_over_all += row.MeasuredRatio() > 1.05;
      measured_worst_all = std::max(measured_worst_all, row.MeasuredRatio());
    }
    std::printf("# planner check: choice / plain (the performance issue's bar, <= 1.05): worst %.3f, shapes over: %d\n",
                worst_to_plain, slower_than_plain);
    std::printf("# planner check: choice / min(cascade, plain) (the issue's item 4, <= 1.05): worst %.3f, shapes over: %d\n",
                worst_to_two, slower_than_two);
    std::printf("# measured choice (near ties timed on %d of %zu shapes): / plain worst %.3f, shapes over 1.05: %d; "
                "/ min(cascade, plain) worst %.3f, shapes over 1.05: %d; / the fastest timed layout worst %.3f, "
                "shapes over 1.05: %d\n",
                measured_timed, cfg.shapes.size(), measured_worst_plain, measured_over_plain, measured_worst_two,
                measured_over_two, measured_worst_all, measured_over_all);
    if (cfg.measured_options.confirm_rounds > 0)
      std::printf("# measured choice: a switch off the cascade timed again on %d shapes, overturned on %d\n",
                  measured_confirmed, measured_overturned);
    std::printf("# planner check: choice / the fastest timed layout: worst ratio %.3f; shapes over 1.05: %d; wrong "
                "results: %d %s\n", worst, slow, wrong,
                slow == 0 && wrong == 0 ? "OK" : "FAILED");
    status |= slow > 0 || wrong > 0;
  }
#endif
  return status ? 1 : 0;
}

// --fit-logs: the cost model fitted offline (no GPU) to the step times of --planner-check logs, so
// that a planner check already run on the device serves as a calibration too. Per logged shape the
// layouts' plans are made again (they do not depend on the model: the layout choice is off) and
// each timed one is a whole-step sample (CostPart::kTotal): the cascade, plain decode, the narrow
// and the half-target cascades, and the model's choice where this build, with the built-in model
// the logs were made with, names it as the log does (a choice identical to another layout is that
// sample already). Prints each log's RMS ln(predicted / measured) under `params` and, with
// `calibrate_path`, under the parameters fitted from them (written there); then the model's choice
// under the final parameters judged by the logged times as --planner-check judges it (choice /
// min(cascade, plain)); a choice no log timed is counted as untimed, not judged.
int RunFitLogs(const std::vector<std::string>& logs, const std::string& calibrate_path, kernels::CostModelParams params,
               bool model_given) {
  const kernels::PlanOptions base = kernels::H200BackendPlanOptions();
  const kernels::CostModelParams log_model = base.cost_model ? *base.cost_model : kernels::CostModelParams::H200();
  if (!model_given) params = log_model;
  struct Logged {
    LoggedPlannerRow row;
    Shape shape;
    PlannerPlans made;       // with the logs' model
    bool choice_sample = false;  // the logged choice is a plan of its own, remade as the log named it
  };
  std::vector<Logged> rows;
  std::vector<kernels::CostSample> samples;
  std::vector<int> sample_log;  // per sample, its log's index in `logs`
  for (size_t f = 0; f < logs.size(); ++f) {
    for (LoggedPlannerRow& r : ReadPlannerLog(logs[f])) {
      Logged l;
      l.shape = Shape{kernels::ParseDType(r.dtype), r.page_size, r.h_qo, r.h_kv, r.head_dim,
                      r.batch, r.prefix, r.suffix};
      l.made = MakePlannerPlans(l.shape, 1, base, log_model);
      const PlannerPlans& p = l.made;
      auto add = [&](const CascadePlan& plan, double us, const char* layout) {
        if (std::isnan(us)) return;
        samples.push_back(kernels::CostSample{kernels::ProfilePlan(plan, params), kernels::CostPart::kTotal, us, 1.0,
                                              r.source + " " + layout});
        sample_log.push_back(int(f));
      };
      add(p.cascade, r.cascade_us, "cascade");
      if (p.has_plain) add(p.plain, r.plain_us, "plain");
      if (p.has_narrow) add(p.narrow, r.narrow_us, "narrow");
      if (p.has_half) add(p.half, r.half_us, "half");
      const bool own_plan = !p.choice_is_cascade && !p.choice_is_plain && !p.choice_is_narrow && !p.choice_is_half;
      l.choice_sample = own_plan && p.choice_name == r.choice_name;
      if (l.choice_sample) add(p.choice, r.choice_us, ("choice " + p.choice_name).c_str());
      l.row = std::move(r);
      rows.push_back(std::move(l));
    }
  }
  std::printf("# offline fit (--fit-logs, no GPU): %zu shapes from %zu logs, %zu whole-step samples\n", rows.size(),
              logs.size(), samples.size());
  kernels::CostModelParams fitted = params;
  if (!calibrate_path.empty()) fitted = kernels::FitCostModel(samples, params);
  std::printf("# RMS ln(predicted / measured) per log: before%s\n", calibrate_path.empty() ? "" : " -> after the fit");
  for (size_t f = 0; f < logs.size(); ++f) {
    std::vector<kernels::CostSample> own;
    for (size_t i = 0; i < samples.size(); ++i)
      if (sample_log[i] == int(f)) own.push_back(samples[i]);
    std::printf("#   %-60s %4zu samples  %.4f", logs[f].c_str(), own.size(), kernels::CostFitError(own, params));
    if (!calibrate_path.empty()) std::printf(" -> %.4f", kernels::CostFitError(own, fitted));
    std::printf("\n");
  }
  std::printf("#   %-60s %4zu samples  %.4f", "all", samples.size(), kernels::CostFitError(samples, params));
  if (!calibrate_path.empty()) {
    std::printf(" -> %.4f\n# samples: measured us, predicted before / after the fit\n",
                kernels::CostFitError(samples, fitted));
    for (const kernels::CostSample& s : samples)
      std::printf("#   %-72s %10.1f %10.1f %10.1f\n", s.label.c_str(), s.measured_us,
                  kernels::PredictPart(s.profile, params, s.part), kernels::PredictPart(s.profile, fitted, s.part));
    fitted.Save(calibrate_path);
    std::printf("# fitted parameters written to %s:\n%s", calibrate_path.c_str(), fitted.ToText().c_str());
  } else {
    std::printf("\n");
  }

  // The model's choice under the final parameters, judged by the logged times.
  int judged = 0, untimed = 0, over = 0;
  double worst = 0;
  std::printf("# the model's choice with %s parameters, judged by the logged times (choice / min(cascade, plain)):\n",
              calibrate_path.empty() ? "these" : "the fitted");
  for (const Logged& l : rows) {
    const LoggedPlannerRow& r = l.row;
    kernels::PlanOptions choose = base;
    choose.choose_layout = true;
    choose.cost_model = std::make_shared<kernels::CostModelParams>(fitted);
    kernels::PlanReport report;
    const std::vector<int32_t> flat =
        kernels::ScheduleKey(kernels::PlanCascade(l.made.batch, l.made.pool, choose, &report));
    const PlannerPlans& p = l.made;
    double us = kNaN;
    if (flat == kernels::ScheduleKey(p.cascade)) us = r.cascade_us;
    else if (p.has_plain && flat == kernels::ScheduleKey(p.plain)) us = r.plain_us;
    else if (p.has_narrow && flat == kernels::ScheduleKey(p.narrow)) us = r.narrow_us;
    else if (p.has_half && flat == kernels::ScheduleKey(p.half)) us = r.half_us;
    else if (l.choice_sample && flat == kernels::ScheduleKey(p.choice)) us = r.choice_us;
    if (std::isnan(us)) {
      ++untimed;
      continue;
    }
    const double best = std::isnan(r.plain_us) ? r.cascade_us : std::min(r.cascade_us, r.plain_us);
    const double ratio = us / best;
    ++judged;
    worst = std::max(worst, ratio);
    if (ratio > 1.05) {
      ++over;
      std::printf("#   over 5%%: %s %d/%d D%d B%d P%d S%d page %d: %.1f us against %.1f (%.3f)  [%s]\n",
                  r.dtype.c_str(), r.h_qo, r.h_kv, r.head_dim, r.batch, r.prefix, r.suffix, r.page_size, us, best,
                  ratio, r.source.c_str());
    }
  }
  std::printf("# the model's choice: %d shapes judged, worst %.3f, over 1.05: %d; untimed (a plan no log timed): %d\n",
              judged, worst, over, untimed);
  return 0;
}

std::pair<int, int> ParseHeads(const std::string& text) {
  const size_t slash = text.find('/');
  PREFIXD_CHECK_ARG(slash != std::string::npos, "--heads wants QO/KV pairs such as 32/8, got '" << text << "'");
  return {std::stoi(text.substr(0, slash)), std::stoi(text.substr(slash + 1))};
}

int Main(int argc, char** argv) {
  cxxopts::Options options("prefixd_kernel_bench",
                           "Times one cascade decode step (prefix kernel, suffix decode kernel, merge) per shape "
                           "against the device's measured copy bandwidth and GEMM rate.");
  // clang-format off
  options.add_options()
    ("heads", "query/KV head pairs, e.g. 32/32,32/8", cxxopts::value<std::vector<std::string>>()->default_value("32/32,32/8"))
    ("b,batch", "batch sizes B", cxxopts::value<std::vector<int>>()->default_value("64,256"))
    ("p,prefix", "shared prefix lengths P (tokens)", cxxopts::value<std::vector<int>>()->default_value("8192,32768"))
    ("s,suffix", "suffix lengths S (tokens per request)", cxxopts::value<std::vector<int>>()->default_value("256"))
    ("d,head-dim", "head dims (64, 128, 256)", cxxopts::value<std::vector<int>>()->default_value("128"))
    ("dtype", "fp16 or bf16 (list allowed)", cxxopts::value<std::vector<std::string>>()->default_value("fp16"))
    ("page-size", "tokens per KV page", cxxopts::value<int>()->default_value("16"))
    ("n,iters", "timed iterations (median reported; at least 30 recommended)", cxxopts::value<int>()->default_value("30"))
    ("w,warmup", "warm-up iterations", cxxopts::value<int>()->default_value("5"))
    ("no-flush", "do not flush L2 before each timed iteration (same as --flush none)")
    ("flush", "L2 flush before each timed iteration: write (256 MiB memset, leaves dirty lines), clean (the memset, "
              "then a 256 MiB read: clean lines only) or none", cxxopts::value<std::string>()->default_value("write"))
    ("no-fuse", "plan without the fused merge (every request through the merge kernel)")
    ("c,check", "requests checked against the CPU backend per shape (0: no check)", cxxopts::value<int>()->default_value("2"))
    ("no-baseline", "skip the non-cascade baseline")
    ("no-graph", "skip the CUDA-graph replay (otherwise timed interleaved with the step)")
    ("read-floor", "GPU: also time, interleaved with the step, a plain read of the shape's K/V bytes (each once, one "
                   "launch, no arithmetic; the faster of TMA evict-first and ld.global.nc): the read_us column, what a "
                   "memory-bound step cannot beat by much under the same method; and the same bytes as two launches, "
                   "the prefix's then the suffix's, back to back (read_split_us) and with the second a programmatic "
                   "dependent that reads, then waits for the first (read_pdl_us); and each part's bytes alone "
                   "(read_prefix_us, read_suffix_us)")
    ("output-forms", "GPU: also time, interleaved with the step, the step writing one copy of its output instead of "
                     "all three (o in the input dtype, fp32 v, s): o and s (FlashInfer's cascade outputs) and v and s "
                     "(the distributed engine's); each checked bit for bit against the full step (note column)")
    ("measured-choice", "GPU: plan each step as the worker does on CUDA (kernels::MeasuredPlanner: where the cost "
                        "model's choice is a near tie, the candidates timed once by the planner's own method and the "
                        "fastest kept; note column: what it kept and each candidate's time); default: the model's plan")
    ("queries", "GPU: the timed step's queries: random (uniform in [-1, 1), the default) or constant (every element "
                "0x3C3C, as the measured choice times by default): whether a step's time depends on its data",
     cxxopts::value<std::string>()->default_value("random"))
    ("planner-order", "the planner check's order of the layouts' timings: plain-last (the default: plain decode "
                      "after the others, whose clock its long runs lowered) or plain-first (as before session 83: "
                      "cascade, plain, narrow, half)",
     cxxopts::value<std::string>()->default_value("plain-last"))
    ("mc-queries", "the measured choice's timing queries (--measured-choice and --planner-check's measured column): "
                   "constant (0x3C3C, the worker's default) or random (seeded uniform in [-1, 1))",
     cxxopts::value<std::string>()->default_value("constant"))
    ("mc-confirm", "the measured choice's second timing: where a candidate beat the cascade, the two timed again for "
                   "this many rounds and the cascade kept unless it loses again (0: off, the worker's default)",
     cxxopts::value<int>()->default_value("0"))
    ("without-merge", "GPU, plans with a merge kernel: also time, interleaved with the step, the step without its "
                      "merge kernel (what the merge costs inside the step; note column)")
    ("beside", "GPU, concurrent plans: time the prefix part also beside each of these synthetic loads on the k SMs "
               "left to the decode (none, spin, fma, dram, l2; see bench/kernel/beside_load.h)",
     cxxopts::value<std::vector<std::string>>())
    ("cpu", "run the CPU backend even when a GPU is present")
    ("device", "CUDA device ordinal", cxxopts::value<int>()->default_value("0"))
    ("copy-gib", "size of the copy that measures bandwidth (GiB)", cxxopts::value<int>()->default_value("4"))
    ("gemm-n", "size n of the n^3 GEMM that measures the tensor-core rate", cxxopts::value<int>()->default_value("8192"))
    ("gemm-reps", "timed repetitions of that GEMM (the median is the rate; more: a sustained load, e.g. to read "
                  "the clock it runs at)", cxxopts::value<int>()->default_value("10"))
    ("settle-ms", "idle time after the ceilings' sustained load, before the first shape (ms; the clocks "
                  "recover from it, otherwise the first shape is timed slow)", cxxopts::value<int>()->default_value("1000"))
    ("seed", "random seed", cxxopts::value<uint64_t>()->default_value("12345"))
    ("csv", "write the rows as CSV to this file", cxxopts::value<std::string>())
    ("json", "write the rows and metadata as JSON to this file", cxxopts::value<std::string>())
    ("variants", "GPU: time each shape once per variant, each with a fresh backend, and print a shape x variant "
                 "table last. A variant is a '+'-joined list of presets (" + PresetNames() +
                 ") and NAME=VALUE environment settings, e.g. default,trigger,trigger+w1",
     cxxopts::value<std::vector<std::string>>())
    ("planner-check", "time, per shape, the cascade, plain decode, the cascades of narrow prefix items and of half "
                      "the prefix item target (where they differ) and the planner's choice "
                      "(PlanOptions::choose_layout with the cost model); exit 1 if any choice / the fastest of the "
                      "others > 1.05. Default grid: heads 32/32,32/8, B 16,64,256, "
                      "P 128,256,1024,8192,32768, S 32,256. Without a GPU: the choices and predictions only")
    ("calibrate", "time every part of each layout (cascade, plain, narrow and half cascades) per shape, fit the cost model to "
                  "them and write its key=value file here (same default grid; with --planner-check the check uses "
                  "the fitted model)",
     cxxopts::value<std::string>())
    ("cost-model", "cost model key=value file (default: the built-in H200 parameters)", cxxopts::value<std::string>())
    ("fit-logs", "no GPU needed: read these --planner-check logs (PATH, or PATH@PAGE_SIZE where not 16; made with the "
                 "built-in model), print the cost model's error on their step times and its choices judged by them; "
                 "with --calibrate FILE, fit the model to them first and write it there",
     cxxopts::value<std::vector<std::string>>())
    ("h,help", "print usage");
  // clang-format on
  cxxopts::ParseResult args;
  try {
    args = options.parse(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "prefixd_kernel_bench: " << e.what() << "\n" << options.help() << "\n";
    return 2;
  }
  if (args.count("help")) {
    std::cout << options.help() << "\n";
    return 0;
  }

  if (args.count("fit-logs")) {
    const bool model_given = args.count("cost-model") > 0;
    return RunFitLogs(args["fit-logs"].as<std::vector<std::string>>(),
                      args.count("calibrate") ? args["calibrate"].as<std::string>() : std::string(),
                      model_given ? kernels::CostModelParams::Load(args["cost-model"].as<std::string>())
                                  : kernels::CostModelParams::H200(),
                      model_given);
  }
  const bool use_gpu = kernels::CudaAvailable() && !args.count("cpu");
  Config cfg;
  cfg.iters = args["iters"].as<int>();
  cfg.warmups = args["warmup"].as<int>();
  cfg.settle_ms = args["settle-ms"].as<int>();
  PREFIXD_CHECK_ARG(cfg.settle_ms >= 0 && cfg.settle_ms <= 60000, "--settle-ms must be 0..60000, got " << cfg.settle_ms);
  cfg.check = args["check"].as<int>();
  const std::string flush = args["flush"].as<std::string>();
  PREFIXD_CHECK_ARG(flush == "write" || flush == "clean" || flush == "none",
                    "--flush must be write, clean or none, got '" << flush << "'");
  cfg.flush = !args.count("no-flush") && flush != "none";
#ifdef PREFIXD_HAVE_CUDA
  cfg.flush_mode = flush == "clean" ? FlushMode::kClean : FlushMode::kWrite;
#endif
  cfg.fuse = !args.count("no-fuse");
  cfg.baseline = !args.count("no-baseline");
  cfg.graph = !args.count("no-graph");
  cfg.read_floor = args.count("read-floor") > 0;
  cfg.output_forms = args.count("output-forms") > 0;
  PREFIXD_CHECK_ARG(!cfg.output_forms || use_gpu, "--output-forms needs a GPU (it times the step on the device)");
  cfg.without_merge = args.count("without-merge") > 0;
  cfg.measured_choice = args.count("measured-choice") > 0;
  PREFIXD_CHECK_ARG(!cfg.measured_choice || use_gpu, "--measured-choice needs a GPU (it times plans on the device)");
  const std::string queries = args["queries"].as<std::string>();
  PREFIXD_CHECK_ARG(queries == "constant" || queries == "random",
                    "--queries must be constant or random, got '" << queries << "'");
  cfg.constant_queries = queries == "constant";
  PREFIXD_CHECK_ARG(!cfg.constant_queries || use_gpu, "--queries constant needs a GPU (it fills the device step's "
                                                      "queries)");
  const std::string planner_order = args["planner-order"].as<std::string>();
  PREFIXD_CHECK_ARG(planner_order == "plain-last" || planner_order == "plain-first",
                    "--planner-order must be plain-last or plain-first, got '" << planner_order << "'");
  cfg.plain_first = planner_order == "plain-first";
  const std::string mc_queries = args["mc-queries"].as<std::string>();
  PREFIXD_CHECK_ARG(mc_queries == "constant" || mc_queries == "random",
                    "--mc-queries must be constant or random, got '" << mc_queries << "'");
  cfg.measured_options.queries =
      mc_queries == "random" ? kernels::TimingQueries::kRandom : kernels::TimingQueries::kConstant;
  cfg.measured_options.confirm_rounds = args["mc-confirm"].as<int>();
  PREFIXD_CHECK_ARG(cfg.measured_options.confirm_rounds >= 0 && cfg.measured_options.confirm_rounds <= 1000,
                    "--mc-confirm must be 0..1000, got " << cfg.measured_options.confirm_rounds);
  PREFIXD_CHECK_ARG(!cfg.without_merge || use_gpu, "--without-merge needs a GPU (it times the step on the device)");
  PREFIXD_CHECK_ARG(!cfg.read_floor || use_gpu, "--read-floor needs a GPU (it times plain reads on the device)");
  if (args.count("beside")) {
    cfg.beside = args["beside"].as<std::vector<std::string>>();
#ifdef PREFIXD_HAVE_CUDA
    for (const std::string& load : cfg.beside) ParseBesideLoad(load);  // refused before any work
#else
    PREFIXD_THROW(ErrorKind::kInvalidArgument, "--beside needs the CUDA backend (this build has none)");
#endif
  }
  cfg.copy_bytes = int64_t(args["copy-gib"].as<int>()) << 30;
  cfg.gemm_n = args["gemm-n"].as<int>();
  cfg.gemm_reps = args["gemm-reps"].as<int>();
  PREFIXD_CHECK_ARG(cfg.gemm_n >= 256 && cfg.gemm_n <= 65536, "--gemm-n must be in [256, 65536], got " << cfg.gemm_n);
  PREFIXD_CHECK_ARG(cfg.gemm_reps >= 1 && cfg.gemm_reps <= 100000,
                    "--gemm-reps must be in [1, 100000], got " << cfg.gemm_reps);
  // At least one warm-up: a shape's first run may allocate or wait on the device (workspaces, the
  // plan's first upload), which behind the stream's hold kernel would wait until the hold times out.
  PREFIXD_CHECK_ARG(cfg.iters >= 1 && cfg.warmups >= 1, "--iters and --warmup must be ≥ 1, got " << cfg.iters << " and "
                                                                                                 << cfg.warmups);
  if (args.count("variants"))
    for (const std::string& v : args["variants"].as<std::vector<std::string>>()) cfg.variants.push_back(ParseVariant(v));

  // Without a GPU, and unless the user named shapes, a small shape the CPU reference runs quickly.
  const bool user_shape = args.count("heads") || args.count("batch") || args.count("prefix") ||
                          args.count("suffix") || args.count("head-dim");
  std::vector<std::string> heads = args["heads"].as<std::vector<std::string>>();
  std::vector<int> batches = args["batch"].as<std::vector<int>>(), prefixes = args["prefix"].as<std::vector<int>>(),
                   suffixes = args["suffix"].as<std::vector<int>>(), dims = args["head-dim"].as<std::vector<int>>();
  const bool planner_modes = args.count("planner-check") || args.count("calibrate");
  if (planner_modes && !user_shape) {
    heads = {"32/32", "32/8"};
    batches = {16, 64, 256};
    prefixes = {128, 256, 1024, 8192, 32768};
    suffixes = {32, 256};
  } else if (!use_gpu && !user_shape) {
    heads = {"8/2"};
    batches = {4};
    prefixes = {512};
    suffixes = {32};
    dims = {64};
    cfg.iters = std::min(cfg.iters, 10);
    cfg.warmups = std::min(cfg.warmups, 2);
  }
  for (const std::string& dt : args["dtype"].as<std::vector<std::string>>())
    for (const std::string& hh : heads)
      for (int d : dims)
        for (int b : batches)
          for (int p : prefixes)
            for (int s : suffixes) {
              Shape shape;
              shape.dtype = kernels::ParseDType(dt);
              shape.page_size = args["page-size"].as<int>();
              PREFIXD_CHECK_ARG(shape.page_size > 0 && shape.page_size <= 4096,
                                "--page-size must be in [1, 4096], got " << shape.page_size);
              PREFIXD_CHECK_ARG(b > 0 && p >= 0 && s >= 0,
                                "bad shape: batch " << b << ", prefix " << p << ", suffix " << s);
              // MakeBatch's pool, refused here by name (before any GPU work) where it is too large.
              kernels::OneGroupPoolPages(p, b, s, shape.page_size);
              std::tie(shape.h_qo, shape.h_kv) = ParseHeads(hh);
              shape.head_dim = d;
              shape.batch = b;
              shape.prefix = p;
              shape.suffix = s;
              cfg.shapes.push_back(shape);
            }

  std::unique_ptr<Backend> backend;
  kernels::BackendOptions backend_options;
  backend_options.device = args["device"].as<int>();
  Ceilings ceilings;
  std::printf("# prefixd_kernel_bench: one cascade decode step (one layer) per shape: prefix part (multi-query\n"
              "#   kernel over the shared prefix), suffix part (paged decode kernel), merge (⊕), whole step\n");
  if (use_gpu) {
#ifdef PREFIXD_HAVE_CUDA
    backend = kernels::MakeCudaBackend(backend_options);
    std::printf("# backend: %s\n", backend->Describe().c_str());
    ceilings.copy_bw = MeasureCopyBandwidth(cfg.copy_bytes, 10);
    ceilings.gemm = MeasureGemmRate(cfg.gemm_n, cfg.gemm_reps);
    // With bf16 shapes, the same GEMM in bf16 as information (the floors use the fp16 rate, as the
    // issue's method says): bf16 has run the compute-bound prefix 2-4% faster than fp16 at the
    // same SM clock (bench/RESULTS.md, session 72), and this says whether cuBLAS does too.
    const bool any_bf16 = std::any_of(cfg.shapes.begin(), cfg.shapes.end(),
                                      [](const Shape& shape) { return shape.dtype == kernels::DType::kBFloat16; });
    const double gemm_bf16 = any_bf16 ? MeasureGemmRate(cfg.gemm_n, cfg.gemm_reps, kernels::DType::kBFloat16) : 0.0;
    // The GEMM's ~15 ms at full power leave the SM clock lowered for a while: without a pause the
    // first shape's prefix part was timed up to 15% slow (H200, bench/RESULTS.md session 43), the
    // later shapes not (each follows its predecessor's CPU check, an idle gap).
    std::this_thread::sleep_for(std::chrono::milliseconds(cfg.settle_ms));
    std::printf("# method: CUDA events; stream held by a spin kernel until all timed work is queued; %s;\n"
                "#   %d warm-ups; median of %d iterations; %d ms idle after the ceilings (--settle-ms)\n",
                !cfg.flush                             ? "L2 NOT flushed (--flush none)"
                : cfg.flush_mode == FlushMode::kClean ? "L2 flushed clean (256 MiB write, then 256 MiB read) before each iteration"
                                                       : "L2 flushed (256 MiB write: dirty lines) before each iteration",
                cfg.warmups, cfg.iters, cfg.settle_ms);
    {
      std::printf("# empty region (one empty kernel between the events, same method): %.1f us\n",
                  EmptyRegionUs(backend->stream(), TimingFor(cfg)));
    }
    if (cfg.read_floor)
      std::printf("# read floors (--read-floor): every read form checked to read each byte once (XOR of %.1f MB "
                  "against the host's)\n",
                  double(CheckPlainReads(backend->stream())) * 1e-6);
    std::printf("# queries: %s\n", cfg.constant_queries ? "CONSTANT, every element 0x3C3C (--queries constant)"
                                                          : "random, uniform in [-1, 1)");
    std::printf("# plan: fused merge %s (--no-fuse turns it off)\n", cfg.fuse ? "on" : "off");
    std::printf("# ceilings measured now: copy BW %.2f TB/s = (read+written bytes)/time of a %d GiB D2D copy;\n"
                "#   GEMM %.0f TFLOP/s = cuBLAS fp16 %d^3 (fp32 accumulation) on random data, median of %d\n",
                ceilings.copy_bw / 1e12, int(cfg.copy_bytes >> 30), ceilings.gemm / 1e12, cfg.gemm_n, cfg.gemm_reps);
    if (gemm_bf16 > 0)
      std::printf("#   (information: the same GEMM in bf16 %.0f TFLOP/s, %.3f x the fp16 rate; the floors use "
                  "fp16's)\n",
                  gemm_bf16 / 1e12, gemm_bf16 / ceilings.gemm);
#endif
  } else {
    backend = kernels::MakeCpuBackend(backend_options);
    std::printf("# backend: %s -- NO GPU: these are the CPU reference backend's timings (host clock, whole step\n"
                "#   only), not a GPU's; no ceilings, floors or ratios. %d warm-ups, median of %d.\n",
                backend->Describe().c_str(), cfg.warmups, cfg.iters);
  }
  if (!use_gpu)
    std::printf("# check: the non-cascade baseline's outputs vs the cascade's, all requests (CPU backend)\n");
  std::printf("# floors: prefix = max(4*B*Hqo*P*D / GEMM, 2*P*Hkv*D*bytes / BW); suffix = max(4*B*Hqo*S*D / GEMM,\n"
              "#   2*B*S*Hkv*D*bytes / BW); ratio = total / (prefix floor + suffix floor); b_rat = baseline / floors;\n"
              "#   speedup = baseline / total; GB/s counts each K/V byte once; sfxGB/s, %%copy: suffix part alone\n"
              "# check: sampled requests vs the CPU backend (rel. L2 error of v, max LSE error), tolerance %.0e fp16 / %.0e bf16\n",
              Tolerance(DType::kFloat16), Tolerance(DType::kBFloat16));
  if (planner_modes) {
    const kernels::CostModelParams params = args.count("cost-model")
                                                ? kernels::CostModelParams::Load(args["cost-model"].as<std::string>())
                                                : kernels::CostModelParams::H200();
    std::printf("# cost model: %s\n", args.count("cost-model") ? args["cost-model"].as<std::string>().c_str()
                                                               : "built-in H200 defaults");
    return RunPlannerModes(backend.get(), use_gpu, cfg, args["seed"].as<uint64_t>(), args.count("planner-check") > 0,
                           args.count("calibrate") ? args["calibrate"].as<std::string>() : std::string(), params,
                           args.count("cost-model") > 0);
  }
  PrintHeader();

  std::vector<Row> rows;
  int wrong = 0;
  if (!use_gpu && !cfg.variants.empty()) {
    std::printf("# --variants ignored: no GPU (the variants are CUDA backend settings)\n");
    cfg.variants.clear();
  }
  VariantEnvironment variant_env(cfg.variants);
  for (size_t i = 0; i < cfg.shapes.size(); ++i) {
    const uint64_t seed = args["seed"].as<uint64_t>() + 1000 * i;
    Row row;
#ifdef PREFIXD_HAVE_CUDA
    // Every variant of a shape with the same seed (same data, same check sample); the baseline
    // (variant-independent apart from the decode toggles) only with the first.
    for (size_t j = 0; j < cfg.variants.size(); ++j) {
      variant_env.Apply(cfg.variants[j]);
      std::unique_ptr<Backend> vb = kernels::MakeCudaBackend(backend_options);
      Config vcfg = cfg;
      vcfg.baseline = cfg.baseline && j == 0;
      row = RunGpuShape(static_cast<kernels::cuda::CudaBackend&>(*vb), cfg.shapes[i], vcfg, seed);
      vb.reset();
      variant_env.Restore();
      row.variant = cfg.variants[j].name;
      ComputeDerived(ceilings, &row);
      PrintRow(row);
      wrong += row.wrong;
      rows.push_back(row);
    }
    if (!cfg.variants.empty()) continue;
    if (use_gpu) row = RunGpuShape(static_cast<kernels::cuda::CudaBackend&>(*backend), cfg.shapes[i], cfg, seed);
#endif
    if (!use_gpu) row = RunCpuShape(*backend, cfg.shapes[i], cfg, seed);
    if (use_gpu) ComputeDerived(ceilings, &row);
    else row.speedup = row.base_us / row.total_us;
    PrintRow(row);
    wrong += row.wrong;
    rows.push_back(row);
  }
  PrintVariantTable(rows, cfg.variants);
  if (args.count("csv")) WriteCsv(args["csv"].as<std::string>(), rows);
  if (args.count("json")) WriteJson(args["json"].as<std::string>(), rows, backend->Describe(), ceilings, cfg);
  std::printf("# wrong results: %d %s\n", wrong, wrong == 0 ? "OK" : "FAILED");
  return wrong == 0 ? 0 : 1;
}

}  // namespace
}  // namespace prefixd::bench

int main(int argc, char** argv) {
  return prefixd::RunToolMain("prefixd_kernel_bench", prefixd::bench::Main, argc, argv, 3);
}
