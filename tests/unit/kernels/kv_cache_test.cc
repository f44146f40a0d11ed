// KV pool shape and page-table validation, and the refcounted page allocator.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

#include "prefixd/kernels/kv_cache.h"
#include "prefixd/kernels/page_table.h"
#include "support/test_support.h"
#include "unit/kernels/expect_error.h"

namespace prefixd::kernels {
namespace {

using ::prefixd::ErrorKind;

TEST(KvPoolShape, AcceptsSupportedShapes) {
  for (int d : {64, 128, 256}) {
    KvPoolShape s{2, 10, 16, 4, d, DType::kBFloat16};
    EXPECT_NO_THROW(s.Validate());
    EXPECT_EQ(s.ElementsPerArray(), int64_t(2) * 10 * 16 * 4 * d);
    EXPECT_EQ(s.Offset(1, 3, 2), s.LayerStride() + 3 * s.TokenStride() + 2 * d);
  }
}

TEST(KvPoolShape, RejectsBadShapes) {
  EXPECT_INVALID_ARGUMENT((KvPoolShape{1, 10, 16, 4, 96}.Validate()), "head_dim 96");
  EXPECT_INVALID_ARGUMENT((KvPoolShape{0, 10, 16, 4, 64}.Validate()), "num_layers");
  EXPECT_INVALID_ARGUMENT((KvPoolShape{1, 0, 16, 4, 64}.Validate()), "num_pages");
  EXPECT_INVALID_ARGUMENT((KvPoolShape{1, 10, 0, 4, 64}.Validate()), "page_size");
  EXPECT_INVALID_ARGUMENT((KvPoolShape{1, 10, 16, -1, 64}.Validate()), "num_kv_heads");
  EXPECT_INVALID_ARGUMENT((KvPoolShape{1, 1 << 30, 16, 1, 64}.Validate()), "token slots");
}

// The benchmarks' one-group pools: the prefix's pages, each request's, one spare; a shape past
// 2^31 - 1 token slots refused by name, counted in 64 bits (2^20 requests × 2^24 tokens would
// overflow an int page count).
TEST(OneGroupPoolPages, CountsPagesAndRefusesPoolsTooLarge) {
  EXPECT_EQ(OneGroupPoolPages(1000, 3, 17, 16), 63 + 3 * 2 + 1);
  EXPECT_EQ(OneGroupPoolPages(0, 5, 0, 16), 1);
  EXPECT_EQ(OneGroupPoolPages(32, 1, 16, 8), 4 + 2 + 1);
  const int most = int((kMaxPoolTokenSlots / 16) - 1);  // pages: the prefix's, then the spare one
  EXPECT_EQ(OneGroupPoolPages(most * 16, 0, 0, 16), most + 1);
  EXPECT_INVALID_ARGUMENT(OneGroupPoolPages(most * 16 + 1, 0, 0, 16), "more than one pool indexes");
  EXPECT_INVALID_ARGUMENT(OneGroupPoolPages(8192, 1 << 20, 1 << 24, 16), "batch 1048576, prefix 8192, suffix 16777216");
  EXPECT_INVALID_ARGUMENT(OneGroupPoolPages(8192, -1, 16, 16), "must not be negative");
  EXPECT_INVALID_ARGUMENT(OneGroupPoolPages(8192, 1, 16, 0), "the page positive");
  EXPECT_NO_THROW((KvPoolShape{1, OneGroupPoolPages(most * 16, 0, 0, 16), 16, 1, 64}.Validate()));
}

PageTable GoodTable() {
  PageTable t;
  t.AddSeq({3, 1}, 5);
  t.AddSeq({}, 0);
  t.AddSeq({0, 2, 4}, 16);
  return t;
}

TEST(PageTable, AcceptsWellFormedTables) {
  const PageTable t = GoodTable();
  EXPECT_NO_THROW(t.Validate(5, 16));
  EXPECT_EQ(t.SeqLen(0, 16), 21);
  EXPECT_EQ(t.SeqLen(1, 16), 0);
  EXPECT_EQ(t.SeqLen(2, 16), 48);
  EXPECT_EQ(t.Slot(0, 17, 16), 1 * 16 + 1);
  EXPECT_NO_THROW(PageTable{}.Validate(1, 16));  // no sequences
}

TEST(PageTable, RejectsMalformedTablesNamingTheSequence) {
  PageTable t = GoodTable();
  EXPECT_INVALID_ARGUMENT(t.Validate(4, 16), "sequence 2 has page 4");  // page out of the pool
  t = GoodTable();
  t.indices[0] = -1;
  EXPECT_INVALID_ARGUMENT(t.Validate(5, 16), "sequence 0 has page -1");
  t = GoodTable();
  t.last_page_len[0] = 0;
  EXPECT_INVALID_ARGUMENT(t.Validate(5, 16), "sequence 0 has last_page_len 0");
  t = GoodTable();
  t.last_page_len[2] = 17;
  EXPECT_INVALID_ARGUMENT(t.Validate(5, 16), "sequence 2 has last_page_len 17");
  t = GoodTable();
  t.last_page_len[1] = 3;
  EXPECT_INVALID_ARGUMENT(t.Validate(5, 16), "sequence 1 has no pages but last_page_len 3");
  t = GoodTable();
  t.indptr[1] = 3;  // 0, 3, 2, 5: decreases at sequence 1
  EXPECT_INVALID_ARGUMENT(t.Validate(5, 16), "decreases at sequence 1");
  t = GoodTable();
  t.indices.push_back(0);
  EXPECT_INVALID_ARGUMENT(t.Validate(5, 16), "indptr ends at 5");
  t = GoodTable();
  t.indptr[0] = 1;
  EXPECT_INVALID_ARGUMENT(t.Validate(5, 16), "start with 0");
  t = GoodTable();
  t.last_page_len.pop_back();
  EXPECT_INVALID_ARGUMENT(t.Validate(5, 16), "last_page_len has 2 entries for 3 sequences");
  t = GoodTable();
  t.indptr.clear();
  EXPECT_INVALID_ARGUMENT(t.Validate(5, 16), "indptr");
}

TEST(PageAllocator, AllocatesDistinctPagesWithRefcountOne) {
  PageAllocator a(10);
  EXPECT_EQ(a.num_free(), 10);
  const auto pages = a.Allocate(4);
  ASSERT_EQ(pages.size(), 4u);
  EXPECT_EQ(std::set<int32_t>(pages.begin(), pages.end()).size(), 4u);
  for (int32_t p : pages) EXPECT_EQ(a.refcount(p), 1);
  EXPECT_EQ(a.num_free(), 6);
  EXPECT_TRUE(a.Allocate(0).empty());
  a.Release(pages);
  EXPECT_EQ(a.num_free(), 10);
  for (int32_t p : pages) EXPECT_EQ(a.refcount(p), 0);
}

TEST(PageAllocator, SharedPageIsFreedByItsLastUser) {
  PageAllocator a(4);
  const int32_t first = a.AllocateContiguous(2);
  a.AddRef(first);
  a.AddRef(first);
  EXPECT_EQ(a.refcount(first), 3);
  a.ReleaseRun(first, 2);  // one user of both pages leaves
  EXPECT_EQ(a.refcount(first), 2);
  EXPECT_EQ(a.refcount(first + 1), 0);
  EXPECT_EQ(a.num_free(), 3);
  a.Release(first);
  EXPECT_EQ(a.num_free(), 3);
  a.Release(first);
  EXPECT_EQ(a.num_free(), 4);
  EXPECT_INVALID_ARGUMENT(a.Release(first), "already free");
  EXPECT_INVALID_ARGUMENT(a.AddRef(first), "is free");
}

TEST(PageAllocator, ContiguousRunsAreFirstFit) {
  PageAllocator a(12);
  EXPECT_EQ(a.AllocateContiguous(3), 0);
  EXPECT_EQ(a.AllocateContiguous(4), 3);
  EXPECT_EQ(a.AllocateContiguous(2), 7);
  a.ReleaseRun(3, 4);                     // hole [3, 7)
  EXPECT_EQ(a.AllocateContiguous(2), 3);  // first fit: the hole, not the tail
  EXPECT_EQ(a.AllocateContiguous(3), 9);  // [5, 7) is too small
  EXPECT_EQ(a.AllocateContiguous(2), 5);
  EXPECT_EQ(a.num_free(), 0);
}

TEST(PageAllocator, SuffixPagesComeFromTheTopAndLeaveRunsWhole) {
  PageAllocator a(16);
  const auto suffix = a.Allocate(4);
  for (int32_t p : suffix) EXPECT_GE(p, 12);
  EXPECT_EQ(a.AllocateContiguous(12), 0);
}

TEST(PageAllocator, FragmentationGivesOutOfMemoryAndTakesNothing) {
  PageAllocator a(8);
  std::vector<int32_t> all = a.Allocate(8);
  std::sort(all.begin(), all.end());
  a.Release(std::vector<int32_t>{0, 2, 4, 6});  // four free pages, no two adjacent
  EXPECT_EQ(a.num_free(), 4);
  EXPECT_PREFIXD_ERROR(a.AllocateContiguous(2), ErrorKind::kOutOfMemory, "no contiguous run of 2");
  EXPECT_EQ(a.num_free(), 4);
  EXPECT_PREFIXD_ERROR(a.Allocate(5), ErrorKind::kOutOfMemory, "5 requested");
  EXPECT_EQ(a.num_free(), 4);
  for (int32_t p : {0, 2, 4, 6}) EXPECT_EQ(a.refcount(p), 0);
  EXPECT_EQ(a.Allocate(4).size(), 4u);
  EXPECT_EQ(a.num_free(), 0);
}

TEST(PageAllocator, BadCallsThrowAndChangeNothing) {
  PageAllocator a(6);
  const auto pages = a.Allocate(2);
  EXPECT_INVALID_ARGUMENT(a.refcount(6), "page 6");
  EXPECT_INVALID_ARGUMENT(a.Release(-1), "page -1");
  EXPECT_INVALID_ARGUMENT(a.Allocate(-1), "negative");
  EXPECT_INVALID_ARGUMENT(a.AllocateContiguous(0), "positive");
  EXPECT_INVALID_ARGUMENT(a.ReleaseRun(4, 3), "outside the pool");
  // A list with one free page releases nothing; a page listed twice needs two references.
  EXPECT_INVALID_ARGUMENT(a.Release(std::vector<int32_t>{pages[0], 0}), "page 0");
  EXPECT_INVALID_ARGUMENT(a.Release(std::vector<int32_t>{pages[1], pages[1]}), "released 2 times");
  EXPECT_EQ(a.refcount(pages[0]), 1);
  EXPECT_EQ(a.refcount(pages[1]), 1);
  EXPECT_EQ(a.num_free(), 4);
  const int32_t run = a.AllocateContiguous(2);
  a.Release(run + 1);
  EXPECT_INVALID_ARGUMENT(a.ReleaseRun(run, 2), "is free");
  EXPECT_EQ(a.refcount(run), 1);
  EXPECT_INVALID_ARGUMENT(PageAllocator(0), "positive");
}

// Random operations against a plain model of the refcounts.
TEST(PageAllocator, RandomOperationsMatchAModel) {
  const uint64_t seed = test::TestSeed();
  SCOPED_TRACE("PREFIXD_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const int n = 64;
  PageAllocator a(n);
  std::vector<int> model(n, 0);
  std::vector<int32_t> held;  // one entry per reference
  for (int step = 0; step < 20000; ++step) {
    const int op = int(rng() % 5);
    const int k = 1 + int(rng() % 6);
    const int free_count = int(std::count(model.begin(), model.end(), 0));
    if (op == 0) {
      if (k > free_count) {
        EXPECT_THROW(a.Allocate(k), Error);
      } else {
        for (int32_t p : a.Allocate(k)) {
          ASSERT_EQ(model[p], 0) << "page " << p << " handed out twice";
          model[p] = 1;
          held.push_back(p);
        }
      }
    } else if (op == 1) {
      bool fits = false;
      int first_fit = -1;
      for (int s = 0; s + k <= n && !fits; ++s) {
        fits = std::all_of(model.begin() + s, model.begin() + s + k, [](int c) { return c == 0; });
        if (fits) first_fit = s;
      }
      if (!fits) {
        EXPECT_THROW(a.AllocateContiguous(k), Error);
      } else {
        ASSERT_EQ(a.AllocateContiguous(k), first_fit);
        for (int p = first_fit; p < first_fit + k; ++p) model[p] = 1, held.push_back(p);
      }
    } else if (op == 2 && !held.empty()) {
      const int32_t p = held[rng() % held.size()];
      a.AddRef(p);
      ++model[p];
      held.push_back(p);
    } else if (!held.empty()) {
      const size_t i = rng() % held.size();
      const int32_t p = held[i];
      held[i] = held.back();
      held.pop_back();
      a.Release(p);
      --model[p];
    }
    ASSERT_EQ(a.num_free(), std::count(model.begin(), model.end(), 0)) << "step " << step;
  }
  for (int p = 0; p < n; ++p) EXPECT_EQ(a.refcount(p), model[p]) << "page " << p;
}

}  // namespace
}  // namespace prefixd::kernels
