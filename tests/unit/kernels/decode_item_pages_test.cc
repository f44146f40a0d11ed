// WriteDecodeItemPages (prefixd/kernels/decode_item_pages.h): each decode item's first two page
// slots against the plan's own suffix page table, on split suffixes (items starting mid-suffix),
// a page size that is not a power of two, and the early decode's merge-only items (empty ranges).
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "prefixd/kernels/decode_item_pages.h"
#include "prefixd/kernels/early_decode.h"
#include "prefixd/kernels/page_table.h"
#include "prefixd/kernels/plan.h"
#include "support/test_support.h"
#include "unit/kernels/random_batch.h"

namespace prefixd::kernels {
namespace {

CascadePlan SplitSuffixPlan(int page_size, std::mt19937_64& rng) {
  // Suffixes long enough to be split into chunks of 32 tokens (items with kv_begin > 0), some of
  // one token, one request without a suffix.
  const std::vector<test::GroupSpec> groups = {{96, {1, 33, 200, 0}}, {0, {77, 5, 130}}};
  const KvPoolShape shape{1, test::PagesNeeded(groups, page_size) + 5, page_size, 2, 64, DType::kFloat16};
  PageAllocator alloc(shape.num_pages);
  const DecodeBatch batch = test::BuildBatch(groups, 8, page_size, alloc, rng);
  PlanOptions o;
  o.target_items = 1 << 12;  // split every suffix as finely as the options allow
  o.decode_chunk_align = 16;
  o.min_decode_chunk = 32;
  return PlanCascade(batch, shape, o);
}

// The item's pages written, against token-by-token lookups in the plan's page table.
void ExpectPagesOfEveryItem(const CascadePlan& plan) {
  std::vector<int32_t> pages(plan.decode_items.size() * kDecodeItemPageInts, -7);
  WriteDecodeItemPages(plan, pages.data());
  const PageTable& table = plan.suffix;
  for (size_t i = 0; i < plan.decode_items.size(); ++i) {
    const DecodeWorkItem& item = plan.decode_items[i];
    const int first_slot = item.kv_begin / plan.page_size, num_pages = table.num_pages(item.request);
    for (int k = 0; k < kDecodeItemPageInts; ++k) {
      const int32_t page = pages[i * kDecodeItemPageInts + size_t(k)];
      if (first_slot + k >= num_pages) {
        EXPECT_EQ(page, -1) << "item " << i << " slot " << first_slot + k << " of " << num_pages;
        continue;
      }
      // Every token of the item in that slot is on that page.
      for (int t = std::max(item.kv_begin, (first_slot + k) * plan.page_size);
           t < std::min(item.kv_end, (first_slot + k + 1) * plan.page_size); ++t)
        EXPECT_EQ(int64_t(page) * plan.page_size + t % plan.page_size, table.Slot(item.request, t, plan.page_size))
            << "item " << i << " token " << t;
      EXPECT_EQ(page, table.indices[size_t(table.indptr[size_t(item.request)] + first_slot + k)]) << "item " << i;
    }
  }
}

TEST(DecodeItemPages, FirstTwoSlotsOfEveryItemAtPageSizes16And5) {
  std::mt19937_64 rng(test::TestSeed());
  for (const int page_size : {16, 5}) {
    SCOPED_TRACE(page_size);
    const CascadePlan plan = SplitSuffixPlan(page_size, rng);
    int mid_suffix = 0;
    for (const DecodeWorkItem& item : plan.decode_items) mid_suffix += item.kv_begin > 0;
    ASSERT_GT(mid_suffix, 4) << "the plan was meant to split suffixes";
    ExpectPagesOfEveryItem(plan);
  }
}

TEST(DecodeItemPages, MergeOnlyItemsOfTheEarlyDecode) {
  std::mt19937_64 rng(test::TestSeed());
  const std::vector<test::GroupSpec> groups = {{1000, {32, 16, 40}}};
  const KvPoolShape shape{1, test::PagesNeeded(groups, 16) + 2, 16, 2, 64, DType::kFloat16};
  PageAllocator alloc(shape.num_pages);
  PlanOptions o;
  o.target_items = 24;
  CascadePlan plan = PlanCascade(test::BuildBatch(groups, 8, 16, alloc, rng), shape, o);
  const EarlyDecodeSplit split = SplitEarlyDecode(plan, 1.0);
  ASSERT_GT(split.num_early, 0);
  plan.decode_items = split.items;
  int empty = 0;
  for (const DecodeWorkItem& item : plan.decode_items) empty += item.kv_begin == item.kv_end;
  ASSERT_GT(empty, 0) << "merge-only items expected";
  ExpectPagesOfEveryItem(plan);
}

}  // namespace
}  // namespace prefixd::kernels
