// The KV pool's room on a GPU or, on the CPU backend, in host memory (coordinator/rank_setup.h): the
// pure part of the cap that the main job and the scaling benchmark put on a pool sized from the
// workload (bench/RESULTS.md, session 30; host memory since session 57). The collective itself runs
// in the main job's tests (tests/CMakeLists.txt: main_job_refuses_a_pool_larger_than_the_host).
#include <gtest/gtest.h>

#include "prefixd/common/error.h"
#include "prefixd/coordinator/rank_setup.h"
#include "prefixd/kernels/kv_cache.h"

namespace prefixd::coordinator {
namespace {

constexpr int64_t kGiB = int64_t(1) << 30;

// A pool of 2 MiB pages: 32 layers, 8 KV heads, head_dim 128, bf16, 16 tokens per page.
kernels::KvPoolShape TwoMibPages() {
  kernels::KvPoolShape pool;
  pool.num_layers = 32;
  pool.num_kv_heads = 8;
  pool.head_dim = 128;
  pool.page_size = 16;
  pool.dtype = kernels::DType::kBFloat16;
  return pool;
}

TEST(KvPoolRoom, ReserveIsTwoGibOrFivePercent) {
  EXPECT_EQ(ReservedDeviceBytes(16 * kGiB), 2 * kGiB);    // 5% would be 0.8 GiB
  EXPECT_EQ(ReservedDeviceBytes(80 * kGiB), 4 * kGiB);    // an H100
  EXPECT_EQ(ReservedDeviceBytes(140 * kGiB), 7 * kGiB);   // an H200
}

TEST(KvPoolRoom, PagesThatFitLeaveTheReserve) {
  // The H100 of session 30: 78.66 GiB free of 79.6, 2 MiB pages (32 layers, 8 KV heads, D 128, bf16).
  kernels::KvPoolShape pool = TwoMibPages();
  EXPECT_EQ(pool.BytesPerPage(), int64_t(2) << 20);
  pool.num_pages = 7;
  EXPECT_EQ(pool.BytesPerPage() * 7, 2 * pool.BytesPerArray());  // K and V arrays of 7 pages
  const int64_t free_bytes = 80547 * (int64_t(1) << 20), total = 81559 * (int64_t(1) << 20);
  const int64_t pages = PagesThatFit(free_bytes, total, pool.BytesPerPage());
  EXPECT_EQ(pages, (free_bytes - ReservedDeviceBytes(total)) / pool.BytesPerPage());
  EXPECT_LE(pages * pool.BytesPerPage() + ReservedDeviceBytes(total), free_bytes);
  EXPECT_GT((pages + 1) * pool.BytesPerPage() + ReservedDeviceBytes(total), free_bytes);
  // Less free than the reserve: no room at all (never negative).
  EXPECT_EQ(PagesThatFit(kGiB, 80 * kGiB, pool.BytesPerPage()), 0);
  EXPECT_THROW(PagesThatFit(free_bytes, total, 0), Error);
}

TEST(KvPoolRoom, ShortfallNamesWhatWasAskedAndWhatFits) {
  // 40 pages of 2 MiB asked for; the fullest GPU has 1.5 GiB free, 1 GiB of it reserved: room for 256.
  kernels::KvPoolShape pool = TwoMibPages();
  pool.num_pages = 40000;
  KvPoolRoom room;
  room.pages = 256;
  room.free_bytes = 3 * kGiB / 2;
  room.reserved_bytes = kGiB;
  EXPECT_EQ(KvPoolShortfall(pool, room),
            "40000 KV pages per rank (78.12 GiB), but the fullest rank's GPU has 1.50 GiB free, of which 1.00 GiB "
            "stay for workspaces and NCCL: room for 256 pages of 2.00 MiB (K and V of 16 tokens in 32 layers)");
  EXPECT_EQ(FormatBytes(double(kGiB)), "1.00 GiB");
  EXPECT_EQ(FormatBytes(512.0 * 1024), "0.50 MiB");
}

TEST(KvPoolRoom, HostReserveIsHalfTheShare) {
  EXPECT_EQ(ReservedHostBytes(12 * kGiB), 6 * kGiB);    // one of two ranks on a 24 GiB machine
  EXPECT_EQ(ReservedHostBytes(kGiB / 2), kGiB / 4);     // a small machine keeps room for small pools
  EXPECT_GT(HostAvailableBytes(), 0);                  // this machine has some memory available
}

TEST(KvPoolRoom, HostShortfallSaysHostMemory) {
  kernels::KvPoolShape pool = TwoMibPages();
  pool.num_pages = 40000;
  KvPoolRoom room;
  room.host = true;
  room.pages = 1536;
  room.free_bytes = 4 * kGiB;
  room.reserved_bytes = kGiB;
  EXPECT_EQ(KvPoolShortfall(pool, room),
            "40000 KV pages per rank (78.12 GiB), but the fullest rank's share of host memory is 4.00 GiB, of which "
            "1.00 GiB stay for workspaces: room for 1536 pages of 2.00 MiB (K and V of 16 tokens in 32 layers)");
}

}  // namespace
}  // namespace prefixd::coordinator
