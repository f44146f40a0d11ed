// Synthetic K/V: a pure function of the token prefix, exact in fp16 and bf16, identical wherever
// it is placed, and bit-identical between the CPU backend and the GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <set>
#include <vector>

#include "prefixd/kernels/backend.h"
#include "prefixd/kernels/synthetic_kv.h"
#include "support/test_support.h"
#include "unit/kernels/expect_error.h"

namespace prefixd::kernels {
namespace {

KvPoolShape SmallPool(DType dtype, int pages = 32) {
  KvPoolShape s;
  s.num_layers = 3;
  s.num_pages = pages;
  s.page_size = 4;
  s.num_kv_heads = 2;
  s.head_dim = 64;
  s.dtype = dtype;
  return s;
}

struct HostPool {
  KvPoolShape shape;
  std::vector<uint16_t> k, v;
  explicit HostPool(const KvPoolShape& s)
      : shape(s), k(size_t(s.ElementsPerArray()), 0xDEAD), v(size_t(s.ElementsPerArray()), 0xBEEF) {}
  KvPoolView view() { return KvPoolView{shape, k.data(), v.data()}; }
  // All elements (K then V) of one token slot, every layer and head.
  std::vector<uint16_t> Token(int64_t slot) const {
    std::vector<uint16_t> out;
    for (int l = 0; l < shape.num_layers; ++l)
      for (int h = 0; h < shape.num_kv_heads; ++h) {
        const int64_t off = shape.Offset(l, slot, h);
        out.insert(out.end(), k.begin() + off, k.begin() + off + shape.head_dim);
        out.insert(out.end(), v.begin() + off, v.begin() + off + shape.head_dim);
      }
    return out;
  }
};

std::vector<int32_t> Tokens(std::mt19937_64& rng, int n) {
  std::vector<int32_t> t(n);
  for (auto& x : t) x = int32_t(rng() % 128256);
  return t;
}

class SyntheticKvTest : public testing::TestWithParam<DType> {};

TEST(SyntheticValues, AreIntegersOver128AndExactInBothDtypes) {
  std::mt19937_64 rng(test::TestSeed());
  std::set<int> seen;
  for (int i = 0; i < 20000; ++i) {
    const float x = SyntheticValue(rng(), int64_t(rng() % 1000000), int(rng() % 80), int(rng() % 8), int(rng() % 128),
                                   SyntheticTensor::kKey);
    ASSERT_GE(x, -1.0f);
    ASSERT_LT(x, 1.0f);
    const float scaled = x * 128.0f;
    ASSERT_EQ(scaled, std::floor(scaled)) << x;
    seen.insert(int(scaled));
    EXPECT_EQ(BFloat16ToFloat(FloatToBFloat16(x)), x);
    EXPECT_EQ(HalfToFloat(FloatToHalf(x)), x);
  }
  EXPECT_GT(seen.size(), 250u);  // the whole [-128, 127] range shows up
}

TEST(SyntheticHashes, ChainAndSequenceHashAgree) {
  std::mt19937_64 rng(test::TestSeed());
  const std::vector<int32_t> a = Tokens(rng, 37), b = Tokens(rng, 11);
  std::vector<int32_t> ab = a;
  ab.insert(ab.end(), b.begin(), b.end());
  const std::vector<uint64_t> h_ab = PrefixHashes(ab);
  const std::vector<uint64_t> h_a = PrefixHashes(a);
  const std::vector<uint64_t> h_b = PrefixHashes(b, h_a.back());  // continuing a chain
  ASSERT_EQ(h_ab.size(), 48u);
  for (int i = 0; i < 37; ++i) EXPECT_EQ(h_ab[i], h_a[i]);
  for (int i = 0; i < 11; ++i) EXPECT_EQ(h_ab[37 + i], h_b[i]);
  EXPECT_EQ(SequenceHash(ab.data(), 48), h_ab.back());
  EXPECT_EQ(SequenceHash(ab.data(), 0), kEmptySequenceHash);
  // One different token changes every later hash.
  std::vector<int32_t> c = ab;
  c[20] ^= 1;
  const std::vector<uint64_t> h_c = PrefixHashes(c);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(h_c[i], h_ab[i]);
  for (int i = 20; i < 48; ++i) EXPECT_NE(h_c[i], h_ab[i]);
}

TEST_P(SyntheticKvTest, IdenticalPrefixesGiveIdenticalKvWhereverPlaced) {
  std::mt19937_64 rng(test::TestSeed());
  auto backend = MakeCpuBackend();
  const KvPoolShape shape = SmallPool(GetParam());
  // Two sequences sharing their first 13 tokens, written to different slots.
  std::vector<int32_t> a = Tokens(rng, 21), b = a;
  for (int i = 13; i < 21; ++i) b[i] = int32_t((a[i] + 1 + rng() % 100) % 128256);
  HostPool pa(shape), pb(shape);
  const std::vector<uint64_t> ha = PrefixHashes(a), hb = PrefixHashes(b);
  FillSyntheticKvFromHost(*backend, pa.view(), ha.data(), nullptr, nullptr, 21, 0, 3);  // slots 3..23
  std::vector<int64_t> slots(21);
  for (int i = 0; i < 21; ++i) slots[i] = 100 - 4 * i;  // scattered, descending
  FillSyntheticKvFromHost(*backend, pb.view(), hb.data(), nullptr, slots.data(), 21);
  for (int i = 0; i < 21; ++i) {
    if (i < 13) EXPECT_EQ(pa.Token(3 + i), pb.Token(slots[i])) << "position " << i;
    else EXPECT_NE(pa.Token(3 + i), pb.Token(slots[i])) << "position " << i;
  }
  // Untouched slots keep their poison; K differs from V; layers differ.
  EXPECT_EQ(pa.k[shape.Offset(0, 0, 0)], 0xDEAD);
  const int64_t off0 = shape.Offset(0, 3, 0), off1 = shape.Offset(1, 3, 0);
  EXPECT_NE(std::vector<uint16_t>(pa.k.begin() + off0, pa.k.begin() + off0 + 64),
            std::vector<uint16_t>(pa.v.begin() + off0, pa.v.begin() + off0 + 64));
  EXPECT_NE(std::vector<uint16_t>(pa.k.begin() + off0, pa.k.begin() + off0 + 64),
            std::vector<uint16_t>(pa.k.begin() + off1, pa.k.begin() + off1 + 64));
  // The bits are the documented function of (hash, position, layer, head, d).
  EXPECT_EQ(pa.k[shape.Offset(2, 3 + 5, 1) + 17], SyntheticBits(GetParam(), ha[5], 5, 2, 1, 17, SyntheticTensor::kKey));
  EXPECT_EQ(pa.v[shape.Offset(1, 3 + 9, 0) + 63], SyntheticBits(GetParam(), ha[9], 9, 1, 0, 63, SyntheticTensor::kValue));
}

TEST_P(SyntheticKvTest, FirstLayerShiftsTheLayerIndex) {
  std::mt19937_64 rng(test::TestSeed());
  auto backend = MakeCpuBackend();
  KvPoolShape one = SmallPool(GetParam());
  one.num_layers = 1;
  HostPool full(SmallPool(GetParam())), single(one);
  const std::vector<uint64_t> h = PrefixHashes(Tokens(rng, 9));
  FillSyntheticKvFromHost(*backend, full.view(), h.data(), nullptr, nullptr, 9);
  FillSyntheticKvFromHost(*backend, single.view(), h.data(), nullptr, nullptr, 9, 0, 0, /*first_layer=*/2);
  const int64_t n = int64_t(9) * one.TokenStride();
  EXPECT_TRUE(std::equal(single.k.begin(), single.k.begin() + n, full.k.begin() + full.shape.Offset(2, 0, 0)));
  EXPECT_TRUE(std::equal(single.v.begin(), single.v.begin() + n, full.v.begin() + full.shape.Offset(2, 0, 0)));
}

TEST_P(SyntheticKvTest, QueriesFollowTheirFunction) {
  std::mt19937_64 rng(test::TestSeed());
  auto backend = MakeCpuBackend();
  const uint64_t hashes[3] = {rng(), rng(), rng()};
  const int64_t pos[3] = {0, 17, 123456};
  std::vector<uint16_t> q(3 * 4 * 64, 0);
  SyntheticQueries sq;
  sq.hashes = hashes;
  sq.positions = pos;
  sq.n = 3;
  sq.num_heads = 4;
  sq.head_dim = 64;
  sq.dtype = GetParam();
  sq.layer = 5;
  sq.q = q.data();
  FillSyntheticQueries(*backend, sq);
  for (int r = 0; r < 3; ++r)
    for (int h = 0; h < 4; ++h)
      for (int d = 0; d < 64; ++d)
        ASSERT_EQ(q[(r * 4 + h) * 64 + d], SyntheticBits(GetParam(), hashes[r], pos[r], 5, h, d, SyntheticTensor::kQuery));
}

TEST_P(SyntheticKvTest, RejectsSlotsOutsideThePool) {
  auto backend = MakeCpuBackend();
  HostPool p(SmallPool(GetParam(), 4));  // 16 slots
  const uint64_t h[2] = {1, 2};
  const int64_t bad[2] = {3, 16};
  EXPECT_INVALID_ARGUMENT(FillSyntheticKvFromHost(*backend, p.view(), h, nullptr, bad, 2), "slot 16");
  EXPECT_INVALID_ARGUMENT(FillSyntheticKvFromHost(*backend, p.view(), h, nullptr, nullptr, 2, 0, 15), "outside the pool");
  const int64_t neg[2] = {0, -1};
  EXPECT_INVALID_ARGUMENT(FillSyntheticKvFromHost(*backend, p.view(), h, neg, nullptr, 2), "negative position");
}

TEST_P(SyntheticKvTest, GpuIsBitIdenticalToCpu) {
  PREFIXD_REQUIRE_GPU();
  std::mt19937_64 rng(test::TestSeed());
  auto cpu = MakeCpuBackend();
  auto gpu = MakeCudaBackend();
  KvPoolShape shape = SmallPool(GetParam(), 64);
  shape.head_dim = 128;
  HostPool want(shape);
  std::fill(want.k.begin(), want.k.end(), 0);
  std::fill(want.v.begin(), want.v.end(), 0);
  const std::vector<uint64_t> h = PrefixHashes(Tokens(rng, 200));
  std::vector<int64_t> slots(200), positions(200);
  for (int i = 0; i < 200; ++i) {
    slots[i] = 255 - i;
    positions[i] = 1000 + 3 * i;
  }
  FillSyntheticKvFromHost(*cpu, want.view(), h.data(), positions.data(), slots.data(), 200);
  const size_t bytes = size_t(shape.BytesPerArray());
  void* k = gpu->Alloc(bytes);
  void* v = gpu->Alloc(bytes);
  gpu->Fill(k, 0, bytes);
  gpu->Fill(v, 0, bytes);
  FillSyntheticKvFromHost(*gpu, KvPoolView{shape, k, v}, h.data(), positions.data(), slots.data(), 200);
  HostPool got(shape);
  gpu->CopyToHost(got.k.data(), k, bytes);
  gpu->CopyToHost(got.v.data(), v, bytes);
  EXPECT_TRUE(got.k == want.k);
  EXPECT_TRUE(got.v == want.v);
  // Queries too.
  const int n = 7, heads = 8;
  void* meta = gpu->Alloc(16 * n);
  void* q = gpu->Alloc(size_t(n) * heads * 128 * 2);
  gpu->CopyToDevice(meta, h.data(), 8 * n);
  gpu->CopyToDevice(static_cast<uint8_t*>(meta) + 8 * n, positions.data(), 8 * n);
  SyntheticQueries sq;
  sq.hashes = static_cast<const uint64_t*>(meta);
  sq.positions = reinterpret_cast<const int64_t*>(static_cast<uint8_t*>(meta) + 8 * n);
  sq.n = n;
  sq.num_heads = heads;
  sq.head_dim = 128;
  sq.dtype = GetParam();
  sq.layer = 2;
  sq.q = q;
  FillSyntheticQueries(*gpu, sq);
  gpu->Synchronize();
  std::vector<uint16_t> got_q(size_t(n) * heads * 128), want_q(got_q.size());
  gpu->CopyToHost(got_q.data(), q, got_q.size() * 2);
  sq.hashes = h.data();
  sq.positions = positions.data();
  sq.q = want_q.data();
  FillSyntheticQueries(*cpu, sq);
  EXPECT_TRUE(got_q == want_q);
  gpu->Free(k);
  gpu->Free(v);
  gpu->Free(meta);
  gpu->Free(q);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, SyntheticKvTest, testing::Values(DType::kFloat16, DType::kBFloat16),
                         [](const testing::TestParamInfo<DType>& info) { return std::string(DTypeName(info.param)); });

TEST(SyntheticTokens, AreDeterministicAndInRange) {
  const std::vector<int32_t> a = SyntheticTokens(42, 1000, 500), b = SyntheticTokens(42, 1000, 500);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, SyntheticTokens(43, 1000, 500));
  for (int32_t t : a) {
    EXPECT_GE(t, 0);
    EXPECT_LT(t, 500);
  }
  EXPECT_GT(std::set<int32_t>(a.begin(), a.end()).size(), 400u);
}

}  // namespace
}  // namespace prefixd::kernels
