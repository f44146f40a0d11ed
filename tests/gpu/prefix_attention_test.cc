// The multi-query prefix attention kernel (kernels/cuda/prefix_attention.h) against the float64
// oracle; the cases themselves (scenarios, oracle, checks) are in prefix_test_cases.h.
#include "kernels/cuda/prefix_attention.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "prefix_test_cases.h"
#include "prefixd/common/error.h"
#include "support/test_support.h"
#include "unit/kernels/expect_error.h"

namespace prefixd::kernels::cuda {
namespace {

using namespace prefix_test;  // Scenario, Scenarios(), CheckPrefixAttention, ProbeParams (prefix_test_cases.h)

class PrefixAttentionTest : public ::testing::TestWithParam<Scenario> {};

// The launcher as dispatched (the kernel SelectPrefixKernel picks for this device and environment);
// prefix_attention_sm90a_test.cc runs the cases with each kernel forced.
TEST_P(PrefixAttentionTest, MatchesFloat64Oracle) {
  PREFIXD_REQUIRE_GPU();
  CheckPrefixAttention(GetParam());
}

INSTANTIATE_TEST_SUITE_P(Shapes, PrefixAttentionTest, ::testing::ValuesIn(Scenarios()),
                         [](const ::testing::TestParamInfo<Scenario>& info) { return info.param.name; });

// Argument checks happen before anything touches a device, so they run everywhere.
TEST(PrefixAttentionLauncher, TileRowsPerHeadDim) {
  EXPECT_EQ(PrefixAttentionTileRows(64), 128);
  EXPECT_EQ(PrefixAttentionTileRows(128), 128);
  EXPECT_EQ(PrefixAttentionTileRows(256), 64);
  EXPECT_EQ(PrefixAttentionSmallTileRows(), 64);
  try {
    PrefixAttentionTileRows(96);
    ADD_FAILURE() << "head_dim 96 accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
  }
}

// The RisingMax cases force the sm_90a kernel's rare softmax paths only through their scores'
// levels; BuildProblem checks the rises (ExpectRisingMaxRises). Host only, so it runs everywhere.
TEST(PrefixTestCases, RisingMaxScoresRisePastTheRarePaths) {
  int built = 0;
  for (const Scenario& sc : Scenarios()) {
    if (!sc.rising_max) continue;
    std::mt19937_64 rng(0x5eedu + uint64_t(built));
    const Problem pr = BuildProblem(sc, rng);
    EXPECT_FALSE(pr.items.empty()) << sc.name;
    ++built;
  }
  EXPECT_GE(built, 6);  // fp16 and bf16 at head_dim 64, 128 and 256
}

TEST(PrefixAttentionLauncher, RejectsBadArguments) {
  PrefixAttentionParams p = ProbeParams(96);  // no kernel
  try {
    PrefixAttention(p, nullptr);
    ADD_FAILURE() << "head_dim 96 accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
  }
  p.head_dim = 128;
  p.token_stride = 256;
  p.num_kv_heads = 3;  // 8 % 3 != 0
  EXPECT_THROW(PrefixAttention(p, nullptr), Error);
  p.num_kv_heads = 2;
  p.sm_scale_log2 = 0.f;
  EXPECT_THROW(PrefixAttention(p, nullptr), Error);
  p.sm_scale_log2 = 0.1f;
  p.num_items = 1;  // items but no pointers
  EXPECT_THROW(PrefixAttention(p, nullptr), Error);
}

// 16-bit partial states (PrefixAttentionParams::states_16bit) come only from the sm_90a kernel: the
// mma.sync kernel refuses them before it launches (the pointers are only checked, never read).
TEST(PrefixAttentionLauncher, SixteenBitStatesOnlyFromTheSm90aKernel) {
  alignas(16) static float stand_in[8];  // every device pointer's stand-in; never read
  PrefixAttentionParams p = ProbeParams(128);
  p.page_size = 16;
  p.num_items = 1;
  p.k = p.v = p.q = stand_in;
  p.items = reinterpret_cast<const PrefixWorkItem*>(stand_in);
  p.groups = reinterpret_cast<const PrefixGroup*>(stand_in);
  p.state_indptr = reinterpret_cast<const int32_t*>(stand_in);
  p.partial_v = p.partial_s = stand_in;
  p.settings.kernel = PrefixKernelChoice::kMma;
  p.states_16bit = true;
  EXPECT_INVALID_ARGUMENT(PrefixAttention(p, nullptr), "states_16bit");
}

}  // namespace
}  // namespace prefixd::kernels::cuda
