// Both prefix attention kernels against the float64 oracle, each forced through
// PREFIXD_PREFIX_KERNEL: the mma.sync kernel and the sm_90a wgmma + TMA kernel
// (kernels/cuda/sm90a/). The wgmma cases skip where that path cannot run (not built, or the GPU is
// not compute capability 9.0) and where it does not apply (causal): the launcher then runs
// mma.sync, which the mma cases already cover. Extra cases aim at the wgmma kernel's own
// machinery: many items per persistent CTA (ring phases across items and row tiles, also with the
// grid capped at 3 CTAs and with the deeper ring), tail tiles shifted back to the end of the prefix,
// prefixes shorter than a KV tile, and NaN bits in the pool slots next to the prefix runs.
#include <gtest/gtest.h>

#include <cstdlib>
#include <ostream>
#include <string>
#include <vector>

#include "kernels/cuda/prefix_attention.h"
#include "kernels/cuda/sm90a/prefix_attention_sm90a.h"
#include "prefix_test_cases.h"
#include "prefixd/common/error.h"
#include "prefixd/kernels/prefix_kv_tile.h"
#include "support/test_support.h"
#include "unit/kernels/expect_error.h"

namespace prefixd::kernels::cuda {
namespace {

using namespace prefix_test;

// Sets environment variables for one scope and restores what was there before.
class ScopedEnv {
 public:
  void Set(const char* name, const std::string& value) {
    const char* old = std::getenv(name);
    saved_.push_back({name, old != nullptr, old != nullptr ? old : ""});
    setenv(name, value.c_str(), 1);
  }
  void Unset(const char* name) {
    const char* old = std::getenv(name);
    saved_.push_back({name, old != nullptr, old != nullptr ? old : ""});
    unsetenv(name);
  }
  ~ScopedEnv() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
      if (it->had) setenv(it->name, it->value.c_str(), 1);
      else unsetenv(it->name);
    }
  }

 private:
  struct Saved {
    const char* name;
    bool had;
    std::string value;
  };
  std::vector<Saved> saved_;
};

struct KernelCase {
  std::string kernel;    // "mma" or "wgmma"
  std::string schedule;  // PREFIXD_SM90A_SCHEDULE ("": default, "plain", "overlap")
  int stages = 0;        // PREFIXD_SM90A_STAGES (0: default)
  int max_ctas = 0;      // PREFIXD_SM90A_MAX_CTAS (0: one CTA per SM)
  Scenario sc;
  std::string kv_policy;  // PREFIXD_SM90A_KV_POLICY ("": unset, "normal", "first", "last")
  bool q_by_cp_async = false;  // PREFIXD_SM90A_Q_TMA=0 (false: unset, Q by TMA wherever it can be)
  std::string consumers;       // PREFIXD_SM90A_CONSUMERS ("": unset, "1" the narrow CTA, "2")
  bool q_whole_only = false;   // PREFIXD_SM90A_Q_TMA_PARTIAL=0 (partial warpgroups' Q by cp.async)
  std::string kv_tile;         // PREFIXD_SM90A_KV_TILE ("": unset, the head_dim's default here)
  std::string Name() const {
    std::string n = kernel;
    if (!schedule.empty()) n += "_" + schedule;
    if (stages > 0) n += "_s" + std::to_string(stages);
    if (max_ctas > 0) n += "_ctas" + std::to_string(max_ctas);
    if (!kv_policy.empty()) n += "_kv" + kv_policy;
    if (q_by_cp_async) n += "_qcp";
    if (!consumers.empty()) n += "_wg" + consumers;
    if (q_whole_only) n += "_qwhole";
    if (!kv_tile.empty()) n += "_t" + kv_tile;
    return n + "_" + sc.name;
  }
};

std::ostream& operator<<(std::ostream& os, const KernelCase& kc) { return os << kc.Name(); }

bool WgmmaApplies(const Scenario& sc) {
  return (sc.head_dim == 64 || sc.head_dim == 128 || sc.head_dim == 256) && !sc.causal;
}

// Skips the test, with the reason, where the sm_90a kernel cannot run (after PREFIXD_REQUIRE_GPU).
#define PREFIXD_REQUIRE_SM90A()                                                                  \
  if (!(sm90a::Built() && sm90a::DeviceReady()))                                                 \
  GTEST_SKIP() << "the sm_90a wgmma kernel cannot run here (built: " << sm90a::Built()          \
               << "; it needs a compute capability 9.0 GPU)"

class PrefixAttentionKernelTest : public ::testing::TestWithParam<KernelCase> {};

TEST_P(PrefixAttentionKernelTest, MatchesFloat64Oracle) {
  PREFIXD_REQUIRE_GPU();
  const KernelCase& kc = GetParam();
  const bool wgmma = kc.kernel == "wgmma";
  if (wgmma && !(sm90a::Built() && sm90a::DeviceReady()))
    GTEST_SKIP() << "the sm_90a wgmma kernel cannot run here (built: " << sm90a::Built()
                 << "; it needs a compute capability 9.0 GPU)";
  ASSERT_TRUE(!wgmma || WgmmaApplies(kc.sc)) << "Cases() must not make wgmma cases the kernel does not serve";
  ScopedEnv env;
  env.Set("PREFIXD_PREFIX_KERNEL", kc.kernel);
  if (kc.stages > 0) env.Set("PREFIXD_SM90A_STAGES", std::to_string(kc.stages));
  else env.Unset("PREFIXD_SM90A_STAGES");
  if (kc.max_ctas > 0) env.Set("PREFIXD_SM90A_MAX_CTAS", std::to_string(kc.max_ctas));
  else env.Unset("PREFIXD_SM90A_MAX_CTAS");
  if (!kc.schedule.empty()) env.Set("PREFIXD_SM90A_SCHEDULE", kc.schedule);
  else env.Unset("PREFIXD_SM90A_SCHEDULE");
  if (!kc.kv_policy.empty()) env.Set("PREFIXD_SM90A_KV_POLICY", kc.kv_policy);
  else env.Unset("PREFIXD_SM90A_KV_POLICY");
  if (kc.q_by_cp_async) env.Set("PREFIXD_SM90A_Q_TMA", "0");
  else env.Unset("PREFIXD_SM90A_Q_TMA");
  if (!kc.consumers.empty()) env.Set("PREFIXD_SM90A_CONSUMERS", kc.consumers);
  else env.Unset("PREFIXD_SM90A_CONSUMERS");
  if (kc.q_whole_only) env.Set("PREFIXD_SM90A_Q_TMA_PARTIAL", "0");
  else env.Unset("PREFIXD_SM90A_Q_TMA_PARTIAL");
  if (!kc.kv_tile.empty()) env.Set("PREFIXD_SM90A_KV_TILE", kc.kv_tile);
  else env.Unset("PREFIXD_SM90A_KV_TILE");

  PrefixKernelPath ran = PrefixKernelPath::kMmaSync;
  CheckPrefixAttention(kc.sc, &ran);
  EXPECT_EQ(PrefixKernelPathName(ran), std::string(wgmma ? "wgmma" : "mma")) << "the launcher ran another kernel";
}

// Cases aimed at the wgmma kernel (run on both kernels).
std::vector<Scenario> WgmmaScenarios() {
  std::vector<Scenario> out;
  for (DType dt : {DType::kFloat16, DType::kBFloat16}) {
    const std::string suffix = std::string("_") + DTypeName(dt);
    for (int d : {64, 128, 256}) {
      // 8 KV heads × 10 chunks (one empty, lengths 1..323, two multiples of 128) × 2 row tiles
      // (144 rows: 128 + 16) = 160 items, more than one per CTA on any GPU.
      Scenario s;
      s.dtype = dt;
      s.head_dim = d;
      s.name = "ManyItems_d" + std::to_string(d) + suffix;
      s.num_kv_heads = 8;
      s.gqa = 4;
      s.groups = {{1500, 36, {0, 128, 200, 200, 377, 505, 700, 701, 1024, 1400, 1500}}};
      out.push_back(s);
    }
    // NaN bits in every slot outside the prefix runs: unused page 0, the tails of partly filled
    // last pages, the spare page at the end. Short prefixes (45, 90 tokens < one KV tile) read
    // slots before their run; chunks ending inside a run read the run's later tokens.
    auto poisoned = [](Scenario s) {
      s.poison_outside_prefix = true;
      return s;
    };
    out.push_back(poisoned(GroupsScenario(dt, 7, "PoisonGroups_page7" + suffix)));
    out.push_back(poisoned(GroupsScenario(dt, 1, "PoisonGroups_page1" + suffix)));
    Scenario s;
    s.dtype = dt;
    s.poison_outside_prefix = true;
    s.name = "PoisonShortPrefix" + suffix;
    s.num_kv_heads = 2;
    s.gqa = 8;
    s.groups = {{90, 20, {0, 30, 31, 90}}};  // 160 rows: two row tiles per item
    out.push_back(s);
    // The poisoned groups and a short prefix at the head_dims with their own K/V tiles: 256 walks
    // 64-token tiles (prefixes of 45 < 64 ≤ 90 tokens, and one of 40), 64 walks 192-token ones, or
    // 128-token ones in the _t128 cases (prefixes of 90 and 150, shorter than either tile).
    for (int d : {256, 64}) {
      Scenario g = poisoned(GroupsScenario(dt, 7, "PoisonGroups_page7_d" + std::to_string(d) + suffix));
      g.head_dim = d;
      out.push_back(g);
      s.name = "PoisonShortPrefix_d" + std::to_string(d) + suffix;
      s.head_dim = d;
      s.groups = d == 256 ? std::vector<GroupSpec>{{40, 20, {0, 13, 14, 40}}} : std::vector<GroupSpec>{{90, 20, {0, 30, 31, 90}}};
      out.push_back(s);
    }
    s.head_dim = 128;
    out.push_back(poisoned(SingleRowScenario(dt, "PoisonSingleRow" + suffix)));
    out.push_back(poisoned(LongChunkScenario(dt, "PoisonLongChunkPeaky" + suffix)));
    // Q by TMA (whole warpgroups of whole requests) beside cp.async (partial ones), every g: three
    // groups of 3, 160 / g and 64 / g requests, so the TMA boxes start at request offsets 3 and
    // 3 + 160 / g; the second group's second row tile (32 rows) and the first group are partial,
    // the third fills one warpgroup and leaves the other idle.
    for (int g : {1, 2, 4, 8}) {
      Scenario t;
      t.dtype = dt;
      t.name = "QueryRows_g" + std::to_string(g) + suffix;
      t.num_kv_heads = 2;
      t.gqa = g;
      t.groups = {{200, 3, {0, 200}}, {333, 160 / g, {0, 129, 333}}, {77, 64 / g, {0, 77}}};
      out.push_back(t);
    }
  }
  return out;
}

// The cases of head_dim's alternate K/V tile: every scenario, both schedules and CTA widths, and a
// 3-CTA grid.
void AddAlternateTileCases(int head_dim, std::vector<KernelCase>* out) {
  const std::string tile = std::to_string(AlternatePrefixKvTileTokens(head_dim));
  for (const Scenario& s : Scenarios())
    if (WgmmaApplies(s) && s.head_dim == head_dim) out->push_back({"wgmma", "", 0, 0, s, "", false, "", false, tile});
  for (const Scenario& s : WgmmaScenarios()) {
    if (s.head_dim != head_dim) continue;
    for (const char* schedule : {"", "plain"}) out->push_back({"wgmma", schedule, 0, 0, s, "", false, "", false, tile});
    out->push_back({"wgmma", "", 0, 0, s, "", false, "1", false, tile});
    if (s.name.rfind("ManyItems", 0) == 0 || s.name.rfind("PoisonGroups", 0) == 0)
      out->push_back({"wgmma", "", 0, 3, s, "", false, "", false, tile});
  }
}

std::vector<KernelCase> Cases() {
  std::vector<KernelCase> out;
  // Each kernel as the launcher runs it by default, then the wgmma kernel's other schedule.
  // Causal scenarios get no wgmma case: the launcher runs mma.sync for them
  // (covered by the mma cases), and a case that can only skip on a Hopper GPU would be noise.
  for (const char* kernel : {"mma", "wgmma"}) {
    for (const Scenario& s : Scenarios())
      if (std::string(kernel) == "mma" || WgmmaApplies(s)) out.push_back({kernel, "", 0, 0, s});
    for (const Scenario& s : WgmmaScenarios()) out.push_back({kernel, "", 0, 0, s});
  }
  for (const Scenario& s : Scenarios())
    if (WgmmaApplies(s)) out.push_back({"wgmma", "plain", 0, 0, s});
  // The LSE's worst case for P's rounding, every dtype × head_dim, both kernels and schedules.
  for (DType dt : {DType::kFloat16, DType::kBFloat16})
    for (int d : {64, 128, 256})
      for (const char* schedule : {"", "plain"}) {
        out.push_back({"wgmma", schedule, 0, 0, RoundAllPUpScenario(dt, d)});
        if (*schedule == 0) out.push_back({"mma", "", 0, 0, RoundAllPUpScenario(dt, d)});
      }
  for (const Scenario& s : WgmmaScenarios()) out.push_back({"wgmma", "plain", 0, 0, s});
  // The wgmma kernel's knobs, both schedules: the deeper ring, and a grid of 3 (or 1) persistent
  // CTAs, so that every CTA walks many items of different lengths.
  for (const char* schedule : {"overlap", "plain"})
    for (const Scenario& s : WgmmaScenarios()) {
      out.push_back({"wgmma", schedule, 3, 0, s});
      if (s.name.rfind("ManyItems", 0) == 0 || s.name.rfind("PoisonGroups", 0) == 0) {
        out.push_back({"wgmma", schedule, 0, 3, s});
        out.push_back({"wgmma", schedule, 3, 1, s});
      }
    }
  // The L2 cache policy of the K/V tile loads (PREFIXD_SM90A_KV_POLICY): speed only, same results;
  // also with a 3-CTA grid (many items per CTA: the policy is made once per CTA).
  for (const char* policy : {"normal", "first", "last"})
    for (const Scenario& s : WgmmaScenarios()) {
      out.push_back({"wgmma", "", 0, 0, s, policy});
      if (s.name.rfind("ManyItems", 0) == 0) out.push_back({"wgmma", "", 0, 3, s, policy});
    }
  // Q gathered by cp.async everywhere (PREFIXD_SM90A_Q_TMA=0), the path before Q came by TMA; also
  // with a 3-CTA grid (row tiles of both kinds in one CTA).
  for (const Scenario& s : WgmmaScenarios()) {
    out.push_back({"wgmma", "", 0, 0, s, "", true});
    if (s.name.rfind("ManyItems", 0) == 0 || s.name.rfind("QueryRows", 0) == 0)
      out.push_back({"wgmma", "", 0, 3, s, "", true});
  }
  // The CTA width forced both ways (PREFIXD_SM90A_CONSUMERS): the narrow CTA on items of more than
  // 64 rows too (it walks them 64 rows at a time), with Q by cp.async, and on a 3-CTA grid; the
  // wide one where auto would choose the narrow.
  for (const Scenario& s : Scenarios())
    if (WgmmaApplies(s)) out.push_back({"wgmma", "", 0, 0, s, "", false, "1"});
  for (const Scenario& s : WgmmaScenarios()) {
    out.push_back({"wgmma", "", 0, 0, s, "", false, "1"});
    out.push_back({"wgmma", "", 0, 0, s, "", false, "2"});
    out.push_back({"wgmma", "", 0, 0, s, "", true, "1"});
    if (s.name.rfind("ManyItems", 0) == 0 || s.name.rfind("QueryRows", 0) == 0)
      out.push_back({"wgmma", "", 0, 3, s, "", false, "1"});
  }
  // Partial warpgroups' queries gathered by cp.async (PREFIXD_SM90A_Q_TMA_PARTIAL=0, the path
  // before they came by TMA, and the one where q's extent is unknown), both CTA widths; by default
  // every case above takes them by TMA, the box reaching into the next requests' rows or past q.
  for (const Scenario& s : WgmmaScenarios()) {
    out.push_back({"wgmma", "", 0, 0, s, "", false, "", true});
    out.push_back({"wgmma", "", 0, 0, s, "", false, "1", true});
    if (s.name.rfind("QueryRows", 0) == 0) out.push_back({"wgmma", "", 0, 3, s, "", false, "1", true});
  }
  // Each head_dim's alternate K/V tile (AlternatePrefixKvTileTokens, forced by PREFIXD_SM90A_KV_TILE):
  // head_dim 64's 128-token tiles (its default is 192; a cascade plan of short items takes 128) and
  // head_dim 128's 160-token ones (its default is 128; plans of long items in wide CTAs take 160: a
  // tile that no 128-aligned chunk boundary or page size divides, so its shifted last box and the
  // masked columns of chunk ends are exercised on every scenario).
  AddAlternateTileCases(64, &out);
  AddAlternateTileCases(128, &out);
  return out;
}

INSTANTIATE_TEST_SUITE_P(Kernels, PrefixAttentionKernelTest, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<KernelCase>& info) { return info.param.Name(); });

// One query buffer, two batch sizes in a row (a serving loop's steps): the Q map's request extent
// is the batch's (partial warpgroups' boxes are zero-filled past it), so the second launch must not
// reuse the first one's map. A smaller batch first: a stale extent would zero-fill real queries of
// the larger one, and the oracle would see it.
TEST(PrefixAttentionQueryMap, OneQueryBufferFollowsTheBatchSize) {
  PREFIXD_REQUIRE_GPU();
  PREFIXD_REQUIRE_SM90A();
  ScopedEnv env;
  env.Set("PREFIXD_PREFIX_KERNEL", "wgmma");
  env.Unset("PREFIXD_SM90A_Q_TMA");
  env.Unset("PREFIXD_SM90A_Q_TMA_PARTIAL");
  Scenario small;
  small.name = "QueryMapSmall";
  small.num_kv_heads = 2;
  small.gqa = 1;
  small.groups = {{300, 5, {0, 300}}};  // 5 rows per KV head: a partial warpgroup
  Scenario large = small;
  large.name = "QueryMapLarge";
  large.groups = {{300, 40, {0, 150, 300}}};  // 40 requests: rows 5-39 past the small map's extent
  DeviceBuffer q(size_t(40) * 2 * 128 * sizeof(uint16_t));  // the larger batch's [B][H_qo][D]
  for (const Scenario* sc : {&small, &large, &small}) {
    SCOPED_TRACE(sc->name);
    PrefixKernelPath ran = PrefixKernelPath::kMmaSync;
    CheckPrefixAttention(*sc, &ran, q.get());
    EXPECT_EQ(ran, PrefixKernelPath::kWgmma);
  }
}

// Selection rules; no GPU needed (without one, wgmma never applies).
TEST(PrefixAttentionKernelSelection, RulesAndEnvironment) {
  PrefixAttentionParams p = ProbeParams(128);
  ScopedEnv env;
  env.Set("PREFIXD_PREFIX_KERNEL", "mma");
  p.settings = PrefixKernelSettings::FromEnvironment();
  EXPECT_EQ(SelectPrefixKernel(p), PrefixKernelPath::kMmaSync);
  env.Set("PREFIXD_PREFIX_KERNEL", "wgmma");
  p.settings = PrefixKernelSettings::FromEnvironment();
  const bool wgmma_here = sm90a::Built() && sm90a::DeviceReady();
  EXPECT_EQ(SelectPrefixKernel(p), wgmma_here ? PrefixKernelPath::kWgmma : PrefixKernelPath::kMmaSync);
  env.Set("PREFIXD_PREFIX_KERNEL", "auto");  // the default: wgmma or mma.sync, never anything else
  p.settings = PrefixKernelSettings::FromEnvironment();
  const PrefixKernelPath by_default = SelectPrefixKernel(p);
  EXPECT_TRUE(by_default == PrefixKernelPath::kMmaSync || (wgmma_here && by_default == PrefixKernelPath::kWgmma));
  p.causal = true;  // causal always takes mma.sync, at every head_dim
  EXPECT_EQ(SelectPrefixKernel(p), PrefixKernelPath::kMmaSync);
  p.head_dim = 256;
  p.token_stride = 512;
  EXPECT_EQ(SelectPrefixKernel(p), PrefixKernelPath::kMmaSync);
  p.causal = false;  // head_dim 256 takes wgmma where it can run (its 64-token K/V tiles)
  env.Set("PREFIXD_PREFIX_KERNEL", "wgmma");
  p.settings = PrefixKernelSettings::FromEnvironment();
  EXPECT_EQ(SelectPrefixKernel(p), wgmma_here ? PrefixKernelPath::kWgmma : PrefixKernelPath::kMmaSync);
  p.max_item_rows = 64;  // ... never on the narrow CTA, whose shared memory alone would fill the SM
  EXPECT_FALSE(sm90a::UsesNarrowCta(p));
  env.Set("PREFIXD_PREFIX_KERNEL", "tensorcore");  // a typo must not silently pick a kernel
  try {
    (void)PrefixKernelSettings::FromEnvironment();
    ADD_FAILURE() << "PREFIXD_PREFIX_KERNEL=tensorcore accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
  }
}

// A K/V tile the kernel has no configuration for (PrefixAttentionParams::kv_tile_tokens: 128 or 192
// at head_dim 64, 128 or 160 at 128, the default at 256) is refused before anything is launched; a
// forced tile of the settings applies only where the head_dim has it, so a forced 192 at head_dim
// 128 is not an error.
TEST(PrefixAttentionKernelSelection, UnknownKvTileIsRefused) {
  PREFIXD_REQUIRE_GPU();
  PREFIXD_REQUIRE_SM90A();
  for (const auto& [head_dim, tile] : {std::pair<int, int>{64, 96}, {64, 256}, {64, 160}, {128, 192}, {128, 176}, {256, 128}, {256, 160}}) {
    SCOPED_TRACE("head_dim " + std::to_string(head_dim) + ", tile " + std::to_string(tile));
    PrefixAttentionParams p = ProbeParams(head_dim);
    p.num_items = 1;  // refused before the items are read
    p.kv_tile_tokens = tile;
    EXPECT_INVALID_ARGUMENT(sm90a::PrefixAttention(p, nullptr), "K/V tiles");
  }
}

// 16-bit states (PrefixAttentionParams::states_16bit) are built at head_dim 64 and 128 only, where
// the TMA decode exists: at 256 they are refused before anything is launched.
TEST(PrefixAttentionKernelSelection, SixteenBitStatesAtHeadDim256AreRefused) {
  PREFIXD_REQUIRE_GPU();
  PREFIXD_REQUIRE_SM90A();
  PrefixAttentionParams p = ProbeParams(256);
  p.num_items = 1;  // refused before anything is launched
  p.states_16bit = true;
  EXPECT_INVALID_ARGUMENT(sm90a::PrefixAttention(p, nullptr), "states_16bit");
}

// A malformed launcher setting is refused when the settings are read (by the backend at
// construction), naming the variable, never read as a default; no GPU needed.
TEST(PrefixAttentionKernelSelection, BadSettingsAreRefused) {
  const std::pair<const char*, const char*> bad[] = {
      {"PREFIXD_SM90A_Q_TMA", "on"},      {"PREFIXD_SM90A_Q_TMA", "-1"},   {"PREFIXD_SM90A_Q_TMA", "1x"},
      {"PREFIXD_SM90A_STAGES", "two"},    {"PREFIXD_SM90A_MAX_CTAS", "-3"}, {"PREFIXD_SM90A_SCHEDULE", "fast"},
      {"PREFIXD_SM90A_KV_POLICY", "auto"}, {"PREFIXD_PREFIX_PDL_TRIGGER", "yes"}, {"PREFIXD_SM90A_CONSUMERS", "3"},
      {"PREFIXD_SM90A_CONSUMERS", "narrow"}, {"PREFIXD_SM90A_Q_TMA_PARTIAL", "no"}, {"PREFIXD_SM90A_KV_TILE", "64"},
      {"PREFIXD_SM90A_KV_TILE", "256"},   {"PREFIXD_SM90A_KV_TILE", "176"}, {"PREFIXD_SM90A_STAGES", "4"},    {"PREFIXD_SM90A_STAGES", "0"}};
  for (const auto& [name, value] : bad) {
    ScopedEnv env;
    env.Set(name, value);
    try {
      (void)PrefixKernelSettings::FromEnvironment();
      ADD_FAILURE() << name << "=" << value << " accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument) << e.what();
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
    }
  }
  ScopedEnv env;  // and the good values are read as such
  env.Set("PREFIXD_SM90A_KV_POLICY", "first");
  env.Set("PREFIXD_SM90A_STAGES", "3");
  env.Set("PREFIXD_SM90A_Q_TMA", "0");
  env.Set("PREFIXD_SM90A_CONSUMERS", "1");
  env.Set("PREFIXD_SM90A_Q_TMA_PARTIAL", "0");
  env.Set("PREFIXD_SM90A_KV_TILE", "128");
  const PrefixKernelSettings s = PrefixKernelSettings::FromEnvironment();
  EXPECT_EQ(s.kv_l2_hint, PrefixKvL2Hint::kEvictFirst);
  EXPECT_EQ(s.stages, 3);
  EXPECT_FALSE(s.q_tma);
  EXPECT_EQ(s.consumer_wgs, 1);
  EXPECT_FALSE(s.q_tma_partial);
  EXPECT_EQ(s.kv_tile, 128);
  EXPECT_EQ(PrefixKernelSettings{}.kv_tile, 0);  // auto (the plan's) by default
  EXPECT_TRUE(PrefixKernelSettings{}.q_tma_partial);  // partial warpgroups by TMA by default
  EXPECT_EQ(PrefixKernelSettings{}.consumer_wgs, 0);  // auto by default
  EXPECT_EQ(PrefixKernelSettings{}.kv_l2_hint, PrefixKvL2Hint::kPlan);  // the default follows the plan
}

}  // namespace
}  // namespace prefixd::kernels::cuda
