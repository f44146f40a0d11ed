// ArrivalsFinishEveryRequest (in_kernel_finish.h): true for plans whose arrivals count each
// (request, KV head)'s run exactly, false for every way a plan can break that.
#include "prefixd/kernels/in_kernel_finish.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "prefixd/kernels/kv_cache.h"
#include "unit/kernels/random_batch.h"

namespace prefixd::kernels {
namespace {

using test::GroupSpec;

// The concurrent step's options: no decode item finishes a request, so the merge step merges all.
CascadePlan PlanFor(const std::vector<GroupSpec>& groups, int num_qo_heads, int num_kv_heads, bool fuse_merge,
                    int prefix_tile_rows = 128, uint64_t seed = 7) {
  std::mt19937_64 rng(seed);
  const KvPoolShape shape{1, test::PagesNeeded(groups, 16) + 1, 16, num_kv_heads, 128, DType::kFloat16};
  PageAllocator alloc(shape.num_pages);
  const DecodeBatch batch = test::BuildBatch(groups, num_qo_heads, 16, alloc, rng);
  PlanOptions o;
  o.fuse_merge = fuse_merge;
  o.prefix_tile_rows = prefix_tile_rows;
  o.target_items = 96;
  return PlanCascade(batch, shape, o);
}

std::vector<GroupSpec> TwoGroups() {
  return {GroupSpec{3000, std::vector<int>(40, 300)}, GroupSpec{1100, {17, 900, 0, 64, 5}}};
}

TEST(ArrivalsFinishEveryRequest, HoldsForUnfusedPlansWhoseGroupDividesTheWarpgroup) {
  for (const int kv_heads : {32, 16, 8, 4}) {
    const CascadePlan plan = PlanFor(TwoGroups(), 32, kv_heads, false);
    ASSERT_GT(plan.prefix_items.size(), plan.groups.size()) << "the prefixes must be split";
    EXPECT_TRUE(ArrivalsFinishEveryRequest(plan, 64)) << "GQA " << 32 / kv_heads;
  }
  // Random groups, some without a prefix or a suffix (but never both: the run must have a slot).
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    std::mt19937_64 rng(seed);
    std::vector<GroupSpec> groups = test::RandomGroups(rng, 3, 12, 2500, 700);
    for (GroupSpec& g : groups)
      for (int& s : g.suffix_lens)
        if (g.prefix_tokens == 0 && s == 0) s = 1;
    const CascadePlan plan = PlanFor(groups, 16, 4, false, 64, seed);
    EXPECT_TRUE(ArrivalsFinishEveryRequest(plan, 64)) << "seed " << seed;
  }
}

TEST(ArrivalsFinishEveryRequest, RefusesPlansItsCountingWouldGetWrong) {
  const CascadePlan good = PlanFor(TwoGroups(), 32, 8, false);
  ASSERT_TRUE(ArrivalsFinishEveryRequest(good, 64));
  // Decode items that finish their requests (the fused merge), and merge_requests not all.
  EXPECT_FALSE(ArrivalsFinishEveryRequest(PlanFor(TwoGroups(), 32, 8, true), 64));
  // A GQA group that does not divide the warpgroup's rows (g = 3: a request across two warpgroups).
  EXPECT_FALSE(ArrivalsFinishEveryRequest(PlanFor(TwoGroups(), 24, 8, false), 64));
  EXPECT_FALSE(ArrivalsFinishEveryRequest(good, 62));
  // One decode item missing, or one prefix item twice: a run counted short or long.
  CascadePlan missing = good;
  missing.decode_items.pop_back();
  EXPECT_FALSE(ArrivalsFinishEveryRequest(missing, 64));
  CascadePlan twice = good;
  twice.prefix_items.push_back(twice.prefix_items.front());
  EXPECT_FALSE(ArrivalsFinishEveryRequest(twice, 64));
  // A prefix item whose rows start inside a request.
  CascadePlan split_request = good;
  split_request.prefix_items.front().row_begin += 1;
  EXPECT_FALSE(ArrivalsFinishEveryRequest(split_request, 64));
  // A request with an empty run (nothing would ever arrive).
  const CascadePlan empty_run = PlanFor({GroupSpec{0, {0, 40}}}, 32, 8, false);
  EXPECT_FALSE(ArrivalsFinishEveryRequest(empty_run, 64));
  // A request the merge step was not to finish.
  CascadePlan not_merged = good;
  not_merged.merge_requests.pop_back();
  EXPECT_FALSE(ArrivalsFinishEveryRequest(not_merged, 64));
}

}  // namespace
}  // namespace prefixd::kernels
