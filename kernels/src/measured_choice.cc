#include "prefixd/kernels/measured_choice.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <sstream>

#include "prefixd/common/error.h"
#include "prefixd/kernels/cost_model.h"

namespace prefixd::kernels {

namespace {

// Quarter-octave bucket (steps of ~19%); −1 for nothing.
int Bucket(double x) { return x <= 0 ? -1 : int(std::lround(4.0 * std::log2(x))); }

// The kept choice of a class never grows without bound: a server that sees ever new shapes
// starts over (each class then costs one timing again).
constexpr size_t kMaxClasses = 4096;

// Backend memory freed on every exit (timing may throw: a bad plan, out of memory).
class Scratch {
 public:
  explicit Scratch(Backend& backend) : backend_(backend) {}
  ~Scratch() {
    for (void* p : buffers_) backend_.Free(p);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  void* Alloc(size_t bytes) {
    buffers_.reserve(buffers_.size() + 1);  // so that the push below cannot throw
    void* p = backend_.Alloc(std::max<size_t>(bytes, 16));
    buffers_.push_back(p);
    return p;
  }

 private:
  Backend& backend_;
  std::vector<void*> buffers_;
};

double Median(std::vector<double> v) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// The groups that can be plain decode: a prefix that fills whole pages (PlanCandidate::kPlain).
std::vector<uint8_t> PlainGroups(const DecodeBatch& batch, int page_size) {
  std::vector<uint8_t> plain(batch.groups.size(), 0);
  for (size_t g = 0; g < batch.groups.size(); ++g)
    plain[g] = batch.groups[g].prefix.num_tokens > 0 && CanPlanPlain(batch.groups[g], page_size);
  return plain;
}

// Plain decode of the groups marked in `plain` (PlainGroups), or nothing where none is.
std::optional<CascadePlan> PlanPlainLayout(const DecodeBatch& batch, const std::vector<uint8_t>& plain,
                                           const KvPoolShape& pool, const PlanOptions& fixed) {
  if (std::none_of(plain.begin(), plain.end(), [](uint8_t x) { return x != 0; })) return std::nullopt;
  return PlanCascade(PlainLayout(batch, plain, pool.page_size), pool, fixed);
}

// PlanCandidate::kFewerTmaWarps: where the model's choice (its report `model`, made with `options`)
// is the concurrent mode with the TMA decode at 12 warps per CTA, the plan the model makes for that
// decode at 8 (its k chosen for 8 warps' rounds, as with PREFIXD_DECODE_TMA_WARPS=8), asking for 8
// warps (CascadePlan::concurrent_tma_warps); nothing where that plan is not the TMA mode. A second
// layout choice (~1.3 ms of host time at 32/8 B256 P32768 S256), also at each batch of a class that
// keeps it. The model's 12-warp plan run at 8 warps instead measured up to 29 us slower (faster
// only at 32/8 B128 P32768 S512 of 9 shapes, an H100; bench/RESULTS.md, session 100): at that k
// the 8 warps do not keep up.
std::optional<CascadePlan> FewerTmaWarps(const PlanReport& model, const DecodeBatch& batch, const KvPoolShape& pool,
                                         const PlanOptions& options, const CostModelParams& params) {
  if (!model.concurrent_decode_tma || std::lround(params.concurrent_tma_warps) != 12) return std::nullopt;
  auto eight = std::make_shared<CostModelParams>(params);
  eight->SetTmaDecodeWarps(8);
  PlanOptions o = options;
  o.cost_model = std::move(eight);
  CascadePlan plan = PlanCascade(batch, pool, o);
  if (plan.concurrent_decode_tma != 1) return std::nullopt;
  plan.concurrent_tma_warps = 8;
  return plan;
}

// The model's plan and report as the first candidate.
PlanCandidates ModelCandidate(const DecodeBatch& batch, const KvPoolShape& pool, const PlanOptions& options) {
  PlanCandidates c;
  c.plans.push_back(PlanCascade(batch, pool, options, &c.model));
  c.kinds.push_back(PlanCandidate::kModelChoice);
  c.predicted_us.push_back(c.model.predicted_us);
  return c;
}

// The candidates after c's first entry (the model's plan and report, already in c).
void AddNearTies(PlanCandidates& c, const DecodeBatch& batch, const KvPoolShape& pool, const PlanOptions& options,
                 double tie_band) {
  const CostModelParams params = options.cost_model ? *options.cost_model : CostModelParams::H200();
  // Candidates are told apart by their schedules (ScheduleKey): one schedule is timed once.
  std::vector<std::vector<int32_t>> flats{ScheduleKey(c.plans[0])};
  const double limit = c.model.predicted_us * (1.0 + tie_band);
  // The cascade and plain decode (the two), then the two split layouts the planner check
  // times beside them (bench/kernel/planner_check.cc), which the model misranked by 5-13% on session
  // 76's off-grid shapes. The band does not hold for the two: the cascade, which every other
  // layout is an alternative to, is timed whatever its prediction, and plain decode wherever its
  // lower bound is in the band. Once a kernel changes, the model's error on them can pass the band:
  // after session 78's faster decode epilogue it predicted the cascade 22-27% slower than plain
  // decode at bf16 16/2 D64 B3 P12344 and fp16 40/8 B1 P304 S100, and measured it 4-15% faster
  // (bench/RESULTS.md, session 81 run 5). Timing them costs one step's time per layout, once per
  // shape class.
  // Then, where the model takes the concurrent mode, the same mode at the neighbouring k of its
  // candidates: after session 85's faster prefix kernel the model kept k = 14 at 32/8 B256 P32768
  // S256 where 16 measured 5% faster, for two sessions, until its scale was refitted (session 87).
  // And where it takes the mode with the TMA decode, its plan for that decode at 8 warps per CTA
  // instead of 12: beside a prefix that ends after it, fewer warps take less bandwidth from the
  // prefix, a trade the model does not price (one interference rate per byte); on an H100
  // (PREFIXD_DECODE_TMA_WARPS=8 against 12) 2-7 us faster at 32/8 B128-192 P8192-32768 S128-512,
  // up to 16 us slower where the decode bounds the step (B256 S512; bench/RESULTS.md, session 100).
  const bool concurrent = c.model.concurrent_decode_sms > 0;
  for (const PlanCandidate kind : {PlanCandidate::kCascade, PlanCandidate::kPlain, PlanCandidate::kHalfTarget,
                                   PlanCandidate::kNarrow, PlanCandidate::kFewerSms, PlanCandidate::kMoreSms,
                                   PlanCandidate::kFewerTmaWarps}) {
    const bool neighbour_k = kind == PlanCandidate::kFewerSms || kind == PlanCandidate::kMoreSms;
    if (neighbour_k && !concurrent) continue;
    std::optional<CascadePlan> plan;
    if (kind == PlanCandidate::kFewerTmaWarps) {
      plan = FewerTmaWarps(c.model, batch, pool, options, params);
    } else if (kind == PlanCandidate::kPlain) {
      // Plain decode is not planned where even its bound is out of the band.
      const std::vector<uint8_t> plain = PlainGroups(batch, pool.page_size);
      if (PlainStreamLowerBoundUs(batch, pool, plain, params) > limit) continue;
      PlanOptions fixed = options;
      fixed.choose_layout = false;
      plan = PlanPlainLayout(batch, plain, pool, fixed);
    } else {
      plan = PlanCandidateLayout(kind, batch, pool, options, &c.model);
    }
    if (!plan) continue;
    std::vector<int32_t> flat = ScheduleKey(*plan);
    const auto same = std::find(flats.begin(), flats.end(), flat);
    if (same != flats.end()) {
      // The model chose it: so named (PickMeasured favours the cascade; a neighbouring k, another k
      // than the model's, never has its schedule). Else a candidate already in.
      if (same == flats.begin() && c.kinds[0] == PlanCandidate::kModelChoice) c.kinds[0] = kind;
      continue;
    }
    const double predicted = PredictCost(*plan, params).total_us;
    const bool held_to_the_band = kind != PlanCandidate::kCascade && kind != PlanCandidate::kPlain;
    if (held_to_the_band && !(predicted <= limit)) continue;
    c.plans.push_back(std::move(*plan));
    c.kinds.push_back(kind);
    c.predicted_us.push_back(predicted);
    flats.push_back(std::move(flat));
  }
}

}  // namespace

const char* PlanCandidateName(PlanCandidate c) {
  switch (c) {
    case PlanCandidate::kModelChoice: return "model";
    case PlanCandidate::kCascade: return "cascade";
    case PlanCandidate::kPlain: return "plain";
    case PlanCandidate::kHalfTarget: return "half";
    case PlanCandidate::kNarrow: return "narrow";
    case PlanCandidate::kFewerSms: return "fewer-sms";
    case PlanCandidate::kMoreSms: return "more-sms";
    case PlanCandidate::kFewerTmaWarps: return "tma-8-warps";
  }
  return "unknown";
}

std::string ShapeClassKey(const DecodeBatch& batch, const KvPoolShape& pool, const PlanReport& model) {
  std::ostringstream key;
  key << DTypeName(pool.dtype) << ' ' << batch.num_qo_heads << '/' << pool.num_kv_heads << " D" << pool.head_dim
      << " p" << pool.page_size;
  for (const PrefixGroup& g : batch.groups) {
    int64_t suffix_tokens = 0, longest = 0;
    for (int r = g.first_request; r < g.first_request + g.num_requests; ++r) {
      const int64_t len = batch.suffix.SeqLen(r, pool.page_size);
      suffix_tokens += len;
      longest = std::max(longest, len);
    }
    key << " | r" << Bucket(g.num_requests) << " P" << Bucket(g.prefix.num_tokens)
        << (CanPlanPlain(g, pool.page_size) ? "w" : "") << " s"
        << Bucket(g.num_requests > 0 ? double(suffix_tokens) / g.num_requests : 0) << " m" << Bucket(double(longest));
  }
  key << " | model";
  for (const uint8_t p : model.group_plain) key << int(p);
  key << " t" << model.prefix_target_items << " c" << model.min_prefix_chunk << " d" << model.min_decode_chunk << " r"
      << model.prefix_tile_rows << " k" << model.concurrent_decode_sms << (model.concurrent_decode_tma ? "tma" : "");
  return key.str();
}

int PickMeasured(const std::vector<PlanCandidate>& candidates, const std::vector<double>& measured_us,
                 double keep_cascade_within) {
  PREFIXD_CHECK_ARG(candidates.size() == measured_us.size() && !candidates.empty(),
                    "PickMeasured: " << candidates.size() << " candidates, " << measured_us.size() << " times");
  int best = -1, cascade = -1;
  for (int i = 0; i < int(candidates.size()); ++i) {
    if (!std::isfinite(measured_us[i])) continue;  // NaN or a failed timing never wins
    if (best < 0 || measured_us[i] < measured_us[best]) best = i;
    if (candidates[i] == PlanCandidate::kCascade) cascade = i;
  }
  if (best < 0) return 0;  // nothing measured: the model's choice
  if (cascade >= 0 && measured_us[cascade] <= measured_us[best] * (1.0 + keep_cascade_within)) return cascade;
  return best;
}

MeasuredPlanner::MeasuredPlanner(const MeasuredChoiceOptions& options) : options_(options) {
  PREFIXD_CHECK_ARG(options.tie_band >= 0 && options.keep_cascade_within >= 0,
                    "MeasuredPlanner: tie_band and keep_cascade_within must be ≥ 0");
  PREFIXD_CHECK_ARG(options.warmup_rounds >= 0 && options.timed_rounds >= 1 && options.flush_bytes >= 0,
                    "MeasuredPlanner: needs warmup_rounds ≥ 0, timed_rounds ≥ 1, flush_bytes ≥ 0");
}

std::vector<double> MeasuredPlanner::TimePlans(const std::vector<const CascadePlan*>& plans, Backend& backend,
                                               const KvPoolView& kv, DType dtype) const {
  int64_t rows = 0;
  for (const CascadePlan* p : plans) {
    PREFIXD_CHECK_ARG(p != nullptr && p->head_dim == kv.shape.head_dim && p->num_kv_heads <= kv.shape.num_kv_heads,
                      "MeasuredPlanner: a plan does not fit the KV pool (head_dim " << kv.shape.head_dim << ", "
                                                                                   << kv.shape.num_kv_heads
                                                                                   << " KV heads)");
    rows = std::max(rows, int64_t(p->num_requests) * p->num_qo_heads);
  }
  if (plans.empty()) return {};
  const int64_t elems = rows * kv.shape.head_dim;
  Scratch scratch(backend);
  CascadeArgs args;
  args.kv = kv;
  args.layer = 0;
  // A device the KV pool fills may have no room for the scratch: then nothing is timed (NaN), and
  // the caller keeps the model's choice. Any other error is the caller's to see.
  try {
    args.q = scratch.Alloc(size_t(elems) * DTypeBytes(dtype));
    args.o = scratch.Alloc(size_t(elems) * DTypeBytes(dtype));
    args.v_out = static_cast<float*>(scratch.Alloc(size_t(elems) * 4));
    args.s_out = static_cast<float*>(scratch.Alloc(size_t(rows) * 4));
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kOutOfMemory) throw;
    return std::vector<double>(plans.size(), std::numeric_limits<double>::quiet_NaN());
  }
  // Finite queries in both dtypes (0x3C3C: 1.06 in fp16, 0.0115 in bf16): the time does not depend
  // on the values, but NaN or Inf could take other paths in the softmax.
  backend.Fill(const_cast<void*>(args.q), 0x3C, size_t(elems) * DTypeBytes(dtype));
  // The flush buffer, or a quarter of it (still several times an H100's or H200's 50 MB L2), or none
  // where even that does not fit (the runs then start with part of the K/V in L2: all alike).
  void* flush_buffer = nullptr;
  int64_t flush_bytes = 0;
  if (backend.kind() == BackendKind::kCuda)
    for (const int64_t bytes : {options_.flush_bytes, options_.flush_bytes / 4}) {
      if (bytes <= 0 || flush_buffer != nullptr) break;
      try {
        flush_buffer = scratch.Alloc(size_t(bytes));
        flush_bytes = bytes;
      } catch (const Error& e) {
        if (e.kind() != ErrorKind::kOutOfMemory) throw;
      }
    }
  const bool flush = flush_buffer != nullptr;

  std::vector<std::vector<double>> times(plans.size());
  for (int round = 0; round < options_.warmup_rounds + options_.timed_rounds; ++round) {
    for (size_t i = 0; i < plans.size(); ++i) {
      const CascadePlan& plan = *plans[i];
      backend.LoadPlan(plan);
      args.kv_head_offset = 0;
      args.kv_head_count = plan.num_kv_heads < kv.shape.num_kv_heads ? plan.num_kv_heads : 0;
      if (flush) backend.Fill(flush_buffer, uint8_t(round + i), size_t(flush_bytes));
      const double us = backend.TimeUs([&] { backend.RunCascade(args); });
      if (round >= options_.warmup_rounds) times[i].push_back(us);
    }
  }
  std::vector<double> medians;
  for (const auto& t : times) medians.push_back(Median(t));
  return medians;
}

std::optional<CascadePlan> PlanCandidateLayout(PlanCandidate kind, const DecodeBatch& batch, const KvPoolShape& pool,
                                               const PlanOptions& options, const PlanReport* model) {
  PlanOptions fixed = options;
  fixed.choose_layout = false;
  switch (kind) {
    case PlanCandidate::kModelChoice: return PlanCascade(batch, pool, options);
    case PlanCandidate::kCascade: return PlanCascade(batch, pool, fixed);
    case PlanCandidate::kPlain: return PlanPlainLayout(batch, PlainGroups(batch, pool.page_size), pool, fixed);
    case PlanCandidate::kHalfTarget:
      fixed.prefix_target_items =
          std::max(1, (options.prefix_target_items > 0 ? options.prefix_target_items : options.target_items) / 2);
      return PlanCascade(batch, pool, fixed);
    case PlanCandidate::kNarrow:
      if (options.narrow_tile_rows <= 0 || options.narrow_tile_rows >= options.prefix_tile_rows ||
          (options.narrow_head_dim != 0 && pool.head_dim != options.narrow_head_dim))
        return std::nullopt;
      fixed.prefix_tile_rows = options.narrow_tile_rows;
      return PlanCascade(batch, pool, fixed);
    case PlanCandidate::kFewerSms:
    case PlanCandidate::kMoreSms: {
      // The model's own choice, the concurrent mode's k stepped (none where it does not take the
      // mode or its k ends the list): from the choice's report, made here only if not given.
      if (!options.choose_layout) return std::nullopt;
      PlanReport made;
      if (!model) PlanCascade(batch, pool, options, &made);
      const PlanReport& report = model ? *model : made;
      const std::optional<PlanOptions>& stepped =
          kind == PlanCandidate::kFewerSms ? report.concurrent_fewer_sms : report.concurrent_more_sms;
      if (!stepped) return std::nullopt;
      PlanOptions fixed_stepped = *stepped;
      fixed_stepped.choose_layout = false;
      return PlanCascade(batch, pool, fixed_stepped);
    }
    case PlanCandidate::kFewerTmaWarps: {
      // From the model's report where given (the choice's mode), else a layout choice for it.
      if (!options.choose_layout) return std::nullopt;
      PlanReport made;
      if (!model) PlanCascade(batch, pool, options, &made);
      return FewerTmaWarps(model ? *model : made, batch, pool, options,
                           options.cost_model ? *options.cost_model : CostModelParams::H200());
    }
  }
  return std::nullopt;
}

PlanCandidates NearTieCandidates(const DecodeBatch& batch, const KvPoolShape& pool, const PlanOptions& options,
                                 double tie_band) {
  PlanCandidates c = ModelCandidate(batch, pool, options);
  if (options.choose_layout) AddNearTies(c, batch, pool, options, tie_band);
  return c;
}

CascadePlan MeasuredPlanner::Plan(const DecodeBatch& batch, const KvPoolShape& pool, const PlanOptions& options,
                                  Backend& backend, const KvPoolView& kv, MeasuredChoiceReport* report,
                                  const std::function<void()>& before_timing) {
  MeasuredChoiceReport local;
  MeasuredChoiceReport& rep = report ? *report : local;
  rep = MeasuredChoiceReport{};
  PlanCandidates c = ModelCandidate(batch, pool, options);
  rep.model = c.model;
  if (!options.choose_layout) return std::move(c.plans[0]);

  // A class seen before: its kept layout. The candidates are not made again; the model's plan is
  // (the class key names its choices), and where the class kept another layout that one too: at
  // most two plans per batch (bench/planner/plan_bench.cc times both), the second with a layout
  // choice of its own only for kFewerTmaWarps.
  const std::string key = ShapeClassKey(batch, pool, c.model);
  if (const auto it = kept_.find(key); it != kept_.end()) {
    rep.from_cache = true;
    rep.chosen = it->second.kind;
    if (it->second.model_plan) return std::move(c.plans[0]);
    std::optional<CascadePlan> kept = PlanCandidateLayout(it->second.kind, batch, pool, options, &c.model);
    return kept ? std::move(*kept) : std::move(c.plans[0]);
  }
  AddNearTies(c, batch, pool, options, options_.tie_band);
  rep.chosen = c.kinds[0];
  if (kept_.size() >= kMaxClasses) kept_.clear();
  if (c.plans.size() == 1) {  // no near tie: the model's choice, for the whole class
    kept_[key] = Kept{c.kinds[0], true};
    return std::move(c.plans[0]);
  }
  rep.candidates = c.kinds;
  rep.predicted_us = c.predicted_us;
  std::vector<const CascadePlan*> plans;
  for (const CascadePlan& p : c.plans) plans.push_back(&p);
  if (before_timing) before_timing();
  rep.measured_us = TimePlans(plans, backend, kv, pool.dtype);
  if (std::none_of(rep.measured_us.begin(), rep.measured_us.end(), [](double us) { return std::isfinite(us); })) {
    ++failed_timings_;  // no room for the scratch: the model's choice, and the class tried again later
    return std::move(c.plans[0]);
  }
  rep.timed = true;
  ++timings_;
  const int pick = PickMeasured(c.kinds, rep.measured_us, options_.keep_cascade_within);
  rep.chosen = c.kinds[size_t(pick)];
  kept_[key] = Kept{rep.chosen, pick == 0};
  return std::move(c.plans[size_t(pick)]);
}

}  // namespace prefixd::kernels
