// The cost model (cost_model.h): its defaults against the H200 rows of bench/RESULTS.md and
// bench/NOTES-prefix.md (written here as data), monotonicity in the obvious directions, the
// key=value file, and the calibration fit.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <string>
#include <vector>

#include "prefixd/kernels/cost_model.h"
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

enum class Layout { kCascade, kPlain };

CascadePlan GridPlan(const GridShape& s, Layout layout, PlanOptions o = H200PlanOptions()) {
  KvPoolShape pool;
  DecodeBatch batch = UniformBatch(s, &pool);
  if (layout == Layout::kPlain) batch = PlainLayout(batch, {1}, s.page_size);
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
// alone through the probe: D = 64, the 256-item planner variant, D = 256 on mma.sync).
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
  for (int h_kv : {32, 8}) {  // D = 256 (mma.sync): 512 items of 64 rows × 8192 tokens, 968-975 µs
    MeasuredRow r{S(32, h_kv, 256, 32768, 256, 256), Layout::kCascade, CostPart::kPrefix, 971.0, kProbe};
    r.prefix_target = 512;
    r.prefix_tile_rows = 64;
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
                r.layout == Layout::kPlain ? "plain" : "cascade", CostPartName(r.part), r.fuse ? "" : " (no fuse)");
  s.label = label;
  return s;
}

std::vector<CostSample> H200Samples(const CostModelParams& params) {
  std::vector<CostSample> samples;
  for (const MeasuredRow& r : H200Rows()) samples.push_back(ToSample(r, params));
  return samples;
}

// Tolerances for the defaults on the measured rows: every row within kRowTol (relative), the
// ln-error RMS within kRmsTol. The defaults are fitted to these rows and the s2 planner run
// together (FitConvergesOnTheH200S2Samples prints the joint fit); the two runs differ by a few µs
// per timed region, and the s2 run's B = 16 shapes set decode cta_gbs and prefix_item_us lower
// than the RESULTS rows alone did: the low-weight decode-v3 B = 1 row (an older kernel) and the
// 256-item prefix variant are now over 20% off, every other row within 16%.
constexpr double kRowTol = 0.22;
constexpr double kRmsTol = 0.065;

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
  CostModelParams bad = defaults;
  for (const auto& f : CostModelParams::Fields())
    if (f.fitted) bad.At(f) = bad.At(f) > 0 ? bad.At(f) * 1.7 : 1.0;
  ASSERT_GT(CostFitError(samples, bad), 2 * base);
  const CostModelParams fitted = FitCostModel(samples, bad);
  EXPECT_LE(CostFitError(samples, fitted), std::max(1.5 * base, base + 0.02));
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
// The H200 planner run of bench/kernel/results/h200-s2-planner.txt (`prefixd_kernel_bench
// --calibrate FILE --planner-check`, fp16, D 128, page 16, 30 iterations, L2 write-flushed): the
// 60 default planner shapes (heads 32/32 and 32/8, B 16/64/256, P 128/256/1024/8192/32768,
// S 32/256) with every part of both layouts timed alone (the file's calibration samples) and both
// totals. 0: not measured (no merge launched).
struct S2Row {
  int h_kv, b, p, s;
  double cascade_total, cascade_prefix, cascade_decode, cascade_merge;
  double plain_total, plain_decode, plain_merge;
};

const S2Row kS2Rows[] = {
      {32,  16,   128,  32,   12.8,   10.0,   10.2,    0.0,   15.8,   15.5,    0.0},
      {32,  16,   128, 256,   31.7,    9.5,   27.0,    0.0,   30.7,   31.4,    0.0},
      {32,  16,   256,  32,   14.2,   11.8,   10.3,    0.0,   23.4,   22.9,    0.0},
      {32,  16,   256, 256,   32.7,   11.2,   27.3,    0.0,   37.5,   38.0,    0.0},
      {32,  16,  1024,  32,   21.4,   15.0,   10.5,    0.0,   66.7,   66.4,    0.0},
      {32,  16,  1024, 256,   40.8,   15.1,   26.6,    0.0,   80.3,   79.8,    0.0},
      {32,  16,  8192,  32,   51.8,   47.7,   10.6,    0.0,  474.0,  473.8,    0.0},
      {32,  16,  8192, 256,   71.6,   47.6,   26.9,    0.0,  487.1,  486.2,    0.0},
      {32,  16, 32768,  32,  147.7,  144.4,   10.6,    0.0, 1869.8, 1869.0,    0.0},
      {32,  16, 32768, 256,  165.2,  143.5,   26.8,    0.0, 1881.9, 1881.4,    0.0},
      {32,  64,   128,  32,   24.2,   10.2,   20.6,    0.0,   40.7,   40.4,    0.0},
      {32,  64,   128, 256,   81.9,   10.0,   80.3,    0.0,   97.3,   97.6,    0.0},
      {32,  64,   256,  32,   25.7,   12.9,   20.4,    0.0,   66.1,   65.5,    0.0},
      {32,  64,   256, 256,   82.1,   12.4,   80.0,    0.0,  115.7,  116.1,    0.0},
      {32,  64,  1024,  32,   30.9,   17.0,   21.0,    0.0,  217.3,  216.9,    0.0},
      {32,  64,  1024, 256,   86.3,   16.3,   80.4,    0.0,  262.6,  262.9,    0.0},
      {32,  64,  8192,  32,   61.6,   48.6,   22.0,    0.0, 1632.7, 1632.6,    0.0},
      {32,  64,  8192, 256,  115.5,   48.4,   80.7,    0.0, 1675.0, 1675.6,    0.0},
      {32,  64, 32768,  32,  159.4,  146.6,   21.8,    0.0, 6525.4, 6528.7,    0.0},
      {32,  64, 32768, 256,  208.8,  145.7,   80.6,    0.0, 6524.4, 6619.5,    0.0},
      {32, 256,   128,  32,   60.5,   12.2,   57.2,    0.0,  136.7,  136.2,    0.0},
      {32, 256,   128, 256,  269.7,   11.6,  269.8,    0.0,  318.7,  319.0,    0.0},
      {32, 256,   256,  32,   62.5,   14.7,   57.0,    0.0,  231.3,  230.8,    0.0},
      {32, 256,   256, 256,  270.9,   14.1,  270.2,    0.0,  404.4,  404.4,    0.0},
      {32, 256,  1024,  32,   71.0,   20.9,   59.0,    0.0,  800.3,  799.9,    0.0},
      {32, 256,  1024, 256,  276.4,   20.0,  271.2,    0.0,  967.1,  974.3,    0.0},
      {32, 256,  8192,  32,  117.6,   67.4,   58.6,    0.0, 6164.5, 6203.4,    0.0},
      {32, 256,  8192, 256,  311.6,   66.8,  271.4,    0.0, 6527.3, 6521.0,    0.0},
      {32, 256, 32768,  32,  284.5,  235.3,   58.4,    0.0, 27825.0, 28886.5,    0.0},
      {32, 256, 32768, 256,  478.4,  235.0,  272.0,    0.0, 27241.4, 28282.0,    0.0},
      { 8,  16,   128,  32,   12.1,    9.9,    8.7,    0.0,   11.3,   10.9,    0.0},
      { 8,  16,   128, 256,   18.3,    9.3,   16.4,    0.0,   18.2,   18.8,    0.0},
      { 8,  16,   256,  32,   13.7,   11.5,    8.5,    0.0,   14.7,   14.5,    0.0},
      { 8,  16,   256, 256,   18.6,   10.9,   16.3,    0.0,   20.0,   14.9,    7.0},
      { 8,  16,  1024,  32,   17.1,   14.1,    9.3,    0.0,   26.8,   21.8,    6.8},
      { 8,  16,  1024, 256,   18.4,   14.0,   16.5,    0.0,   30.2,   25.1,    6.9},
      { 8,  16,  8192,  32,   28.0,   20.5,   12.4,    0.0,  128.1,  123.2,    6.7},
      { 8,  16,  8192, 256,   37.9,   20.8,   19.6,    0.0,  132.4,  127.6,    7.0},
      { 8,  16, 32768,  32,   54.2,   47.8,   12.5,    0.0,  476.2,  471.3,    6.6},
      { 8,  16, 32768, 256,   62.8,   47.8,   19.7,    0.0,  480.8,  476.7,    6.6},
      { 8,  64,   128,  32,   16.5,   10.5,   11.5,    0.0,   13.3,   13.7,    0.0},
      { 8,  64,   128, 256,   31.6,   10.6,   27.0,    0.0,   28.8,   29.3,    0.0},
      { 8,  64,   256,  32,   17.8,   12.5,   11.5,    0.0,   17.2,   17.6,    0.0},
      { 8,  64,   256, 256,   32.4,   12.4,   27.1,    0.0,   32.7,   33.0,    0.0},
      { 8,  64,  1024,  32,   22.0,   16.1,   12.4,    0.0,   42.8,   43.1,    0.0},
      { 8,  64,  1024, 256,   35.0,   16.4,   26.7,    0.0,   58.1,   57.4,    0.0},
      { 8,  64,  8192,  32,   33.7,   26.3,   13.8,    0.0,  283.5,  284.1,    0.0},
      { 8,  64,  8192, 256,   48.5,   26.6,   28.7,    0.0,  293.5,  292.8,    0.0},
      { 8,  64, 32768,  32,   73.3,   65.9,   13.8,    0.0, 1107.9, 1107.6,    0.0},
      { 8,  64, 32768, 256,   86.8,   65.9,   28.8,    0.0, 1114.5, 1113.4,    0.0},
      { 8, 256,   128,  32,   31.9,   11.0,   27.5,    0.0,   36.7,   37.2,    0.0},
      { 8, 256,   128, 256,   82.7,   11.6,   83.0,    0.0,   94.1,   93.7,    0.0},
      { 8, 256,   256,  32,   33.7,   13.5,   26.8,    0.0,   54.1,   53.4,    0.0},
      { 8, 256,   256, 256,   82.3,   13.0,   83.6,    0.0,  109.7,  110.4,    0.0},
      { 8, 256,  1024,  32,   40.6,   17.8,   28.7,    0.0,  155.1,  155.6,    0.0},
      { 8, 256,  1024, 256,   94.7,   18.4,   84.5,    0.0,  209.3,  208.6,    0.0},
      { 8, 256,  8192,  32,   85.5,   63.5,   28.7,    0.0, 1107.6, 1108.0,    0.0},
      { 8, 256,  8192, 256,  135.8,   64.1,   84.5,    0.0, 1148.2, 1148.1,    0.0},
      { 8, 256, 32768,  32,  242.5,  221.0,   28.8,    0.0, 4367.3, 4369.7,    0.0},
      { 8, 256, 32768, 256,  291.1,  222.1,   84.1,    0.0, 4406.1, 4402.6,    0.0},
};

// Also in the file: three plans the built-in defaults of the time chose in its first pass, timed
// whole: plain decode with the suffixes unsplit ("plain t132 nosplit": min_decode_chunk = INT_MAX,
// 128 items of P + S tokens instead of 256 and a merge).
struct S2Variant {
  int h_kv, b, p, s;
  double total;
};
const S2Variant kS2PlainNoSplit[] = {{8, 16, 256, 256, 21.9}, {8, 16, 1024, 32, 36.5}, {8, 16, 1024, 256, 43.3}};

GridShape S2Shape(int h_kv, int b, int p, int s) { return S(32, h_kv, b, p, s); }

PlanOptions NoSplit() {
  PlanOptions o = H200PlanOptions();
  o.min_decode_chunk = INT_MAX;
  return o;
}

std::vector<CostSample> S2Samples(const CostModelParams& params) {
  std::vector<CostSample> samples;
  auto add = [&](const GridShape& g, Layout layout, const PlanOptions& o, CostPart part, double us, const char* what) {
    if (!(us > 0)) return;
    CostSample s;
    s.profile = ProfilePlan(GridPlan(g, layout, o), params);
    s.part = part;
    s.measured_us = us;
    char label[160];
    std::snprintf(label, sizeof(label), "s2: 32/%d B%d P%d S%d %s %s%s", g.h_kv, g.batch, g.prefix, g.suffix,
                  layout == Layout::kPlain ? "plain" : "cascade", CostPartName(part), what);
    s.label = label;
    samples.push_back(s);
  };
  for (const S2Row& r : kS2Rows) {
    const GridShape g = S2Shape(r.h_kv, r.b, r.p, r.s);
    const PlanOptions o = H200PlanOptions();
    add(g, Layout::kCascade, o, CostPart::kTotal, r.cascade_total, "");
    add(g, Layout::kCascade, o, CostPart::kPrefix, r.cascade_prefix, "");
    add(g, Layout::kCascade, o, CostPart::kDecode, r.cascade_decode, "");
    add(g, Layout::kCascade, o, CostPart::kMerge, r.cascade_merge, "");
    add(g, Layout::kPlain, o, CostPart::kTotal, r.plain_total, "");
    add(g, Layout::kPlain, o, CostPart::kDecode, r.plain_decode, "");
    add(g, Layout::kPlain, o, CostPart::kMerge, r.plain_merge, "");
  }
  for (const S2Variant& v : kS2PlainNoSplit)
    add(S2Shape(v.h_kv, v.b, v.p, v.s), Layout::kPlain, NoSplit(), CostPart::kTotal, v.total, " (no split)");
  return samples;
}

// The planner's choice with the built-in defaults (choose_layout, cost_model null), as
// MakePlannerPlans in bench/kernel/kernel_bench.cc makes it, on every s2 shape: the chosen layout's
// measured time within 5% of the faster layout's (the --planner-check bar). A choice identical to
// a timed plan (the cascade, plain decode, a timed variant) uses that plan's time; a split variant
// nobody timed uses its layout's time with the default splits and is printed.
// PREFIXD_COST_MODEL_PRINT_FIT=1 prints the table.
TEST(CostModel, PlannerChoosesWithinFivePercentOnTheH200S2Shapes) {
  const bool print = std::getenv("PREFIXD_COST_MODEL_PRINT_FIT") != nullptr;
  double worst = 0;
  int untimed = 0;
  for (const S2Row& r : kS2Rows) {
    const GridShape g = S2Shape(r.h_kv, r.b, r.p, r.s);
    SCOPED_TRACE("32/" + std::to_string(r.h_kv) + " B" + std::to_string(r.b) + " P" + std::to_string(r.p) + " S" +
                 std::to_string(r.s));
    KvPoolShape pool;
    const DecodeBatch batch = UniformBatch(g, &pool);
    const PlanOptions fixed = H200PlanOptions();
    const std::vector<int32_t> cascade = PlanCascade(batch, pool, fixed).Serialize();
    const std::vector<int32_t> plain = PlanCascade(PlainLayout(batch, {1}, g.page_size), pool, fixed).Serialize();
    PlanOptions choose = fixed;
    choose.choose_layout = true;
    PlanReport report;
    const std::vector<int32_t> choice = PlanCascade(batch, pool, choose, &report).Serialize();
    double measured = 0;
    const char* name = "unmeasured";
    if (choice == cascade) measured = r.cascade_total, name = "cascade";
    else if (choice == plain) measured = r.plain_total, name = "plain";
    else
      for (const S2Variant& v : kS2PlainNoSplit)
        if (v.h_kv == r.h_kv && v.b == r.b && v.p == r.p && v.s == r.s &&
            choice == PlanCascade(PlainLayout(batch, {1}, g.page_size), pool, NoSplit()).Serialize())
          measured = v.total, name = "plain nosplit";
    if (!(measured > 0)) {
      // A split variant nobody timed: judged by its layout's measured time (default splits), and
      // listed (--planner-check times it on a GPU).
      const bool chose_plain = !report.group_plain.empty() && report.group_plain[0];
      measured = chose_plain ? r.plain_total : r.cascade_total;
      ++untimed;
      std::printf("# untimed choice: 32/%d B%d P%d S%d %s prefix_target_items %d min_decode_chunk %d: predicted %.1f us "
                  "(%s with the default splits: predicted %.1f, measured %.1f)\n",
                  r.h_kv, r.b, r.p, r.s, chose_plain ? "plain" : "cascade", report.prefix_target_items,
                  report.min_decode_chunk, report.predicted_us, chose_plain ? "plain" : "cascade",
                  chose_plain ? report.predicted_plain_us : report.predicted_cascade_us, measured);
      name = chose_plain ? "plain (split)" : "cascade (split)";
    }
    const double ratio = measured / std::min(r.cascade_total, r.plain_total);
    worst = std::max(worst, ratio);
    EXPECT_LE(ratio, 1.05) << name << " chosen: measured " << measured << " us, cascade " << r.cascade_total
                           << ", plain " << r.plain_total << "; predicted cascade " << report.predicted_cascade_us
                           << ", plain " << report.predicted_plain_us;
    if (print)
      std::printf("  32/%-2d B%-3d P%-5d S%-3d  cascade %7.1f plain %7.1f | pred %7.1f %7.1f | %-13s ratio %.3f\n",
                  r.h_kv, r.b, r.p, r.s, r.cascade_total, r.plain_total, report.predicted_cascade_us,
                  report.predicted_plain_us, name, ratio);
  }
  std::printf("# s2 planner check with the built-in defaults: worst ratio %.3f; %d choices are split variants nobody "
              "timed\n", worst, untimed);
  EXPECT_EQ(untimed, 0) << "the defaults choose split variants nobody timed: time them (--planner-check) first";
}

// The defaults against every s2 sample: each within kS2RowTol, RMS within kS2RmsTol. The worst
// (33%) is the 32/8 B16 P1024 S256 cascade total: with 16 prefix CTAs on 132 SMs the decode grid
// runs beside the whole prefix kernel (total 18.4 µs, the parts alone 14.0 and 16.5), which the
// model's overlap (a fixed start plus a fraction of the decode) does not describe.
constexpr double kS2RowTol = 0.35;
constexpr double kS2RmsTol = 0.10;

TEST(CostModel, DefaultsPredictTheH200S2Samples) {
  const CostModelParams params = CostModelParams::H200();
  const std::vector<CostSample> samples = S2Samples(params);
  ASSERT_GE(samples.size(), 300u);
  ExpectPredicts(samples, params, kS2RowTol, kS2RmsTol);
}

// The calibration's path on the s2 samples: FitCostModel from a badly perturbed start converges to
// about the defaults' error. PREFIXD_COST_MODEL_PRINT_FIT=1 also fits all H200 data (RESULTS rows
// and s2 samples: how the defaults were made) and prints the parameters and every sample.
TEST(CostModel, FitConvergesOnTheH200S2Samples) {
  const CostModelParams defaults = CostModelParams::H200();
  const std::vector<CostSample> samples = S2Samples(defaults);
  const double base = CostFitError(samples, defaults);
  CostModelParams bad = defaults;
  for (const auto& f : CostModelParams::Fields())
    if (f.fitted) bad.At(f) = bad.At(f) > 0 ? bad.At(f) * 1.7 : 1.0;
  ASSERT_GT(CostFitError(samples, bad), 2 * base);
  const CostModelParams fitted = FitCostModel(samples, bad);
  EXPECT_LE(CostFitError(samples, fitted), std::max(1.2 * base, base + 0.01));
  if (std::getenv("PREFIXD_COST_MODEL_PRINT_FIT")) {
    std::vector<CostSample> all = H200Samples(defaults);
    for (const CostSample& s : samples) all.push_back(s);
    const CostModelParams refit = FitCostModel(all, defaults);
    std::printf("%s# fit on all %zu samples: error %.4f (defaults %.4f); RESULTS rows %.4f, s2 %.4f\n",
                refit.ToText().c_str(), all.size(), CostFitError(all, refit), CostFitError(all, defaults),
                CostFitError(H200Samples(refit), refit), CostFitError(samples, refit));
    for (const CostSample& s : all)
      std::printf("  %-80s measured %8.1f  defaults %8.1f  fit %8.1f\n", s.label.c_str(), s.measured_us,
                  PredictPart(s.profile, defaults, s.part), PredictPart(s.profile, refit, s.part));
  }
}

}  // namespace
}  // namespace prefixd::kernels
