// prefixd_plan_bench: host time of the cascade planner (kernels::PlanCascade) per call, with the
// layout choice off and on, for one group of B requests sharing a P-token prefix, each with S own
// tokens (the scaling benchmark's shapes). No GPU needed: the planner is a pure CPU function, run
// by every worker at each fresh plan (bench/NOTES-planner.md, "Host cost"). Also, for the chosen
// plan, how many of its prefix units (row tile, KV head) complete before 90% of the prefix grid
// (PrefixUnitCompletions: what a ⊕ before the grid's end could start on; bench/NOTES-fused.md,
// session 93).
//
//   prefixd_plan_bench --prefix 256,65536,262144 --batch 128 --suffix 512
//   prefixd_plan_bench --plan-options backend --prefix 32768 --batch 256 --suffix 128
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <string>
#include <vector>

#include <cxxopts.hpp>

#include "prefixd/common/error.h"
#include "prefixd/common/tool_main.h"
#include "prefixd/kernels/cost_model.h"
#include "prefixd/kernels/measured_choice.h"
#include "prefixd/kernels/plan.h"
#include "prefixd/kernels/prefix_balance.h"
#include "prefixd/kernels/prefix_kv_tile.h"
#include "prefixd/kernels/prefix_unit_completion.h"

namespace {

using namespace prefixd;
using namespace prefixd::kernels;

std::vector<int> ParseList(const std::string& text) {
  std::vector<int> out;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t end = std::min(text.find(',', pos), text.size());
    const std::string item = text.substr(pos, end - pos);
    PREFIXD_CHECK_ARG(!item.empty() && item.find_first_not_of("0123456789") == std::string::npos && item.size() <= 9,
                      "--prefix: expected positive integers separated by commas, got '" << text << "'");
    out.push_back(std::stoi(item));
    pos = end + 1;
  }
  return out;
}

// One group of `batch` requests sharing pages [0, prefix / page), each with `suffix` own tokens.
DecodeBatch UniformBatch(int prefix, int batch, int suffix, int h_qo, int page_size, KvPoolShape* pool) {
  pool->num_pages = OneGroupPoolPages(prefix, batch, suffix, page_size);  // first: refuses a pool too large
  const int prefix_pages = (prefix + page_size - 1) / page_size, suffix_pages = (suffix + page_size - 1) / page_size;
  DecodeBatch b;
  b.num_qo_heads = h_qo;
  b.groups.push_back(PrefixGroup{PrefixRun{0, prefix}, 0, batch});
  for (int r = 0; r < batch; ++r) {
    std::vector<int32_t> own(suffix_pages);
    std::iota(own.begin(), own.end(), prefix_pages + r * suffix_pages);
    b.suffix.AddSeq(own, suffix == 0 ? 0 : (suffix - 1) % page_size + 1);
  }
  return b;
}

int Run(int argc, char** argv) {
  cxxopts::Options cli("prefixd_plan_bench", "host time of the cascade planner per call, layout choice off and on");
  cli.add_options()
      ("prefix", "shared prefix tokens, a list", cxxopts::value<std::string>()->default_value("256,8192,65536,262144"))
      ("batch", "requests sharing the prefix", cxxopts::value<int>()->default_value("128"))
      ("suffix", "own tokens per request", cxxopts::value<int>()->default_value("512"))
      ("heads", "query/KV heads", cxxopts::value<std::string>()->default_value("32/8"))
      ("plan-options", "h200: H200PlanOptions (the model's calibration options, no concurrent mode); "
       "backend: H200BackendPlanOptions (what the CUDA backend plans with on a 132-SM H200: the "
       "balanced prefix grid and the concurrent mode's candidates)",
       cxxopts::value<std::string>()->default_value("h200"))
      ("n,iters", "timed calls per row (median reported)", cxxopts::value<int>()->default_value("50"))
      ("h,help", "this help");
  const auto args = cli.parse(argc, argv);
  if (args.count("help")) {
    std::printf("%s", cli.help().c_str());
    return 0;
  }
  const int batch = args["batch"].as<int>(), suffix = args["suffix"].as<int>(), iters = args["iters"].as<int>();
  PREFIXD_CHECK_ARG(batch >= 1 && suffix >= 1 && iters >= 1, "--batch, --suffix and --iters must be ≥ 1");
  PREFIXD_CHECK_ARG(batch <= (1 << 20) && suffix <= (1 << 24) && iters <= 100000,
                    "--batch, --suffix and --iters must be at most 2^20, 2^24 and 100000, got "
                        << batch << ", " << suffix << ", " << iters);
  const std::string heads = args["heads"].as<std::string>();
  const size_t slash = heads.find('/');
  PREFIXD_CHECK_ARG(slash != std::string::npos, "--heads: expected H_qo/H_kv, got '" << heads << "'");
  const std::string qo = heads.substr(0, slash), kv = heads.substr(slash + 1);
  PREFIXD_CHECK_ARG(!qo.empty() && !kv.empty() && (qo + kv).find_first_not_of("0123456789") == std::string::npos &&
                        qo.size() <= 4 && kv.size() <= 4,
                    "--heads: expected H_qo/H_kv, got '" << heads << "'");
  const int h_qo = std::stoi(qo), h_kv = std::stoi(kv);
  const std::string which = args["plan-options"].as<std::string>();
  PREFIXD_CHECK_ARG(which == "h200" || which == "backend", "--plan-options: h200 or backend, got '" << which << "'");
  const PlanOptions base = which == "backend" ? H200BackendPlanOptions() : H200PlanOptions();
  std::printf("# prefixd_plan_bench: PlanCascade host time, median of %d calls; %s plan options (%d/%d heads, "
              "D 128, bf16, page 16), B %d, S %d\n",
              iters, which == "backend" ? "the CUDA backend's H200" : "H200", h_qo, h_kv, batch, suffix);
  // The measured choice (kernels::MeasuredPlanner) plans with the report at every call (its shape
  // class names the model's choice) and, at a class's first batch only, its near-tie candidates.
  std::printf("#  prefix | choice off us | choice on us | with report us | candidates us (near ties) | chosen layout"
              " | units done by 90%% of the prefix grid\n");
  for (const int prefix : ParseList(args["prefix"].as<std::string>())) {
    KvPoolShape pool{1, 0, 16, h_kv, 128, DType::kBFloat16};
    const DecodeBatch b = UniformBatch(prefix, batch, suffix, h_qo, pool.page_size, &pool);
    PlanOptions choose = base;
    choose.choose_layout = true;
    PlanOptions fixed = choose;
    fixed.choose_layout = false;
    // Median µs of `iters` calls of fn.
    auto median_us = [&](auto fn) {
      std::vector<double> t(iters);
      for (double& x : t) {
        const auto t0 = std::chrono::steady_clock::now();
        fn();
        x = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
      }
      std::nth_element(t.begin(), t.begin() + iters / 2, t.end());
      return t[iters / 2];
    };
    auto plan_with = [&](const PlanOptions& o, PlanReport* report) {
      const CascadePlan plan = PlanCascade(b, pool, o, report);
      PREFIXD_CHECK_INTERNAL(plan.num_requests == batch, "plan of " << plan.num_requests << " requests");
    };
    PlanReport report;
    const double off = median_us([&] { plan_with(fixed, nullptr); });
    const double on = median_us([&] { plan_with(choose, nullptr); });
    const double with_report = median_us([&] { plan_with(choose, &report); });
    size_t candidates = 0;
    const double tie_band = kernels::MeasuredChoiceOptions{}.tie_band;
    const double near_ties = median_us([&] { candidates = NearTieCandidates(b, pool, choose, tie_band).plans.size(); });
    const std::string chosen = std::string(report.group_plain.at(0) ? "plain" : "cascade") +
                               (report.concurrent_decode_sms > 0
                                    ? " k" + std::to_string(report.concurrent_decode_sms) +
                                          (report.concurrent_decode_tma ? " tma" : "")
                                    : "");
    // The chosen plan's prefix grid: its balanced CTAs, else the H200's SMs less the concurrent
    // decode's.
    const CascadePlan plan = PlanCascade(b, pool, choose, nullptr);
    const int sms = int(CostModelParams::H200().num_sms);
    const int ctas = plan.prefix_balanced_ctas > 0 ? plan.prefix_balanced_ctas : sms - plan.concurrent_decode_sms;
    const std::vector<PrefixUnitCompletion> units = PrefixUnitCompletions(
        plan, ctas, ChoosePrefixKvTileTokens(plan), DefaultBalanceItemOverheadTiles(pool.head_dim));
    const auto early =
        std::count_if(units.begin(), units.end(), [](const PrefixUnitCompletion& u) { return u.fraction < 0.9; });
    std::printf("  %7d | %13.1f | %12.1f | %14.1f | %13.1f (%zu plans) | %-13s | %td of %zu on %d CTAs\n", prefix,
                off, on, with_report, near_ties, candidates, chosen.c_str(), early, units.size(), ctas);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return prefixd::RunToolMain("prefixd_plan_bench", Run, argc, argv); }
