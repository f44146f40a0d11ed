// The kernel benchmark's planner modes (planner_check.h; kernels/cost_model.h,
// PlanOptions::choose_layout).
//
// --planner-check: per shape, the whole step timed up to five ways: the cascade (today's plan),
// plain decode (the prefix pages in every request's page table, no prefix items), the cascade with
// the narrow prefix CTA's items (PlanOptions::narrow_tile_rows) and the cascade with half the
// prefix item target (a smaller prefix grid: more SMs free for the decode), each where its
// schedule differs from the cascade's (kernels::ScheduleKey), the planner's choice (choose_layout
// with the cost model) and the measured choice (kernels::MeasuredPlanner); plain decode last;
// ratio = choice / the fastest of the others, which the performance issue bounds by 1.05 against
// plain decode. A choice with the schedule of one of the other plans reuses its time.
// --calibrate FILE: per shape, the parts of those layouts timed alone (prefix, decode, merge) and
// their totals; the model's parameters fitted to them (FitCostModel, starting from --cost-model or
// the H200 defaults) and written to FILE. With both, the check runs with the fitted parameters.
// --fit-logs LOG,...: no GPU; the step times of such checks read back (planner_log.h) as the
// samples of the same layouts, the model judged by them and, with --calibrate, fitted to them.
#include "bench/kernel/planner_check.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "bench/kernel/planner_log.h"
#include "prefixd/common/error.h"
#include "prefixd/kernels/cost_model.h"
#include "prefixd/kernels/measured_choice.h"
#include "prefixd/kernels/plan.h"

#ifdef PREFIXD_HAVE_CUDA
#include "bench/kernel/bench_cuda.h"
#include "kernels/cuda/cuda_backend.h"
#endif

namespace prefixd::bench {
namespace {

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
  DeviceStep step(gpu, p.pool, int(rows), s.head_dim, s.dtype, seed);
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
  kernels::MeasuredPlanner measured_planner;
  kernels::MeasuredChoiceReport measured_report;
  const CascadePlan measured = measured_planner.Plan(p.batch, p.pool, p.choose, gpu, args.kv, &measured_report);
  if (measured_report.timed) row.measured_name = kernels::PlanCandidateName(measured_report.chosen);
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

}  // namespace

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
    PrintPlannerHeader(true);
    int slow = 0, wrong = 0, slower_than_plain = 0, slower_than_two = 0;
    double worst = 0, worst_to_plain = 0, worst_to_two = 0;
    int measured_timed = 0, measured_over_plain = 0, measured_over_two = 0, measured_over_all = 0;
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

}  // namespace prefixd::bench
