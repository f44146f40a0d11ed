// Session 93's throwaway reading (not built by CMake): the headline's concurrent plan (32/8 B256
// S256, k = 16 of 132 SMs, the stream balance) through PrefixUnitCompletions as planned, then with
// the chains of alternate slots (CTAs 8-15, 24-31, ...) reversed. Quoted in bench/RESULTS.md and
// bench/NOTES-fused.md, session 93 (all 64 units at >= 95% of the prefix grid either way).
// Build and run from the repository root after building `build/`:
//   g++ -std=c++17 -O1 -I. -Itests -Ikernels/include -Icommon/include \
//     bench/kernel/results/s93/alternate-slots-reading.cc tests/unit/kernels/random_batch.cc \
//     build/kernels/libprefixd_kernels.a build/common/libprefixd_common.a -lgtest -lpthread -o /tmp/alt
//   /tmp/alt 32768 16; /tmp/alt 8192 36    (arguments: prefix tokens, k[, suffix tokens])
#include <algorithm>
#include <cstdio>
#include <random>
#include <vector>
#include "prefixd/kernels/plan.h"
#include "prefixd/kernels/kv_cache.h"
#include "prefixd/kernels/prefix_unit_completion.h"
#include "unit/kernels/random_batch.h"
using namespace prefixd;
using namespace prefixd::kernels;
int main(int argc, char** argv) {
  int P = atoi(argv[1]), k = atoi(argv[2]), S = argc > 3 ? atoi(argv[3]) : 256;
  std::mt19937_64 rng(1);
  std::vector<test::GroupSpec> groups = {test::GroupSpec{P, std::vector<int>(256, S)}};
  KvPoolShape shape{1, test::PagesNeeded(groups, 16) + 1, 16, 8, 128, DType::kFloat16};
  PageAllocator alloc(shape.num_pages);
  DecodeBatch batch = test::BuildBatch(groups, 32, 16, alloc, rng);
  PlanOptions o; o.prefix_tile_rows = 128; o.fuse_merge = false; o.concurrent_decode_sms = k; o.concurrent_decode_tma = true;
  o.prefix_target_items = 132 - k; o.balance_prefix_ctas = 132 - k; o.balance_stream = true;
  CascadePlan plan = PlanCascade(batch, shape, o);
  int ctas = plan.prefix_balanced_ctas;
  auto report = [&](const char* what) {
    auto u = PrefixUnitCompletions(plan, ctas, 160, 2.5);
    std::vector<double> f; for (auto& x : u) f.push_back(x.fraction); std::sort(f.begin(), f.end());
    int e90 = std::count_if(f.begin(), f.end(), [](double x){return x < 0.9;});
    int e70 = std::count_if(f.begin(), f.end(), [](double x){return x < 0.7;});
    printf("%s: units %zu, <70%%: %d, <90%%: %d; quantiles", what, f.size(), e70, e90);
    for (double q : {0.1, 0.25, 0.5, 0.75, 0.9}) printf(" %.2f", f[size_t(q * (f.size() - 1))]);
    printf("\n");
  };
  report("as planned");
  { int empty = 0, empty_last = 0, two = 0;
    for (int c = 0; c < ctas; ++c) { std::vector<int> ch; for (int i = c; i >= 0; i = plan.prefix_items[i].cta_next) ch.push_back(i);
      if (ch.size() >= 2) ++two;
      for (size_t j = 0; j < ch.size(); ++j) if (plan.prefix_items[ch[j]].kv_begin == plan.prefix_items[ch[j]].kv_end) { ++empty; if (j + 1 == ch.size()) ++empty_last; } }
    printf("chains with >= 2 items: %d of %d; empty items %d, last in their chain %d\n", two, ctas, empty, empty_last); }
  // reverse the chains of odd slots (slot = cta / 8 for whole slots)
  for (int c = 0; c < ctas; ++c) {
    if ((c / 8) % 2 == 0) continue;
    std::vector<int> chain;
    for (int i = c; i >= 0; i = plan.prefix_items[i].cta_next) chain.push_back(i);
    if (chain.size() < 2) continue;
    // reversed order: CTA c must start with item c (kernel: CTA c runs item c first) -> swap item contents instead
    std::vector<PrefixWorkItem> its; for (int i : chain) its.push_back(plan.prefix_items[i]);
    std::reverse(its.begin(), its.end());
    for (size_t j = 0; j < chain.size(); ++j) { int nx = plan.prefix_items[chain[j]].cta_next; plan.prefix_items[chain[j]] = its[j]; plan.prefix_items[chain[j]].cta_next = nx; }
  }
  report("odd slots reversed");
}
