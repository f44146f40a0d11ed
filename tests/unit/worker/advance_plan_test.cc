// AdvanceCascadePlan (the worker's steady-step plan advance) on its own: a plan made for a batch,
// advanced by one token per request (several times in a row), must be a valid plan whose page
// table is the grown batch's, whose decode items cover every (request, head, suffix token)
// exactly once, and which computes on the CPU backend what a plan made from scratch for the grown
// batch computes (and what the float64 oracle says). Rows whose suffix is empty are either null
// (owned elsewhere: skipped) or make the advance refuse, leaving the plan unchanged.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "prefixd/kernels/backend.h"
#include "prefixd/kernels/plan.h"
#include "prefixd/worker/advance_plan.h"
#include "support/backend_step.h"
#include "support/test_support.h"

namespace prefixd::worker {
namespace {

using namespace prefixd::test;

// One request row of the test batch: its group, and either null (owned elsewhere: no suffix here)
// or the request with all the pages it will need over the test's advances.
struct Row {
  bool null = false;
  RequestInfo info;
};

struct Problem {
  KvPoolShape shape;
  std::vector<int> prefix_tokens;       // per group
  std::vector<int> group_first_page;    // per group (prefix run)
  std::vector<std::vector<Row>> rows;   // per group
};

// A batch of the problem's rows at their current lengths (null rows: empty suffix).
DecodeBatch MakeBatch(const Problem& p, int num_qo_heads) {
  const int ps = p.shape.page_size;
  DecodeBatch b;
  b.num_qo_heads = num_qo_heads;
  int32_t next = 0;
  for (size_t g = 0; g < p.rows.size(); ++g) {
    kernels::PrefixGroup pg;
    pg.first_request = next;
    pg.num_requests = int32_t(p.rows[g].size());
    pg.prefix.num_tokens = p.prefix_tokens[g];
    pg.prefix.first_page = p.group_first_page[g];
    for (const Row& r : p.rows[g]) {
      const int len = r.null ? 0 : r.info.length;
      const int pages = (len + ps - 1) / ps;
      b.suffix.AddSeq(std::vector<int32_t>(r.info.pages.begin(), r.info.pages.begin() + pages),
                      len == 0 ? 0 : len - (pages - 1) * ps);
    }
    next += pg.num_requests;
    b.groups.push_back(pg);
  }
  return b;
}

std::vector<const RequestInfo*> RowPointers(const Problem& p) {
  std::vector<const RequestInfo*> out;
  for (const auto& g : p.rows)
    for (const Row& r : g) out.push_back(r.null ? nullptr : &r.info);
  return out;
}

// Suffix length of a non-null row: at a page boundary, one short of it, one past it, or random;
// never 0 here (empty non-null rows are tested separately).
int SuffixLen(std::mt19937_64& rng, int ps) {
  const int max_pages = std::max(6, 48 / ps);
  const int pages = 1 + int(rng() % max_pages);
  switch (rng() % 4) {
    case 0: return pages * ps;
    case 1: return pages * ps - 1 > 0 ? pages * ps - 1 : 1;
    case 2: return pages * ps + 1;
    default: return 1 + int(rng() % (max_pages * ps));
  }
}

constexpr int kAdvances = 3;

Problem RandomProblem(std::mt19937_64& rng, int page_size, int num_kv_heads, int head_dim, bool allow_empty_rows) {
  Problem p;
  const int num_groups = 2 + int(rng() % 3);
  std::vector<std::vector<int>> lens(num_groups);
  std::vector<std::vector<bool>> nulls(num_groups);
  int pages_needed = 0;
  for (int g = 0; g < num_groups; ++g) {
    const int prefix = rng() % 4 == 0 ? 0 : int(rng() % (4 * page_size)) + 1;
    p.prefix_tokens.push_back(prefix);
    pages_needed += (prefix + page_size - 1) / page_size;
    const int n = 1 + int(rng() % 4);
    for (int i = 0; i < n; ++i) {
      const bool null = allow_empty_rows && rng() % 5 == 0;
      nulls[g].push_back(null);
      const int len = null ? 0 : SuffixLen(rng, page_size);
      lens[g].push_back(len);
      pages_needed += (len + kAdvances + page_size - 1) / page_size;
    }
  }
  p.shape = KvPoolShape{1, pages_needed + 2, page_size, num_kv_heads, head_dim, kernels::DType::kFloat16};
  kernels::PageAllocator alloc(p.shape.num_pages);
  p.rows.resize(num_groups);
  int32_t id = 0;
  for (int g = 0; g < num_groups; ++g) {
    const int prefix = p.prefix_tokens[g];
    p.group_first_page.push_back(prefix > 0 ? alloc.AllocateContiguous((prefix + page_size - 1) / page_size) : 0);
    for (size_t i = 0; i < lens[g].size(); ++i) {
      Row r;
      r.null = nulls[g][i];
      r.info.id = id++;
      r.info.length = lens[g][i];
      if (!r.null) {
        r.info.pages = alloc.Allocate((lens[g][i] + kAdvances + page_size - 1) / page_size);
        std::shuffle(r.info.pages.begin(), r.info.pages.end(), rng);
      }
      p.rows[g].push_back(r);
    }
  }
  return p;
}

// Every (request, qo head, suffix token) is covered by exactly one decode item; every (request,
// qo head, prefix token) by exactly one prefix item.
void ExpectCoversOnce(const CascadePlan& plan, const DecodeBatch& batch, int page_size) {
  const int hq = plan.num_qo_heads, g = plan.gqa_group_size();
  for (int r = 0; r < plan.num_requests; ++r) {
    const int64_t len = batch.suffix.SeqLen(r, page_size);
    std::vector<int> count(size_t(hq) * len, 0);
    for (const auto& d : plan.decode_items) {
      if (d.request != r) continue;
      ASSERT_GE(d.kv_begin, 0);
      ASSERT_LE(d.kv_end, len) << "request " << r << ": decode item past the suffix";
      ASSERT_LT(d.kv_begin, d.kv_end);
      for (int h = d.kv_head * g; h < (d.kv_head + 1) * g; ++h)
        for (int t = d.kv_begin; t < d.kv_end; ++t) ++count[size_t(h) * len + t];
    }
    for (int h = 0; h < hq; ++h)
      for (int64_t t = 0; t < len; ++t)
        ASSERT_EQ(count[size_t(h) * len + t], 1) << "request " << r << " head " << h << " suffix token " << t;
  }
  for (size_t gi = 0; gi < batch.groups.size(); ++gi) {
    const auto& grp = batch.groups[gi];
    const int rows = grp.num_requests * g, n = grp.prefix.num_tokens;
    std::vector<int> count(size_t(plan.num_kv_heads) * rows * n, 0);
    for (const auto& it : plan.prefix_items) {
      if (it.group != int(gi)) continue;
      for (int row = it.row_begin; row < it.row_end; ++row)
        for (int t = it.kv_begin; t < it.kv_end; ++t) ++count[(size_t(it.kv_head) * rows + row) * n + t];
    }
    for (size_t i = 0; i < count.size(); ++i) ASSERT_EQ(count[i], 1) << "group " << gi << " prefix cell " << i;
  }
}

// |got − want| ≤ rel · max(floor, |want|) elementwise (the two plans may ⊕ in a different order).
// The float32 states: 1e-6 relative (floor 1); the fp16 outputs: one fp16 ulp (2^-10 relative,
// floor 2^-14, the smallest normal).
void ExpectNear(const std::vector<float>& got, const std::vector<float>& want, double rel, double floor,
                const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double tol = rel * std::max(floor, std::fabs(double(want[i])));
    const bool same_inf = std::isinf(got[i]) && got[i] == want[i];
    if (!same_inf && !(std::fabs(double(got[i]) - double(want[i])) <= tol)) {
      if (++bad <= 5) ADD_FAILURE() << what << "[" << i << "]: advanced " << got[i] << " vs fresh " << want[i];
    }
  }
  EXPECT_EQ(bad, 0) << what << ": elements differing";
}

struct AdvanceCase {
  std::string name;
  int page_size, num_qo_heads, num_kv_heads, head_dim;
  PlanOptions options;
};

void PrintTo(const AdvanceCase& c, std::ostream* os) { *os << c.name; }

PlanOptions SplitSuffixes(bool fuse) {
  PlanOptions o;
  o.target_items = 4096;  // many items: suffixes split as finely as allowed
  o.min_decode_chunk = 8;
  o.decode_chunk_align = 8;
  o.min_prefix_chunk = 16;
  o.prefix_chunk_align = 16;
  o.fuse_merge = fuse;
  return o;
}

class AdvancePlanTest : public ::testing::TestWithParam<AdvanceCase> {};

TEST_P(AdvancePlanTest, MatchesFreshPlanAndOracle) {
  const AdvanceCase& c = GetParam();
  PREFIXD_SEEDED_RNG(rng);
  auto backend = kernels::MakeCpuBackend();
  int split_seen = 0, boundary_seen = 0;
  for (int trial = 0; trial < 6; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    Problem p = RandomProblem(rng, c.page_size, c.num_kv_heads, c.head_dim, /*allow_empty_rows=*/true);
    const HostKvPool pool = RandomKvPool(rng, p.shape);
    CascadePlan plan = kernels::PlanCascade(MakeBatch(p, c.num_qo_heads), p.shape, c.options);
    std::vector<int32_t> old_len, scratch;
    for (int step = 1; step <= kAdvances; ++step) {
      SCOPED_TRACE("advance " + std::to_string(step));
      for (auto& g : p.rows)
        for (Row& r : g)
          if (!r.null) {
            boundary_seen += r.info.length % c.page_size == 0;
            ++r.info.length;
          }
      const DecodeBatch grown = MakeBatch(p, c.num_qo_heads);
      ASSERT_TRUE(AdvanceCascadePlan(&plan, RowPointers(p), c.page_size, &old_len, &scratch));
      // (1) a valid plan, and its page table is the grown batch's.
      ASSERT_NO_THROW(plan.Validate());
      ASSERT_NO_THROW(CascadePlan::Deserialize(plan.Serialize()));
      EXPECT_EQ(plan.suffix.indptr, grown.suffix.indptr);
      EXPECT_EQ(plan.suffix.indices, grown.suffix.indices);
      EXPECT_EQ(plan.suffix.last_page_len, grown.suffix.last_page_len);
      // (2) every (request, head, token) exactly once.
      ExpectCoversOnce(plan, grown, c.page_size);
      if (HasFatalFailure()) return;
      for (int r = 0; r < plan.num_requests; ++r) {
        int chunks = 0;
        for (const auto& d : plan.decode_items) chunks += d.request == r && d.kv_head == 0;
        split_seen += chunks > 1;
      }
      // (3) the same outputs as a fresh plan, and the oracle's.
      const CascadePlan fresh = kernels::PlanCascade(grown, p.shape, c.options);
      const std::vector<uint16_t> q = MakeQueries(rng, pool, 0, grown, false, 0.f);
      const StepResult got = RunStep(*backend, pool, 0, plan, q);
      const StepResult want = RunStep(*backend, pool, 0, fresh, q);
      ExpectNear(got.v, want.v, 1e-6, 1.0, "v");
      ExpectNear(got.s, want.s, 1e-6, 1.0, "s");
      ExpectNear(got.o, want.o, std::ldexp(1.0, -10), std::ldexp(1.0, -14), "o");
      const RefOutput ref = NaiveCascade(pool, 0, grown, q, 1.0 / std::sqrt(double(c.head_dim)));
      ExpectAllClose(got.v.data(), ref.v.data(), int64_t(ref.v.size()), OutputTolerance(p.shape.dtype), "v vs oracle");
      ExpectLseClose(got.s.data(), ref.s.data(), int64_t(ref.s.size()), 1e-3, "s vs oracle");
      if (HasFailure()) return;
    }
  }
  EXPECT_GT(boundary_seen, 0) << "no suffix crossed a page boundary";
  if (c.options.min_decode_chunk <= 8) EXPECT_GT(split_seen, 0) << "no suffix was split into several chunks";
}

INSTANTIATE_TEST_SUITE_P(
    Cases, AdvancePlanTest,
    ::testing::Values(AdvanceCase{"ps16_gqa2_default", 16, 4, 2, 64, PlanOptions{}},
                      AdvanceCase{"ps16_gqa2_split_fused", 16, 4, 2, 64, SplitSuffixes(true)},
                      AdvanceCase{"ps4_gqa4_split_unfused", 4, 8, 2, 64, SplitSuffixes(false)},
                      AdvanceCase{"ps1_mha_split_fused", 1, 2, 2, 64, SplitSuffixes(true)}),
    [](const ::testing::TestParamInfo<AdvanceCase>& i) { return i.param.name; });

// A non-null row with an empty suffix has no decode item to extend: refused, plan unchanged. So
// is a row that did not grow by exactly one token, and a row count that does not match the plan.
TEST(AdvancePlanRefuses, EmptySuffixWrongGrowthOrRowCount) {
  PREFIXD_SEEDED_RNG(rng);
  const int ps = 16;
  Problem p = RandomProblem(rng, ps, 2, 64, /*allow_empty_rows=*/false);
  const CascadePlan plan = kernels::PlanCascade(MakeBatch(p, 4), p.shape, SplitSuffixes(true));
  const std::vector<int32_t> before = plan.Serialize();
  std::vector<int32_t> old_len, scratch;
  auto refused = [&](const std::vector<const RequestInfo*>& rows) {
    CascadePlan copy = plan;
    const bool ok = AdvanceCascadePlan(&copy, rows, ps, &old_len, &scratch);
    if (!ok) EXPECT_EQ(copy.Serialize(), before) << "a refused advance changed the plan";
    return !ok;
  };
  std::vector<Row> all;
  for (auto& g : p.rows)
    for (Row& r : g) all.push_back(r);
  // Nobody grew.
  EXPECT_TRUE(refused(RowPointers(p)));
  // Every row grew by one except the last, which grew by two.
  for (Row& r : all) ++r.info.length;
  all.back().info.length += 1;
  std::vector<const RequestInfo*> rows;
  for (const Row& r : all) rows.push_back(&r.info);
  EXPECT_TRUE(refused(rows));
  all.back().info.length -= 1;
  EXPECT_FALSE(refused(rows)) << "the well-formed advance is refused";
  // Row count mismatch.
  std::vector<const RequestInfo*> fewer(rows.begin(), rows.end() - 1);
  EXPECT_TRUE(refused(fewer));

  // A plan with an empty non-null row: refused (it must be planned again).
  Problem e = p;
  e.rows[0][0].info.length = 0;
  const CascadePlan with_empty = kernels::PlanCascade(MakeBatch(e, 4), e.shape, SplitSuffixes(true));
  for (auto& g : e.rows)
    for (Row& r : g) ++r.info.length;
  CascadePlan copy = with_empty;
  EXPECT_FALSE(AdvanceCascadePlan(&copy, RowPointers(e), ps, &old_len, &scratch));
  EXPECT_EQ(copy.Serialize(), with_empty.Serialize());
  // The same row marked null (owned elsewhere): skipped, the others advance.
  e.rows[0][0].null = true;
  EXPECT_TRUE(AdvanceCascadePlan(&copy, RowPointers(e), ps, &old_len, &scratch));
  EXPECT_EQ(copy.suffix.num_pages(0), 0);
  EXPECT_EQ(old_len[0], 0);
  ASSERT_NO_THROW(copy.Validate());
}

}  // namespace
}  // namespace prefixd::worker
