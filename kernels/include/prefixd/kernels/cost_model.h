// Cost model of one cascade decode step on the CUDA backend: a pure CPU function from a plan to
// predicted microseconds, used by the planner (PlanOptions::choose_layout) to choose, per prefix
// group, between the cascade (prefix kernel + suffix decode) and plain decode (the prefix pages
// listed in every request's own page table), and between a few split sizes. The choice changes
// speed only: every candidate plan computes the same attention (plan.h).
//
// Model, per part (times in µs; "bytes" are K+V bytes, 2 bytes per element):
//
//  prefix  = prefix_launch_us
//          + max( max over CTAs of Σ_{its items} (prefix_item_us + units(item) · unit_us(D)),
//                 unique prefix bytes / prefix_gbs, max over CTAs of its K/V bytes / prefix_cta_gbs )
//      The persistent prefix kernel runs min(items, SMs · ctas) CTAs and CTA c takes items
//      c, c + grid, c + 2·grid, ... (wave quantisation falls out of this). units(item) =
//      ceil(tokens / 128) · ceil(rows / 64): 128-token K/V tiles times 64-row warpgroup tiles.
//      unit_us(D) = t(D) · prefix_unit_overhead_us + 4·64·128·D / (prefix_tflops / SMs): the wgmma
//      kernel, one CTA per SM, at every head_dim; t(D) K/V tiles per unit (1; 2 at D = 256, whose
//      tiles are 64 tokens). The bandwidth floor counts each group's prefix K/V once (its row tiles share
//      them through L2). prefix_cta_gbs bounds what one CTA streams (each item's K/V range once):
//      without it a grid of half the CTAs would be predicted as fast whenever the HBM floor rules.
//      The plans of 64-row items bind it (each 64-row item streams its K/V range, twice the bytes
//      per CTA of 128-row items): fitted to ~47 GB/s on the H200 (session 24).
//  decode  = launch_us + waves · wave_us + max( unique / hbm_gbs + (streamed − unique) / stream_gbs,
//                                                streamed / (in_flight · cta_gbs), largest item / cta_gbs )
//          + fused_prefix_us + fused_chunk_us · waves · (chunks − 1)
//            (when decode items finish requests that have prefix-chunk states; chunks: the most
//            prefix chunks such a request has: each is one more state the epilogue loads and merges)
//      One of two kernels (DecodeKernelCost): tensor cores for g = H_qo/H_kv ≥ 4 at D ≤ 128 (g = 4 at 256),
//      CUDA cores otherwise. slots = SMs · ctas_per_sm, waves = ceil(items / slots), in_flight =
//      min(items, slots). streamed = Σ item tokens (every request's pages, shared prefix pages of
//      plain groups once per request); unique = the distinct pages of the suffix tables, counted
//      once, read from HBM at hbm_gbs; the rest of the streamed bytes (a plain group's re-reads of
//      its prefix) hit L2 at stream_gbs. The two times ADD: the same CTAs' load pipelines carry both
//      (the H200 s2 run: plain 32/8 B256 P256 S256 takes 110 µs, the cascade's decode with half the
//      tokens per item 84 µs; max(HBM time, L2 time) predicted 91).
//  merge   = merge_launch_us + rows · merge_row_ns / 1000 + slot bytes / merge_gbs
//      (only when the plan has merge_requests; rows = merged requests · H_qo).
//  concurrent step (plan.concurrent_decode_sms = k > 0, both parts): the prefix on SMs − k CTAs
//          (the grid above capped), the decode beside it on k SMs at concurrent_sm_gbs each until
//          it is done or the prefix ends, the rest of its bytes at its own rate after that:
//          step = step_fixed_us + max(prefix, decode_end, both parts' byte times) + merge (every
//          request merged). With the persistent TMA decode (plan.concurrent_decode_tma) the decode
//          stays on its k SMs however long the prefix takes; each of its w·k warps (w =
//          concurrent_tma_warps per CTA) takes whole items, round-robin, so it ends after
//          ceil(items / (w·k)) rounds of one item each:
//          decode_end = max(rounds · (concurrent_tma_item_us + item bytes / concurrent_tma_warp_gbs),
//                           its bytes / concurrent_tma_gbs)   (item bytes: the mean item's;
//          at head_dim 64 concurrent_tma_d64_item_us, _warp_gbs and _gbs);
//          beside it the prefix part is concurrent_tma_prefix_scale × the capped grid's above, and
//          the two slow each other by concurrent_tma_interference_us per MB of decode bytes streamed
//          while the prefix runs (decode bytes · min(1, prefix / decode_end)).
//  step    = step_fixed_us + prefix + decode + merge − overlap, when both parts run
//            overlap = min(pdl_overlap_us + pdl_overlap_frac · decode, prefix, decode,
//                          prefix + decode − max(prefix, decode, prefix bytes + decode bytes times))
//            (the decode grid is a programmatic dependent launch that the prefix kernel triggers
//            early; side by side the two share HBM: together at least both parts' byte times),
//            plus narrow_overlap_frac · min(prefix, decode) where the prefix kernel runs its narrow
//            sm_90a CTA (every prefix item ≤ 64 rows at head_dim ≤ 128): the decode kernel's CTAs
//            then fit beside the prefix CTAs and stream from the prefix kernel's start.
//      A part timed alone (the benchmark's prefix_us / suffix_us / merge_us) is step_fixed_us +
//      part: step_fixed_us is what every timed region pays (event/launch floor, the write-back of
//      the benchmark's L2 flush).
//
// Parameters live in CostModelParams; the defaults are fitted to the H200 rows of
// bench/RESULTS.md (cost_model.cc says which row fits which parameter) and a calibration run
// (`prefixd_kernel_bench --calibrate FILE`) replaces them with a key=value file (FromText/Load),
// without recompiling.
#pragma once

#include <string>
#include <vector>

#include "prefixd/kernels/plan.h"

namespace prefixd::kernels {

// One decode kernel's cost parameters.
struct DecodeKernelCost {
  double ctas_per_sm = 4;   // resident CTAs per SM (not fitted: the kernel's launch bounds)
  double launch_us = 5;     // fixed per launch (grid start, first dependent loads)
  double wave_us = 2;       // per wave of CTAs: item start (page table, first tile) and epilogue
  double stream_gbs = 7800;  // most bytes per second the kernel streams (L2 hits included), GB/s
  double hbm_gbs = 4000;    // HBM bytes per second (distinct pages), GB/s
  double cta_gbs = 40;      // bytes per second one CTA streams on its own, GB/s
};

struct CostModelParams {
  double num_sms = 132;  // not fitted

  double step_fixed_us = 6;      // once per timed step (see above)
  double pdl_overlap_us = 2;     // saved when the decode grid starts during the prefix kernel
  double pdl_overlap_frac = 0;   // ... plus this fraction of the shorter part
  double narrow_overlap_frac = 0;  // ... plus this fraction of it beside the narrow prefix CTA

  double prefix_launch_us = 8;          // per prefix launch
  double prefix_item_us = 4;            // per prefix item (Q gather, pipeline fill/drain, epilogue)
  double prefix_unit_overhead_us = 0.3;  // per 64-row × 128-token unit, besides its FLOPs
  double prefix_tflops = 700;           // effective wgmma rate of the whole device, TFLOP/s
  double prefix_gbs = 4150;             // prefix K/V bandwidth floor, GB/s
  double prefix_cta_gbs = 38;           // K/V bytes per second one prefix CTA streams at most, GB/s

  DecodeKernelCost decode_cuda_cores;    // g < 4, or g = 8 at D = 256
  DecodeKernelCost decode_tensor_cores;  // g ≥ 4 at D ≤ 128, g = 4 at D = 256
  double fused_prefix_us = 3.5;  // decode epilogue that ⊕-merges prefix-chunk states (fused merge)
  double fused_chunk_us = 0.3;   // ... per further prefix chunk of the request, per decode wave

  double merge_launch_us = 6;
  double merge_row_ns = 1;
  double merge_gbs = 3000;

  // Concurrent prefix/decode (CascadePlan::concurrent_decode_sms = k): the K/V bytes per second
  // each of the k SMs streams for the decode beside the prefix kernel, GB/s. Not fitted by the
  // calibration (it times the parts alone); measured on the H200 (bench/RESULTS.md, session 45).
  double concurrent_sm_gbs = 40;
  // ... at head_dim 256, measured on the H200 (bench/RESULTS.md, session 45), where the planner
  // chooses k among its candidates once the mode is chosen (plan.cc, ScoreConcurrentCascade; the
  // mode itself is decided at concurrent_sm_gbs, as measured in sessions 47-49).
  double concurrent_sm_gbs_d256 = 34;
  // ... the persistent TMA decode on exactly the k SMs (CascadePlan::concurrent_decode_tma): its
  // warps per CTA (DecodeAttentionParams::tma_warps, not fitted), per item of a warp a fixed time
  // and its bytes at one warp's rate, and the bytes all its warps stream at most (the memory
  // system's share it gets under the benchmark's flush). Measured alone on the H200 at k = 20-64
  // (bench/RESULTS.md, sessions 51-52); SetTmaDecodeWarps sets the four for the CTA's warps.
  double concurrent_tma_warps = 12;
  double concurrent_tma_item_us = 2.8;
  double concurrent_tma_warp_gbs = 9.2;
  double concurrent_tma_gbs = 3150;
  // ... its item at head_dim 64 (the two above are head_dim 128's): a fixed time and the item's
  // bytes at one warp's rate, 12 warps alone on k = 8-36 SMs, 32/8 and 64/8 B64-256 S32-512
  // (items of 8-128 KiB), an H100 (bench/RESULTS.md session 89, run 9): per round 3.4-3.8 µs at
  // 8 KiB, 7.5-8.2 at 32, 13.0-13.6 at 64, 23.9-24.4 at 128 — per token not half head_dim 128's.
  double concurrent_tma_d64_item_us = 2.2;
  double concurrent_tma_d64_warp_gbs = 5.95;
  // ... and its bytes at most at head_dim 64 (concurrent_tma_gbs above is head_dim 128's): the
  // most it was measured to stream there, 2.08 TB/s on 36 SMs (run 9's largest k). Without this
  // bound the model took k = 64 and 48 at 32/8 D64 B256 P8192 S512 and S256, measured 7.5% over
  // the cascade and 18% over k = 36 (run 10). The three head_dim-64 values are 12 warps'
  // (SetTmaDecodeWarps leaves them as they are).
  double concurrent_tma_d64_gbs = 2100;
  // ... and the step around it (not fitted by the calibration; bench/kernel/tma_mode_fit.py): the
  // capped prefix grid's part beside it against the model's above, and what the two parts cost
  // each other per MB of decode bytes beside the prefix. Session 52 fitted 0.925 (1 / 1.08) on the
  // H200's 120 steps at k = 20-64; session 85's speculative softmax took the prefix parts of those
  // steps 6.5-8.8% lower (H200, session 87 run 1), which left the model's k one short (32/8 B256
  // P32768 S256 on 14 SMs, 12-13 µs slower than 16), and session 87 refitted the scale on its
  // run 7: 0.86 (0.85-0.86 at the least regret; 0.925 × 0.935, the H200's prefix ratio there).
  // That table came from an H100 (no H200 was lent for it); at the headline shape its prefix part
  // beside the TMA decode read as the H200's (216.5-217.8 µs against 218.4-219.0), and an H200
  // table would refit it (bench/kernel/sessions/s87-run8.sh).
  double concurrent_tma_prefix_scale = 0.86;
  double concurrent_tma_interference_us = 0.02;
  // The TMA decode's fields above for a CTA of `warps` warps: 12 (the default) or 8 as measured;
  // any other count takes 8's rates for its rounds (only 4, a diagnostic, is built).
  void SetTmaDecodeWarps(int warps);

  // The H200 defaults (132 SMs), fitted to bench/RESULTS.md.
  static CostModelParams H200();

  // key=value text, one per line, '#' comments; keys as ToText writes them (e.g. "prefix_tflops",
  // "decode_tensor_cores.stream_gbs"). Keys not in the text keep this object's values; an unknown
  // key, a malformed line or a non-positive value where a positive one is needed throws
  // kInvalidArgument naming the line.
  std::string ToText() const;
  static CostModelParams FromText(const std::string& text, const CostModelParams& base = H200());
  static CostModelParams Load(const std::string& path, const CostModelParams& base = H200());
  void Save(const std::string& path) const;

  // Every numeric parameter by name (stable order), with whether the calibration fits it.
  struct Field {
    const char* name;
    double& (*ref)(CostModelParams&);
    bool fitted;       // the calibration fits it (SM and CTA counts are not fitted)
    bool may_be_zero;  // 0 is a valid value (otherwise it must be > 0)
  };
  static const std::vector<Field>& Fields();
  double& At(const Field& f) { return f.ref(*this); }
  double At(const Field& f) const { return f.ref(const_cast<CostModelParams&>(*this)); }
};

// Predicted microseconds of one step, by part (0 for a part the plan does not launch).
struct CostBreakdown {
  double prefix_us = 0, decode_us = 0, merge_us = 0;
  double overlap_us = 0;
  double total_us = 0;  // step_fixed_us + parts − overlap
  double concurrent_decode_end_us = 0;  // a concurrent step's decode end (0: not concurrent)
  double interference_us = 0;           // what the TMA decode's concurrent parts cost each other
};

// What the model needs from a plan, computed once (PredictCost is then cheap: the calibration
// evaluates it thousands of times per sample).
struct PlanProfile {
  int head_dim = 0, gqa = 1, num_kv_heads = 0, num_qo_heads = 0;
  int prefix_ctas = 0;  // CTAs of the prefix launch (min(items, SMs · ctas per SM)); 0: no launch
  int concurrent_decode_sms = 0;  // CascadePlan::concurrent_decode_sms (where it has decode items)
  bool concurrent_decode_tma = false;  // CascadePlan::concurrent_decode_tma (with the k above)
  bool prefix_narrow = false;  // the narrow sm_90a prefix CTA runs (every item ≤ 64 rows, D ≤ 128)
  // Per prefix CTA (only the distinct, non-dominated (items, units) pairs): its item count and
  // its 64×128 units; the busiest CTA under any parameters is one of these.
  std::vector<std::pair<double, double>> prefix_cta_loads;
  double prefix_unique_bytes = 0;
  double prefix_max_cta_bytes = 0;  // the most K/V bytes one prefix CTA streams (each item's range once)
  int64_t decode_items = 0;  // decode CTAs: work items × DecodeSlicingFor's slices
  int decode_rows = 1;       // query heads per decode CTA (DecodeSlicingFor's rows)
  double decode_streamed_bytes = 0, decode_unique_bytes = 0, decode_max_item_bytes = 0;
  bool decode_fused_prefix = false;  // some finishing decode item merges prefix-chunk states
  int decode_fused_chunks = 0;       // the most prefix chunks such an item merges
  int64_t merge_rows = 0;
  double merge_bytes = 0;
  bool tensor_core_decode = false;
};

PlanProfile ProfilePlan(const CascadePlan& plan, const CostModelParams& params);
CostBreakdown PredictCost(const PlanProfile& profile, const CostModelParams& params);
// ... of a plan: with CascadePlan::concurrent_tma_warps set, params' TMA decode for those warps
// (SetTmaDecodeWarps).
CostBreakdown PredictCost(const CascadePlan& plan, const CostModelParams& params);

// Calibration: a measured time of one part (or the whole step) of one plan.
enum class CostPart { kPrefix, kDecode, kMerge, kTotal };
const char* CostPartName(CostPart part);
// What a measured part-alone time is predicted as (step_fixed_us + part; kTotal: the step).
double PredictPart(const PlanProfile& profile, const CostModelParams& params, CostPart part);

struct CostSample {
  PlanProfile profile;
  CostPart part = CostPart::kTotal;
  double measured_us = 0;
  double weight = 1;
  std::string label;  // for reports
};

// Root-mean-square of ln(predicted / measured) over the samples (weighted).
double CostFitError(const std::vector<CostSample>& samples, const CostModelParams& params);

// Fits the `fitted` parameters to the samples (minimising CostFitError: a deterministic pattern
// search in log space, starting from `start`); returns the fitted parameters.
CostModelParams FitCostModel(const std::vector<CostSample>& samples, const CostModelParams& start,
                             int max_rounds = 400);

// The CUDA backend's DefaultPlanOptions on a 132-SM H200 with the persistent wgmma prefix kernel
// (kernels/cuda/cuda_backend.cc) as they were before its prefix balance (session 44) and the
// concurrent mode (session 47), its layout choice aside (choose_layout stays off here, so that a
// plan is the layout asked for): what the measured rows behind most of CostModelParams::H200()
// were planned with.
PlanOptions H200PlanOptions();

// The concurrent prefix/decode mode's candidate decode SM counts k on a device of `num_sms` SMs
// (PlanOptions::concurrent_candidates, concurrent_tma_candidates), as the CUDA backend offers them:
// 15% and 21% of the SMs (20 and 28 of the H200's 132: the best k measured at head_dim 128 and 256,
// bench/RESULTS.md session 45), and for the persistent TMA decode the H200's 8, 10, 12, 14, 16, 20,
// 28, 36, 48, 56 and 64, scaled (its best k measured there, sessions 51-52; 14 and 16 since session
// 60, where the prefix stream's narrow slots give the prefix the CTAs that k leaves,
// prefix_balance.h; 8, 10 and 12 since session 89, timed on an H100 of the same 132 SMs: where the
// step is the prefix's, with a short suffix, the prefix on 120-124 CTAs, e.g. 32/8 B256 P32768 S128
// 225-226 µs at k = 10-12 against 239 at k = 14).
std::vector<int> ConcurrentDecodeCandidates(int num_sms);
std::vector<int> ConcurrentTmaDecodeCandidates(int num_sms);

// The CUDA backend's DefaultPlanOptions on a 132-SM H200 with no environment settings: H200PlanOptions
// with the prefix balanced over every SM, the concurrent mode's candidates (the TMA decode's too)
// and the layout choice on. What the planner chooses there (prefixd_kernel_bench --planner-check
// without a GPU, the planner's CPU tests of the concurrent mode).
PlanOptions H200BackendPlanOptions();

}  // namespace prefixd::kernels
