// The .npy loader: numpy's header format, shape and dtype checks, malformed files refused with
// the file named, and the copy of loaded K/V into a pool.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "prefixd/kernels/npy.h"
#include "support/test_support.h"
#include "unit/kernels/expect_error.h"

namespace prefixd::kernels {
namespace {

std::vector<float> RandomFloats(std::mt19937_64& rng, size_t n) {
  std::uniform_real_distribution<float> dist(-3.f, 3.f);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

NpyArray Parse(const std::vector<uint8_t>& bytes) { return ParseNpy(bytes.data(), bytes.size(), "t.npy"); }

TEST(Npy, HeaderIsNumpysAndRoundTrips) {
  const std::vector<uint16_t> data = {1, 2, 3, 4, 5, 6};
  const std::vector<uint8_t> bytes = EncodeNpy("<f2", {2, 3}, data.data());
  // What numpy.save writes for this array: magic, v1.0, a 118-byte header padded to 64.
  const std::string expect_header = "{'descr': '<f2', 'fortran_order': False, 'shape': (2, 3), }";
  ASSERT_GE(bytes.size(), 10u);
  EXPECT_EQ(std::memcmp(bytes.data(), "\x93NUMPY\x01\x00", 8), 0);
  const size_t header_len = bytes[8] | bytes[9] << 8;
  EXPECT_EQ((10 + header_len) % 64, 0u);
  EXPECT_EQ(std::string(bytes.begin() + 10, bytes.begin() + 10 + expect_header.size()), expect_header);
  EXPECT_EQ(bytes[10 + header_len - 1], '\n');
  const NpyArray a = Parse(bytes);
  EXPECT_EQ(a.descr, "<f2");
  EXPECT_FALSE(a.fortran_order);
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(a.item_size, 2);
  ASSERT_EQ(a.data.size(), 12u);
  EXPECT_EQ(std::memcmp(a.data.data(), data.data(), 12), 0);
  // One-dimensional shapes are written "(n,)".
  std::mt19937_64 rng(1);
  EXPECT_EQ(Parse(EncodeNpy("<f4", {5}, RandomFloats(rng, 5).data())).shape,
            (std::vector<int64_t>{5}));
}

TEST(Npy, Version2HeaderAndDoubleQuotes) {
  std::string header = "{\"descr\": \"<u2\", \"fortran_order\": False, \"shape\": (1, 2, 2)}\n";
  std::vector<uint8_t> bytes = {0x93, 'N', 'U', 'M', 'P', 'Y', 2, 0};
  for (int i = 0; i < 4; ++i) bytes.push_back(uint8_t(header.size() >> (8 * i)));
  bytes.insert(bytes.end(), header.begin(), header.end());
  for (int i = 0; i < 8; ++i) bytes.push_back(uint8_t(i));
  const NpyArray a = Parse(bytes);
  EXPECT_EQ(a.shape, (std::vector<int64_t>{1, 2, 2}));
  EXPECT_EQ(a.num_elements(), 4);
}

TEST(Npy, ConvertsToKvBits) {
  std::mt19937_64 rng(test::TestSeed());
  const std::vector<float> f = RandomFloats(rng, 3 * 2 * 8);
  const NpyArray a = Parse(EncodeNpy("<f4", {3, 2, 8}, f.data()));
  for (DType t : {DType::kFloat16, DType::kBFloat16}) {
    const std::vector<uint16_t> kv = NpyToKv(a, "t.npy", 3, 2, 8, t);
    ASSERT_EQ(kv.size(), f.size());
    for (size_t i = 0; i < f.size(); ++i) EXPECT_EQ(kv[i], FromFloat(t, f[i]));
  }
  std::vector<uint16_t> bits(48);
  for (auto& b : bits) b = uint16_t(rng());
  EXPECT_EQ(NpyToKv(Parse(EncodeNpy("<u2", {3, 2, 8}, bits.data())), "t.npy", -1, 2, 8, DType::kBFloat16), bits);
  EXPECT_EQ(NpyToKv(Parse(EncodeNpy("<f2", {3, 2, 8}, bits.data())), "t.npy", 3, 2, 8, DType::kFloat16), bits);
}

TEST(Npy, RefusesWrongShapesTypesAndMalformedFiles) {
  const std::vector<float> f(48, 0.5f);
  const std::vector<uint8_t> good = EncodeNpy("<f4", {3, 2, 8}, f.data());
  const NpyArray a = Parse(good);
  EXPECT_INVALID_ARGUMENT(NpyToKv(a, "k.npy", 4, 2, 8, DType::kFloat16), "k.npy: K/V tensor has shape (3, 2, 8), expected (4, 2, 8)");
  EXPECT_INVALID_ARGUMENT(NpyToKv(a, "k.npy", 3, 1, 8, DType::kFloat16), "expected (3, 1, 8)");
  const std::vector<int64_t> i8(48, 1);
  EXPECT_INVALID_ARGUMENT(NpyToKv(Parse(EncodeNpy("<i8", {3, 2, 8}, i8.data())), "k.npy", 3, 2, 8, DType::kFloat16),
                          "'<i8' is not a K/V type");
  NpyArray fortran = a;
  fortran.fortran_order = true;
  EXPECT_INVALID_ARGUMENT(NpyToKv(fortran, "k.npy", 3, 2, 8, DType::kFloat16), "Fortran-order");

  std::vector<uint8_t> bad = good;
  bad[1] = 'X';
  EXPECT_INVALID_ARGUMENT(Parse(bad), "t.npy: not a .npy file");
  bad = good;
  bad[6] = 9;
  EXPECT_INVALID_ARGUMENT(Parse(bad), "unsupported .npy version 9");
  bad = good;
  bad.pop_back();
  EXPECT_INVALID_ARGUMENT(Parse(bad), "says 192");
  bad = good;
  bad.push_back(0);
  EXPECT_INVALID_ARGUMENT(Parse(bad), "says 192");
  bad = good;
  bad[8] = 0xff;
  bad[9] = 0xff;
  EXPECT_INVALID_ARGUMENT(Parse(bad), "runs past the end");
  EXPECT_INVALID_ARGUMENT(Parse(std::vector<uint8_t>(good.begin(), good.begin() + 5)), "not a .npy file");
  auto with_header = [&](const std::string& h) {
    std::vector<uint8_t> b = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, uint8_t(h.size()), 0};
    for (const char c : h) b.push_back(uint8_t(c));  // (insert() draws a false -Wstringop-overread from GCC 12)
    return b;
  };
  EXPECT_INVALID_ARGUMENT(Parse(with_header("{'descr': '>f4', 'fortran_order': False, 'shape': (0,), }")), "big-endian");
  EXPECT_INVALID_ARGUMENT(Parse(with_header("{'descr': '<f4', 'fortran_order': False, }")), "no 'shape'");
  EXPECT_INVALID_ARGUMENT(Parse(with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2, x), }")),
                          "bad dimension");
  EXPECT_INVALID_ARGUMENT(Parse(with_header("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (0,), }")),
                          "fortran_order");
  EXPECT_INVALID_ARGUMENT(Parse(with_header("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (0,), }")),
                          "descr");
  EXPECT_PREFIXD_ERROR(LoadNpy("/nonexistent/k.npy"), ErrorKind::kNotFound, "/nonexistent/k.npy");
}

TEST(Npy, FileRoundTripAndCopyIntoAPool) {
  std::mt19937_64 rng(test::TestSeed());
  KvPoolShape shape;
  shape.num_layers = 2;
  shape.num_pages = 4;
  shape.page_size = 4;
  shape.num_kv_heads = 2;
  shape.head_dim = 64;
  shape.dtype = DType::kBFloat16;
  const int n = 5;
  const std::vector<float> kf = RandomFloats(rng, size_t(n) * 2 * 64), vf = RandomFloats(rng, size_t(n) * 2 * 64);
  const std::string dir = ::testing::TempDir();
  SaveNpy(dir + "/k.npy", "<f4", {n, 2, 64}, kf.data());
  SaveNpy(dir + "/v.npy", "<f4", {n, 2, 64}, vf.data());
  const std::vector<uint16_t> k = NpyToKv(LoadNpy(dir + "/k.npy"), "k.npy", n, 2, 64, shape.dtype);
  const std::vector<uint16_t> v = NpyToKv(LoadNpy(dir + "/v.npy"), "v.npy", n, 2, 64, shape.dtype);
  std::remove((dir + "/k.npy").c_str());
  std::remove((dir + "/v.npy").c_str());
  auto backend = MakeCpuBackend();
  std::vector<uint16_t> pk(size_t(shape.ElementsPerArray()), 7), pv(size_t(shape.ElementsPerArray()), 7);
  const KvPoolView view{shape, pk.data(), pv.data()};
  CopyKvToPool(*backend, view, 1, 3, n, k.data(), v.data());
  for (int t = 0; t < n; ++t)
    for (int h = 0; h < 2; ++h)
      for (int d = 0; d < 64; ++d) {
        const size_t src = (size_t(t) * 2 + h) * 64 + d;
        EXPECT_EQ(pk[shape.Offset(1, 3 + t, h) + d], FromFloat(shape.dtype, kf[src]));
        EXPECT_EQ(pv[shape.Offset(1, 3 + t, h) + d], FromFloat(shape.dtype, vf[src]));
      }
  EXPECT_EQ(pk[shape.Offset(0, 3, 0)], 7);  // other layer untouched
  EXPECT_EQ(pk[shape.Offset(1, 2, 1) + 63], 7);
  EXPECT_INVALID_ARGUMENT(CopyKvToPool(*backend, view, 1, 14, n, k.data(), v.data()), "outside the pool");
  EXPECT_INVALID_ARGUMENT(CopyKvToPool(*backend, view, 2, 0, n, k.data(), v.data()), "layer 2");
}

}  // namespace
}  // namespace prefixd::kernels
