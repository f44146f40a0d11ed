// The step plan survives serialisation exactly, and malformed buffers are refused.
#include <gtest/gtest.h>

#include <random>

#include "prefixd/worker/step_plan.h"
#include "support/test_support.h"
#include "unit/kernels/expect_error.h"

namespace prefixd::worker {
namespace {

std::vector<int32_t> RandomInts(std::mt19937_64& rng, int n) {
  std::vector<int32_t> v(n);
  for (auto& x : v) x = int32_t(rng() % 100000);
  return v;
}

StepPlan RandomPlan(std::mt19937_64& rng) {
  StepPlan p;
  p.step = int64_t(rng() % (int64_t(1) << 40));
  for (int i = 0; i < 6; ++i) {
    PlanEvent e;
    e.kind = EventKind(1 + rng() % 4);
    e.id = int32_t(rng() % 1000);
    if (e.kind == EventKind::kAddPrefix) {
      e.prefix.prefix_id = e.id;
      e.prefix.tokens = RandomInts(rng, 1 + int(rng() % 50));
      for (int s = 0; s < 3; ++s) e.prefix.shards.push_back({s, int32_t(rng() % 9), int32_t(rng() % 9), int32_t(rng() % 9)});
    } else if (e.kind == EventKind::kAddRequest) {
      e.request.request_id = e.id;
      e.request.prefix_id = int32_t(rng() % 5) - 1;
      e.request.owner = int32_t(rng() % 8);
      e.request.tokens = RandomInts(rng, int(rng() % 5));
      e.request.pages = RandomInts(rng, 1 + int(rng() % 5));
    }
    p.events.push_back(e);
  }
  for (int i = 0; i < 5; ++i) p.decode.push_back({int32_t(rng() % 100), int32_t(rng() % 100000)});
  return p;
}

TEST(StepPlan, RoundTrips) {
  std::mt19937_64 rng(test::TestSeed());
  for (int trial = 0; trial < 20; ++trial) {
    const StepPlan p = RandomPlan(rng);
    const std::vector<int32_t> wire = p.Serialize();
    const StepPlan q = StepPlan::Deserialize(wire);
    EXPECT_EQ(q.step, p.step);
    ASSERT_EQ(q.events.size(), p.events.size());
    for (size_t i = 0; i < p.events.size(); ++i) {
      EXPECT_EQ(q.events[i].kind, p.events[i].kind);
      EXPECT_EQ(q.events[i].id, p.events[i].id);
      EXPECT_EQ(q.events[i].prefix.tokens, p.events[i].prefix.tokens);
      ASSERT_EQ(q.events[i].prefix.shards.size(), p.events[i].prefix.shards.size());
      for (size_t s = 0; s < p.events[i].prefix.shards.size(); ++s) {
        EXPECT_EQ(q.events[i].prefix.shards[s].rank, p.events[i].prefix.shards[s].rank);
        EXPECT_EQ(q.events[i].prefix.shards[s].pos_begin, p.events[i].prefix.shards[s].pos_begin);
        EXPECT_EQ(q.events[i].prefix.shards[s].num_tokens, p.events[i].prefix.shards[s].num_tokens);
        EXPECT_EQ(q.events[i].prefix.shards[s].first_page, p.events[i].prefix.shards[s].first_page);
      }
      EXPECT_EQ(q.events[i].request.prefix_id, p.events[i].request.prefix_id);
      EXPECT_EQ(q.events[i].request.owner, p.events[i].request.owner);
      EXPECT_EQ(q.events[i].request.tokens, p.events[i].request.tokens);
      EXPECT_EQ(q.events[i].request.pages, p.events[i].request.pages);
    }
    ASSERT_EQ(q.decode.size(), p.decode.size());
    for (size_t i = 0; i < p.decode.size(); ++i) {
      EXPECT_EQ(q.decode[i].request_id, p.decode[i].request_id);
      EXPECT_EQ(q.decode[i].token, p.decode[i].token);
    }
    EXPECT_EQ(q.Serialize(), wire);
  }
}

TEST(StepPlan, RefusesMalformedBuffers) {
  std::mt19937_64 rng(test::TestSeed());
  const std::vector<int32_t> wire = RandomPlan(rng).Serialize();
  for (size_t cut : {size_t(0), size_t(1), size_t(5), wire.size() / 2, wire.size() - 1})
    EXPECT_INVALID_ARGUMENT(StepPlan::Deserialize(std::vector<int32_t>(wire.begin(), wire.begin() + cut)), "step plan");
  std::vector<int32_t> bad = wire;
  bad[0] ^= 1;
  EXPECT_INVALID_ARGUMENT(StepPlan::Deserialize(bad), "magic");
  bad = wire;
  bad.push_back(7);
  EXPECT_INVALID_ARGUMENT(StepPlan::Deserialize(bad), "trailing");
  bad = wire;
  bad[4] = 1 << 30;  // event count
  EXPECT_INVALID_ARGUMENT(StepPlan::Deserialize(bad), "count");
}

}  // namespace
}  // namespace prefixd::worker
