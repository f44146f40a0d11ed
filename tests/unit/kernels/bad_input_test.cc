// Bad input is rejected with kInvalidArgument and a message naming the culprit, never a crash:
// through the planner (the batch) and through the backend (plan vs workspace, run arguments).
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "prefixd/kernels/backend.h"
#include "prefixd/kernels/plan.h"
#include "support/test_support.h"
#include "unit/kernels/expect_error.h"
#include "unit/kernels/random_batch.h"

namespace prefixd::kernels {
namespace {

// A valid batch (3 groups, 5 requests) on a 2-layer pool, ready to be broken one field at a time.
class BadInput : public ::testing::Test {
 protected:
  void SetUp() override {
    std::mt19937_64 rng(test::TestSeed());
    const std::vector<test::GroupSpec> groups = {{40, {3, 17}}, {0, {5}}, {20, {0, 9}}};
    shape_ = KvPoolShape{2, test::PagesNeeded(groups, 16) + 4, 16, 2, 64, DType::kBFloat16};
    PageAllocator alloc(shape_.num_pages);
    batch_ = test::BuildBatch(groups, 4, 16, alloc, rng);
    pool_ = test::RandomKvPool(rng, shape_);
    q_ = test::RandomBits(rng, int64_t(5) * 4 * 64, shape_.dtype, 1.f);
    o_.assign(q_.size(), 0);
    ASSERT_NO_THROW(PlanCascade(batch_, shape_, {}));
  }
  CascadeArgs Args() {
    CascadeArgs a;
    a.kv = {shape_, pool_.k.data(), pool_.v.data()};
    a.layer = 1;
    a.q = q_.data();
    a.o = o_.data();
    return a;
  }
  KvPoolShape shape_;
  DecodeBatch batch_;
  test::HostKvPool pool_;
  std::vector<uint16_t> q_, o_;
};

TEST_F(BadInput, GqaHeadsNotDivisible) {
  batch_.num_qo_heads = 3;
  EXPECT_INVALID_ARGUMENT(PlanCascade(batch_, shape_, {}), "num_qo_heads 3 is not a multiple");
  batch_.num_qo_heads = 0;
  EXPECT_INVALID_ARGUMENT(PlanCascade(batch_, shape_, {}), "num_qo_heads");
}

TEST_F(BadInput, UnsupportedHeadDim) {
  shape_.head_dim = 96;
  EXPECT_INVALID_ARGUMENT(PlanCascade(batch_, shape_, {}), "head_dim 96");
}

TEST_F(BadInput, SuffixPageOutOfRange) {
  batch_.suffix.indices[batch_.suffix.indptr[1] + 1] = shape_.num_pages + 5;  // request 1's second page
  EXPECT_INVALID_ARGUMENT(PlanCascade(batch_, shape_, {}),
                          "sequence 1 has page " + std::to_string(shape_.num_pages + 5) + " at position 1");
  batch_.suffix.indices[batch_.suffix.indptr[4]] = -2;
  EXPECT_INVALID_ARGUMENT(PlanCascade(batch_, shape_, {}), "sequence 1 has page");  // first bad one wins
  batch_.suffix.indices[batch_.suffix.indptr[1] + 1] = 0;
  EXPECT_INVALID_ARGUMENT(PlanCascade(batch_, shape_, {}), "sequence 4 has page -2 at position 0");
}

TEST_F(BadInput, SuffixLastPageLength) {
  batch_.suffix.last_page_len[1] = 17;
  EXPECT_INVALID_ARGUMENT(PlanCascade(batch_, shape_, {}), "sequence 1 has last_page_len 17");
}

TEST_F(BadInput, GroupsNotCoveringRequests) {
  DecodeBatch b = batch_;
  b.groups.pop_back();  // requests 3 and 4 in no group
  EXPECT_INVALID_ARGUMENT(PlanCascade(b, shape_, {}), "request 3 is in no group");
  b = batch_;
  b.groups[1].first_request = 3;  // gap: request 2 skipped
  EXPECT_INVALID_ARGUMENT(PlanCascade(b, shape_, {}), "group 1 starts at request 3");
  b = batch_;
  b.groups[2].num_requests = 3;  // beyond the batch
  EXPECT_INVALID_ARGUMENT(PlanCascade(b, shape_, {}), "group 2 covers requests [3, 6)");
  b = batch_;
  b.groups[1].num_requests = 0;
  EXPECT_INVALID_ARGUMENT(PlanCascade(b, shape_, {}), "group 1 has 0 requests");
  b = batch_;
  std::swap(b.groups[0], b.groups[1]);  // out of order
  EXPECT_INVALID_ARGUMENT(PlanCascade(b, shape_, {}), "group 0 starts at request 2");
}

TEST_F(BadInput, PrefixRunOutsideThePool) {
  batch_.groups[2].prefix.first_page = shape_.num_pages - 1;  // 20 tokens need 2 pages
  EXPECT_INVALID_ARGUMENT(PlanCascade(batch_, shape_, {}), "group 2's prefix run");
  batch_.groups[2].prefix.first_page = -1;
  EXPECT_INVALID_ARGUMENT(PlanCascade(batch_, shape_, {}), "group 2's prefix run");
  batch_.groups[2].prefix = {0, -4};
  EXPECT_INVALID_ARGUMENT(PlanCascade(batch_, shape_, {}), "group 2 has a negative prefix length");
}

TEST_F(BadInput, PlanLargerThanTheWorkspace) {
  const CascadePlan plan = PlanCascade(batch_, shape_, {});
  auto backend_with = [](auto set) {
    BackendOptions o;
    set(o.limits);
    return MakeCpuBackend(o);
  };
  EXPECT_INVALID_ARGUMENT(backend_with([](WorkspaceLimits& l) { l.max_slots = 3; })->LoadPlan(plan),
                          "partial-state slots");
  EXPECT_INVALID_ARGUMENT(backend_with([](WorkspaceLimits& l) { l.max_requests = 4; })->LoadPlan(plan), "5 requests");
  EXPECT_INVALID_ARGUMENT(backend_with([](WorkspaceLimits& l) { l.max_qo_heads = 2; })->LoadPlan(plan), "4 query heads");
  EXPECT_INVALID_ARGUMENT(backend_with([](WorkspaceLimits& l) { l.max_plan_ints = 20; })->LoadPlan(plan),
                          "serialised plan has");
  EXPECT_INVALID_ARGUMENT(backend_with([](WorkspaceLimits& l) { l.max_state_floats = 100; })->LoadPlan(plan),
                          "partial-state floats");
  EXPECT_INVALID_ARGUMENT(backend_with([](WorkspaceLimits& l) { l.max_head_dim = 32; }), "max_head_dim 32");
}

TEST_F(BadInput, RunArgumentsDisagreeWithThePlan) {
  auto backend = MakeCpuBackend();
  EXPECT_INVALID_ARGUMENT(backend->RunCascade(Args()), "no plan loaded");
  backend->LoadPlan(PlanCascade(batch_, shape_, {}));
  EXPECT_NO_THROW(backend->RunCascade(Args()));

  CascadeArgs a = Args();
  a.q = nullptr;
  EXPECT_INVALID_ARGUMENT(backend->RunCascade(a), "q is null");
  a = Args();
  a.layer = 2;
  EXPECT_INVALID_ARGUMENT(backend->RunCascade(a), "layer 2");
  a = Args();
  a.kv.v = nullptr;
  EXPECT_INVALID_ARGUMENT(backend->RunCascade(a), "KV pool pointer is null");
  a = Args();
  a.kv.shape.num_kv_heads = 4;  // a pool of another shape than the plan's
  EXPECT_INVALID_ARGUMENT(backend->RunCascade(a), "does not match the loaded plan");
  a = Args();
  a.kv.shape.num_pages -= 1;  // smaller than the pool the plan was checked against
  EXPECT_INVALID_ARGUMENT(backend->RunCascade(a), "does not match the loaded plan");
  a = Args();
  a.kv.shape.head_dim = 96;
  EXPECT_INVALID_ARGUMENT(backend->RunCascade(a), "head_dim 96");
  a = Args();
  a.sm_scale = std::nanf("");
  EXPECT_INVALID_ARGUMENT(backend->RunCascade(a), "sm_scale");
  a = Args();
  a.sm_scale = -0.125f;  // the kernels' online softmax assumes a scale ≥ 0
  EXPECT_INVALID_ARGUMENT(backend->RunCascade(a), "sm_scale must be finite and ≥ 0");
  a = Args();
  float packed[4];
  a.merge_packed_out = packed;  // without merge_packed_row
  EXPECT_INVALID_ARGUMENT(backend->RunCascade(a), "merge_packed_row and merge_packed_out go together");
}

TEST_F(BadInput, LoadPlanRejectsABrokenPlanAndKeepsTheOldOne) {
  auto backend = MakeCpuBackend();
  const CascadePlan good = PlanCascade(batch_, shape_, {});
  backend->LoadPlan(good);
  CascadePlan broken = good;
  broken.decode_items[0].kv_end += 100;
  EXPECT_INVALID_ARGUMENT(backend->LoadPlan(broken), "decode item 0");
  std::vector<float> s(20, std::nanf(""));
  CascadeArgs a = Args();
  a.s_out = s.data();
  backend->RunCascade(a);
  for (float x : s) EXPECT_FALSE(std::isnan(x));
}

TEST_F(BadInput, PrefixAttentionArguments) {
  auto backend = MakeCpuBackend();
  std::vector<float> v(4 * 4 * 64), s(4 * 4);
  PrefixAttentionArgs a;
  a.kv = {shape_, pool_.k.data(), pool_.v.data()};
  a.prefix = batch_.groups[0].prefix;
  a.num_queries = 4;
  a.num_qo_heads = 4;
  a.q = q_.data();
  a.v_out = v.data();
  a.s_out = s.data();
  EXPECT_NO_THROW(backend->RunPrefixAttention(a));
  PrefixAttentionArgs b = a;
  b.prefix.first_page = shape_.num_pages - 1;
  EXPECT_INVALID_ARGUMENT(backend->RunPrefixAttention(b), "prefix run of 40 tokens");
  b = a;
  b.num_qo_heads = 3;
  EXPECT_INVALID_ARGUMENT(backend->RunPrefixAttention(b), "num_qo_heads 3");
  b = a;
  b.s_out = nullptr;
  EXPECT_INVALID_ARGUMENT(backend->RunPrefixAttention(b), "null pointer");
  b = a;
  b.causal = true;
  b.q_offset = -1;
  EXPECT_INVALID_ARGUMENT(backend->RunPrefixAttention(b), "q_offset -1");
  b = a;
  b.layer = -1;
  EXPECT_INVALID_ARGUMENT(backend->RunPrefixAttention(b), "layer -1");
  b = a;
  b.num_queries = -2;
  EXPECT_INVALID_ARGUMENT(backend->RunPrefixAttention(b), "num_queries -2");
}

TEST_F(BadInput, MemoryCallsWithNullPointers) {
  auto backend = MakeCpuBackend();
  char buf[8];
  EXPECT_INVALID_ARGUMENT(backend->CopyToDevice(nullptr, buf, 8), "CopyToDevice");
  EXPECT_INVALID_ARGUMENT(backend->CopyToHost(buf, nullptr, 8), "CopyToHost");
  EXPECT_INVALID_ARGUMENT(backend->Fill(nullptr, 0, 8), "Fill");
  EXPECT_NO_THROW(backend->CopyToDevice(nullptr, nullptr, 0));
  void* p = backend->Alloc(100);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
  backend->Fill(p, 0xAB, 100);
  backend->CopyToHost(buf, p, 8);
  EXPECT_EQ(uint8_t(buf[7]), 0xAB);
  backend->Free(p);
  backend->Free(nullptr);
  EXPECT_EQ(backend->kind(), BackendKind::kCpu);
  EXPECT_STREQ(BackendKindName(backend->kind()), "cpu");
  EXPECT_STREQ(BackendKindName(BackendKind::kCuda), "cuda");
  EXPECT_EQ(backend->stream(), nullptr);
}

}  // namespace
}  // namespace prefixd::kernels
