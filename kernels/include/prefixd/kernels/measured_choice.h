// The planner's near ties settled by timing them on the backend (bench/ISSUE4.md, lever 7).
//
// The cost model ranks plans it predicts far apart reliably, but off the shapes it was calibrated
// on its error (RMS ln-error ~0.17 on the H200, bench/NOTES-planner.md, session 75) is as large as
// the 4-8% gains it predicts for its variants (the concurrent decode, a doubled prefix item
// target); there three of 113 shapes took a variant 10-17% slower than the plain cascade. No refit
// or margin ranked them as measured. A MeasuredPlanner plans with the model as always and times its
// choice against the rivals it could be wrong about — the cascade with the options' split (always),
// plain decode of every group that can be (where its lower bound is within tie_band of the model's
// choice), the cascade with half the prefix item target or with the narrow prefix CTA's items, and
// where the model takes the concurrent mode the same mode on the next fewer and more SMs of its
// candidates, and with the TMA decode the model's plan for that decode at 8 warps per CTA instead
// of 12 (each where predicted within tie_band) — once on the backend, on the caller's KV pool,
// and keeps the fastest for the batch's shape class. Later batches of the class (ShapeClassKey) get
// the kept candidate without timing, so a decode that grows by a token per step is timed again only
// when it crosses into a new class.
//
// Every candidate computes the same attention over the same tokens, so the choice changes speed
// only, never the result beyond float rounding (the ⊕ order). Timing allocates scratch (queries,
// outputs, an L2 flush buffer), replaces the backend's loaded plan and synchronises: call it
// between steps (the worker calls it while it plans a step, before the step's kernels), never
// inside a captured or timed region.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "prefixd/kernels/backend.h"
#include "prefixd/kernels/plan.h"

namespace prefixd::kernels {

enum class PlanCandidate : uint8_t {
  kModelChoice,  // PlanCascade with options.choose_layout (the cost model's plan)
  kCascade,      // every group a cascade, the options' split (choose_layout off)
  kPlain,        // every group that can be plain decode is (PlainLayout), the options' split
  kHalfTarget,   // the cascade with half the prefix item target (more SMs free for the decode)
  kNarrow,       // the cascade of the narrow prefix CTA's items (PlanOptions::narrow_tile_rows)
  kFewerSms,     // the model's concurrent mode at its next lower candidate k (PlanReport::
                 // concurrent_fewer_sms)
  kMoreSms,      // ... at its next higher candidate k (PlanReport::concurrent_more_sms)
  kFewerTmaWarps,  // where the model's choice is the concurrent mode with the TMA decode at 12
                   // warps per CTA, the model's plan for that decode at 8 (its k for 8 warps;
                   // CascadePlan::concurrent_tma_warps)
};
const char* PlanCandidateName(PlanCandidate c);

struct MeasuredChoiceOptions {
  // The half-target and narrow cascades are timed against the model's choice when predicted at
  // most this fraction slower than it, plain decode when its lower bound is (the cascade always).
  // 0.15: the model's RMS ln-error off its calibration grid, which covered every misranked split
  // variant measured (predicted gaps 4-8%).
  double tie_band = 0.15;
  // The model's choice or plain decode replaces the cascade only when measured faster than it by
  // more than this fraction: the cascade reads the prefix once, so it degrades least when other
  // work shares the memory system, and timing noise (~1-2% for one median) should not flip it.
  double keep_cascade_within = 0.02;
  int warmup_rounds = 2;  // untimed rounds of every candidate first
  int timed_rounds = 7;   // then the candidates interleaved, median per candidate
  // Bytes written before each timed run so that it starts with a cold L2, as a step of a
  // many-layer model does (0: no flush; the CPU backend never flushes).
  int64_t flush_bytes = int64_t(256) << 20;
};

// What one MeasuredPlanner::Plan call did.
struct MeasuredChoiceReport {
  PlanReport model;                      // the cost model's report (PlanCascade with choose_layout)
  PlanCandidate chosen = PlanCandidate::kModelChoice;
  bool timed = false;                    // the candidates were timed in this call
  bool from_cache = false;               // the shape class's kept choice was used
  std::vector<PlanCandidate> candidates;  // the near ties (the model's choice first), or empty
  std::vector<double> predicted_us;      // per candidate
  std::vector<double> measured_us;       // per candidate, where timed (median)
};

// The plan of one candidate layout: kModelChoice as the options say (the layout choice), the others
// with the options' split and choose_layout off; nullopt where the options or the batch do not
// allow it (no group can be plain; no narrow items at this head_dim). Pure CPU. `model`: the
// report of the model's plan (PlanCascade with these options), where the caller has it: the
// neighbouring-k kinds read their options from it, and otherwise run the layout choice for it.
std::optional<CascadePlan> PlanCandidateLayout(PlanCandidate kind, const DecodeBatch& batch, const KvPoolShape& pool,
                                               const PlanOptions& options, const PlanReport* model = nullptr);

// The plans a measured choice times, planned without running anything: the model's choice first
// (PlanCascade with options.choose_layout, its report in `model`), then the cascade, plain decode,
// the half-target and the narrow cascade (where the options allow them), the concurrent mode's
// neighbouring k (where the model takes the mode) and its TMA decode at 8 warps (where the model
// takes the mode with that decode at 12) where their schedules (ScheduleKey) differ from
// its and from each other's: the cascade always, plain decode where PlainStreamLowerBoundUs is
// within tie_band of the model's prediction, the others where predicted within tie_band of it. A
// candidate with the model's choice's schedule names the first entry instead (kinds[0] = kCascade,
// say). One entry: nothing to time (the model chose the cascade and no rival is near).
struct PlanCandidates {
  PlanReport model;
  std::vector<PlanCandidate> kinds;
  std::vector<CascadePlan> plans;
  std::vector<double> predicted_us;
};
PlanCandidates NearTieCandidates(const DecodeBatch& batch, const KvPoolShape& pool, const PlanOptions& options,
                                 double tie_band);

// The batch's shape class: heads, head_dim, dtype, page size, and per group its requests, its
// prefix tokens, its mean and longest suffix (each in quarter-octave buckets) and whether its
// prefix fills whole pages; plus the model's choice for it (its plain groups, split and mode), so
// that a kept choice applies only where the model chose the same way.
std::string ShapeClassKey(const DecodeBatch& batch, const KvPoolShape& pool, const PlanReport& model);

// The candidate kept from measured times (one per candidate, the same order): the fastest, unless
// the cascade is among them and within keep_cascade_within of it. NaN never wins.
int PickMeasured(const std::vector<PlanCandidate>& candidates, const std::vector<double>& measured_us,
                 double keep_cascade_within);

class MeasuredPlanner {
 public:
  explicit MeasuredPlanner(const MeasuredChoiceOptions& options = {});

  // The plan for the batch (options.choose_layout on; off: PlanCascade as is, never timed). At the
  // first batch of a shape class the candidates are planned and, where there is a near tie, timed
  // on `backend` against `kv` (read only; layer 0); the class keeps the layout chosen (the model's
  // where there was no near tie), and its later batches plan only that one. A plan made for a view
  // of kv_head_count of the pool's KV heads (the worker's head chunks) is timed on the pool's first
  // such heads. before_timing (if set) runs once before a timing: e.g. the caller's other streams
  // synchronised, so that nothing else runs beside it.
  CascadePlan Plan(const DecodeBatch& batch, const KvPoolShape& pool, const PlanOptions& options, Backend& backend,
                   const KvPoolView& kv, MeasuredChoiceReport* report = nullptr,
                   const std::function<void()>& before_timing = {});

  // Per candidate plan, the median µs of RunCascade over timed_rounds (interleaved, after
  // warmup_rounds, each run after an L2 flush), on scratch queries and outputs. Leaves the last
  // candidate loaded. All NaN where the backend has no memory for the scratch (kOutOfMemory); a
  // smaller flush, or none, where only the flush buffer does not fit.
  std::vector<double> TimePlans(const std::vector<const CascadePlan*>& plans, Backend& backend,
                                const KvPoolView& kv, DType dtype) const;

  int classes() const { return int(kept_.size()); }  // shape classes kept (timed or not)
  int timings() const { return timings_; }  // Plan calls that timed candidates
  // Plan calls whose timing found no device memory for its scratch (the model's choice was taken).
  int failed_timings() const { return failed_timings_; }

 private:
  MeasuredChoiceOptions options_;
  struct Kept {
    PlanCandidate kind;
    bool model_plan;  // the model's own plan was kept (no near tie, or it measured fastest)
  };
  std::map<std::string, Kept> kept_;
  int timings_ = 0;
  int failed_timings_ = 0;
};

}  // namespace prefixd::kernels
