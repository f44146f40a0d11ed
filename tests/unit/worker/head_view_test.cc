// CascadeArgs' KV head view (backend.h), the primitive behind head-chunked schedules: a plan made
// for H_kv / K KV heads, run with kv_head_offset = k · H_kv / K over the whole pool, must give
// exactly heads [k · H_qo / K, (k + 1) · H_qo / K) of the full cascade (same items per head, same
// order, so bit-identical on the CPU backend). Out-of-range views are refused.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "prefixd/common/error.h"
#include "prefixd/kernels/backend.h"
#include "prefixd/kernels/plan.h"
#include "support/test_support.h"

namespace prefixd::kernels {
namespace {

TEST(HeadView, ChunksOfHeadsEqualTheFullCascade) {
  std::mt19937_64 rng(test::TestSeed());
  auto be = MakeCpuBackend();
  KvPoolShape pool;
  pool.num_layers = 2;
  pool.num_pages = 40;
  pool.page_size = 4;
  pool.num_kv_heads = 4;
  pool.head_dim = 64;
  pool.dtype = DType::kBFloat16;
  const int hq = 8, d = pool.head_dim, layer = 1, b = 5;
  KvPoolView kv;
  kv.shape = pool;
  const std::vector<uint16_t> k_bits = test::RandomBits(rng, pool.ElementsPerArray(), pool.dtype, 1.f);
  const std::vector<uint16_t> v_bits = test::RandomBits(rng, pool.ElementsPerArray(), pool.dtype, 1.f);
  kv.k = be->Alloc(size_t(pool.BytesPerArray()));
  kv.v = be->Alloc(size_t(pool.BytesPerArray()));
  be->CopyToDevice(kv.k, k_bits.data(), size_t(pool.BytesPerArray()));
  be->CopyToDevice(kv.v, v_bits.data(), size_t(pool.BytesPerArray()));

  // Requests 0-3 share a 37-token prefix (pages 0-9); request 4 has none; suffixes on pages 20+.
  DecodeBatch batch;
  batch.num_qo_heads = hq;
  batch.groups.push_back(PrefixGroup{PrefixRun{0, 37}, 0, 4});
  batch.groups.push_back(PrefixGroup{PrefixRun{}, 4, 1});
  for (int r = 0; r < b; ++r) {
    const int len = 1 + int(rng() % 7);
    std::vector<int32_t> pages;
    for (int p = 0; p < (len + pool.page_size - 1) / pool.page_size; ++p) pages.push_back(20 + 3 * r + p);
    batch.suffix.AddSeq(pages, len - (int(pages.size()) - 1) * pool.page_size);
  }
  const std::vector<uint16_t> q = test::RandomBits(rng, int64_t(b) * hq * d, pool.dtype, 1.f);

  std::vector<float> v_full(size_t(b) * hq * d), s_full(size_t(b) * hq);
  be->LoadPlan(PlanCascade(batch, pool, be->DefaultPlanOptions()));
  CascadeArgs args;
  args.kv = kv;
  args.layer = layer;
  args.q = q.data();
  args.v_out = v_full.data();
  args.s_out = s_full.data();
  be->RunCascade(args);

  for (int chunks : {2, 4}) {
    const int kv_c = pool.num_kv_heads / chunks, hq_c = hq / chunks;
    KvPoolShape view = pool;
    view.num_kv_heads = kv_c;
    DecodeBatch part = batch;
    part.num_qo_heads = hq_c;
    be->LoadPlan(PlanCascade(part, view, be->DefaultPlanOptions()));
    for (int c = 0; c < chunks; ++c) {
      std::vector<uint16_t> q_c(size_t(b) * hq_c * d);
      for (int r = 0; r < b; ++r)
        std::copy_n(q.begin() + (int64_t(r) * hq + c * hq_c) * d, hq_c * d, q_c.begin() + int64_t(r) * hq_c * d);
      std::vector<float> v_c(size_t(b) * hq_c * d), s_c(size_t(b) * hq_c);
      CascadeArgs a = args;
      a.q = q_c.data();
      a.v_out = v_c.data();
      a.s_out = s_c.data();
      a.kv_head_offset = c * kv_c;
      a.kv_head_count = kv_c;
      be->RunCascade(a);
      for (int r = 0; r < b; ++r)
        for (int h = 0; h < hq_c; ++h) {
          const int64_t full = int64_t(r) * hq + c * hq_c + h, mine = int64_t(r) * hq_c + h;
          ASSERT_EQ(s_c[mine], s_full[full]) << chunks << " chunks, chunk " << c << ", request " << r << ", head " << h;
          for (int e = 0; e < d; ++e)
            ASSERT_EQ(v_c[mine * d + e], v_full[full * d + e]) << chunks << " chunks, chunk " << c << ", request " << r;
        }
    }
    CascadeArgs bad = args;
    bad.kv_head_count = kv_c;
    bad.kv_head_offset = pool.num_kv_heads - kv_c + 1;  // runs past the pool's last head
    EXPECT_THROW(be->RunCascade(bad), Error);
    bad.kv_head_offset = 0;
    bad.kv_head_count = 0;  // no view: the plan's head count must be the pool's
    EXPECT_THROW(be->RunCascade(bad), Error);
  }
  be->Free(kv.k);
  be->Free(kv.v);
}

}  // namespace
}  // namespace prefixd::kernels
