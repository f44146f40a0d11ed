// The decode kernels' item pages (DecodeAttentionParams::item_pages, decode_pages.cuh) launched
// directly: the tokens of an item's first step that lie in its first two page slots come from
// item_pages, every other token from the page table (the kernels pass the known pages to their
// first step's lookups only, so that they hold no register past it). To show which source a kernel
// read, the device page table holds DECOY pages at every item's first two slots: copies of the true
// pages except in the rows of each item's first two tokens (every kernel's first step has at least
// two: kUnroll, or a 16-row tile), which hold other random K/V. With item_pages the outputs must
// match the float64 oracle over the true rows there; without them, the oracle over the decoys (so
// the test fails if the kernel ignored either source), whatever step size it has. Items start at
// token 0 and mid-suffix, finishing (final o / v_out / s_out) and not (partial states); page
// sizes 16, 32 (both warps' first tiles in one page), 5 and 7 (the per-row lookups); the CUDA-core
// kernel (GQA 1, 2), the tensor-core kernel (4, 8, 16; head_dim 64, 128, 256) with each pipeline
// the launcher has, and the next-wave K/V prefetch on a decode of several waves. Outputs are
// poisoned with NaN first. Skips without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "support/test_support.h"

#ifdef PREFIXD_HAVE_CUDA
#include <cuda_runtime.h>

#include "device_buffer.h"
#include "kernels/cuda/decode_attention.h"
#include "prefixd/common/cuda_check.h"
#endif

namespace prefixd::test {
namespace {

#ifdef PREFIXD_HAVE_CUDA

using kernels::DecodeWorkItem;
using kernels::cuda::DecodeAttentionParams;
using kernels::cuda::DecodePipeline;

struct PagesCase {
  std::string name;
  DType dtype;
  int group, head_dim, page_size;
  std::vector<int> suffixes;  // one request each; those over 32 tokens are split in two items
};

// One launch's inputs: the pool (true and decoy pages), the true and the device page tables, the
// items and their first pages.
struct Launch {
  HostKvPool pool;
  int num_kv_heads = 2, num_qo_heads = 0, num_slots = 0, max_item_tokens = 0;
  std::vector<std::vector<int32_t>> true_pages, device_pages;  // per request, per slot
  std::vector<int32_t> page_indptr, page_indices, state_indptr, item_pages;
  std::vector<DecodeWorkItem> items;
  std::vector<uint16_t> q;
};

Launch MakeLaunch(const PagesCase& c, std::mt19937_64& rng) {
  Launch l;
  l.num_qo_heads = c.group * l.num_kv_heads;
  const int requests = int(c.suffixes.size());
  // Items: [0, L) finishing, or [0, a) and [a, L) writing partial states (a a multiple of 16).
  std::vector<int> split(requests, 0);
  l.state_indptr.push_back(0);
  for (int r = 0; r < requests; ++r) {
    const int len = c.suffixes[size_t(r)];
    if (len > 32) split[size_t(r)] = std::max(16, len / 2 / 16 * 16);
    for (int kv = 0; kv < l.num_kv_heads; ++kv) {
      if (split[size_t(r)] == 0) {
        l.items.push_back({r, kv, 0, len, 0, 1});
      } else {
        l.items.push_back({r, kv, 0, split[size_t(r)], 0, 0});
        l.items.push_back({r, kv, split[size_t(r)], len, 1, 0});
      }
    }
    l.state_indptr.push_back(l.state_indptr.back() + (split[size_t(r)] == 0 ? 1 : 2));
  }
  l.num_slots = l.state_indptr.back();
  for (const DecodeWorkItem& it : l.items) l.max_item_tokens = std::max(l.max_item_tokens, it.kv_end - it.kv_begin);

  // Pages: every request's own, shuffled, then a decoy for each slot that is some item's first or
  // second (placed in the device table there).
  int num_pages = 0;
  for (int len : c.suffixes) num_pages += 3 * ((len + c.page_size - 1) / c.page_size);
  std::vector<int32_t> free_pages(static_cast<size_t>(num_pages));
  for (int i = 0; i < num_pages; ++i) free_pages[size_t(i)] = i;
  std::shuffle(free_pages.begin(), free_pages.end(), rng);
  size_t next_page = 0;
  l.page_indptr.push_back(0);
  for (int r = 0; r < requests; ++r) {
    const int slots = (c.suffixes[size_t(r)] + c.page_size - 1) / c.page_size;
    std::vector<int32_t> pages(static_cast<size_t>(slots));
    for (int32_t& p : pages) p = free_pages[next_page++];
    std::vector<int32_t> device = pages;
    for (const DecodeWorkItem& it : l.items) {
      if (it.request != r) continue;
      for (int s = it.kv_begin / c.page_size; s < std::min(slots, it.kv_begin / c.page_size + 2); ++s)
        if (device[size_t(s)] == pages[size_t(s)]) device[size_t(s)] = free_pages[next_page++];
    }
    l.page_indices.insert(l.page_indices.end(), device.begin(), device.end());
    l.page_indptr.push_back(int32_t(l.page_indices.size()));
    l.true_pages.push_back(pages);
    l.device_pages.push_back(device);
  }
  for (const DecodeWorkItem& it : l.items) {
    const std::vector<int32_t>& pages = l.true_pages[size_t(it.request)];
    const int s0 = it.kv_begin / c.page_size;
    for (int s = s0; s < s0 + 2; ++s) l.item_pages.push_back(s < int(pages.size()) ? pages[size_t(s)] : -1);
  }
  l.pool = RandomKvPool(rng, KvPoolShape{1, num_pages, c.page_size, l.num_kv_heads, c.head_dim, c.dtype});
  // Each decoy a copy of its true page, then other random K/V in the rows of the items' first two
  // tokens (the rows every kernel reads in its first step; the only rows where the sources differ).
  const int64_t page_elems = int64_t(c.page_size) * l.pool.shape.TokenStride();
  for (int r = 0; r < requests; ++r)
    for (size_t s = 0; s < l.true_pages[size_t(r)].size(); ++s) {
      const int32_t truth = l.true_pages[size_t(r)][s], decoy = l.device_pages[size_t(r)][s];
      if (decoy == truth) continue;
      std::copy_n(&l.pool.k[size_t(l.pool.shape.Offset(0, int64_t(truth) * c.page_size, 0))], page_elems,
                  &l.pool.k[size_t(l.pool.shape.Offset(0, int64_t(decoy) * c.page_size, 0))]);
      std::copy_n(&l.pool.v[size_t(l.pool.shape.Offset(0, int64_t(truth) * c.page_size, 0))], page_elems,
                  &l.pool.v[size_t(l.pool.shape.Offset(0, int64_t(decoy) * c.page_size, 0))]);
    }
  const int64_t row_elems = l.pool.shape.TokenStride();
  for (const DecodeWorkItem& it : l.items) {
    if (it.kv_head != 0) continue;  // one pass per item start (every KV head's item starts there)
    for (int t = it.kv_begin; t < std::min(it.kv_end, it.kv_begin + 2); ++t) {
      const int32_t decoy = l.device_pages[size_t(it.request)][size_t(t / c.page_size)];
      const int64_t at = l.pool.shape.Offset(0, int64_t(decoy) * c.page_size + t % c.page_size, 0);
      const std::vector<uint16_t> k_row = RandomBits(rng, row_elems, c.dtype, 1.f);
      const std::vector<uint16_t> v_row = RandomBits(rng, row_elems, c.dtype, 1.f);
      std::copy(k_row.begin(), k_row.end(), l.pool.k.begin() + at);
      std::copy(v_row.begin(), v_row.end(), l.pool.v.begin() + at);
    }
  }
  l.q = RandomBits(rng, int64_t(requests) * l.num_qo_heads * c.head_dim, c.dtype, 1.f);
  return l;
}

// The float64 oracle of every item's rows: over the true pages for its first two tokens when
// `with_item_pages` (the decoys equal the true pages in every other row), the device table's
// pages elsewhere.
struct ItemOracle {
  std::vector<double> v, s;  // [item][g][D], [item][g]
};

ItemOracle Oracle(const Launch& l, const PagesCase& c, bool with_item_pages) {
  ItemOracle o;
  const double scale = 1.0 / std::sqrt(double(c.head_dim));
  for (const DecodeWorkItem& it : l.items) {
    std::vector<int64_t> slots;
    for (int t = it.kv_begin; t < it.kv_end; ++t) {
      const int s = t / c.page_size;
      // The first two tokens, which lie in the item's first two page slots whatever the page size.
      const bool known = with_item_pages && t < it.kv_begin + 2;
      const int32_t page = (known ? l.true_pages : l.device_pages)[size_t(it.request)][size_t(s)];
      slots.push_back(int64_t(page) * c.page_size + t % c.page_size);
    }
    for (int j = 0; j < c.group; ++j) {
      const int head = it.kv_head * c.group + j;
      const RefState st = NaiveAttention(l.pool, 0, it.kv_head,
                                         &l.q[(size_t(it.request) * l.num_qo_heads + head) * c.head_dim], slots, scale);
      o.v.insert(o.v.end(), st.v.begin(), st.v.end());
      o.s.push_back(st.s);
    }
  }
  return o;
}

// One launch with `variant`'s settings, with or without item pages, against the oracle: the rows
// of finishing items from v_out / s_out / o, the others from their partial-state slots.
void ExpectLaunchMatches(const Launch& l, const PagesCase& c, const DecodeAttentionParams& variant,
                         bool with_item_pages, const std::string& what) {
  SCOPED_TRACE(what + (with_item_pages ? " with item pages" : " through the page table"));
  const int requests = int(c.suffixes.size()), d = c.head_dim;
  const DeviceBuffer k = DeviceBuffer::From(l.pool.k), v = DeviceBuffer::From(l.pool.v), q = DeviceBuffer::From(l.q);
  const DeviceBuffer indptr = DeviceBuffer::From(l.page_indptr), indices = DeviceBuffer::From(l.page_indices);
  const DeviceBuffer states = DeviceBuffer::From(l.state_indptr), pages = DeviceBuffer::From(l.item_pages);
  const DeviceBuffer items = DeviceBuffer::From(l.items);
  const size_t slot_rows = size_t(l.num_slots) * l.num_qo_heads, request_rows = size_t(requests) * l.num_qo_heads;
  const DeviceBuffer partial_v(slot_rows * d * sizeof(float)), partial_s(slot_rows * sizeof(float));
  const DeviceBuffer v_out(request_rows * d * sizeof(float)), s_out(request_rows * sizeof(float));
  const DeviceBuffer o(request_rows * d * sizeof(uint16_t));
  // Poison: 0xFF bytes are NaN in fp32, fp16 and bf16, so an unwritten output can never pass.
  for (const auto& [buffer, bytes] : {std::pair{&partial_v, slot_rows * d * 4}, std::pair{&partial_s, slot_rows * 4},
                                      std::pair{&v_out, request_rows * d * 4}, std::pair{&s_out, request_rows * 4},
                                      std::pair{&o, request_rows * d * 2}})
    PREFIXD_CUDA_CHECK(cudaMemset(buffer->get(), 0xFF, bytes));

  DecodeAttentionParams p = variant;
  p.k = k.get();
  p.v = v.get();
  p.token_stride = l.pool.shape.TokenStride();
  p.page_size = c.page_size;
  p.q = q.get();
  p.num_qo_heads = l.num_qo_heads;
  p.num_kv_heads = l.num_kv_heads;
  p.head_dim = d;
  p.dtype = c.dtype;
  p.sm_scale_log2 = float(1.0 / std::sqrt(double(d)) / std::log(2.0));
  p.page_indptr = indptr.as<int32_t>();
  p.page_indices = indices.as<int32_t>();
  p.items = items.as<DecodeWorkItem>();
  p.num_items = int(l.items.size());
  p.state_indptr = states.as<int32_t>();
  p.item_pages = with_item_pages ? pages.as<const int2>() : nullptr;
  p.partial_v = partial_v.as<float>();
  p.partial_s = partial_s.as<float>();
  p.o = o.get();
  p.v_out = v_out.as<float>();
  p.s_out = s_out.as<float>();
  p.max_item_tokens = l.max_item_tokens;
  kernels::cuda::DecodeAttention(p, nullptr);
  PREFIXD_CUDA_CHECK(cudaDeviceSynchronize());

  const std::vector<float> got_pv = partial_v.ToHost<float>(), got_ps = partial_s.ToHost<float>();
  const std::vector<float> got_v = v_out.ToHost<float>(), got_s = s_out.ToHost<float>();
  const std::vector<uint16_t> got_o = o.ToHost<uint16_t>();
  const ItemOracle want = Oracle(l, c, with_item_pages);
  for (size_t i = 0; i < l.items.size(); ++i) {
    const DecodeWorkItem& it = l.items[i];
    const std::string item = " item " + std::to_string(i) + " [" + std::to_string(it.kv_begin) + ", " +
                             std::to_string(it.kv_end) + ") of request " + std::to_string(it.request);
    // Rows of this item's heads: at its request (finishing) or its slot, heads kv_head · g + j.
    const int64_t row = int64_t(it.finish ? it.request : l.state_indptr[size_t(it.request)] + it.slot_offset) *
                            l.num_qo_heads + int64_t(it.kv_head) * c.group;
    const double* want_v = &want.v[i * size_t(c.group) * d];
    const double* want_s = &want.s[i * size_t(c.group)];
    if (it.finish) {
      ExpectAllClose(&got_v[size_t(row) * d], want_v, int64_t(c.group) * d, OutputTolerance(c.dtype), "v_out" + item);
      ExpectLseClose(&got_s[size_t(row)], want_s, c.group, 5e-4, "s_out" + item);
      std::vector<float> o_row(size_t(c.group) * d);
      for (size_t e = 0; e < o_row.size(); ++e) o_row[e] = kernels::ToFloat(c.dtype, got_o[size_t(row) * d + e]);
      ExpectAllClose(o_row.data(), want_v, int64_t(o_row.size()), OutputTolerance(c.dtype), "o" + item);
    } else {
      ExpectAllClose(&got_pv[size_t(row) * d], want_v, int64_t(c.group) * d, OutputTolerance(c.dtype),
                     "partial v" + item);
      ExpectLseClose(&got_ps[size_t(row)], want_s, c.group, 5e-4, "partial s" + item);
    }
  }
}

std::vector<PagesCase> Cases(std::mt19937_64& rng) {
  const std::vector<int> short_items = {32, 20, 7, 1, 16, 31}, long_items = {45, 100, 33, 64, 200};
  // Several waves of one-item CTAs (the next-wave prefetch runs where items outnumber resident CTAs).
  std::vector<int> many(1200);
  for (int& len : many) len = 1 + int(rng() % 32);
  return {
      {"g4_fp16_d128_p16_many", kF16, 4, 128, 16, many},    {"g1_bf16_d128_p16_many", kBF16, 1, 128, 16, many},
      {"g1_fp16_d128_p16", kF16, 1, 128, 16, short_items},  {"g1_fp16_d128_p16_long", kF16, 1, 128, 16, long_items},
      {"g2_bf16_d128_p5", kBF16, 2, 128, 5, short_items},   {"g1_bf16_d64_p7_long", kBF16, 1, 64, 7, long_items},
      {"g4_fp16_d128_p16", kF16, 4, 128, 16, short_items},  {"g4_fp16_d128_p16_long", kF16, 4, 128, 16, long_items},
      {"g4_bf16_d128_p5", kBF16, 4, 128, 5, short_items},   {"g4_bf16_d128_p32_long", kBF16, 4, 128, 32, long_items},
      {"g8_fp16_d64_p16", kF16, 8, 64, 16, short_items},    {"g8_bf16_d128_p7_long", kBF16, 8, 128, 7, long_items},
      {"g16_fp16_d128_p16", kF16, 16, 128, 16, short_items}, {"g4_fp16_d256_p16", kF16, 4, 256, 16, short_items},
      {"g1_fp16_d256_p32_long", kF16, 1, 256, 32, long_items},
  };
}

// The launcher's variants of the one-item kernels: the rule's choice, and each pipeline and CTA
// size forced (where the kernel has none of them, it runs its own).
std::vector<std::pair<std::string, DecodeAttentionParams>> Variants() {
  std::vector<std::pair<std::string, DecodeAttentionParams>> out;
  DecodeAttentionParams p;
  out.emplace_back("rule", p);
  for (const auto& [name, pipeline] :
       {std::pair{"shallow", DecodePipeline::kShallow}, std::pair{"deep", DecodePipeline::kDeep},
        std::pair{"single", DecodePipeline::kSingle}, std::pair{"warp", DecodePipeline::kWarp},
        std::pair{"narrow", DecodePipeline::kNarrow}}) {
    DecodeAttentionParams v;
    v.pipeline = pipeline;
    v.mma_warps = 2;
    out.emplace_back(name, v);
  }
  DecodeAttentionParams kv;  // the next-wave item's first K/V rows into L2 too (a hint: same results)
  kv.prefetch_next_wave_kv = true;
  out.emplace_back("next-wave kv", kv);
  for (const int warps : {1, 4, 8}) {
    DecodeAttentionParams v;
    v.mma_warps = warps;
    out.emplace_back(std::to_string(warps) + " warps", v);
  }
  return out;
}

#endif  // PREFIXD_HAVE_CUDA

TEST(DecodeItemPages, FirstSlotsFromTheItemOthersFromThePageTable) {
  PREFIXD_REQUIRE_GPU();
#ifdef PREFIXD_HAVE_CUDA
  PREFIXD_SEEDED_RNG(rng);
  for (const PagesCase& c : Cases(rng)) {
    SCOPED_TRACE(c.name);
    const Launch l = MakeLaunch(c, rng);
    // The test can tell the two sources apart: the oracles differ far beyond the tolerance.
    const ItemOracle with = Oracle(l, c, true), without = Oracle(l, c, false);
    std::vector<float> without_f(without.v.begin(), without.v.end());
    ASSERT_GT(Compare(without_f.data(), with.v.data(), int64_t(with.v.size())).rel_err, 5 * OutputTolerance(c.dtype));
    for (const auto& [name, variant] : Variants()) {
      ExpectLaunchMatches(l, c, variant, true, name);
      ExpectLaunchMatches(l, c, variant, false, name);
    }
  }
#else
  GTEST_SKIP() << "built without CUDA";
#endif
}

}  // namespace
}  // namespace prefixd::test
