#include "prefixd/kernels/cost_model.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "prefixd/common/error.h"
#include "prefixd/kernels/decode_kernel_choice.h"
#include "prefixd/kernels/prefix_balance.h"

namespace prefixd::kernels {
namespace {

// The decode's byte time of the 16-row group relative to the calibrated tensor-core groups (see
// PredictCost).
constexpr double kSixteenRowDecodeWork = 1.15;

constexpr double kBytesPerElement = 2;  // fp16 / bf16 (DTypeBytes)
constexpr int kPrefixKvTile = 128;      // tokens per K/V tile of the wgmma prefix kernel (the model's unit)
constexpr int kPrefixRowUnit = 64;      // rows per consumer warpgroup

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Time of one 64-row × 128-token unit of prefix work at head_dim d, µs (the persistent wgmma
// kernel, one CTA per SM, at every head_dim since session 27). The overhead is per K/V tile (its
// barriers, its softmax over 64 rows × tile tokens), and at head_dim 256 the kernel's tiles are
// 64 tokens (WgmmaPrefixConfig::BLOCK_N), two per unit: measured 1.76 µs per unit there against
// 0.88 at head_dim 128, i.e. the same per FLOP (bench/RESULTS.md, session 27). At head_dim 64 the
// kernel's tiles are 192 tokens for plans of long items since session 43 (128 for short ones,
// ChoosePrefixKvTileTokens); the model keeps its 128-token unit there (one overhead per unit, as
// calibrated on 128-token tiles), which overstates long items' overhead by up to a third: head_dim
// 64's predictions err slow there, and the planner's choices rank by them alike (its check at
// head_dim 64, 60 shapes, session 43: no choice more than 1.6% slower than plain decode). At
// head_dim 128 plans of long items in wide CTAs take 160-token tiles since session 58 (prefix
// parts up to 2.4% faster than the model's 128-token units say).
double PrefixUnitUs(const PlanProfile& p, const CostModelParams& c) {
  const double tiles_per_unit = p.head_dim == 256 ? 2.0 : 1.0;
  const double rate = c.prefix_tflops * 1e12 / c.num_sms;  // FLOP/s per CTA
  return tiles_per_unit * c.prefix_unit_overhead_us + 4.0 * kPrefixRowUnit * kPrefixKvTile * p.head_dim / rate * 1e6;
}

}  // namespace

// Defaults: FitCostModel on the latest H200 calibration, which cost_model_test.cc holds as data
// (kS24Rows) and checks them against; PREFIXD_COST_MODEL_PRINT_FIT=1 prefixd_unit_tests
// --gtest_filter='CostModel.FitConvergesOnTheH200S24*' prints the fit. The older rows there
// (bench/RESULTS.md sessions 1-2, the session-8 calibration) are of older kernels and only bound
// the defaults loosely; they pin what the calibration grid lacks (head_dim 64 and 256, the
// unfused merge, long suffixes).
// What sets what: prefix_* the prefix parts (prefix_gbs: 32/32 P ≥ 8192); decode_*.hbm_gbs the
// cascade decodes (distinct pages only, ~4.0 TB/s for both kernels); decode_*.stream_gbs the plain
// decodes' L2 re-reads of the prefix (8.1 TB/s tensor cores, 5.3 TB/s CUDA cores) ON TOP of their
// HBM time; decode_tensor_cores.cta_gbs the B = 16 rows and the unsplit plain variants (128 items
// of 1056 tokens: 36.5 µs vs 26.8 split); fused_chunk_us the cascade decode at P ≥ 8192 vs P ≤ 256
// (16 prefix chunks: +3.9 µs at B16, 1 wave); merge_* the plain layouts' merges; step_fixed_us
// and pdl_overlap_* the totals against the parts alone (step_fixed_us fits to ~0: the launch terms
// carry the per-region floor); narrow_overlap_frac the cascade totals whose prefix items fit the
// narrow CTA; prefix_cta_gbs the cascades of 64-row prefix items (PlanOptions::narrow_tile_rows),
// whose CTAs stream each item's K/V once per 64 rows.
CostModelParams CostModelParams::H200() {
  // FitCostModel on the calibration of session 24, runs 2-3 (`prefixd_kernel_bench --calibrate`,
  // 432 fp16 shapes: heads 32/32, 32/8, 64/8, B 8-256, P 128-32768, S 32-512; the cascade, plain
  // decode and, where it differs, the cascade of 64-row prefix items, every part timed alone;
  // bench/kernel/results/s24/run2-calibrate.txt, run3-calibrate.txt): ln-error RMS 0.072 over its
  // 3058 samples (session 23's defaults: 0.085, their narrow samples the worst), 0.072 on session
  // 23's run of the same grid. prefix_cta_gbs is fitted since: the 64-row items' prefix parts are
  // bound by it (each CTA streams its items' K/V once per 64 rows). The D = 256 shapes ran on the
  // mma.sync kernel then; since session 27 they run on the wgmma kernel, which these parameters
  // predict within a few % (PrefixUnitUs; cost_model_test.cc holds its D = 256 prefix parts).
  CostModelParams c;
  c.num_sms = 132;
  c.step_fixed_us = 1.998;
  c.pdl_overlap_us = 3.712;
  c.pdl_overlap_frac = 0.004391;
  c.narrow_overlap_frac = 0.1358;
  c.prefix_launch_us = 6.316;
  c.prefix_item_us = 0.9961;
  c.prefix_unit_overhead_us = 0.3715;
  c.prefix_tflops = 1092;
  c.prefix_gbs = 3676;
  c.prefix_cta_gbs = 47.33;
  c.decode_tensor_cores = DecodeKernelCost{4, 3.748, 3.195, 9685, 3944, 58.87};
  c.decode_cuda_cores = DecodeKernelCost{6, 5.072, 0.7610, 6306, 4141, 14.81};
  c.fused_prefix_us = 1.123;
  c.fused_chunk_us = 0.1868;
  c.merge_launch_us = 3.975;
  c.merge_row_ns = 0;
  c.merge_gbs = 1833;
  // Session 45 (bench/RESULTS.md, runs 7-8): the default decode kernel streamed 202 of 268 MB
  // beside the head_dim-128 prefix on 20 SMs (42 GB/s each), 433 of 537 MB beside the head_dim-256
  // one on 28 (34 GB/s each). Session 48's trace of the steps read ~50 and ~56 at head_dim 128 (20
  // and 28 SMs); at 50 the planner takes the mode at P16384 too, never timed, so 40 stays.
  c.concurrent_sm_gbs = 40;
  // Head_dim 256: session 45's 34 GB/s per SM (28 SMs), for the planner's choice of k only
  // (ScoreConcurrentCascade in plan.cc): at 40 the model had the decode on 20 SMs end ~33 µs after
  // the prefix and took k = 20, which session 49 (run 3) measured 2.5% slower than k = 28 (32/8 B256
  // P32768 S256: 507.3 against 494.6 µs fp16, 496.5 / 483.2 bf16).
  c.concurrent_sm_gbs_d256 = 34;
  // The persistent TMA decode: 12 warps per CTA (SetTmaDecodeWarps).
  c.SetTmaDecodeWarps(12);
  return c;
}

void CostModelParams::SetTmaDecodeWarps(int warps) {
  concurrent_tma_warps = warps;
  concurrent_tma_gbs = 3150;
  if (warps == 12) {
    // Session 52 (run 1): 12 warps of 2 ring stages, alone on k = 20-64 SMs, 32/8 D128 B256 (2048
    // items), fp16: per round of one item per warp 9.9-10.0 µs at S128, 17.1 at S256, 31.2-31.5 at
    // S512 (rounds = ceil(2048 / 12k), k = 20 and 28), i.e. 2.8 µs + the item's bytes at 9.2 GB/s;
    // from k = 48 on the bytes bound it: 268 MB in 83-95 µs, 537 MB in 154-175 µs (3.1-3.5 TB/s).
    concurrent_tma_item_us = 2.8;
    concurrent_tma_warp_gbs = 9.2;
    return;
  }
  // Session 51 (run 3): 8 warps of 3 stages (and any other count, for its rounds), the same
  // shapes: per round 8.8 µs at S128, 15.1 at S256, 27.7 at S512 (rounds = ceil(2048 / 8k), k =
  // 20-36), i.e. 2.5 µs + the item's bytes at 10.7 GB/s; from k = 48 on 268 MB in 87-96 µs and 537
  // MB in 160-172 µs, ~3.1-3.3 TB/s in all.
  concurrent_tma_item_us = 2.5;
  concurrent_tma_warp_gbs = 10.7;
}

const std::vector<CostModelParams::Field>& CostModelParams::Fields() {
#define PREFIXD_TOP(name, fitted, zero) \
  Field { #name, [](CostModelParams& c) -> double& { return c.name; }, fitted, zero }
#define PREFIXD_DEC(kernel, name, fitted, zero) \
  Field { #kernel "." #name, [](CostModelParams& c) -> double& { return c.kernel.name; }, fitted, zero }
  static const std::vector<Field> fields = {
      PREFIXD_TOP(num_sms, false, false),
      PREFIXD_TOP(step_fixed_us, true, true),
      PREFIXD_TOP(pdl_overlap_us, true, true),
      PREFIXD_TOP(pdl_overlap_frac, true, true),
      PREFIXD_TOP(narrow_overlap_frac, true, true),
      PREFIXD_TOP(prefix_launch_us, true, true),
      PREFIXD_TOP(prefix_item_us, true, true),
      PREFIXD_TOP(prefix_unit_overhead_us, true, true),
      PREFIXD_TOP(prefix_tflops, true, false),
      PREFIXD_TOP(prefix_gbs, true, false),
      PREFIXD_TOP(prefix_cta_gbs, true, false),
      PREFIXD_DEC(decode_cuda_cores, ctas_per_sm, false, false),
      PREFIXD_DEC(decode_cuda_cores, launch_us, true, true),
      PREFIXD_DEC(decode_cuda_cores, wave_us, true, true),
      PREFIXD_DEC(decode_cuda_cores, stream_gbs, true, false),
      PREFIXD_DEC(decode_cuda_cores, hbm_gbs, true, false),
      PREFIXD_DEC(decode_cuda_cores, cta_gbs, true, false),
      PREFIXD_DEC(decode_tensor_cores, ctas_per_sm, false, false),
      PREFIXD_DEC(decode_tensor_cores, launch_us, true, true),
      PREFIXD_DEC(decode_tensor_cores, wave_us, true, true),
      PREFIXD_DEC(decode_tensor_cores, stream_gbs, true, false),
      PREFIXD_DEC(decode_tensor_cores, hbm_gbs, true, false),
      PREFIXD_DEC(decode_tensor_cores, cta_gbs, true, false),
      PREFIXD_TOP(fused_prefix_us, true, true),
      PREFIXD_TOP(fused_chunk_us, true, true),
      PREFIXD_TOP(merge_launch_us, true, true),
      PREFIXD_TOP(merge_row_ns, true, true),
      PREFIXD_TOP(merge_gbs, true, false),
      PREFIXD_TOP(concurrent_sm_gbs, false, false),
      PREFIXD_TOP(concurrent_sm_gbs_d256, false, false),
      PREFIXD_TOP(concurrent_tma_warps, false, false),
      PREFIXD_TOP(concurrent_tma_item_us, false, false),
      PREFIXD_TOP(concurrent_tma_warp_gbs, false, false),
      PREFIXD_TOP(concurrent_tma_gbs, false, false),
      PREFIXD_TOP(concurrent_tma_d64_item_us, false, false),
      PREFIXD_TOP(concurrent_tma_d64_warp_gbs, false, false),
      PREFIXD_TOP(concurrent_tma_d64_gbs, false, false),
      PREFIXD_TOP(concurrent_tma_prefix_scale, false, false),
      PREFIXD_TOP(concurrent_tma_interference_us, false, true),
  };
#undef PREFIXD_TOP
#undef PREFIXD_DEC
  return fields;
}

std::string CostModelParams::ToText() const {
  std::ostringstream out;
  out << "# prefixd cost model (kernels/include/prefixd/kernels/cost_model.h): key = value; "
         "times in us, rates in GB/s and TFLOP/s\n";
  out.precision(6);
  for (const Field& f : Fields()) out << f.name << " = " << At(f) << "\n";
  return out.str();
}

CostModelParams CostModelParams::FromText(const std::string& text, const CostModelParams& base) {
  CostModelParams c = base;
  std::istringstream in(text);
  std::string line;
  for (int line_no = 1; std::getline(in, line); ++line_no) {
    const size_t hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    auto trim = [](std::string s) {
      const size_t b = s.find_first_not_of(" \t\r"), e = s.find_last_not_of(" \t\r");
      return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
    };
    line = trim(line);
    if (line.empty()) continue;
    const size_t eq = line.find('=');
    PREFIXD_CHECK_ARG(eq != std::string::npos, "cost model line " << line_no << ": expected key = value, got '" << line << "'");
    const std::string key = trim(line.substr(0, eq)), value = trim(line.substr(eq + 1));
    const auto& fields = Fields();
    const auto it = std::find_if(fields.begin(), fields.end(), [&](const Field& f) { return key == f.name; });
    PREFIXD_CHECK_ARG(it != fields.end(), "cost model line " << line_no << ": unknown key '" << key << "'");
    double x = 0;
    size_t used = 0;
    try {
      x = std::stod(value, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    PREFIXD_CHECK_ARG(used == value.size() && used > 0 && std::isfinite(x),
                      "cost model line " << line_no << ": '" << key << "' needs a number, got '" << value << "'");
    PREFIXD_CHECK_ARG(it->may_be_zero ? x >= 0 : x > 0, "cost model line " << line_no << ": '" << key << "' must be "
                                                                             << (it->may_be_zero ? "≥ 0" : "> 0")
                                                                             << ", got " << x);
    c.At(*it) = x;
  }
  return c;
}

CostModelParams CostModelParams::Load(const std::string& path, const CostModelParams& base) {
  std::ifstream f(path);
  PREFIXD_CHECK_ARG(f.good(), "cannot read cost model file " << path);
  std::stringstream text;
  text << f.rdbuf();
  return FromText(text.str(), base);
}

void CostModelParams::Save(const std::string& path) const {
  std::ofstream f(path);
  PREFIXD_CHECK_ARG(f.good(), "cannot write cost model file " << path);
  f << ToText();
  PREFIXD_CHECK_ARG(f.good(), "writing cost model file " << path << " failed");
}

PlanProfile ProfilePlan(const CascadePlan& plan, const CostModelParams& params) {
  PlanProfile p;
  p.head_dim = plan.head_dim;
  p.num_kv_heads = plan.num_kv_heads;
  p.num_qo_heads = plan.num_qo_heads;
  p.gqa = plan.num_kv_heads > 0 ? plan.num_qo_heads / plan.num_kv_heads : 1;
  int max_decode_item_tokens = 0;  // the CUDA backend's DecodeAttentionParams::max_item_tokens
  for (const DecodeWorkItem& it : plan.decode_items)
    max_decode_item_tokens = std::max(max_decode_item_tokens, it.kv_end - it.kv_begin);
  p.tensor_core_decode = TensorCoreDecodeApplies(p.gqa, p.head_dim, max_decode_item_tokens);
  const double token_bytes = 2.0 * plan.num_kv_heads * plan.head_dim * kBytesPerElement;  // K+V, all heads
  const double head_token_bytes = token_bytes / std::max(1, plan.num_kv_heads);

  // Prefix: items over the persistent grid, round-robin or by the balanced plan's CTA chains (the
  // kernel's rule: chains where the grid is the plan's, which it is on a device of num_sms SMs).
  const int64_t n_prefix = int64_t(plan.prefix_items.size());
  // Concurrent: the prefix grid is capped at SMs − k CTAs where the plan has decode items (the CUDA
  // backend's rule).
  if (plan.concurrent_decode_sms > 0 && !plan.decode_items.empty() && plan.concurrent_decode_sms < params.num_sms) {
    p.concurrent_decode_sms = plan.concurrent_decode_sms;
    p.concurrent_decode_tma = plan.concurrent_decode_tma != 0;
  }
  if (n_prefix > 0) {
    const int64_t max_ctas = int64_t(params.num_sms) - p.concurrent_decode_sms;
    const bool chains = plan.prefix_balanced_ctas > 0 && plan.prefix_balanced_ctas <= max_ctas;
    p.prefix_ctas = chains ? plan.prefix_balanced_ctas : int(std::max<int64_t>(1, std::min(n_prefix, max_ctas)));
    std::vector<int64_t> cta_of(static_cast<size_t>(n_prefix));
    for (int64_t i = 0; i < n_prefix; ++i) cta_of[size_t(i)] = i % p.prefix_ctas;
    if (chains) {
      const std::vector<std::vector<int64_t>> by_cta = PrefixItemsByCta(plan, p.prefix_ctas, true);
      for (int c = 0; c < p.prefix_ctas; ++c)
        for (const int64_t i : by_cta[size_t(c)]) cta_of[size_t(i)] = c;
    }
    std::vector<std::pair<double, double>> loads(p.prefix_ctas, {0.0, 0.0});
    std::vector<double> cta_bytes(p.prefix_ctas, 0.0);
    int32_t max_item_rows = 0;
    for (int64_t i = 0; i < n_prefix; ++i) {
      const PrefixWorkItem& it = plan.prefix_items[i];
      max_item_rows = std::max(max_item_rows, it.row_end - it.row_begin);
      auto& l = loads[cta_of[size_t(i)]];
      l.first += 1;
      l.second += double(CeilDiv(it.kv_end - it.kv_begin, kPrefixKvTile) * CeilDiv(it.row_end - it.row_begin, kPrefixRowUnit));
      cta_bytes[cta_of[size_t(i)]] += double(it.kv_end - it.kv_begin) * head_token_bytes;  // once per item
    }
    p.prefix_max_cta_bytes = *std::max_element(cta_bytes.begin(), cta_bytes.end());
    // The CUDA backend's rule for its narrow sm_90a CTA (sm90a::UsesNarrowCta), on the wgmma path.
    p.prefix_narrow = plan.head_dim <= 128 && max_item_rows <= kPrefixRowUnit;
    // Keep the non-dominated pairs only (the busiest CTA is one of them for any a, u ≥ 0).
    std::sort(loads.begin(), loads.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first > b.first : a.second > b.second;
    });
    double best_units = -1;
    for (const auto& l : loads)
      if (l.second > best_units) {
        p.prefix_cta_loads.push_back(l);
        best_units = l.second;
      }
    for (size_t g = 0; g < plan.groups.size(); ++g)
      if (plan.group_num_chunks[g] > 0) p.prefix_unique_bytes += double(plan.groups[g].prefix.num_tokens) * token_bytes;
  }

  // Decode: streamed bytes per item, distinct pages of the suffix tables. A group larger than the
  // running kernel's largest compiled group runs as several CTAs per item, each streaming the
  // item's K/V (DecodeSlicingFor).
  const DecodeGroupSlicing slicing = DecodeSlicingFor(p.gqa, p.head_dim, p.tensor_core_decode);
  const int slices = slicing.slices;
  p.decode_rows = slicing.rows;
  p.decode_items = int64_t(plan.decode_items.size()) * slices;
  std::vector<uint8_t> request_has_prefix(plan.num_requests, 0);
  for (int r = 0; r < plan.num_requests; ++r)
    request_has_prefix[r] = plan.group_num_chunks[plan.request_group[r]] > 0;
  for (const DecodeWorkItem& it : plan.decode_items) {
    const double bytes = double(it.kv_end - it.kv_begin) * head_token_bytes;
    p.decode_streamed_bytes += bytes * slices;
    p.decode_max_item_bytes = std::max(p.decode_max_item_bytes, bytes);
    if (it.finish && request_has_prefix[it.request]) {
      p.decode_fused_prefix = true;
      p.decode_fused_chunks = std::max(p.decode_fused_chunks, int(plan.group_num_chunks[plan.request_group[it.request]]));
    }
  }
  if (p.decode_items > 0) {
    std::vector<uint8_t> seen(std::max(plan.num_pages, 1), 0);
    int64_t distinct_tokens = 0;
    for (int r = 0; r < plan.num_requests; ++r)
      for (int32_t i = plan.suffix.indptr[r]; i < plan.suffix.indptr[r + 1]; ++i) {
        const int32_t page = plan.suffix.indices[i];
        if (page < 0 || page >= int32_t(seen.size()) || seen[page]) continue;
        seen[page] = 1;
        distinct_tokens += i + 1 == plan.suffix.indptr[r + 1] ? plan.suffix.last_page_len[r] : plan.page_size;
      }
    p.decode_unique_bytes = double(distinct_tokens) * token_bytes;
  }

  // Merge: the merged requests' slots (v and s) and their outputs (o, v_out, s_out).
  p.merge_rows = int64_t(plan.merge_requests.size()) * plan.num_qo_heads;
  for (int32_t r : plan.merge_requests) {
    const double slots = plan.state_indptr[r + 1] - plan.state_indptr[r];
    p.merge_bytes += slots * plan.num_qo_heads * (plan.head_dim + 1) * 4.0;
  }
  p.merge_bytes += double(p.merge_rows) * (plan.head_dim * (4.0 + kBytesPerElement) + 4.0);
  return p;
}

namespace {

// When the persistent TMA decode on the plan's k SMs ends (cost_model.h): its warps
// (kernels/cuda/sm90a/decode_stream_tma_sm90a.cuh) take whole items round-robin.
double TmaDecodeEndUs(const PlanProfile& p, const CostModelParams& c) {
  if (p.decode_items <= 0) return 0;
  const int64_t warps = std::max<int64_t>(1, std::llround(c.concurrent_tma_warps)) * p.concurrent_decode_sms;
  const double rounds = double((p.decode_items + warps - 1) / warps);
  const double item_bytes = p.decode_streamed_bytes / double(p.decode_items);
  const bool d64 = p.head_dim == 64;
  const double item_us = d64 ? c.concurrent_tma_d64_item_us : c.concurrent_tma_item_us;
  const double warp_gbs = d64 ? c.concurrent_tma_d64_warp_gbs : c.concurrent_tma_warp_gbs;
  const double gbs = d64 ? c.concurrent_tma_d64_gbs : c.concurrent_tma_gbs;
  const double round_us = item_us + item_bytes / (warp_gbs * 1e3);
  return std::max(rounds * round_us, p.decode_streamed_bytes / (gbs * 1e3));
}

}  // namespace

CostBreakdown PredictCost(const PlanProfile& p, const CostModelParams& c) {
  CostBreakdown out;
  double prefix_bytes_us = 0, decode_bytes_us = 0;  // the parts' HBM/L2 byte times alone
  if (p.prefix_ctas > 0) {
    const double unit = PrefixUnitUs(p, c);
    double busiest = 0;
    for (const auto& [items, units] : p.prefix_cta_loads) busiest = std::max(busiest, items * c.prefix_item_us + units * unit);
    const double floor =
        std::max(p.prefix_unique_bytes / (c.prefix_gbs * 1e9), p.prefix_max_cta_bytes / (c.prefix_cta_gbs * 1e9)) * 1e6;
    out.prefix_us = c.prefix_launch_us + std::max(busiest, floor);
    prefix_bytes_us = p.prefix_unique_bytes / (c.prefix_gbs * 1e9) * 1e6;
  }
  if (p.decode_items > 0) {
    const DecodeKernelCost& k = p.tensor_core_decode ? c.decode_tensor_cores : c.decode_cuda_cores;
    const double slots = std::max(1.0, std::round(c.num_sms * k.ctas_per_sm));
    const double items = double(p.decode_items);
    const double waves = std::ceil(items / slots), in_flight = std::min(items, slots);
    // HBM bytes (distinct pages) and L2-hit bytes (the re-reads of shared pages) add up: both pass
    // through the same load pipeline of the same CTAs, so a plain group's re-reads of its prefix
    // are not hidden under the HBM time of the suffixes (H200 s2 calibration, plain B256 S256).
    const double hbm_bytes = std::min(p.decode_unique_bytes, p.decode_streamed_bytes);
    const double l2_bytes = p.decode_streamed_bytes - hbm_bytes;
    // The tensor-core kernel's 16-row group does twice the softmax per byte of the calibrated
    // groups of 4 and 8: 1.10-1.19 × their time at the same items and bytes (128/8 against 64/8,
    // B16-256 S256; H200, bench/RESULTS.md, session 37).
    const double work = p.decode_rows == 16 ? kSixteenRowDecodeWork : 1.0;
    const double bytes_us = work *
                            std::max({hbm_bytes / (k.hbm_gbs * 1e9) + l2_bytes / (k.stream_gbs * 1e9),
                                      p.decode_streamed_bytes / (in_flight * k.cta_gbs * 1e9),
                                      p.decode_max_item_bytes / (k.cta_gbs * 1e9)}) *
                            1e6;
    decode_bytes_us = (hbm_bytes / (k.hbm_gbs * 1e9) + l2_bytes / (k.stream_gbs * 1e9)) * 1e6;
    const double fused =
        p.decode_fused_prefix ? c.fused_prefix_us + c.fused_chunk_us * waves * std::max(0, p.decode_fused_chunks - 1) : 0;
    out.decode_us = k.launch_us + waves * k.wave_us + bytes_us + fused;
  }
  if (p.merge_rows > 0)
    out.merge_us = c.merge_launch_us + p.merge_rows * c.merge_row_ns * 1e-3 + p.merge_bytes / (c.merge_gbs * 1e9) * 1e6;
  if (out.prefix_us > 0 && out.decode_us > 0 && p.concurrent_decode_sms > 0) {
    // Concurrent (cost_model.h): the decode beside the prefix on k SMs, the rest of it after.
    // The persistent TMA decode never leaves its k SMs: its end is its rounds of items.
    const double beside_us =
        p.concurrent_decode_tma ? TmaDecodeEndUs(p, c)
                                : p.decode_streamed_bytes / (p.concurrent_decode_sms * c.concurrent_sm_gbs * 1e9) * 1e6;
    const double decode_end = beside_us <= out.prefix_us || p.concurrent_decode_tma
                                  ? beside_us
                                  : out.prefix_us + (1.0 - out.prefix_us / beside_us) * out.decode_us;
    // Side by side they share the memory system: together at least both parts' byte times (a
    // memory-bound prefix leaves the decode no bandwidth to take).
    const double both_bytes_us = prefix_bytes_us + decode_bytes_us;
    if (p.concurrent_decode_tma) {
      // Beside the TMA decode (session 52, run 3, 32/8 D128 B64-256 P8192-32768 S128-512 at k =
      // 20-64): the capped prefix grid's part timed alone ran 7-16% under the model's (more at
      // larger k), and the step exceeded max(prefix, decode) + merge by more the more decode bytes
      // streamed beside the prefix (~12 µs for 268 MB at k = 20). Fitted so that the step's k is
      // ranked as measured (1 / 1.08, and 0.02 µs per MB: within 1% of the best k on all 20
      // shapes; mean error of the step −0.5%, rms 5.3%; bench/kernel/tma_mode_fit.py), not to the
      // parts' own errors.
      out.prefix_us *= c.concurrent_tma_prefix_scale;
      const double beside_mb = p.decode_streamed_bytes * 1e-6 * std::min(1.0, out.prefix_us / std::max(decode_end, 1e-9));
      out.interference_us = c.concurrent_tma_interference_us * beside_mb;
    }
    out.overlap_us = out.prefix_us + out.decode_us - std::max({out.prefix_us, decode_end, both_bytes_us});
    out.concurrent_decode_end_us = decode_end;
  } else if (out.prefix_us > 0 && out.decode_us > 0) {
    // The decode grid (a programmatic dependent launch) starts in the prefix kernel's tail:
    // pdl_overlap_us + pdl_overlap_frac of the decode, never more than the shorter part; beside the
    // narrow prefix CTA the decode's CTAs share every SM with it from the start (narrow_overlap_frac).
    // (The SMs a small wide-CTA prefix grid leaves idle would add more; not modelled: it would favour
    // smaller prefix grids nobody has timed, bench/NOTES-planner.md.)
    const double shorter = std::min(out.prefix_us, out.decode_us);
    const double beside = p.prefix_narrow ? c.narrow_overlap_frac * shorter : 0.0;
    out.overlap_us = std::min(shorter, c.pdl_overlap_us + c.pdl_overlap_frac * out.decode_us + beside);
    // Side by side the two kernels share the memory system: together they take at least both
    // parts' byte times.
    const double both_bytes_us = prefix_bytes_us + decode_bytes_us;
    out.overlap_us = std::max(0.0, std::min(out.overlap_us, out.prefix_us + out.decode_us -
                                                                std::max(both_bytes_us, std::max(out.prefix_us, out.decode_us))));
  }
  out.total_us = c.step_fixed_us + out.prefix_us + out.decode_us + out.merge_us + out.interference_us - out.overlap_us;
  return out;
}

CostBreakdown PredictCost(const CascadePlan& plan, const CostModelParams& params) {
  // A plan that asks for its own TMA-decode warps (CascadePlan::concurrent_tma_warps) has that
  // CTA's rounds, not the ones the params were set for.
  if (plan.concurrent_tma_warps > 0 && plan.concurrent_tma_warps != params.concurrent_tma_warps) {
    CostModelParams own = params;
    own.SetTmaDecodeWarps(plan.concurrent_tma_warps);
    return PredictCost(ProfilePlan(plan, own), own);
  }
  return PredictCost(ProfilePlan(plan, params), params);
}

const char* CostPartName(CostPart part) {
  switch (part) {
    case CostPart::kPrefix: return "prefix";
    case CostPart::kDecode: return "decode";
    case CostPart::kMerge: return "merge";
    case CostPart::kTotal: return "total";
  }
  return "?";
}

double PredictPart(const PlanProfile& profile, const CostModelParams& params, CostPart part) {
  const CostBreakdown b = PredictCost(profile, params);
  switch (part) {
    case CostPart::kPrefix: return params.step_fixed_us + b.prefix_us;
    case CostPart::kDecode: return params.step_fixed_us + b.decode_us;
    case CostPart::kMerge: return params.step_fixed_us + b.merge_us;
    case CostPart::kTotal: return b.total_us;
  }
  return b.total_us;
}

double CostFitError(const std::vector<CostSample>& samples, const CostModelParams& params) {
  double sum = 0, weight = 0;
  for (const CostSample& s : samples) {
    if (!(s.measured_us > 0) || !(s.weight > 0)) continue;
    const double pred = PredictPart(s.profile, params, s.part);
    const double e = std::log(std::max(pred, 1e-3) / s.measured_us);
    sum += s.weight * e * e;
    weight += s.weight;
  }
  return weight > 0 ? std::sqrt(sum / weight) : 0;
}

// Pattern search in log space: each fitted parameter is multiplied by exp(±step) while that lowers
// the error; the step halves when no parameter moves. Parameters that may be 0 also try 0.
CostModelParams FitCostModel(const std::vector<CostSample>& samples, const CostModelParams& start, int max_rounds) {
  CostModelParams best = start;
  double best_err = CostFitError(samples, best);
  double step = std::log(2.0);
  for (int round = 0; round < max_rounds && step > 1e-4; ++round) {
    bool moved = false;
    for (const auto& f : CostModelParams::Fields()) {
      if (!f.fitted) continue;
      const double x = best.At(f);
      std::vector<double> tries;
      if (x > 0) tries = {x * std::exp(step), x * std::exp(-step)};
      else tries = {step, 0.01};  // leave 0 (times in µs; fractions)
      if (f.may_be_zero && x > 0 && x < 0.05) tries.push_back(0);
      for (double y : tries) {
        CostModelParams c = best;
        c.At(f) = y;
        const double e = CostFitError(samples, c);
        if (e < best_err - 1e-12) {
          best = c;
          best_err = e;
          moved = true;
        }
      }
    }
    if (!moved) step /= 2;
  }
  return best;
}

PlanOptions H200PlanOptions() {
  PlanOptions o;
  o.target_items = 2 * 132;
  o.prefix_target_items = 132;
  o.prefix_tile_rows = 128;
  o.narrow_tile_rows = 64;
  o.prefix_chunk_align = 64;
  o.min_prefix_chunk = 512;
  o.fine_prefix_chunk = 128;
  o.decode_chunk_align = 16;
  o.min_decode_chunk = 256;
  return o;
}

std::vector<int> ConcurrentDecodeCandidates(int num_sms) {
  std::vector<int> k;
  for (const double share : {0.15, 0.21}) k.push_back(std::max(1, int(std::lround(share * num_sms))));
  return k;
}

std::vector<int> ConcurrentTmaDecodeCandidates(int num_sms) {
  std::vector<int> k;
  for (const int h200 : {8, 10, 12, 14, 16, 20, 28, 36, 48, 56, 64})
    k.push_back(std::max(1, int(std::lround(double(h200) * num_sms / 132))));
  return k;
}

PlanOptions H200BackendPlanOptions() {
  PlanOptions o = H200PlanOptions();
  o.balance_prefix_ctas = 132;
  o.concurrent_candidates = ConcurrentDecodeCandidates(132);
  o.concurrent_tma_candidate = true;
  o.concurrent_tma_candidates = ConcurrentTmaDecodeCandidates(132);
  o.choose_layout = true;
  return o;
}

}  // namespace prefixd::kernels
