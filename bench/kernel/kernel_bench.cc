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
// timed with the host clock and labelled as such. The planner modes (--planner-check, --calibrate,
// --fit-logs) are in planner_check.cc; what the two share, in kernel_bench_common.h.
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

#include "bench/kernel/kernel_bench_common.h"
#include "bench/kernel/planner_check.h"
#include "prefixd/common/error.h"
#include "prefixd/common/tool_main.h"
#include "prefixd/kernels/backend.h"
#include "prefixd/kernels/cost_model.h"
#include "prefixd/kernels/measured_choice.h"
#include "prefixd/kernels/plan.h"
#include "prefixd/kernels/prefix_kv_tile.h"

#ifdef PREFIXD_HAVE_CUDA
#include "bench/kernel/bench_cuda.h"
#include "bench/kernel/beside_load.h"
#include "kernels/cuda/cuda_backend.h"
#endif

namespace prefixd::bench {
namespace {

struct Ceilings {
  double copy_bw = kNaN;  // bytes (read + written) per second
  double gemm = kNaN;     // FLOP/s
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
  DeviceStep step(gpu, pool, int(rows), s.head_dim, s.dtype, seed);
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
    kernels::MeasuredPlanner planner;
    kernels::MeasuredChoiceReport report;
    CascadePlan chosen = planner.Plan(batch, pool, plan_options, gpu, args.kv, &report);
    row.note += std::string(" measured-choice(") + kernels::PlanCandidateName(report.chosen);
    if (report.timed)
      for (size_t i = 0; i < report.candidates.size(); ++i)
        row.note += std::string(i == 0 ? "; timed " : ", ") + kernels::PlanCandidateName(report.candidates[i]) +
                    Fmt(" %.1f us", report.measured_us[i]);
    else
      row.note += "; no near tie";
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
  if (!plan.prefix_items.empty()) {
    // What the prefix kernel's speed depends on besides the shape (session 85's A/B split by item
    // length): the plan's K/V tile (PREFIXD_SM90A_KV_TILE, where set, overrides it in the kernel), the
    // items' mean tokens and their largest row count.
    int64_t tokens = 0;
    int rows = 0;
    for (const auto& item : plan.prefix_items) {
      tokens += item.kv_end - item.kv_begin;
      rows = std::max(rows, item.row_end - item.row_begin);
    }
    row.note += " prefix-plan(tile " + std::to_string(kernels::ChoosePrefixKvTileTokens(plan)) + ", items of " +
                Fmt("%.0f", double(tokens) / double(plan.prefix_items.size())) + " tokens, rows <= " +
                std::to_string(rows) + ")";
  }
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
    ("planner-order", "the planner check's order of the layouts' timings: plain-last (the default: plain decode "
                      "after the others, whose clock its long runs lowered) or plain-first (as before session 83: "
                      "cascade, plain, narrow, half)",
     cxxopts::value<std::string>()->default_value("plain-last"))
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
  const std::string planner_order = args["planner-order"].as<std::string>();
  PREFIXD_CHECK_ARG(planner_order == "plain-last" || planner_order == "plain-first",
                    "--planner-order must be plain-last or plain-first, got '" << planner_order << "'");
  cfg.plain_first = planner_order == "plain-first";
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
