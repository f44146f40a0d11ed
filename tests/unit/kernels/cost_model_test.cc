// The cost model (cost_model.h): its defaults against the H200 rows of bench/RESULTS.md and
// bench/NOTES-prefix.md (written here as data), monotonicity in the obvious directions, the
// key=value file, and the calibration fit.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <limits>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "prefixd/kernels/cost_model.h"
#include "prefixd/kernels/decode_kernel_choice.h"
#include "prefixd/kernels/plan.h"
#include "unit/kernels/expect_error.h"

namespace prefixd::kernels {
namespace {


struct GridShape {
  int h_qo = 32, h_kv = 32, head_dim = 128, batch = 64, prefix = 8192, suffix = 256, page_size = 16;
};

// One group of B requests sharing a P-token prefix (pages [0, P/page)), each with S own tokens on
// its own pages (as prefixd_kernel_bench's shapes).
DecodeBatch UniformBatch(const GridShape& s, KvPoolShape* pool) {
  const int prefix_pages = (s.prefix + s.page_size - 1) / s.page_size;
  const int suffix_pages = (s.suffix + s.page_size - 1) / s.page_size;
  DecodeBatch batch;
  batch.num_qo_heads = s.h_qo;
  batch.groups.push_back(PrefixGroup{PrefixRun{0, s.prefix}, 0, s.batch});
  for (int r = 0; r < s.batch; ++r) {
    std::vector<int32_t> own(suffix_pages);
    std::iota(own.begin(), own.end(), prefix_pages + r * suffix_pages);
    batch.suffix.AddSeq(own, s.suffix == 0 ? 0 : (s.suffix - 1) % s.page_size + 1);
  }
  *pool = KvPoolShape{1, prefix_pages + s.batch * suffix_pages + 1, s.page_size, s.h_kv, s.head_dim, DType::kFloat16};
  return batch;
}

// kNarrow: the cascade with the narrow prefix CTA's 64-row items (PlanOptions::narrow_tile_rows);
// kHalf: the cascade with half the prefix item target.
enum class Layout { kCascade, kPlain, kNarrow, kHalf };

const char* LayoutName(Layout layout) {
  switch (layout) {
    case Layout::kPlain: return "plain";
    case Layout::kNarrow: return "narrow";
    case Layout::kHalf: return "half";
    case Layout::kCascade: break;
  }
  return "cascade";
}

CascadePlan GridPlan(const GridShape& s, Layout layout, PlanOptions o = H200PlanOptions()) {
  KvPoolShape pool;
  DecodeBatch batch = UniformBatch(s, &pool);
  if (layout == Layout::kPlain) batch = PlainLayout(batch, {1}, s.page_size);
  if (layout == Layout::kNarrow) o.prefix_tile_rows = o.narrow_tile_rows;
  if (layout == Layout::kHalf) o.prefix_target_items = std::max(1, o.prefix_target_items / 2);
  return PlanCascade(batch, pool, o);
}

// A measured row: shape, layout, plan variations, part, time.
struct MeasuredRow {
  GridShape shape;
  Layout layout;
  CostPart part;
  double us;
  const char* source;
  bool fuse = true;
  int prefix_target = 0;  // 0: H200PlanOptions
  int prefix_tile_rows = 0;
  double weight = 1;
};

GridShape S(int h_qo, int h_kv, int b, int p, int s = 256, int d = 128) {
  GridShape g;
  g.h_qo = h_qo;
  g.h_kv = h_kv;
  g.batch = b;
  g.prefix = p;
  g.suffix = s;
  g.head_dim = d;
  return g;
}

// bench/RESULTS.md "Current numbers" (final run; fp16, D 128, S 256, page 16): prefix µs, suffix µs
// (with fused ⊕), total µs (trigger off column is not used), non-cascade µs (= plain layout total);
// run 2's "no fused merge" variant (suffix and merge alone); the older "longer suffixes" rows
// (decode kernel v3, before 2-warp CTAs; low weight); NOTES-prefix.md wgmma run 2 (prefix kernel
// alone through the probe: D = 64, the 256-item planner variant); session 27's D = 256 prefix parts.
std::vector<MeasuredRow> H200Rows() {
  const char* kFinal = "RESULTS final run";
  std::vector<MeasuredRow> rows;
  struct Final {
    int h_kv, b, p;
    double prefix, suffix, total, plain;
  };
  const Final finals[] = {
      {32, 64, 8192, 49.1, 81.6, 116.1, 1676},   {32, 64, 32768, 146.0, 82.1, 209.6, 6521},
      {32, 256, 8192, 69.1, 271.8, 312.5, 6276}, {32, 256, 32768, 234.9, 272.7, 480.3, 27389},
      {8, 64, 8192, 26.3, 29.5, 49.8, 293},      {8, 64, 32768, 66.2, 29.4, 87.1, 1115},
      {8, 256, 8192, 63.5, 84.8, 136.8, 1149},   {8, 256, 32768, 220.0, 84.8, 289.6, 4436},
  };
  for (const Final& f : finals) {
    const GridShape s = S(32, f.h_kv, f.b, f.p);
    rows.push_back({s, Layout::kCascade, CostPart::kPrefix, f.prefix, kFinal});
    rows.push_back({s, Layout::kCascade, CostPart::kDecode, f.suffix, kFinal});
    rows.push_back({s, Layout::kCascade, CostPart::kTotal, f.total, kFinal});
    rows.push_back({s, Layout::kPlain, CostPart::kTotal, f.plain, kFinal});
  }
  const char* kNoFuse = "RESULTS run 2, no fused merge";
  const double no_fuse[4][3] = {{8192, 25.0, 10.4}, {32768, 25.1, 10.6}, {8192, 79.3, 17.1}, {32768, 79.0, 17.2}};
  for (int i = 0; i < 4; ++i) {
    const GridShape s = S(32, 8, i < 2 ? 64 : 256, int(no_fuse[i][0]));
    MeasuredRow d{s, Layout::kCascade, CostPart::kDecode, no_fuse[i][1], kNoFuse};
    d.fuse = false;
    MeasuredRow m{s, Layout::kCascade, CostPart::kMerge, no_fuse[i][2], kNoFuse};
    m.fuse = false;
    rows.push_back(d);
    rows.push_back(m);
  }
  const char* kLong = "RESULTS longer suffixes (decode v3)";
  {
    MeasuredRow r{S(32, 8, 256, 32768, 2048), Layout::kCascade, CostPart::kDecode, 504.2, kLong};
    r.weight = 0.3;
    rows.push_back(r);
    MeasuredRow one{S(32, 8, 1, 32768, 2048), Layout::kCascade, CostPart::kDecode, 11.7, kLong};
    one.weight = 0.3;
    rows.push_back(one);
  }
  const char* kProbe = "NOTES-prefix wgmma run 2";
  rows.push_back({S(32, 32, 256, 32768, 256, 64), Layout::kCascade, CostPart::kPrefix, 172.0, kProbe});
  rows.push_back({S(32, 8, 256, 32768, 256, 64), Layout::kCascade, CostPart::kPrefix, 168.4, kProbe});
  rows.push_back({S(32, 8, 64, 8192, 256, 64), Layout::kCascade, CostPart::kPrefix, 20.3, kProbe});
  rows.push_back({S(32, 8, 64, 32768, 256, 64), Layout::kCascade, CostPart::kPrefix, 50.5, kProbe});
  for (const auto& [p, us] : {std::pair<int, double>{8192, 32.0}, {32768, 73.3}}) {
    MeasuredRow r{S(32, 8, 64, p), Layout::kCascade, CostPart::kPrefix, us, kProbe};
    r.prefix_target = 256;  // "items as today's planner makes them (256 ...)"
    rows.push_back(r);
  }
  // D = 256 on the wgmma kernel (bench/RESULTS.md session 27, run 1; fp16 cascade, 256 items of 128
  // rows: the planner's target × 2).
  const char* kD256 = "RESULTS s27 run 1";
  for (const auto& [h_kv, us] : {std::pair<int, double>{32, 486.0}, {8, 456.7}}) {
    MeasuredRow r{S(32, h_kv, 256, 32768, 256, 256), Layout::kCascade, CostPart::kPrefix, us, kD256};
    r.prefix_target = 256;
    rows.push_back(r);
  }
  return rows;
}

CostSample ToSample(const MeasuredRow& r, const CostModelParams& params) {
  PlanOptions o = H200PlanOptions();
  o.fuse_merge = r.fuse;
  if (r.prefix_target) o.prefix_target_items = r.prefix_target;
  if (r.prefix_tile_rows) o.prefix_tile_rows = r.prefix_tile_rows;
  CostSample s;
  s.profile = ProfilePlan(GridPlan(r.shape, r.layout, o), params);
  s.part = r.part;
  s.measured_us = r.us;
  s.weight = r.weight;
  char label[160];
  std::snprintf(label, sizeof(label), "%s: %d/%d D%d B%d P%d S%d %s %s%s", r.source, r.shape.h_qo, r.shape.h_kv,
                r.shape.head_dim, r.shape.batch, r.shape.prefix, r.shape.suffix,
                LayoutName(r.layout), CostPartName(r.part), r.fuse ? "" : " (no fuse)");
  s.label = label;
  return s;
}

std::vector<CostSample> H200Samples(const CostModelParams& params) {
  std::vector<CostSample> samples;
  for (const MeasuredRow& r : H200Rows()) samples.push_back(ToSample(r, params));
  return samples;
}

// Tolerances for the defaults on the measured rows: every row within kRowTol (relative), the
// ln-error RMS within kRmsTol. These rows are of older kernels (sessions 1-2); the defaults are
// fitted to session 23's calibration of today's kernels (kS23Rows below), which, e.g., run the
// plain decode of 32/8 B256 P32768 S256 in 3710 µs instead of this table's 4436. They still pin
// the model on what the calibration grid lacks (head_dim 64 and 256, the unfused merge, long
// suffixes).
constexpr double kRowTol = 0.25;
constexpr double kRmsTol = 0.11;

// Every sample predicted within row_tol (relative) and the ln-error RMS within rms_tol.
void ExpectPredicts(const std::vector<CostSample>& samples, const CostModelParams& params, double row_tol,
                    double rms_tol) {
  for (const CostSample& s : samples) {
    const double pred = PredictPart(s.profile, params, s.part);
    EXPECT_LE(std::abs(pred / s.measured_us - 1), row_tol)
        << s.label << ": predicted " << pred << " us, measured " << s.measured_us;
  }
  EXPECT_LE(CostFitError(samples, params), rms_tol);
}

TEST(CostModel, DefaultsPredictTheMeasuredH200Rows) {
  const CostModelParams params = CostModelParams::H200();
  const std::vector<CostSample> samples = H200Samples(params);
  ASSERT_GE(samples.size(), 40u);
  ExpectPredicts(samples, params, kRowTol, kRmsTol);
}

// The calibration's path: from the defaults perturbed badly (every fitted parameter ×1.7),
// FitCostModel gets back to about the defaults' error on the samples: within max(rel · error,
// error + abs).
void ExpectFitRecovers(const std::vector<CostSample>& samples, const CostModelParams& defaults, double rel = 1.2,
                       double abs = 0.01) {
  const double base = CostFitError(samples, defaults);
  CostModelParams bad = defaults;
  for (const auto& f : CostModelParams::Fields())
    if (f.fitted) bad.At(f) = bad.At(f) > 0 ? bad.At(f) * 1.7 : 1.0;
  ASSERT_GT(CostFitError(samples, bad), 2 * base);
  const CostModelParams fitted = FitCostModel(samples, bad);
  EXPECT_LE(CostFitError(samples, fitted), std::max(rel * base, base + abs));
}

// The fit from the defaults does not get worse, and from a badly perturbed start it gets back to
// close to the defaults' error (the calibration run's path). PREFIXD_COST_MODEL_PRINT_FIT=1
// prints the fitted parameters and every row (how the defaults were made).
TEST(CostModel, FitRecoversTheMeasuredRows) {
  const CostModelParams defaults = CostModelParams::H200();
  const std::vector<CostSample> samples = H200Samples(defaults);
  const double base = CostFitError(samples, defaults);
  const CostModelParams refit = FitCostModel(samples, defaults);
  EXPECT_LE(CostFitError(samples, refit), base + 1e-9);
  if (std::getenv("PREFIXD_COST_MODEL_PRINT_FIT")) {
    std::printf("%s# fit error %.4f (defaults %.4f)\n", refit.ToText().c_str(), CostFitError(samples, refit), base);
    for (const CostSample& s : samples)
      std::printf("  %-80s measured %8.1f  defaults %8.1f  fit %8.1f\n", s.label.c_str(), s.measured_us,
                  PredictPart(s.profile, defaults, s.part), PredictPart(s.profile, refit, s.part));
  }
  ExpectFitRecovers(samples, defaults, 1.5, 0.02);
}

double Total(const GridShape& s, Layout layout, const CostModelParams& c = CostModelParams::H200()) {
  return PredictCost(GridPlan(s, layout), c).total_us;
}

// A longer sequence or a larger batch may change how the planner splits (e.g. a 384-token plain
// sequence is one chunk, a 512-token one two chunks and a merge), which the model may predict a
// little faster (shorter largest item): kSplitSlack allows that, nothing more.
constexpr double kSplitSlack = 0.97;

TEST(CostModel, MonotoneInTheObviousDirections) {
  for (Layout layout : {Layout::kCascade, Layout::kPlain})
    for (int h_kv : {32, 8})
      for (int b : {1, 16, 64, 256}) {
        SCOPED_TRACE(std::string(layout == Layout::kPlain ? "plain" : "cascade") + " 32/" + std::to_string(h_kv) +
                     " B" + std::to_string(b));
        double last = 0;
        for (int p : {128, 256, 1024, 8192, 32768}) {  // longer prefix: not faster
          const double t = Total(S(32, h_kv, b, p), layout);
          EXPECT_GE(t, kSplitSlack * last) << "P " << p;
          last = t;
        }
        EXPECT_GE(Total(S(32, h_kv, b, 8192, 256), layout), kSplitSlack * Total(S(32, h_kv, b, 8192, 32), layout));
        EXPECT_GE(Total(S(32, h_kv, 2 * b, 8192), layout), kSplitSlack * Total(S(32, h_kv, b, 8192), layout));
      }
  // More KV heads (bytes) at the same query heads: not faster.
  EXPECT_GE(Total(S(32, 32, 64, 8192), Layout::kCascade), Total(S(32, 8, 64, 8192), Layout::kCascade));
  EXPECT_GE(Total(S(32, 32, 64, 8192), Layout::kPlain), Total(S(32, 8, 64, 8192), Layout::kPlain));
  // Slower hardware: not faster.
  CostModelParams slow = CostModelParams::H200();
  slow.prefix_tflops /= 2;
  slow.decode_tensor_cores.stream_gbs /= 2;
  slow.decode_tensor_cores.hbm_gbs /= 2;
  for (Layout layout : {Layout::kCascade, Layout::kPlain})
    EXPECT_GT(Total(S(32, 8, 256, 32768), layout, slow), Total(S(32, 8, 256, 32768), layout));
  // Plain decode re-reads the prefix per request: its cost grows with B far faster than the cascade's.
  const double plain_growth = Total(S(32, 8, 256, 8192), Layout::kPlain) / Total(S(32, 8, 16, 8192), Layout::kPlain);
  const double cascade_growth =
      Total(S(32, 8, 256, 8192), Layout::kCascade) / Total(S(32, 8, 16, 8192), Layout::kCascade);
  // (measured in the s2 run: 8.7 vs 3.6; the model's cascade growth is higher, ~4.6, as it
  // under-predicts the B = 16 cascade at P = 8192: no overlap was measured there.)
  EXPECT_GT(plain_growth, 1.5 * cascade_growth);
}

TEST(CostModel, PartsAddUpAndEmptyPartsCostNothing) {
  const CostModelParams c = CostModelParams::H200();
  const CostBreakdown cascade = PredictCost(GridPlan(S(32, 8, 64, 8192), Layout::kCascade), c);
  EXPECT_GT(cascade.prefix_us, 0);
  EXPECT_GT(cascade.decode_us, 0);
  EXPECT_EQ(cascade.merge_us, 0);  // S = 256: every request finished by its decode items
  EXPECT_NEAR(cascade.total_us, c.step_fixed_us + cascade.prefix_us + cascade.decode_us - cascade.overlap_us, 1e-9);
  const CostBreakdown plain = PredictCost(GridPlan(S(32, 8, 64, 8192), Layout::kPlain), c);
  EXPECT_EQ(plain.prefix_us, 0);
  EXPECT_EQ(plain.overlap_us, 0);
  EXPECT_GT(plain.decode_us, cascade.decode_us);
  PlanOptions no_fuse = H200PlanOptions();
  no_fuse.fuse_merge = false;
  EXPECT_GT(PredictCost(GridPlan(S(32, 8, 64, 8192), Layout::kCascade, no_fuse), c).merge_us, 0);
}

TEST(CostModel, TextRoundTripAndErrors) {
  CostModelParams c = CostModelParams::H200();
  c.prefix_tflops = 123.5;
  c.decode_tensor_cores.stream_gbs = 4567;
  const CostModelParams back = CostModelParams::FromText(c.ToText());
  for (const auto& f : CostModelParams::Fields()) EXPECT_NEAR(back.At(f), c.At(f), 1e-4 * std::abs(c.At(f))) << f.name;
  // Partial files keep the base's other values; comments and blank lines are ignored.
  const CostModelParams partial = CostModelParams::FromText("# calibrated\n\n  prefix_item_us = 7.5  # per item\n");
  EXPECT_EQ(partial.prefix_item_us, 7.5);
  EXPECT_EQ(partial.prefix_tflops, CostModelParams::H200().prefix_tflops);
  EXPECT_INVALID_ARGUMENT(CostModelParams::FromText("no_such_key = 1\n"), "unknown key 'no_such_key'");
  EXPECT_INVALID_ARGUMENT(CostModelParams::FromText("prefix_tflops = fast\n"), "needs a number");
  EXPECT_INVALID_ARGUMENT(CostModelParams::FromText("prefix_tflops = 0\n"), "must be > 0");
  EXPECT_INVALID_ARGUMENT(CostModelParams::FromText("prefix_tflops 100\n"), "line 1: expected key = value");
  EXPECT_EQ(CostModelParams::FromText("pdl_overlap_us = 0").pdl_overlap_us, 0);
  EXPECT_INVALID_ARGUMENT(CostModelParams::Load("/nonexistent/cost_model.txt"), "cannot read");
}

// ---------------------------------------------------------------------------------------------
// The H200 planner run of bench/kernel/results/h200-s8-planner-calibrated.txt (session 8,
// `prefixd_kernel_bench --calibrate FILE --planner-check`, fp16, D 128, page 16, 30 iterations, L2
// write-flushed; today's kernels): the 60 default planner shapes (heads 32/32 and 32/8, B 16/64/256,
// P 128/256/1024/8192/32768, S 32/256) with every part of both layouts timed alone (the file's
// calibration samples) and both totals. 0: not measured (no merge launched). The built-in defaults
// were this run's fit until session 23 (merge parameters aside, which they still are): the kernels
// have changed since (the narrow prefix CTA above all), so these rows only bound the defaults
// loosely now and no planner check is judged on them.
struct CalibrationRow {
  int h_qo, h_kv, b, p, s;
  double cascade_total, cascade_prefix, cascade_decode, cascade_merge;
  double plain_total, plain_decode, plain_merge;
  // The cascade with 64-row prefix items and the cascade with half the prefix item target (session
  // 24 on; 0 where it is the cascade or not timed).
  double narrow_total = 0, narrow_prefix = 0, narrow_decode = 0, narrow_merge = 0;
  double half_total = 0, half_prefix = 0, half_decode = 0, half_merge = 0;
};

const CalibrationRow kS8Rows[] = {
      {32, 32,  16,   128,  32,    12.6,    10.1,    10.3,    0.0,     14.6,     14.1,    0.0},
      {32, 32,  16,   128, 256,    30.0,    10.1,    25.7,    0.0,     30.0,     29.4,    0.0},
      {32, 32,  16,   256,  32,    14.0,    12.3,    10.2,    0.0,     20.9,     20.4,    0.0},
      {32, 32,  16,   256, 256,    30.5,    12.0,    26.1,    0.0,     35.9,     35.1,    0.0},
      {32, 32,  16,  1024,  32,    20.9,    15.4,    10.4,    0.0,     57.9,     57.6,    0.0},
      {32, 32,  16,  1024, 256,    38.9,    15.6,    26.2,    0.0,     70.1,     69.4,    0.0},
      {32, 32,  16,  8192,  32,    50.9,    46.9,    10.4,    0.0,    401.3,    400.6,    0.0},
      {32, 32,  16,  8192, 256,    68.1,    47.0,    26.3,    0.0,    412.1,    411.5,    0.0},
      {32, 32,  16, 32768,  32,   147.3,   144.2,    10.5,    0.0,   1578.8,   1577.8,    0.0},
      {32, 32,  16, 32768, 256,   162.8,   144.0,    26.1,    0.0,   1587.9,   1589.2,    0.0},
      {32, 32,  64,   128,  32,    24.1,    10.7,    20.6,    0.0,     37.2,     36.3,    0.0},
      {32, 32,  64,   128, 256,    80.5,    10.3,    78.3,    0.0,     93.1,     93.9,    0.0},
      {32, 32,  64,   256,  32,    25.7,    12.9,    20.6,    0.0,     58.4,     57.7,    0.0},
      {32, 32,  64,   256, 256,    80.1,    12.2,    78.2,    0.0,    108.3,    108.8,    0.0},
      {32, 32,  64,  1024,  32,    30.6,    16.8,    20.9,    0.0,    185.4,    185.0,    0.0},
      {32, 32,  64,  1024, 256,    84.0,    16.1,    78.1,    0.0,    224.9,    225.4,    0.0},
      {32, 32,  64,  8192,  32,    61.0,    48.2,    22.0,    0.0,   1378.7,   1380.7,    0.0},
      {32, 32,  64,  8192, 256,   112.3,    47.6,    78.3,    0.0,   1411.4,   1418.0,    0.0},
      {32, 32,  64, 32768,  32,   159.1,   145.5,    21.8,    0.0,   5485.2,   5613.3,    0.0},
      {32, 32,  64, 32768, 256,   206.6,   144.5,    79.2,    0.0,   5619.3,   5566.4,    0.0},
      {32, 32, 256,   128,  32,    59.9,    12.3,    56.8,    0.0,    121.1,    120.4,    0.0},
      {32, 32, 256,   128, 256,   264.4,    11.6,   264.2,    0.0,    307.9,    308.9,    0.0},
      {32, 32, 256,   256,  32,    62.0,    14.4,    56.6,    0.0,    200.0,    199.5,    0.0},
      {32, 32, 256,   256, 256,   264.8,    13.9,   264.6,    0.0,    356.4,    356.9,    0.0},
      {32, 32, 256,  1024,  32,    70.4,    20.4,    58.4,    0.0,    678.5,    678.0,    0.0},
      {32, 32, 256,  1024, 256,   271.3,    20.0,   265.7,    0.0,    821.6,    822.5,    0.0},
      {32, 32, 256,  8192,  32,   116.8,    66.9,    58.1,    0.0,   5296.8,   5365.5,    0.0},
      {32, 32, 256,  8192, 256,   305.0,    66.6,   266.1,    0.0,   5396.9,   5446.5,    0.0},
      {32, 32, 256, 32768,  32,   279.6,   230.7,    57.8,    0.0,  23172.4,  23217.0,    0.0},
      {32, 32, 256, 32768, 256,   468.2,   230.2,   265.7,    0.0,  23858.0,  23815.9,    0.0},
      {32, 8,  16,   128,  32,    12.5,    10.3,     8.4,    0.0,      9.2,      8.8,    0.0},
      {32, 8,  16,   128, 256,    15.4,     9.6,    14.0,    0.0,     14.1,     14.9,    0.0},
      {32, 8,  16,   256,  32,    14.1,    11.7,     8.3,    0.0,     11.1,     10.4,    0.0},
      {32, 8,  16,   256, 256,    15.6,    11.7,    13.4,    0.0,     18.0,     13.9,    6.4},
      {32, 8,  16,  1024,  32,    17.2,    14.1,     8.6,    0.0,     20.7,     16.6,    6.2},
      {32, 8,  16,  1024, 256,    18.6,    14.6,    13.4,    0.0,     23.8,     19.2,    6.4},
      {32, 8,  16,  8192,  32,    26.5,    21.2,    10.5,    0.0,     73.2,     68.9,    6.1},
      {32, 8,  16,  8192, 256,    31.4,    21.2,    15.0,    0.0,     75.8,     71.1,    6.2},
      {32, 8,  16, 32768,  32,    52.3,    48.1,    10.5,    0.0,    252.8,    248.9,    6.2},
      {32, 8,  16, 32768, 256,    57.0,    47.7,    15.3,    0.0,    255.5,    250.8,    6.1},
      {32, 8,  64,   128,  32,    17.8,    11.5,    10.9,    0.0,     13.3,     13.0,    0.0},
      {32, 8,  64,   128, 256,    31.9,    11.4,    26.1,    0.0,     29.0,     28.5,    0.0},
      {32, 8,  64,   256,  32,    19.0,    13.4,    10.9,    0.0,     16.3,     16.1,    0.0},
      {32, 8,  64,   256, 256,    32.9,    12.8,    26.5,    0.0,     31.4,     32.0,    0.0},
      {32, 8,  64,  1024,  32,    23.5,    16.5,    11.3,    0.0,     36.3,     35.8,    0.0},
      {32, 8,  64,  1024, 256,    36.1,    15.9,    27.2,    0.0,     51.2,     51.7,    0.0},
      {32, 8,  64,  8192,  32,    34.6,    26.7,    12.8,    0.0,    223.7,    224.6,    0.0},
      {32, 8,  64,  8192, 256,    49.2,    25.9,    29.0,    0.0,    236.2,    236.6,    0.0},
      {32, 8,  64, 32768,  32,    74.0,    66.3,    13.0,    0.0,    883.4,    884.3,    0.0},
      {32, 8,  64, 32768, 256,    86.8,    65.4,    29.2,    0.0,    884.8,    885.6,    0.0},
      {32, 8, 256,   128,  32,    33.1,    11.9,    26.4,    0.0,     34.4,     33.8,    0.0},
      {32, 8, 256,   128, 256,    80.8,    11.3,    80.8,    0.0,     88.7,     88.6,    0.0},
      {32, 8, 256,   256,  32,    34.7,    13.7,    26.4,    0.0,     47.9,     47.4,    0.0},
      {32, 8, 256,   256, 256,    81.1,    13.0,    80.3,    0.0,    101.8,    102.4,    0.0},
      {32, 8, 256,  1024,  32,    41.1,    18.1,    27.8,    0.0,    126.0,    125.5,    0.0},
      {32, 8, 256,  1024, 256,    92.4,    17.4,    82.1,    0.0,    181.0,    182.1,    0.0},
      {32, 8, 256,  8192,  32,    86.0,    63.7,    27.8,    0.0,    879.5,    877.0,    0.0},
      {32, 8, 256,  8192, 256,   133.0,    63.3,    81.8,    0.0,    921.9,    921.5,    0.0},
      {32, 8, 256, 32768,  32,   242.3,   221.6,    27.9,    0.0,   3583.3,   3598.2,    0.0},
      {32, 8, 256, 32768, 256,   288.2,   220.9,    81.6,    0.0,   3519.3,   3537.8,    0.0},
};

// Also in the file: the one split variant the fitted model chose, timed whole by the check: plain
// decode with the suffixes unsplit ("plain t132 nosplit": min_decode_chunk = INT_MAX).
struct S8Variant {
  int h_kv, b, p, s;
  double total;
};
const S8Variant kS8PlainNoSplit[] = {{8, 16, 256, 256, 15.9}};

// Session 23, run 3 (bench/NOTES-planner.md, session 23): the calibration on nvidia-h200 with the
// kernels of session 22 (the narrow prefix CTA among them), over heads 32/32, 32/8, 64/8; B 8, 16,
// 32, 64, 128, 256; P 128-32768; S 32, 64, 256, 512; fp16 (432 shapes), the columns as kS8Rows'.
const CalibrationRow kS23BroadRows[] = {
#include "unit/kernels/h200_s23_calibration.inc"
};

// Session 24, runs 2-3 (bench/NOTES-planner.md, session 24): the same grid and kernels, with the
// narrow cascade (64-row prefix items) timed too wherever it differs from the cascade. The built-in
// defaults are fitted to these rows (CostModelParams::H200).
const CalibrationRow kS24Rows[] = {
#include "unit/kernels/h200_s24_calibration.inc"
};

// Session 24, runs 9-10: the same calibration again, with the half cascade (half the prefix item
// target) timed too. Not fitted on: the defaults are checked against it.
const CalibrationRow kS24bRows[] = {
#include "unit/kernels/h200_s24b_calibration.inc"
};

// Session 53, run 5 (bench/NOTES-planner.md, session 53): the calibration on the kernels of session
// 52 over the planner check's grid (heads 32/32 and 32/8, B 16/64/256, P 128-32768, S 32/256; fp16),
// every layout as kS24bRows'. Not fitted on: the defaults are checked against it.
const CalibrationRow kS53Rows[] = {
#include "unit/kernels/h200_s53_calibration.inc"
};

// The cascade with the fine prefix chunks (PlanOptions::fine_prefix_chunk), whole step, where
// session 23's first planner check chose and timed it (bench/kernel/results/s23/run1-calibrate.txt).
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct TimedTotal {
  int h_kv, b, p, s;
  double total;
};
const std::vector<TimedTotal> kS23Fine = {{8, 8, 1024, 32, 14.1}, {8, 8, 1024, 256, 16.6}, {8, 16, 1024, 32, 14.4}};
// The options session 53's calibration planned with: the CUDA backend's on the H200 (the prefix grid
// balanced over its SMs since session 44), its layouts one after the other (no concurrent mode: the
// calibration times those alone).
PlanOptions S53CalibrationOptions() {
  PlanOptions o = H200BackendPlanOptions();
  o.choose_layout = false;
  o.concurrent_candidates.clear();
  o.concurrent_tma_candidate = false;
  o.concurrent_tma_candidates.clear();
  return o;
}
// ... and where session 53's calibration chose and timed it (its first planner check, the defaults:
// bench/kernel/results/s53/run5-calibrate.txt).
const std::vector<TimedTotal> kS53Fine = {{8, 16, 1024, 32, 13.9}};

GridShape S8Shape(int h_kv, int b, int p, int s) { return S(32, h_kv, b, p, s); }
GridShape RowShape(const CalibrationRow& r) { return S(r.h_qo, r.h_kv, r.b, r.p, r.s); }

PlanOptions NoSplit() {
  PlanOptions o = H200PlanOptions();
  o.min_decode_chunk = INT_MAX;
  return o;
}

// One measured part of one grid shape's plan as a calibration sample, labelled "tag: shape layout part what".
CostSample GridSample(const GridShape& g, Layout layout, const PlanOptions& o, CostPart part, double us,
                      const char* tag, const char* what, const CostModelParams& params, double weight = 1) {
  CostSample s;
  s.profile = ProfilePlan(GridPlan(g, layout, o), params);
  s.part = part;
  s.measured_us = us;
  s.weight = weight;
  char label[160];
  std::snprintf(label, sizeof(label), "%s: %d/%d B%d P%d S%d %s %s%s", tag, g.h_qo, g.h_kv, g.batch, g.prefix, g.suffix,
                LayoutName(layout), CostPartName(part), what);
  s.label = label;
  return s;
}

// Every part and total of a calibration table as samples (labels start with tag); totals weighted
// total_weight (the planner compares totals; the parts pin the model's terms).
std::vector<CostSample> CalibrationSamples(const CalibrationRow* begin, const CalibrationRow* end, const char* tag,
                                           const CostModelParams& params, double total_weight = 1,
                                           const PlanOptions& o = H200PlanOptions()) {
  std::vector<CostSample> samples;
  for (const CalibrationRow* r = begin; r != end; ++r) {
    const GridShape g = RowShape(*r);
    auto add = [&](Layout layout, CostPart part, double us) {
      if (us > 0)
        samples.push_back(GridSample(g, layout, o, part, us, tag, "", params,
                                     part == CostPart::kTotal ? total_weight : 1.0));
    };
    add(Layout::kCascade, CostPart::kTotal, r->cascade_total);
    add(Layout::kCascade, CostPart::kPrefix, r->cascade_prefix);
    add(Layout::kCascade, CostPart::kDecode, r->cascade_decode);
    add(Layout::kCascade, CostPart::kMerge, r->cascade_merge);
    add(Layout::kPlain, CostPart::kTotal, r->plain_total);
    add(Layout::kPlain, CostPart::kDecode, r->plain_decode);
    add(Layout::kPlain, CostPart::kMerge, r->plain_merge);
    add(Layout::kNarrow, CostPart::kTotal, r->narrow_total);
    add(Layout::kNarrow, CostPart::kPrefix, r->narrow_prefix);
    add(Layout::kNarrow, CostPart::kDecode, r->narrow_decode);
    add(Layout::kNarrow, CostPart::kMerge, r->narrow_merge);
    add(Layout::kHalf, CostPart::kTotal, r->half_total);
    add(Layout::kHalf, CostPart::kPrefix, r->half_prefix);
    add(Layout::kHalf, CostPart::kDecode, r->half_decode);
    add(Layout::kHalf, CostPart::kMerge, r->half_merge);
  }
  return samples;
}

std::vector<CostSample> S23Samples(const CostModelParams& params, double total_weight = 1) {
  return CalibrationSamples(std::begin(kS23BroadRows), std::end(kS23BroadRows), "s23", params, total_weight);
}

std::vector<CostSample> S24Samples(const CostModelParams& params, double total_weight = 1) {
  return CalibrationSamples(std::begin(kS24Rows), std::end(kS24Rows), "s24", params, total_weight);
}

std::vector<CostSample> S8Samples(const CostModelParams& params) {
  std::vector<CostSample> samples = CalibrationSamples(std::begin(kS8Rows), std::end(kS8Rows), "s8", params);
  for (const S8Variant& v : kS8PlainNoSplit)
    samples.push_back(GridSample(S8Shape(v.h_kv, v.b, v.p, v.s), Layout::kPlain, NoSplit(), CostPart::kTotal, v.total,
                                 "s8", " (no split)", params));
  return samples;
}

std::string GridName(const GridShape& g) {
  return std::to_string(g.h_qo) + "/" + std::to_string(g.h_kv) + " B" + std::to_string(g.batch) + " P" +
         std::to_string(g.prefix) + " S" + std::to_string(g.suffix);
}

// One grid shape planned three ways with the given options: the cascade, plain decode, and the
// layout choice (choose_layout with the built-in model), serialised for comparison.
struct GridChoice {
  KvPoolShape pool;
  DecodeBatch batch;
  std::vector<int32_t> cascade, plain, narrow, half, choice;  // narrow: empty without fixed.narrow_tile_rows
  PlanReport report;
};
GridChoice ChooseOnGrid(const GridShape& g, const PlanOptions& fixed, const CostModelParams* params = nullptr) {
  GridChoice c;
  c.batch = UniformBatch(g, &c.pool);
  c.cascade = PlanCascade(c.batch, c.pool, fixed).Serialize();
  c.plain = PlanCascade(PlainLayout(c.batch, {1}, g.page_size), c.pool, fixed).Serialize();
  if (fixed.narrow_tile_rows > 0) {
    PlanOptions narrow = fixed;
    narrow.prefix_tile_rows = fixed.narrow_tile_rows;
    c.narrow = PlanCascade(c.batch, c.pool, narrow).Serialize();
  }
  PlanOptions half = fixed;
  half.prefix_target_items = std::max(1, fixed.prefix_target_items / 2);
  c.half = PlanCascade(c.batch, c.pool, half).Serialize();
  PlanOptions choose = fixed;
  choose.choose_layout = true;
  if (params) choose.cost_model = std::make_shared<CostModelParams>(*params);
  c.choice = PlanCascade(c.batch, c.pool, choose, &c.report).Serialize();
  return c;
}

// The defaults against every s8 sample (older kernels, above): each within kS8RowTol, RMS within
// kS8RmsTol.
constexpr double kS8RowTol = 0.30;
constexpr double kS8RmsTol = 0.10;

TEST(CostModel, DefaultsPredictTheH200S8Samples) {
  const CostModelParams params = CostModelParams::H200();
  const std::vector<CostSample> samples = S8Samples(params);
  ASSERT_GE(samples.size(), 300u);
  ExpectPredicts(samples, params, kS8RowTol, kS8RmsTol);
}

// The calibration's path on the s8 samples: FitCostModel from a badly perturbed start converges to
// about the defaults' error. PREFIXD_COST_MODEL_PRINT_FIT=1 also fits the RESULTS rows and the s8
// samples together and prints the parameters and every sample.
TEST(CostModel, FitConvergesOnTheH200S8Samples) {
  const CostModelParams defaults = CostModelParams::H200();
  const std::vector<CostSample> samples = S8Samples(defaults);
  const double base = CostFitError(samples, defaults);
  ExpectFitRecovers(samples, defaults);
  if (std::getenv("PREFIXD_COST_MODEL_PRINT_FIT")) {
    std::vector<CostSample> all = H200Samples(defaults);
    for (const CostSample& s : samples) all.push_back(s);
    const CostModelParams refit = FitCostModel(all, defaults);
    std::printf("%s# fit on all %zu samples: error %.4f (defaults %.4f); RESULTS rows %.4f, s8 %.4f\n",
                refit.ToText().c_str(), all.size(), CostFitError(all, refit), CostFitError(all, defaults),
                CostFitError(H200Samples(refit), refit), CostFitError(samples, refit));
    for (const CostSample& s : all)
      std::printf("  %-80s measured %8.1f  defaults %8.1f  fit %8.1f\n", s.label.c_str(), s.measured_us,
                  PredictPart(s.profile, defaults, s.part), PredictPart(s.profile, refit, s.part));
  }
}


// ---------------------------------------------------------------------------------------------
// Session 24's calibration (kS24Rows): the built-in defaults' data.

// The planner's choice with the built-in defaults on the shapes of a session-24 calibration, judged
// by their measured times. On the grid shapes among them (fp16, heads 32/32 and 32/8, B
// 16/64/256, S 32/256, P 1024/8192/32768 and the planner bar's 128/256) the choice must have been
// timed (the cascade, plain decode, the narrow cascade, the half cascade where timed, or the fine
// prefix chunks where `fine` has them: kS23Fine, kS53Fine) and be within 5% of the fastest of the
// cascade, plain decode and the narrow cascade, and of plain decode (the performance issue's planner
// bar); the plans are made with `fixed`, the options the calibration planned with. On the
// other shapes a timed choice must be within kOffGridTol of that fastest: the model's error there
// is known (bench/NOTES-planner.md, sessions 23-24: small prefix grids at P 256-1024 with B ≤ 16,
// and at g = 8), and this bounds it; choices nobody timed are counted, not judged. The half
// cascade is not a layout the model describes (the SMs a smaller prefix grid leaves to the decode,
// NOTES-planner session 24), so it is counted where it is faster by more than 5%, not judged.
// PREFIXD_COST_MODEL_PRINT_FIT=1 prints the table.
constexpr double kOffGridTol = 1.20;

struct PlannerCheckResult {
  double worst_grid = 0, worst_other = 0;
  int grid = 0, other = 0, other_over = 0, other_untimed = 0, half_faster = 0;
};

PlannerCheckResult S24PlannerCheck(const CalibrationRow* begin, const CalibrationRow* end, const char* tag,
                                   const CostModelParams& params, bool print,
                                   const std::vector<TimedTotal>& fine = kS23Fine,
                                   const PlanOptions& fixed = H200PlanOptions()) {
  PlannerCheckResult res;
  for (const CalibrationRow* row = begin; row != end; ++row) {
    const CalibrationRow& r = *row;
    const GridShape g = RowShape(r);
    SCOPED_TRACE(std::string(tag) + ": " + GridName(g));
    const bool on_grid = r.h_qo == 32 && (r.b == 16 || r.b == 64 || r.b == 256) && (r.s == 32 || r.s == 256) &&
                         r.p != 512;
    const GridChoice c = ChooseOnGrid(g, fixed, &params);
    const PlanReport& report = c.report;
    const bool has_narrow = c.narrow != c.cascade, has_half = c.half != c.cascade;
    EXPECT_EQ(has_narrow, r.narrow_total > 0) << "the narrow cascade was timed where it differs, and only there";
    EXPECT_TRUE(!(r.half_total > 0) || has_half) << "a half cascade was timed where it is the cascade";
    const bool half_timed = has_half && r.half_total > 0;
    double measured = kNaN;
    const char* name = "untimed";
    if (c.choice == c.cascade) {
      measured = r.cascade_total, name = "cascade";
    } else if (c.choice == c.plain) {
      measured = r.plain_total, name = "plain";
    } else if (has_narrow && c.choice == c.narrow) {
      measured = r.narrow_total, name = "narrow";
    } else if (half_timed && c.choice == c.half) {
      measured = r.half_total, name = "half";
    } else if (report.min_prefix_chunk == fixed.fine_prefix_chunk &&
               report.prefix_target_items == fixed.prefix_target_items &&
               report.prefix_tile_rows == fixed.prefix_tile_rows &&
               (report.group_plain.empty() || !report.group_plain[0])) {
      for (const TimedTotal& f : fine)
        if (r.h_qo == 32 && f.h_kv == r.h_kv && f.b == r.b && f.p == r.p && f.s == r.s)
          measured = f.total, name = "fine chunks";
    }
    const double fastest = std::min({r.cascade_total, r.plain_total, has_narrow ? r.narrow_total : r.cascade_total});
    const double ratio = measured / fastest;
    res.half_faster += half_timed && r.half_total * 1.05 < std::min(fastest, measured);
    if (on_grid) {
      ++res.grid;
      EXPECT_FALSE(std::isnan(measured)) << "the model chooses a plan nobody timed (prefix_target_items "
                                         << report.prefix_target_items << ", min_prefix_chunk "
                                         << report.min_prefix_chunk << ", prefix_tile_rows "
                                         << report.prefix_tile_rows << "): time it with --planner-check first";
      if (std::isnan(measured)) continue;
      res.worst_grid = std::max(res.worst_grid, ratio);
      EXPECT_LE(ratio, 1.05) << name << " chosen: measured " << measured << " us, cascade " << r.cascade_total
                             << ", plain " << r.plain_total << ", narrow " << r.narrow_total;
      EXPECT_LE(measured / r.plain_total, 1.05) << name << " chosen, against plain decode";
    } else {
      ++res.other;
      if (std::isnan(measured)) {
        ++res.other_untimed;
        continue;
      }
      res.worst_other = std::max(res.worst_other, ratio);
      res.other_over += ratio > 1.05;
      EXPECT_LE(ratio, kOffGridTol) << name << " chosen: measured " << measured << " us, cascade " << r.cascade_total
                                    << ", plain " << r.plain_total << ", narrow " << r.narrow_total;
    }
    if (print)
      std::printf("  %d/%-2d B%-3d P%-5d S%-3d  cascade %7.1f plain %7.1f narrow %7.1f half %7.1f | pred %7.1f %7.1f | "
                  "%-11s ratio %.3f%s\n",
                  r.h_qo, r.h_kv, r.b, r.p, r.s, r.cascade_total, r.plain_total, r.narrow_total, r.half_total,
                  report.predicted_cascade_us, report.predicted_plain_us, name, ratio, on_grid ? " (grid)" : "");
  }
  std::printf("# %s planner check: %d grid shapes, worst %.3f; %d others, worst %.3f of the timed, %d over 5%%, "
              "%d choices untimed; the half cascade faster by more than 5%% on %d\n",
              tag, res.grid, res.worst_grid, res.other, res.worst_other, res.other_over, res.other_untimed,
              res.half_faster);
  return res;
}

TEST(CostModel, PlannerChoosesWithinFivePercentOnTheH200S24Shapes) {
  const bool print = std::getenv("PREFIXD_COST_MODEL_PRINT_FIT") != nullptr;
  const CostModelParams params = CostModelParams::H200();
  EXPECT_EQ(S24PlannerCheck(std::begin(kS24Rows), std::end(kS24Rows), "s24", params, print).grid, 60);
  EXPECT_EQ(S24PlannerCheck(std::begin(kS24bRows), std::end(kS24bRows), "s24b", params, print).grid, 60);
}

// The same check on session 53's calibration: the defaults (fitted on session 24's kernels) still
// choose within 5% of the fastest of the cascade, plain decode and the narrow cascade on every shape
// of the grid as the kernels are now. Where the half cascade is faster by more than 5% (32/8 B16
// P8192 S32 and S256) it is counted, not judged (above); the count is pinned, so that a model that
// learns the half cascade's gain shows here.
TEST(CostModel, PlannerChoosesWithinFivePercentOnTheH200S53Shapes) {
  const bool print = std::getenv("PREFIXD_COST_MODEL_PRINT_FIT") != nullptr;
  const PlannerCheckResult res =
      S24PlannerCheck(std::begin(kS53Rows), std::end(kS53Rows), "s53", CostModelParams::H200(), print, kS53Fine,
                      S53CalibrationOptions());
  EXPECT_EQ(res.grid, 60);
  EXPECT_EQ(res.half_faster, 2);
}

// The defaults against every s24 sample (each within kS24RowTol, RMS within kS24RmsTol), against
// the second session-24 run (half cascades too) and against session 23's run of the same kernels on
// the same grid (without the narrow cascade).
constexpr double kS24RowTol = 0.32;
constexpr double kS24RmsTol = 0.08;

TEST(CostModel, DefaultsPredictTheH200S23AndS24Samples) {
  const CostModelParams params = CostModelParams::H200();
  struct Set {
    const char* name;
    std::vector<CostSample> samples;
    size_t at_least;
  };
  const Set sets[] = {{"s24 (the fit's data)", S24Samples(params), 3000},
                      {"s24b", CalibrationSamples(std::begin(kS24bRows), std::end(kS24bRows), "s24b", params), 3500},
                      {"s23", S23Samples(params), 2000}};
  for (const Set& set : sets) {
    SCOPED_TRACE(set.name);
    ASSERT_GE(set.samples.size(), set.at_least);
    ExpectPredicts(set.samples, params, kS24RowTol, kS24RmsTol);
  }
}

// ... and against session 53's calibration (the kernels of session 52): the defaults, fitted on
// session 24's kernels, still predict each of its parts within kS24RowTol (RMS 0.077; a refit on
// it reaches 0.060 but chooses no better, bench/NOTES-planner.md, session 53).
TEST(CostModel, DefaultsPredictTheH200S53Samples) {
  const CostModelParams params = CostModelParams::H200();
  const std::vector<CostSample> samples =
      CalibrationSamples(std::begin(kS53Rows), std::end(kS53Rows), "s53", params, 1, S53CalibrationOptions());
  ASSERT_GE(samples.size(), 450u);
  ExpectPredicts(samples, params, kS24RowTol, kS24RmsTol);
}

// The calibration's path on the s24 samples: from a badly perturbed start FitCostModel gets back
// to about the defaults' error. PREFIXD_COST_MODEL_PRINT_FIT=1 prints the fit (totals weighted
// PREFIXD_COST_MODEL_TOTAL_WEIGHT, default kS24TotalWeight, as the defaults were made), every
// sample and the planner check with the fit.
constexpr double kS24TotalWeight = 1;

TEST(CostModel, FitConvergesOnTheH200S24Samples) {
  const CostModelParams defaults = CostModelParams::H200();
  const char* w = std::getenv("PREFIXD_COST_MODEL_TOTAL_WEIGHT");
  const double total_weight = w ? std::atof(w) : kS24TotalWeight;
  const std::vector<CostSample> samples = S24Samples(defaults, total_weight);
  const double base = CostFitError(samples, defaults);
  ExpectFitRecovers(samples, defaults);
  if (std::getenv("PREFIXD_COST_MODEL_PRINT_FIT")) {
    const CostModelParams refit = FitCostModel(samples, defaults);
    std::printf("%s# fit on %zu s24 samples (totals weighted %g): error %.4f (defaults %.4f); s23 samples %.4f\n",
                refit.ToText().c_str(), samples.size(), total_weight, CostFitError(samples, refit), base,
                CostFitError(S23Samples(refit), refit));
    for (const CostSample& s : samples)
      std::printf("  %-60s measured %8.1f  defaults %8.1f  fit %8.1f\n", s.label.c_str(), s.measured_us,
                  PredictPart(s.profile, defaults, s.part), PredictPart(s.profile, refit, s.part));
    S24PlannerCheck(std::begin(kS24Rows), std::end(kS24Rows), "s24", refit, true);
    S24PlannerCheck(std::begin(kS24bRows), std::end(kS24bRows), "s24b", refit, true);
    std::printf("# the fit's error on the s24b samples: %.4f (defaults %.4f)\n",
                CostFitError(CalibrationSamples(std::begin(kS24bRows), std::end(kS24bRows), "s24b", refit), refit),
                CostFitError(CalibrationSamples(std::begin(kS24bRows), std::end(kS24bRows), "s24b", defaults), defaults));
  }
}

// The decode kernel rule the CUDA backend and the cost model share (decode_kernel_choice.h).
TEST(DecodeKernelChoice, TensorCoresWhereBuiltAndLongItemsAtHeadDim256) {
  for (int d : {64, 128})
    for (int g : {4, 8}) {
      EXPECT_TRUE(TensorCoreDecodeApplies(g, d, 0)) << "g " << g << " d " << d;
      EXPECT_TRUE(TensorCoreDecodeApplies(g, d, 16)) << "short items too at d " << d;
    }
  for (int g : {1, 2}) EXPECT_FALSE(TensorCoreDecodeApplies(g, 128, 256, true)) << "not built for g " << g;
  EXPECT_TRUE(TensorCoreDecodeApplies(4, 256, 256));
  EXPECT_TRUE(TensorCoreDecodeApplies(4, 256, 0)) << "unknown item length: the long-item kernel";
  EXPECT_TRUE(TensorCoreDecodeApplies(4, 256, kTensorCoreDecodeShortItemTokens + 1));
  EXPECT_FALSE(TensorCoreDecodeApplies(4, 256, kTensorCoreDecodeShortItemTokens));
  EXPECT_TRUE(TensorCoreDecodeApplies(4, 256, 8, /*forced=*/true));
  // Groups of 5-8 at head_dim 256: the group of 4 in two slices, long items only (session 75).
  for (int g : {5, 8}) {
    EXPECT_TRUE(TensorCoreDecodeApplies(g, 256, 256)) << "g " << g;
    EXPECT_FALSE(TensorCoreDecodeApplies(g, 256, kTensorCoreDecodeShortItemTokens)) << "g " << g;
    EXPECT_EQ(DecodeSlicingFor(g, 256, true).rows, 4) << "g " << g;
    EXPECT_EQ(DecodeSlicingFor(g, 256, true).slices, 2) << "g " << g;
    EXPECT_EQ(DecodeSlicingFor(g, 256, false).rows, 8) << "g " << g << " on CUDA cores";
  }
  EXPECT_FALSE(TensorCoreDecodeApplies(2, 256, 256, true)) << "g 2 stays on CUDA cores at d 256";
}

// The TMA decode is built for groups of 1, 2, 4 and 8 at head_dim 64 and 128; the planner's
// concurrent mode offers it only at 4 and 8 (the groups its model was calibrated on).
TEST(DecodeKernelChoice, TmaDecodeBuiltAndModeledGroups) {
  for (int d : {64, 128, 256})
    for (int g = 1; g <= 16; ++g) {
      const bool built = d != 256 && (g == 1 || g == 2 || g == 4 || g == 8);
      EXPECT_EQ(TmaDecodeBuilt(g, d), built) << "g " << g << " d " << d;
      EXPECT_EQ(TmaDecodeModeled(g, d), built && g >= 4) << "g " << g << " d " << d;
    }
}

// The sequential step's TMA decode (SequentialTmaDecodeWarps): GQA 1, head_dim 128, items of
// 128-512 tokens, 12 warps up to 6 items per SM and 8 up to 8; nowhere else.
TEST(DecodeKernelChoice, SequentialTmaDecodeOnlyWhereItMeasuredFaster) {
  constexpr int kSms = 132;
  EXPECT_EQ(SequentialTmaDecodeWarps(1, 128, 16 * 32, 256, kSms), 12) << "32/32 B16 S256";
  EXPECT_EQ(SequentialTmaDecodeWarps(1, 128, 6 * kSms, 128, kSms), 12);
  EXPECT_EQ(SequentialTmaDecodeWarps(1, 128, 6 * kSms + 1, 512, kSms), 8);
  EXPECT_EQ(SequentialTmaDecodeWarps(1, 128, 32 * 32, 256, kSms), 8) << "32/32 B32 S256";
  EXPECT_EQ(SequentialTmaDecodeWarps(1, 128, 64 * 32, 256, kSms), 0) << "32/32 B64 S256: more items than warps";
  EXPECT_EQ(SequentialTmaDecodeWarps(1, 128, 16 * 32, 32, kSms), 0) << "S32";
  EXPECT_EQ(SequentialTmaDecodeWarps(1, 128, 16 * 32, 127, kSms), 0);
  EXPECT_EQ(SequentialTmaDecodeWarps(1, 128, 16 * 32, 513, kSms), 0) << "longer items: not measured";
  EXPECT_EQ(SequentialTmaDecodeWarps(2, 128, 16 * 16, 128, kSms), 0) << "GQA 2";
  EXPECT_EQ(SequentialTmaDecodeWarps(4, 128, 16 * 8, 256, kSms), 0) << "GQA 4";
  EXPECT_EQ(SequentialTmaDecodeWarps(1, 64, 16 * 32, 256, kSms), 0) << "head_dim 64";
  EXPECT_EQ(SequentialTmaDecodeWarps(1, 128, 0, 256, kSms), 0) << "no items";
  EXPECT_EQ(SequentialTmaDecodeWarps(1, 128, 16 * 32, 256, 66), 8) << "scaled by the SM count";
}

// Every GQA group size is served (decode_kernel_choice.h): by the smallest compiled group that holds
// it, a larger group in slices of the largest compiled one (8; 16 where the tensor-core kernel has
// its 16-row group), none of them empty.
TEST(DecodeKernelChoice, EveryGroupSizeIsServed) {
  for (bool sixteen : {false, true})
    for (int g = 1; g <= 130; ++g) {
      const DecodeGroupSlicing s = DecodeSlicing(g, sixteen);
      const int largest = sixteen ? 16 : 8;
      const std::string what = "g " + std::to_string(g) + (sixteen ? " with" : " without") + " the 16-row group";
      EXPECT_TRUE(s.rows == 1 || s.rows == 2 || s.rows == 4 || s.rows == 8 || (sixteen && s.rows == 16))
          << what << ": rows " << s.rows;
      EXPECT_GE(s.rows * s.slices, g) << what << ": heads left out";
      EXPECT_LT(s.rows * (s.slices - 1), g) << what << ": an empty slice";
      if (g <= largest) {
        EXPECT_EQ(s.slices, 1) << what;
        EXPECT_TRUE(s.rows == g || s.rows / 2 < g) << what << ": not the smallest compiled group";
      } else {
        EXPECT_EQ(s.rows, largest) << what;
      }
    }
  EXPECT_EQ(DecodeSlicing(3).rows, 4);
  EXPECT_EQ(DecodeSlicing(5).rows, 8);
  EXPECT_EQ(DecodeSlicing(12).slices, 2);
  EXPECT_EQ(DecodeSlicing(32).slices, 4);
  EXPECT_EQ(DecodeSlicing(8, true).rows, 8) << "groups of up to 8 never take the 16-row tile";
  EXPECT_EQ(DecodeSlicing(12, true).rows, 16);
  EXPECT_EQ(DecodeSlicing(12, true).slices, 1);
  EXPECT_EQ(DecodeSlicing(32, true).slices, 2);
  // Through the group that runs: tensor cores for 3, 5-7, 12, 16 and 32 at head_dim 64 and 128, with
  // the 16-row group for g > 8; at 256 only the group of 4 is built (long items: g = 3 in it, 5-8
  // in two slices of it), so g > 8 runs on the CUDA-core kernel in slices of 8.
  for (int d : {64, 128})
    for (int g : {3, 5, 6, 7, 12, 16, 32}) EXPECT_TRUE(TensorCoreDecodeApplies(g, d, 256)) << "g " << g << " d " << d;
  EXPECT_TRUE(TensorCoreDecodeApplies(3, 256, 256));
  EXPECT_TRUE(TensorCoreDecodeApplies(5, 256, 256));
  EXPECT_FALSE(TensorCoreDecodeApplies(9, 256, 256, true));
  EXPECT_FALSE(TensorCoreDecodeApplies(16, 256, 256, true));
  for (int d : {64, 128}) {
    EXPECT_TRUE(TensorCoreDecodeBuilt(16, d));
    EXPECT_EQ(DecodeSlicingFor(16, d, true).rows, 16);
    EXPECT_EQ(DecodeSlicingFor(16, d, false).rows, 8) << "the CUDA-core kernel (forced) has no 16-row group";
    EXPECT_EQ(DecodeSlicingFor(16, d, false).slices, 2);
  }
  EXPECT_FALSE(TensorCoreDecodeBuilt(16, 256));
  EXPECT_EQ(DecodeSlicingFor(16, 256, true).rows, 8) << "no 16-row group at head_dim 256";
}

// The cost model counts a sliced group's CTAs and the K/V each of them streams: at head_dim 128
// (tensor cores) a group of 16 is one CTA per item and a group of 32 two; at head_dim 256 a group of
// 16 is two (the CUDA-core kernel's slices of 8) and so is a group of 8 (the tensor-core kernel's
// slices of 4).
TEST(CostModel, SlicedGroupsCountEveryCtaAndItsBytes) {
  const CostModelParams params = CostModelParams::H200();
  GridShape eight;
  eight.h_qo = 16, eight.h_kv = 2, eight.batch = 8, eight.prefix = 1024, eight.suffix = 64;
  GridShape sixteen = eight, thirty_two = eight;
  sixteen.h_qo = 32;
  thirty_two.h_qo = 64;
  const CascadePlan plan8 = GridPlan(eight, Layout::kCascade), plan16 = GridPlan(sixteen, Layout::kCascade),
                    plan32 = GridPlan(thirty_two, Layout::kCascade);
  ASSERT_EQ(plan8.decode_items.size(), plan16.decode_items.size()) << "the same items (per KV head)";
  ASSERT_EQ(plan8.decode_items.size(), plan32.decode_items.size()) << "the same items (per KV head)";
  const PlanProfile p8 = ProfilePlan(plan8, params), p16 = ProfilePlan(plan16, params),
                    p32 = ProfilePlan(plan32, params);
  EXPECT_EQ(p8.decode_items, int64_t(plan8.decode_items.size()));
  EXPECT_EQ(p16.decode_items, int64_t(plan16.decode_items.size())) << "the 16-row group: one CTA per item";
  EXPECT_DOUBLE_EQ(p16.decode_streamed_bytes, p8.decode_streamed_bytes);
  EXPECT_EQ(p32.decode_items, 2 * int64_t(plan32.decode_items.size()));
  EXPECT_DOUBLE_EQ(p32.decode_streamed_bytes, 2 * p8.decode_streamed_bytes);
  EXPECT_DOUBLE_EQ(p32.decode_unique_bytes, p8.decode_unique_bytes) << "the same pages";

  GridShape wide16 = sixteen, wide8 = eight, wide4 = eight;
  wide16.head_dim = wide8.head_dim = wide4.head_dim = 256;
  wide4.h_qo = 8;
  const CascadePlan plan_w16 = GridPlan(wide16, Layout::kCascade), plan_w8 = GridPlan(wide8, Layout::kCascade),
                    plan_w4 = GridPlan(wide4, Layout::kCascade);
  const PlanProfile pw16 = ProfilePlan(plan_w16, params), pw8 = ProfilePlan(plan_w8, params),
                    pw4 = ProfilePlan(plan_w4, params);
  EXPECT_EQ(pw4.decode_items, int64_t(plan_w4.decode_items.size())) << "the group of 4 at head_dim 256";
  EXPECT_EQ(pw16.decode_items, 2 * int64_t(plan_w16.decode_items.size())) << "slices of 8 at head_dim 256";
  EXPECT_DOUBLE_EQ(pw16.decode_streamed_bytes, 2 * pw4.decode_streamed_bytes);
  EXPECT_EQ(pw8.decode_items, 2 * int64_t(plan_w8.decode_items.size())) << "g 8: two slices of 4 (tensor cores)";
  EXPECT_EQ(pw8.decode_rows, 4);
  EXPECT_DOUBLE_EQ(pw8.decode_streamed_bytes, 2 * pw4.decode_streamed_bytes);

  EXPECT_EQ(p8.decode_rows, 8);
  EXPECT_EQ(p16.decode_rows, 16);

  // The 16-row group streams the bytes of the group of 8 once, at more arithmetic per byte: at a
  // batch that fills the SMs (B256 S256, as measured: session 37) its decode is predicted slower
  // than the 8's and faster than two slices of 8. (With few CTAs the slices' extra CTAs can win,
  // as they did at B16.)
  GridShape big8 = eight;
  big8.batch = 256, big8.suffix = 256;
  GridShape big16 = big8;
  big16.h_qo = 32;
  const PlanProfile q8 = ProfilePlan(GridPlan(big8, Layout::kCascade), params),
                    q16 = ProfilePlan(GridPlan(big16, Layout::kCascade), params);
  PlanProfile two_slices = q16;
  two_slices.decode_rows = 8, two_slices.decode_items *= 2, two_slices.decode_streamed_bytes *= 2;
  const double d8 = PredictCost(q8, params).decode_us, d16 = PredictCost(q16, params).decode_us;
  EXPECT_GT(d16, d8);
  EXPECT_LT(d16, PredictCost(two_slices, params).decode_us);
}

// The concurrent mode chosen by the planner (PlanOptions::concurrent_candidates, the cost model's
// concurrent step) where it measured faster on the H200, and not where it measured slower: the
// whole step at B256 P32768 (and the grid's other long-suffix shapes), fp16, default planner
// against the mode at k = 20 (head_dim 64, 128) or 28 (256), µs, sequential → concurrent
// (bench/RESULTS.md, session 45 runs 7 and 10, session 47 runs 1 and 3). The rule holds only
// where the prediction's margin is clear: 32/32 D256 S256 (−1%) and 32/8 B64 P32768 S256 (−1 µs)
// are about even and left to the model either way.
TEST(CostModel, PlannerChoosesTheConcurrentModeWhereItMeasuredFaster) {
  struct Case {
    GridShape shape;
    double sequential_us, concurrent_us;  // measured
  };
  auto shape = [](int h_qo, int h_kv, int d, int b, int p, int s) {
    GridShape g;
    g.h_qo = h_qo, g.h_kv = h_kv, g.head_dim = d, g.batch = b, g.prefix = p, g.suffix = s;
    return g;
  };
  const Case cases[] = {
      {shape(32, 8, 128, 256, 32768, 256), 282.5, 274.9},  {shape(32, 8, 256, 256, 32768, 256), 542.8, 507.0},
      {shape(32, 8, 128, 256, 32768, 32), 242.1, 269.3},   {shape(32, 32, 128, 256, 32768, 256), 470.4, 476.7},
      {shape(32, 32, 128, 256, 32768, 32), 268.6, 286.1},  {shape(32, 8, 64, 256, 32768, 256), 186.6, 199.3},
      {shape(32, 32, 64, 256, 32768, 256), 278.8, 290.3},  {shape(32, 8, 128, 64, 8192, 256), 48.1, 51.6},
      {shape(32, 8, 128, 256, 8192, 256), 133.0, 135.3},
  };
  const bool print = std::getenv("PREFIXD_COST_MODEL_PRINT_FIT") != nullptr;
  PlanOptions o = H200PlanOptions();
  o.choose_layout = true;
  o.balance_prefix_ctas = 132;
  o.concurrent_candidates = {20, 28};
  for (const Case& c : cases) {
    KvPoolShape pool;
    const DecodeBatch batch = UniformBatch(c.shape, &pool);
    PlanReport report;
    const CascadePlan plan = PlanCascade(batch, pool, o, &report);
    PlanOptions sequential = o;
    sequential.concurrent_candidates.clear();
    PlanReport seq_report;
    (void)PlanCascade(batch, pool, sequential, &seq_report);
    const bool faster = c.concurrent_us < c.sequential_us * 0.97, slower = c.concurrent_us > c.sequential_us;
    const std::string name = std::to_string(c.shape.h_qo) + "/" + std::to_string(c.shape.h_kv) + " D" +
                             std::to_string(c.shape.head_dim) + " B" + std::to_string(c.shape.batch) + " P" +
                             std::to_string(c.shape.prefix) + " S" + std::to_string(c.shape.suffix);
    if (print)
      std::printf("  %-28s measured %6.1f → %6.1f | predicted %6.1f → %6.1f (k = %d)\n", name.c_str(), c.sequential_us,
                  c.concurrent_us, seq_report.predicted_us, report.predicted_us, plan.concurrent_decode_sms);
    EXPECT_EQ(plan.concurrent_decode_sms, report.concurrent_decode_sms) << name;
    if (faster) EXPECT_GT(plan.concurrent_decode_sms, 0) << name << ": measured faster, not chosen";
    if (slower) EXPECT_EQ(plan.concurrent_decode_sms, 0) << name << ": measured slower, chosen";
    if (plan.concurrent_decode_sms > 0) {
      EXPECT_TRUE(plan.merge_requests.size() == size_t(plan.num_requests)) << name << ": every request merged";
      EXPECT_GT(plan.prefix_balanced_ctas, 0) << name;
      EXPECT_LE(plan.prefix_balanced_ctas, 132 - plan.concurrent_decode_sms) << name;
    }
  }
  // Its k where several were timed (session 49 run 3, 32/8 B256 P32768 S256 fp16, µs): at head_dim
  // 256, 28 (494.6; 20: 507.3, 24: 495.1, 32: 518.8), which the model's rate of head_dim 128 missed;
  // at 128, 20 (262.7 with the TMA decode; 16-24: 275.7-296.1).
  for (const auto& [d, k] : {std::pair{256, 28}, std::pair{128, 20}}) {
    KvPoolShape pool;
    const DecodeBatch batch = UniformBatch(shape(32, 8, d, 256, 32768, 256), &pool);
    PlanOptions with_tma = o;
    with_tma.concurrent_tma_candidate = true;
    EXPECT_EQ(PlanCascade(batch, pool, o).concurrent_decode_sms, k) << "head_dim " << d;
    EXPECT_EQ(PlanCascade(batch, pool, with_tma).concurrent_decode_sms, k) << "head_dim " << d << ", TMA candidate";
  }
  // Without the head_dim-256 rate the model took k = 20 there.
  {
    KvPoolShape pool;
    const DecodeBatch batch = UniformBatch(shape(32, 8, 256, 256, 32768, 256), &pool);
    auto one_rate = std::make_shared<CostModelParams>(CostModelParams::H200());
    one_rate->concurrent_sm_gbs_d256 = one_rate->concurrent_sm_gbs;
    PlanOptions with_rate = o;
    with_rate.cost_model = one_rate;
    EXPECT_EQ(PlanCascade(batch, pool, with_rate).concurrent_decode_sms, 20);
  }
  // On the head_dim-128 grid (B 16-256, P 1024-32768, S 32/256, 32/32 and 32/8) only at
  // 32/8 B256 P32768 S256: the other shapes either measured no faster (above; bench/RESULTS.md
  // session 45 run 10) or have a memory-bound prefix (B16 and B64 at GQA 4, every 32/32 one), beside
  // which the planner never chooses the mode.
  for (const int h_kv : {32, 8})
    for (const int b : {16, 64, 256})
      for (const int p : {1024, 8192, 32768})
        for (const int s : {32, 256}) {
          KvPoolShape pool;
          const DecodeBatch batch = UniformBatch(shape(32, h_kv, 128, b, p, s), &pool);
          const bool want = h_kv == 8 && b == 256 && p == 32768 && s == 256;
          EXPECT_EQ(PlanCascade(batch, pool, o).concurrent_decode_sms > 0, want)
              << "32/" << h_kv << " B" << b << " P" << p << " S" << s;
        }
  // Without candidates, or with choose_layout off, never.
  KvPoolShape pool;
  const DecodeBatch batch = UniformBatch(cases[1].shape, &pool);
  PlanOptions off = o;
  off.concurrent_candidates.clear();
  EXPECT_EQ(PlanCascade(batch, pool, off).concurrent_decode_sms, 0);
  off = o;
  off.choose_layout = false;
  EXPECT_EQ(PlanCascade(batch, pool, off).concurrent_decode_sms, 0);
}

// The model's concurrent step (cost_model.h): the persistent TMA decode ends after its rounds of
// one item per warp (12 per SM, or 8 as SetTmaDecodeWarps sets) on its k SMs, or at its bytes over
// concurrent_tma_gbs if that is later, however long the prefix runs; the other decode spreads over
// every SM once the prefix ends, so with more prefix it ends later but not by its whole beside-time; a
// step one after the other has no concurrent decode end.
TEST(CostModel, ConcurrentDecodeEndsAsItsKernelStreams) {
  const CostModelParams params = CostModelParams::H200();
  auto plan_of = [](int prefix, int k, bool tma) {
    GridShape g;
    g.h_qo = 32, g.h_kv = 8, g.head_dim = 128, g.batch = 256, g.prefix = prefix, g.suffix = 256;
    KvPoolShape pool;
    const DecodeBatch batch = UniformBatch(g, &pool);
    PlanOptions o = H200PlanOptions();
    o.concurrent_decode_sms = k;
    o.concurrent_decode_tma = tma;
    if (k > 0) {  // the mode's options, as the planner makes them (ScoreConcurrentCascade)
      o.fuse_merge = false;
      o.prefix_target_items = o.balance_prefix_ctas = 132 - k;
      o.balance_stream = true;
    }
    return PlanCascade(batch, pool, o);
  };
  const CascadePlan tma = plan_of(32768, 20, true), other = plan_of(32768, 20, false);
  const PlanProfile profile = ProfilePlan(tma, params);
  const double bytes = profile.decode_streamed_bytes;
  ASSERT_GT(bytes, 0);
  ASSERT_EQ(profile.decode_items, 2048);  // 256 requests × 8 KV heads, one item each
  const CostBreakdown t = PredictCost(tma, params), d = PredictCost(other, params);
  // 2048 items on 240 warps: 9 rounds of one 256-token item (131 KiB) each.
  const double round_us = params.concurrent_tma_item_us + bytes / 2048 / (params.concurrent_tma_warp_gbs * 1e3);
  EXPECT_NEAR(t.concurrent_decode_end_us, 9 * round_us, 1e-6);
  EXPECT_GT(9 * round_us, bytes / (params.concurrent_tma_gbs * 1e3));
  // With 8 warps per CTA, on 160 warps: 13 rounds, each shorter.
  CostModelParams eight = params;
  eight.SetTmaDecodeWarps(8);
  const double eight_round_us = eight.concurrent_tma_item_us + bytes / 2048 / (eight.concurrent_tma_warp_gbs * 1e3);
  EXPECT_LT(eight_round_us, round_us);
  EXPECT_NEAR(PredictCost(tma, eight).concurrent_decode_end_us, 13 * eight_round_us, 1e-6);
  EXPECT_NEAR(PredictCost(plan_of(65536, 20, true), params).concurrent_decode_end_us, t.concurrent_decode_end_us, 1e-6);
  // On 64 SMs (4 rounds) the memory system's share bounds it instead.
  EXPECT_NEAR(PredictCost(plan_of(32768, 64, true), params).concurrent_decode_end_us,
              bytes / (params.concurrent_tma_gbs * 1e3), 1e-6);
  // The other decode at 40 GB/s per SM does not fit beside this prefix: it ends after it, sooner
  // than at its beside-rate alone.
  EXPECT_GT(d.concurrent_decode_end_us, d.prefix_us);
  EXPECT_LT(d.concurrent_decode_end_us, bytes / (20 * params.concurrent_sm_gbs * 1e9) * 1e6);
  EXPECT_LT(t.concurrent_decode_end_us, t.prefix_us);
  EXPECT_LT(t.total_us, d.total_us);
  EXPECT_EQ(PredictCost(plan_of(32768, 0, false), params).concurrent_decode_end_us, 0);
}

// The built-in model as it stood before session 87's refit of the TMA step's prefix scale: the
// tables of sessions 48-60 below were measured on the prefix kernel before session 85's
// speculative softmax, to which that scale (0.925) was fitted; the refitted one (0.86) belongs to
// session 87's table of this kernel (PlannerChoosesTheTmaModeOnTheSpeculativeSoftmax).
CostModelParams ModelBeforeSession87() {
  CostModelParams c = CostModelParams::H200();
  c.concurrent_tma_prefix_scale = 0.925;
  return c;
}

// The concurrent step's decode as the persistent TMA decode on the k SMs (PlanOptions::
// concurrent_tma_candidate), against the one-CTA-per-item decode at the planner's k, each pair
// measured in one process (H200, fp16, 32/8 D128; bench/RESULTS.md session 48, runs 1 and 4): taken
// where it measured faster, not where its bytes outlast the prefix (P32768 S512); never where it is
// not built (head_dim 256) or not offered; and only where the mode itself is chosen. (These times
// are of the TMA decode before session 51's tiles. Here the TMA decode's own candidates are off;
// with them the planner takes it at P32768 S512 k = 28, which the new tiles measured 3% faster at
// B128 and 0.6% slower at B256, session 51 run 5. They are of 8 warps per CTA, so the model
// counts 8 here: with 12, the default since session 52, it fits beside the P32768 S512 prefixes,
// where session 52 (run 1) measured it 7% (B64) and 10% (B256) faster than 8 warps at k = 28.)
TEST(CostModel, PlannerChoosesTheTmaDecodeWhereItMeasuredFaster) {
  struct Case {
    int batch, prefix, suffix;
    double default_us, tma_us;  // measured at the planner's k
  };
  const Case cases[] = {{256, 32768, 256, 273.3, 269.8}, {128, 32768, 512, 172.7, 188.4},
                        {256, 32768, 512, 319.8, 356.4}, {128, 32768, 256, 146.0, 140.6},
                        {128, 32768, 384, 152.8, 151.5}, {256, 32768, 384, 285.6, 280.8},
                        {256, 65536, 512, 504.5, 504.2}};
  const bool print = std::getenv("PREFIXD_COST_MODEL_PRINT_FIT") != nullptr;
  PlanOptions o = H200PlanOptions();
  o.choose_layout = true;
  o.balance_prefix_ctas = 132;
  o.concurrent_candidates = {20, 28};
  o.concurrent_tma_candidate = true;
  auto eight_warps = std::make_shared<CostModelParams>(ModelBeforeSession87());
  eight_warps->SetTmaDecodeWarps(8);
  o.cost_model = eight_warps;
  auto shape = [](int head_dim, int batch, int suffix, int prefix = 32768) {
    GridShape g;
    g.h_qo = 32, g.h_kv = 8, g.head_dim = head_dim, g.batch = batch, g.prefix = prefix, g.suffix = suffix;
    return g;
  };
  for (const Case& c : cases) {
    KvPoolShape pool;
    const DecodeBatch batch = UniformBatch(shape(128, c.batch, c.suffix, c.prefix), &pool);
    PlanReport report;
    const CascadePlan plan = PlanCascade(batch, pool, o, &report);
    PlanOptions without = o;
    without.concurrent_tma_candidate = false;
    PlanReport without_report;
    (void)PlanCascade(batch, pool, without, &without_report);
    const std::string name =
        "32/8 D128 B" + std::to_string(c.batch) + " P" + std::to_string(c.prefix) + " S" + std::to_string(c.suffix);
    if (print)
      std::printf("  %-28s measured %6.1f → %6.1f | predicted %6.1f → %6.1f (k = %d, TMA decode %d)\n", name.c_str(),
                  c.default_us, c.tma_us, without_report.predicted_us, report.predicted_us, plan.concurrent_decode_sms,
                  plan.concurrent_decode_tma);
    ASSERT_GT(plan.concurrent_decode_sms, 0) << name << ": the concurrent mode, as without the candidate";
    EXPECT_EQ(plan.concurrent_decode_tma != 0, c.tma_us < c.default_us) << name;
    EXPECT_EQ(plan.concurrent_decode_tma != 0, report.concurrent_decode_tma) << name;
  }
  // Not built at head_dim 256 (TmaDecodeModeled), nor offered without the candidate; and it never
  // makes the mode chosen where it was not (B256 P16384 S128: the model has the TMA decode's step
  // faster than one after the other, untimed).
  KvPoolShape pool;
  CascadePlan plan = PlanCascade(UniformBatch(shape(256, 256, 256), &pool), pool, o);
  EXPECT_GT(plan.concurrent_decode_sms, 0);
  EXPECT_EQ(plan.concurrent_decode_tma, 0);
  PlanOptions off = o;
  off.concurrent_tma_candidate = false;
  plan = PlanCascade(UniformBatch(shape(128, 256, 256), &pool), pool, off);
  EXPECT_GT(plan.concurrent_decode_sms, 0);
  EXPECT_EQ(plan.concurrent_decode_tma, 0);
  plan = PlanCascade(UniformBatch(shape(128, 256, 128, 16384), &pool), pool, o);
  EXPECT_EQ(plan.concurrent_decode_sms, 0);
}


// The mode with the TMA decode on the planner's own candidates for it (PlanOptions::
// concurrent_tma_candidates), where the mode with the other decode is not chosen: the whole step,
// the planner's sequential choice against the TMA decode forced on k = 20-64 SMs, measured in one
// process per shape (H200, fp16, 32/8 D128), µs.
struct TmaModeCase {
  int batch, prefix, suffix;
  double sequential_us;
  std::vector<double> tma_us;  // at each k of the table's TmaModeTable::candidates
};

// The k a table was measured at, and whether the prefix stream had narrow slots then.
struct TmaModeTable {
  std::vector<int> candidates;
  bool narrow_slots;
};
// Sessions 51-52: k = 20-64, whole slots only.
const TmaModeTable kSession52Table{{20, 28, 36, 48, 56, 64}, false};
// Session 60: the backend's candidates then, narrow slots (the defaults).
const TmaModeTable kSession60Table{{14, 16, 20, 28, 36, 48, 56, 64}, true};
// Session 89: the backend's candidates, 8, 10 and 12 added.
const TmaModeTable kSession89Table{{8, 10, 12, 14, 16, 20, 28, 36, 48, 56, 64}, true};

// The CUDA backend's options on an H200 (H200BackendPlanOptions), with `model`, the table's k as
// the TMA decode's candidates and its slots.
PlanOptions TmaModeOptions(const CostModelParams& model, const TmaModeTable& table) {
  PlanOptions o = H200BackendPlanOptions();
  o.cost_model = std::make_shared<CostModelParams>(model);
  o.concurrent_tma_candidates = table.candidates;
  o.balance_stream_narrow = table.narrow_slots;
  return o;
}

// The concurrent mode's candidates as the CUDA backend offers them: the H200's measured k (the
// tables below are timed at those), scaled to other SM counts; and the backend's H200 options.
TEST(CostModel, ConcurrentCandidatesAreTheH200sScaled) {
  EXPECT_EQ(ConcurrentDecodeCandidates(132), (std::vector<int>{20, 28}));
  EXPECT_EQ(ConcurrentTmaDecodeCandidates(132), kSession89Table.candidates);
  EXPECT_EQ(ConcurrentDecodeCandidates(114), (std::vector<int>{17, 24}));
  EXPECT_EQ(ConcurrentTmaDecodeCandidates(66), (std::vector<int>{4, 5, 6, 7, 8, 10, 14, 18, 24, 28, 32}));
  EXPECT_EQ(ConcurrentTmaDecodeCandidates(1), std::vector<int>(11, 1));
  const PlanOptions o = H200BackendPlanOptions();
  EXPECT_TRUE(o.choose_layout);
  EXPECT_EQ(o.balance_prefix_ctas, 132);
  EXPECT_EQ(o.concurrent_candidates, ConcurrentDecodeCandidates(132));
  EXPECT_TRUE(o.concurrent_tma_candidate);
  EXPECT_EQ(o.concurrent_tma_candidates, ConcurrentTmaDecodeCandidates(132));
  EXPECT_TRUE(o.balance_stream_narrow);
  EXPECT_EQ(o.concurrent_decode_sms, 0);  // the planner's choice, not a forced k
}

// Where the planner takes the mode, its k measured no slower than the step one after the other
// (within over_sequential, 1%: the same step within the runs' spread) and within over_best (7%)
// of the best k, and at most `ties` times without a gain of more than 3%; not where every k
// measured slower. Returns how many shapes it leaves where some k measured more than 5% faster.
int CheckTmaModeChoices(const std::vector<TmaModeCase>& cases, const TmaModeTable& table, const CostModelParams& model,
                        int ties = 0, int head_dim = 128, double over_sequential = 1.01, double over_best = 1.07) {
  const bool print = std::getenv("PREFIXD_COST_MODEL_PRINT_FIT") != nullptr;
  const PlanOptions o = TmaModeOptions(model, table);
  const std::vector<int>& ks = table.candidates;
  int missed = 0;
  for (const TmaModeCase& c : cases) {
    GridShape g;
    g.h_qo = 32, g.h_kv = 8, g.head_dim = head_dim, g.batch = c.batch, g.prefix = c.prefix, g.suffix = c.suffix;
    KvPoolShape pool;
    const DecodeBatch batch = UniformBatch(g, &pool);
    PlanReport report;
    const CascadePlan plan = PlanCascade(batch, pool, o, &report);
    const std::string name = "D" + std::to_string(head_dim) + " B" + std::to_string(c.batch) + " P" +
                             std::to_string(c.prefix) + " S" + std::to_string(c.suffix);
    EXPECT_EQ(c.tma_us.size(), ks.size()) << name;
    if (c.tma_us.size() != ks.size()) continue;
    double best = c.sequential_us, chosen = c.sequential_us;
    for (size_t i = 0; i < ks.size(); ++i) {
      best = std::min(best, c.tma_us[i]);
      if (ks[i] == plan.concurrent_decode_sms) chosen = c.tma_us[i];
    }
    if (print) {
      std::printf("  32/8 %-22s measured %6.1f, best %6.1f | chose k = %d (TMA %d), measured %6.1f, predicted %6.1f |",
                  name.c_str(), c.sequential_us, best, plan.concurrent_decode_sms, plan.concurrent_decode_tma, chosen,
                  report.predicted_us);
      // The model's step at each forced k, then (for bench/kernel/tma_mode_fit.py) its parts
      // without the TMA step's prefix scale and interference, one "fit," line per k.
      CostModelParams raw = model;
      raw.concurrent_tma_prefix_scale = 1;
      raw.concurrent_tma_interference_us = 0;
      std::string parts;
      for (const int k : ks) {
        PlanOptions f = o;
        f.choose_layout = false;
        f.concurrent_candidates.clear();
        f.concurrent_decode_sms = k;
        f.concurrent_decode_tma = true;
        f.fuse_merge = false;
        f.prefix_target_items = 132 - k;
        f.balance_prefix_ctas = 132 - k;
        f.balance_stream = true;
        const CascadePlan forced = PlanCascade(batch, pool, f);
        std::printf(" %6.1f", PredictCost(forced, model).total_us);
        const CostBreakdown r = PredictCost(forced, raw);
        char line[160];
        std::snprintf(line, sizeof line, "  fit,%d,%d,%d,%d,%.3f,%.3f,%.3f,%.3f,%.3f\n", c.batch, c.prefix, c.suffix, k,
                      r.prefix_us, r.concurrent_decode_end_us, r.merge_us, ProfilePlan(forced, raw).decode_streamed_bytes * 1e-6,
                      raw.step_fixed_us);
        parts += line;
      }
      std::printf("\n%s", parts.c_str());
    }
    if (best < c.sequential_us * 0.95 && plan.concurrent_decode_sms == 0) ++missed;
    if (plan.concurrent_decode_sms > 0) {
      EXPECT_EQ(plan.concurrent_decode_tma, 1) << name;
      EXPECT_LE(chosen, c.sequential_us * over_sequential)
          << name << ": k = " << plan.concurrent_decode_sms << " measured slower";
      EXPECT_LE(chosen, best * over_best) << name << ": k = " << plan.concurrent_decode_sms;
      if (chosen >= c.sequential_us * 0.97) --ties;
    }
    if (best > c.sequential_us) EXPECT_EQ(plan.concurrent_decode_sms, 0) << name << ": measured slower, chosen";
  }
  EXPECT_GE(ties, 0) << "the mode taken without a measured gain at more shapes than allowed";
  return missed;
}

// The planner's TMA decode mode on the head_dim-128 grid (B 16-256, P 1024-32768, S 32/256,
// 32/32 and 32/8): where it is chosen, and its k there (0: nowhere else; 32/8 B256 S256 at P8192 and
// P32768, and optionally B256 P8192 S32).
void ExpectTmaModeOnTheGrid(const CostModelParams& model, const TmaModeTable& table, int k_p8192, int k_p32768,
                            int k_p8192_s32 = 0) {
  const PlanOptions o = TmaModeOptions(model, table);
  for (const int h_kv : {32, 8})
    for (const int b : {16, 64, 256})
      for (const int p : {1024, 8192, 32768})
        for (const int s : {32, 256}) {
          GridShape g;
          g.h_qo = 32, g.h_kv = h_kv, g.batch = b, g.prefix = p, g.suffix = s;
          KvPoolShape pool;
          const DecodeBatch batch = UniformBatch(g, &pool);
          const CascadePlan plan = PlanCascade(batch, pool, o);
          const int want = h_kv != 8 || b != 256 ? 0
                           : s == 256        ? (p == 8192 ? k_p8192 : p == 32768 ? k_p32768 : 0)
                                             : (p == 8192 ? k_p8192_s32 : 0);
          EXPECT_EQ(plan.concurrent_decode_sms, want) << "32/" << h_kv << " B" << b << " P" << p << " S" << s;
          if (want > 0) EXPECT_EQ(plan.concurrent_decode_tma, 1) << "32/8 B256 P" << p << " S" << s;
        }
}

// 8 warps per CTA (PREFIXD_DECODE_TMA_WARPS=8; bench/RESULTS.md session 51, run 3).
TEST(CostModel, PlannerChoosesTheTmaModeWhereItMeasuredFasterWithEightWarps) {
  const std::vector<TmaModeCase> cases = {
      {128, 8192, 128, 61.7, {75.0, 58.4, 55.0, 63.1, 67.5, 72.6}},
      {128, 8192, 256, 77.7, {119.3, 91.6, 77.5, 69.1, 73.6, 79.7}},
      {128, 16384, 128, 85.9, {78.2, 84.1, 87.6, 101.7, 108.1, 119.6}},
      {128, 16384, 256, 101.1, {123.4, 94.2, 92.2, 109.1, 115.5, 126.1}},
      {256, 8192, 128, 103.2, {130.0, 104.2, 90.6, 107.0, 114.7, 125.7}},
      {256, 8192, 256, 132.4, {212.6, 169.1, 140.1, 115.8, 124.1, 136.6}},
      {256, 16384, 128, 153.7, {144.1, 151.8, 157.9, 185.2, 197.2, 217.3}},
      {256, 16384, 256, 181.9, {218.5, 173.2, 162.4, 192.8, 207.7, 230.5}},
      {64, 8192, 32, 33.8, {35.8, 37.6, 38.4, 38.5, 42.4, 43.1}},
      {64, 32768, 32, 71.9, {80.0, 82.9, 86.9, 95.8, 106.4, 111.6}},
      {256, 8192, 32, 79.7, {81.5, 86.0, 87.1, 100.1, 106.5, 116.3}},
      {256, 32768, 32, 232.3, {252.2, 265.2, 281.9, 332.2, 355.6, 387.9}},
      {256, 8192, 512, 189.8, {377.8, 295.7, 241.3, 194.2, 181.3, 168.5}},
  };
  CostModelParams model = ModelBeforeSession87();
  model.SetTmaDecodeWarps(8);
  // Every shape where some k measured more than 5% faster is taken.
  EXPECT_EQ(CheckTmaModeChoices(cases, kSession52Table, model), 0);
  // 32/8 B256 S256: P8192 on 48 SMs (115.8 against 132.4 above), P32768 on 20.
  ExpectTmaModeOnTheGrid(model, kSession52Table, 48, 20);
}

// 12 warps per CTA, the default, with the prefix stream's narrow slots and k = 14 and 16 (bench/
// RESULTS.md session 60, run 2; session 52's run 3 had k = 20-64 without narrow slots).
TEST(CostModel, PlannerChoosesTheTmaModeWhereItMeasuredFaster) {
  const std::vector<TmaModeCase> cases = {
      {128, 8192, 128, 62.8, {82.2, 72.3, 62.9, 54.1, 56.0, 62.9, 67.7, 72.4}},
      {128, 8192, 256, 78.3, {131.8, 114.6, 99.3, 84.7, 74.4, 67.5, 72.3, 77.7}},
      {128, 16384, 128, 86.5, {85.0, 77.1, 78.1, 84.2, 88.4, 101.9, 107.9, 118.4}},
      {128, 16384, 256, 101.7, {136.4, 118.7, 104.2, 88.2, 94.7, 109.9, 115.1, 124.4}},
      {128, 32768, 128, 137.8, {137.8, 138.7, 135.6, 141.7, 148.8, 172.3, 186.7, 199.6}},
      {128, 32768, 256, 152.2, {142.0, 141.6, 138.9, 145.8, 155.4, 179.0, 192.5, 206.0}},
      {256, 8192, 128, 104.7, {140.4, 123.2, 105.6, 90.1, 93.8, 109.4, 116.7, 121.6}},
      {256, 8192, 256, 132.9, {234.2, 202.9, 171.1, 139.7, 114.0, 118.0, 128.9, 133.2}},
      {256, 16384, 128, 153.6, {147.3, 140.4, 145.7, 151.9, 155.4, 183.2, 195.3, 213.4}},
      {256, 16384, 256, 181.0, {241.0, 208.7, 178.3, 158.2, 162.4, 193.0, 204.3, 226.4}},
      {256, 32768, 128, 251.6, {252.0, 246.9, 252.4, 264.1, 278.6, 319.0, 349.8, 383.3}},
      {256, 32768, 256, 279.1, {257.3, 254.5, 260.1, 271.8, 285.3, 327.7, 362.7, 394.3}},
      {64, 8192, 32, 33.7, {34.5, 34.9, 34.7, 34.6, 35.8, 37.8, 40.7, 42.0}},
      {64, 8192, 512, 64.2, {139.1, 110.1, 106.8, 82.5, 83.8, 63.4, 62.9, 61.3}},
      {64, 32768, 32, 72.1, {77.7, 77.5, 78.0, 82.1, 85.3, 95.5, 104.9, 110.5}},
      {64, 32768, 512, 100.2, {148.2, 120.9, 120.6, 94.4, 103.2, 115.2, 122.4, 126.5}},
      {256, 8192, 32, 80.2, {80.8, 79.8, 81.0, 85.3, 86.8, 99.9, 106.8, 114.3}},
      {256, 8192, 512, 190.5, {420.1, 362.0, 301.1, 238.9, 189.3, 176.7, 189.8, 170.3}},
      {256, 32768, 32, 228.4, {245.4, 241.0, 246.5, 258.3, 271.6, 310.1, 339.8, 373.5}},
      {256, 32768, 512, 337.2, {439.2, 382.1, 323.8, 284.6, 297.4, 342.1, 375.9, 414.5}},
  };
  // Two ties (within 3% of the step one after the other): P32768 S128 at B128 and B256 (k = 14:
  // +0.0 and +0.2%; the prefix on its CTAs bounds both steps, where the model's step one after the
  // other runs 6-10% high). Every shape where some k measured more than 5% faster is taken, but B64 P32768 S512
  // (94.4 at k = 28 against 100.2): its prefix is memory-bound at GQA 4 and B64
  // (ScoreConcurrentCascade). The k taken measured within 7% of the best everywhere; at B128
  // P32768 S256 k = 14 is 2.2% over k = 20, which session 52's candidates took.
  EXPECT_LE(CheckTmaModeChoices(cases, kSession60Table, ModelBeforeSession87(), /*ties=*/2), 1);
  // 32/8 B256: P8192 S256 on 36 SMs (114.0 against 132.9 above), P32768 S256 on 14 (257.3 against
  // 279.1; 254.4 against 262.8 at k = 20 in run 1); S = 32 one after the other (kTmaMinPartUs).
  ExpectTmaModeOnTheGrid(ModelBeforeSession87(), kSession60Table, 36, 14);
}

// The 32/8 D128 batch of B requests, prefix P, suffix S, and its pool.
DecodeBatch Batch32x8(int batch, int prefix, int suffix, KvPoolShape* pool) {
  GridShape g;
  g.h_qo = 32, g.h_kv = 8, g.batch = batch, g.prefix = prefix, g.suffix = suffix;
  return UniformBatch(g, pool);
}

// The concurrent mode's k of the plan for 32/8 D128 B batch, P prefix, S suffix under `o` (0: the
// mode not taken), checked to be the k the planner reports.
int PlannedK(const PlanOptions& o, int batch, int prefix, int suffix) {
  KvPoolShape pool;
  const DecodeBatch b = Batch32x8(batch, prefix, suffix, &pool);
  PlanReport report;
  const CascadePlan plan = PlanCascade(b, pool, o, &report);
  EXPECT_EQ(report.concurrent_decode_sms, plan.concurrent_decode_sms);
  return plan.concurrent_decode_sms;
}

// PlanReport::concurrent_fewer_sms / more_sms: where the model takes the mode, its k's neighbours
// among the chosen decode's candidates (none at the list's ends), each the options of the plan the
// mode makes at that k; the plan itself unchanged by reporting them; none where the mode is not taken.
TEST(CostModel, ConcurrentNeighboursAreTheNeighbouringCandidates) {
  const PlanOptions o = TmaModeOptions(CostModelParams::H200(), kSession60Table);  // k 14, 16, 20, 28, 36, ...
  struct Neighbours {
    int k, fewer, more;  // the plan's k and its neighbours' (-1: none reported)
  };
  auto at = [&](const PlanOptions& opts, int batch, int prefix, int suffix) {
    KvPoolShape pool;
    const DecodeBatch b = Batch32x8(batch, prefix, suffix, &pool);
    PlanReport report;
    const CascadePlan plan = PlanCascade(b, pool, opts, &report);
    EXPECT_EQ(plan.Serialize(), PlanCascade(b, pool, opts).Serialize()) << "the report changed the plan";
    auto k_of = [&](const std::optional<PlanOptions>& n) {
      if (!n) return -1;
      EXPECT_EQ(n->concurrent_decode_tma, report.concurrent_decode_tma);
      PlanOptions fixed = *n;
      fixed.choose_layout = false;
      const CascadePlan stepped = PlanCascade(b, pool, fixed);
      EXPECT_EQ(stepped.concurrent_decode_sms, n->concurrent_decode_sms);
      EXPECT_NE(stepped.Serialize(), plan.Serialize());
      return stepped.concurrent_decode_sms;
    };
    return Neighbours{plan.concurrent_decode_sms, k_of(report.concurrent_fewer_sms),
                      k_of(report.concurrent_more_sms)};
  };
  auto expect = [](const Neighbours& n, int k, int fewer, int more) {
    EXPECT_EQ(n.k, k);
    EXPECT_EQ(n.fewer, fewer);
    EXPECT_EQ(n.more, more);
  };
  expect(at(o, 256, 32768, 256), 16, 14, 20);
  expect(at(o, 256, 8192, 256), 36, 28, 48);
  expect(at(o, 64, 32768, 32), 0, -1, -1);  // no mode: no neighbours either
  PlanOptions first = o;                     // the model's k first in the list: no fewer
  first.concurrent_tma_candidates = {16, 20};
  expect(at(first, 256, 32768, 256), 16, -1, 20);
}

// The same table on this tree's prefix kernel (session 85's speculative softmax: its prefix parts
// 6.5-8.8% lower at these steps on the H200), the built-in model with its refitted prefix scale:
// bench/RESULTS.md session 87, run 7 (`bench/kernel/sessions/s87-run7.sh`, one round), measured on
// an H100 (80GB HBM3; no H200 was lent for it), fp16, 32/8 D128.
TEST(CostModel, PlannerChoosesTheTmaModeOnTheSpeculativeSoftmax) {
  const std::vector<TmaModeCase> cases = {
      {128, 8192, 128, 67.2, {84.2, 75.9, 68.7, 62.6, 62.9, 70.5, 73.2, 77.1}},
      {128, 8192, 256, 88.9, {133.6, 119.2, 105.9, 96.4, 88.2, 84.6, 87.7, 90.7}},
      {128, 16384, 128, 89.5, {88.2, 81.0, 82.2, 89.5, 91.6, 105.7, 109.3, 116.7}},
      {128, 16384, 256, 110.9, {139.2, 125.1, 112.3, 103.5, 102.9, 121.1, 123.1, 130.2}},
      {128, 32768, 128, 134.9, {133.8, 135.6, 134.9, 142.4, 147.8, 172.1, 182.7, 201.5}},
      {128, 32768, 256, 156.0, {145.3, 140.2, 141.3, 153.3, 159.3, 187.6, 198.1, 217.2}},
      {256, 8192, 128, 108.9, {143.3, 126.8, 111.1, 96.8, 100.3, 116.2, 126.2, 132.7}},
      {256, 8192, 256, 151.6, {234.9, 204.6, 176.0, 150.8, 134.3, 137.0, 152.0, 156.1}},
      {256, 16384, 128, 152.3, {148.6, 135.3, 141.3, 152.1, 159.5, 182.1, 202.5, 233.4}},
      {256, 16384, 256, 195.8, {242.0, 213.4, 182.7, 166.2, 175.8, 204.8, 227.9, 262.3}},
      {256, 32768, 128, 239.4, {239.8, 232.8, 239.8, 254.4, 267.7, 307.2, 334.8, 366.7}},
      {256, 32768, 256, 283.2, {255.5, 239.7, 248.3, 266.0, 284.5, 325.6, 359.5, 390.7}},
      {64, 8192, 32, 37.2, {40.1, 38.8, 39.0, 39.6, 40.3, 42.3, 44.4, 44.8}},
      {64, 8192, 512, 78.7, {145.5, 116.0, 113.8, 92.2, 96.9, 81.0, 81.6, 80.8}},
      {64, 32768, 32, 74.7, {80.4, 80.4, 79.1, 83.1, 85.2, 93.5, 102.8, 104.6}},
      {64, 32768, 512, 116.1, {163.6, 139.4, 140.0, 117.5, 117.7, 129.5, 136.0, 138.0}},
      {256, 8192, 32, 76.3, {77.8, 78.2, 79.5, 83.5, 83.4, 96.5, 103.6, 110.6}},
      {256, 8192, 512, 236.2, {422.7, 365.2, 305.9, 253.6, 223.2, 224.2, 240.3, 220.9}},
      {256, 32768, 32, 210.0, {233.1, 226.3, 231.9, 242.0, 251.6, 286.2, 311.5, 339.7}},
      {256, 32768, 512, 368.8, {441.7, 383.2, 323.6, 293.3, 312.6, 364.1, 400.4, 433.2}},
  };
  EXPECT_LE(CheckTmaModeChoices(cases, kSession60Table, CostModelParams::H200(), /*ties=*/2), 1);
  // 32/8 B256 S256: P8192 on 36 SMs (134.3 against 151.6 one after the other), P32768 on 16 (239.7
  // against 255.5 at the 14 the model took before the refit, and 283.2 one after the other).
  ExpectTmaModeOnTheGrid(CostModelParams::H200(), kSession60Table, 36, 16);
  // And before the refit, k = 14 there: the miss the refit mends.
  EXPECT_EQ(PlannedK(TmaModeOptions(ModelBeforeSession87(), kSession60Table), 256, 32768, 256), 14);
}

// Session 89's table at head_dim 64 (run 9, `bench/kernel/sessions/s89-run9.sh`, one round, an
// H100, fp16, 32/8 D64; k = 8-36): the mode with the TMA decode, scored from head_dim 64 up
// (PlanOptions::concurrent_tma_min_head_dim) with its head_dim-64 rate (concurrent_tma_d64_*).
const TmaModeTable kSession89D64Table{{8, 10, 12, 14, 16, 20, 28, 36}, true};
TEST(CostModel, PlannerChoosesTheTmaModeAtHeadDim64) {
  const std::vector<TmaModeCase> cases = {
      {128, 8192, 128, 45.7, {96.2, 81.8, 73.6, 66.6, 59.3, 51.2, 43.4, 46.1}},
      {128, 8192, 256, 57.5, {156.2, 130.8, 116.7, 103.4, 90.6, 77.4, 65.3, 56.0}},
      {128, 16384, 128, 62.2, {95.9, 82.6, 73.9, 67.4, 62.8, 59.5, 62.7, 67.6}},
      {128, 16384, 256, 74.4, {157.1, 131.4, 117.6, 105.3, 93.3, 78.5, 66.9, 72.5}},
      {128, 32768, 128, 92.8, {98.0, 97.4, 99.6, 103.2, 103.6, 100.9, 107.4, 112.0}},
      {128, 32768, 256, 104.9, {158.9, 133.6, 119.9, 106.9, 106.2, 104.0, 111.9, 117.0}},
      {256, 8192, 128, 76.0, {174.2, 145.1, 124.5, 111.3, 96.2, 82.1, 68.2, 70.2}},
      {256, 8192, 256, 99.9, {294.9, 243.3, 206.6, 183.0, 156.2, 131.2, 105.4, 83.3}},
      {256, 16384, 128, 107.5, {175.8, 146.8, 126.1, 112.7, 101.2, 105.0, 111.4, 115.6}},
      {256, 16384, 256, 130.4, {297.8, 246.9, 210.3, 184.9, 159.6, 133.6, 113.1, 121.4}},
      {256, 32768, 128, 172.0, {178.0, 175.0, 173.5, 181.9, 179.2, 184.8, 196.8, 208.6}},
      {256, 32768, 256, 193.3, {298.5, 248.6, 210.9, 186.8, 180.5, 187.3, 201.2, 214.9}},
      {64, 8192, 32, 25.8, {33.5, 29.6, 29.5, 29.3, 29.9, 29.8, 29.6, 31.5}},
      {64, 8192, 512, 49.6, {155.8, 131.8, 109.0, 106.9, 85.5, 83.8, 64.8, 66.1}},
      {64, 32768, 32, 52.6, {59.0, 58.6, 58.7, 59.5, 59.5, 59.4, 62.1, 65.5}},
      {64, 32768, 512, 75.2, {160.4, 136.7, 115.3, 112.9, 91.7, 88.3, 74.2, 80.4}},
      {256, 8192, 32, 58.6, {83.3, 68.3, 60.4, 63.0, 61.5, 63.0, 66.1, 67.0}},
      {256, 8192, 512, 144.3, {533.5, 441.7, 369.7, 322.9, 278.3, 230.0, 181.8, 140.6}},
      {256, 32768, 32, 157.7, {168.4, 175.0, 173.3, 180.1, 176.2, 181.1, 193.3, 204.9}},
      {256, 32768, 512, 237.4, {541.3, 444.8, 377.4, 330.8, 283.3, 235.0, 205.4, 221.6}},
  };
  // Taken at 9 of the 20 shapes, 2.6-17% faster at six (B256 P8192 S256 99.9 → 83.3 µs, P32768
  // S256 193.3 → 180.5, S512 237.4 → 205.4), three ties: B128 P16384 S256 k = 36 −2.6% (8.4% over
  // its best k, 28), and two where the prefix bounds the step, B128 P32768 S256 k = 16 +1.2%, B256
  // P32768 S128 k = 10 +1.7% — at head_dim 64 the model's step one after the other runs 7-16%
  // high (199.1 against 172.0 there), its TMA step 2-5% low; the worker's measured choice times
  // the cascade beside it. One shape left where a k is 5.0% faster (B128 P8192 S128, k = 28).
  EXPECT_LE(CheckTmaModeChoices(cases, kSession89D64Table, CostModelParams::H200(), /*ties=*/3, /*head_dim=*/64,
                                /*over_sequential=*/1.02, /*over_best=*/1.09),
            1);
}

// The table again with k = 8, 10 and 12 (the backend's candidates since this session) and four S64
// shapes, the built-in model: bench/RESULTS.md session 89, run 3 (`bench/kernel/sessions/
// s89-run3.sh`, one round), an H100 (80GB HBM3; no H200 was lent), fp16, 32/8 D128. Where the step
// is the prefix's (P32768 S64-S128) the prefix on 120-124 CTAs wins: B256 P32768 S128 225.2 µs at
// k = 10 against 239.2 at the 14 the planner took before, which at S64 had been 7.5% over the step
// one after the other (235.4 against 219.0; the planner check of run 3: 1.087).
TEST(CostModel, PlannerChoosesTheTmaModeOnFewSmsBesideAPrefixBoundStep) {
  const std::vector<TmaModeCase> cases = {
      {128, 8192, 128, 66.7, {121.9, 103.4, 94.1, 85.2, 75.7, 68.7, 63.1, 63.5, 71.4, 73.8, 78.0}},
      {128, 8192, 256, 86.5, {201.6, 168.1, 150.5, 135.2, 118.9, 105.5, 96.7, 89.1, 85.0, 87.0, 91.1}},
      {128, 16384, 128, 87.6, {125.8, 108.6, 98.7, 90.0, 81.0, 82.6, 90.6, 91.8, 106.8, 109.7, 117.5}},
      {128, 16384, 256, 108.4, {203.8, 171.5, 154.8, 139.4, 124.5, 112.1, 103.9, 103.9, 122.0, 123.9, 131.2}},
      {128, 32768, 128, 133.6, {131.3, 130.1, 133.3, 134.1, 135.9, 134.7, 142.0, 147.8, 170.4, 181.5, 200.5}},
      {128, 32768, 256, 153.6, {210.0, 179.1, 162.2, 146.2, 140.9, 141.8, 153.1, 159.3, 185.1, 197.1, 215.2}},
      {256, 8192, 128, 106.8, {223.4, 185.9, 159.3, 142.0, 125.3, 109.5, 97.7, 100.1, 116.3, 127.1, 130.5}},
      {256, 8192, 256, 149.1, {379.0, 314.1, 265.9, 233.3, 204.4, 173.8, 150.3, 135.1, 138.3, 152.1, 154.2}},
      {256, 16384, 128, 151.6, {231.3, 193.6, 167.3, 149.8, 135.9, 142.3, 150.9, 157.7, 180.0, 198.6, 229.5}},
      {256, 16384, 256, 194.7, {386.5, 319.3, 273.7, 243.4, 210.5, 181.1, 166.6, 174.6, 202.8, 224.8, 258.2}},
      {256, 32768, 128, 240.0, {240.7, 225.2, 226.2, 239.2, 233.0, 241.0, 254.4, 266.2, 303.4, 330.5, 360.1}},
      {256, 32768, 256, 282.4, {398.1, 331.8, 284.8, 255.9, 240.3, 249.2, 266.7, 282.2, 324.0, 357.4, 389.0}},
      {64, 8192, 32, 37.0, {51.6, 45.9, 41.4, 40.1, 38.9, 38.7, 40.2, 39.8, 42.7, 44.0, 44.7}},
      {64, 8192, 512, 78.4, {208.4, 175.5, 146.8, 143.6, 114.5, 113.2, 92.5, 97.2, 81.3, 81.6, 80.6}},
      {64, 32768, 32, 73.8, {79.8, 79.7, 79.4, 79.7, 80.2, 78.3, 82.3, 84.6, 94.1, 101.8, 104.4}},
      {64, 32768, 512, 112.5, {216.9, 188.8, 164.4, 162.0, 139.2, 139.2, 117.3, 117.8, 128.4, 136.0, 137.4}},
      {256, 8192, 32, 75.4, {107.2, 87.6, 77.4, 76.8, 76.9, 78.5, 82.4, 82.8, 94.9, 102.0, 111.8}},
      {256, 8192, 512, 232.7, {689.0, 569.5, 475.7, 417.4, 359.1, 302.3, 252.4, 223.8, 228.2, 243.1, 219.5}},
      {256, 32768, 32, 209.6, {215.6, 221.0, 221.6, 232.9, 226.1, 231.5, 242.8, 249.0, 284.2, 309.8, 339.0}},
      {256, 32768, 512, 366.9, {711.4, 584.8, 500.6, 435.9, 384.2, 324.3, 294.7, 314.9, 366.9, 403.3, 438.1}},
      {128, 16384, 64, 76.6, {83.4, 78.5, 77.5, 78.4, 78.0, 77.6, 83.6, 84.6, 98.1, 101.1, 109.0}},
      {128, 32768, 64, 122.0, {126.3, 128.2, 129.5, 131.2, 130.9, 129.4, 134.7, 140.8, 161.8, 173.0, 192.6}},
      {256, 16384, 64, 131.0, {151.6, 128.4, 127.7, 135.4, 131.6, 136.3, 142.2, 148.6, 167.2, 184.9, 214.6}},
      {256, 32768, 64, 219.0, {216.2, 221.6, 222.2, 235.4, 229.0, 234.8, 246.5, 254.2, 290.0, 316.2, 344.4}},
  };
  // Four ties, each a little faster than the step one after the other: B128 P8192 S256 k = 48
  // (−1.7%), B128 P32768 S128 k = 8 (−1.7%), B256 P16384 S64 k = 12 (−2.5%), B256 P32768 S64
  // k = 8 (−1.3%); every k taken within 1% of the step one after the other and 7% of the best k.
  EXPECT_LE(CheckTmaModeChoices(cases, kSession89Table, CostModelParams::H200(), /*ties=*/4), 1);
  // 32/8 B256 S256 as before: P8192 on 36 SMs, P32768 on 16 (240.3 against 233.0 at 14 and 255.9 at 12).
  ExpectTmaModeOnTheGrid(CostModelParams::H200(), kSession89Table, 36, 16);
  // The prefix-bound S128 step on 120 CTAs (k = 12: 226.2 against 239.2 at the session-60
  // candidates' 14).
  EXPECT_EQ(PlannedK(TmaModeOptions(CostModelParams::H200(), kSession89Table), 256, 32768, 128), 12);
  EXPECT_EQ(PlannedK(TmaModeOptions(CostModelParams::H200(), kSession60Table), 256, 32768, 128), 14);
}

}  // namespace
}  // namespace prefixd::kernels
