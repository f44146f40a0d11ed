// The oracle cases of the prefix attention kernels, shared by prefix_attention_test.cc (the launcher
// as dispatched) and prefix_attention_sm90a_test.cc (each kernel forced): scenarios, the host
// problem they build, the float64 oracle, and the launch-and-check routine. Work items are built
// by hand here (not by the planner) so that odd shapes are reachable: ranges that are not
// multiples of the KV tile, single rows, empty ranges, causal rows that see nothing of a chunk,
// items with more rows than one tile, several groups, chunks and page sizes.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "device_buffer.h"
#include "prefixd/common/cuda_check.h"
#include "kernels/cuda/prefix_attention.h"
#include "kernels/cuda/sm90a/prefix_attention_sm90a.h"
#include "prefixd/common/error.h"
#include "support/test_support.h"

namespace prefixd::kernels::cuda::prefix_test {

using test::HostKvPool;

using test::DeviceBuffer;

struct GroupSpec {
  int prefix_tokens = 0;
  int num_requests = 0;
  std::vector<int> chunk_bounds;  // {0, b1, ..., prefix_tokens}: chunk c = [b_c, b_{c+1}); may repeat
};

struct Scenario {
  std::string name;
  DType dtype = DType::kFloat16;
  int head_dim = 128;
  int num_kv_heads = 2;
  int gqa = 1;
  int page_size = 16;
  std::vector<GroupSpec> groups;
  bool causal = false;
  int q_offset = 0;
  float q_scale = 1.f;     // q uniform in [-q_scale, q_scale] ...
  float plant_gain = 0.f;  // ... or, when > 0, a copy of one visible key times this gain
  int item_rows = 0;       // rows per item; 0: the kernel's tile rows
  int row_hint = 0;        // params.max_item_rows; -1: the true largest item (small-tile kernel)
  // NaN bits in every slot of the kernel's layer outside the groups' prefix runs (unused pages,
  // the tail of a partly filled last page): a kernel may read such slots (TMA boxes are not
  // clipped to a chunk) but must never let them reach a state.
  bool poison_outside_prefix = false;
  // P's rounding all one way (RoundAllPUp): the LSE's worst case where a kernel sums P as rounded
  // for P·V; with lse_abs_tolerance > 0 every s must also lie within it (base 2, absolute).
  bool round_all_p_up = false;
  double lse_abs_tolerance = 0;
  // A running max that rises within a chunk's walk (RisingMax): a kernel that takes a tile's
  // exponentials against the max as it stands (the sm_90a kernel's speculative softmax) must then
  // move the max by a rescale, and recompute a tile whose exponentials overflowed.
  bool rising_max = false;
};

inline std::ostream& operator<<(std::ostream& os, const Scenario& s) { return os << s.name; }

// Launch parameters of 8 query heads over 2 KV heads at head_dim (token_stride 2 · head_dim), with no
// items or buffers: for the argument checks and kernel choices that need no device memory.
inline PrefixAttentionParams ProbeParams(int head_dim) {
  PrefixAttentionParams p;
  p.num_qo_heads = 8;
  p.num_kv_heads = 2;
  p.head_dim = head_dim;
  p.token_stride = 2 * head_dim;
  p.sm_scale_log2 = 0.1f;
  return p;
}

// The whole host-side picture of one launch and its expected states.
struct Problem {
  HostKvPool pool;
  int layer = 1;
  std::vector<uint16_t> q;  // [B][H_qo][D]
  std::vector<PrefixGroup> groups;
  std::vector<PrefixWorkItem> items;
  std::vector<int32_t> state_indptr;  // per request: one slot per chunk + one never-written spare
  int num_requests = 0, num_qo_heads = 0, num_slots = 0;
  double sm_scale = 0;
};

// Makes every probability but the max's round up by ~0.9 of its own half-spacing when P is rounded
// to the input dtype (fp16: relative ~4.2e-4, bf16 ~3.4e-3), the worst case for a row sum taken
// over rounded P (session 41's ROWSUM_BY_MMA): q = (4, 4, 0, …) for every row; in each group's
// prefix, token 0's key (1, 0, 0, …) gives the max score, every other key (β, γ, 0, …) a score
// with P = 2^(c·4·(β + γ − 1)) just above the midpoint between 0.5 and the next representable
// value (c = sm_scale / ln 2; γ searched over the dtype's values for the finest setting).
// V stays random. Returns false if no γ puts P in its window (then the test cannot be made).
inline bool RoundAllPUp(const Scenario& sc, Problem& pr) {
  const int d = sc.head_dim;
  const double c = pr.sm_scale / std::log(2.0);
  const int mantissa_bits = sc.dtype == DType::kFloat16 ? 10 : 7;
  const double spacing = std::ldexp(1.0, -(mantissa_bits + 1));  // between values in [0.5, 1)
  const double lo = 0.5 + 0.52 * spacing, hi = 0.5 + 0.62 * spacing, target = 0.5 + 0.57 * spacing;
  // Scores: max 4 (a = 4 times key (1, 0)), others 4 (β + γ); want 4c (1 − β − γ) = −log2(target).
  const double need = 1.0 - (-std::log2(target)) / (4.0 * c);  // β + γ
  const float beta = ToFloat(sc.dtype, FromFloat(sc.dtype, float(need)));
  double best_p = 0, best_gap = 1;
  uint16_t best_gamma = 0;
  for (uint32_t bits = 0; bits < 0x10000u; ++bits) {
    const float g = ToFloat(sc.dtype, uint16_t(bits));
    if (!std::isfinite(g) || std::abs(g) > 0.25f) continue;
    const double p = std::exp2(4.0 * c * (double(beta) + double(g) - 1.0));
    if (std::abs(p - target) < best_gap) best_gap = std::abs(p - target), best_p = p, best_gamma = uint16_t(bits);
  }
  if (best_p < lo || best_p > hi) return false;
  const uint16_t four = FromFloat(sc.dtype, 4.f), one = FromFloat(sc.dtype, 1.f), zero = FromFloat(sc.dtype, 0.f);
  const uint16_t beta_bits = FromFloat(sc.dtype, beta);
  for (int64_t row = 0; row < int64_t(pr.num_requests) * pr.num_qo_heads; ++row) {
    std::fill(pr.q.begin() + row * d, pr.q.begin() + (row + 1) * d, zero);
    pr.q[row * d] = pr.q[row * d + 1] = four;
  }
  const KvPoolShape& shape = pr.pool.shape;
  for (const PrefixGroup& g : pr.groups)
    for (int t = 0; t < g.prefix.num_tokens; ++t)
      for (int h = 0; h < sc.num_kv_heads; ++h) {
        uint16_t* key = &pr.pool.k[shape.Offset(pr.layer, int64_t(g.prefix.first_page) * sc.page_size + t, h)];
        std::fill(key, key + d, zero);
        key[0] = t == 0 ? one : beta_bits;
        key[1] = t == 0 ? zero : best_gamma;
      }
  return true;
}

// Pins what RisingMax's construction is for (a silent change to its levels, the dtype's rounding
// or the random keys' second element would otherwise leave the rare paths untested): for every
// row and group, from the scores as the kernel sees them (rounded q and k, base 2, float64), the
// max over tokens [300, 500) exceeds that over [0, 300) by more than 12 (past a P sum of 4096),
// the max over [700, 1100) exceeds that over [500, 700) by more than 128 (past fp32's 2^x range;
// any K/V tile up to 200 tokens starts the chunk [500, 1300) below it) and every score in
// [1100, 1300) lies more than 60 below it (P < 2^−60 there: zero as fp16).
inline void ExpectRisingMaxRises(const Scenario& sc, const Problem& pr) {
  const int d = sc.head_dim;
  const double c = pr.sm_scale / std::log(2.0);
  const KvPoolShape& shape = pr.pool.shape;
  int rows_checked = 0;
  for (const PrefixGroup& g : pr.groups) {
    if (g.prefix.num_tokens < 1300) continue;
    for (int i = 0; i < g.num_requests; ++i)
      for (int h = 0; h < pr.num_qo_heads; ++h) {
        const uint16_t* q = &pr.q[(int64_t(g.first_request + i) * pr.num_qo_heads + h) * d];
        auto max_score = [&](int begin, int end) {
          double m = -INFINITY;
          for (int t = begin; t < end; ++t) {
            const uint16_t* k =
                &pr.pool.k[shape.Offset(pr.layer, int64_t(g.prefix.first_page) * sc.page_size + t, h / sc.gqa)];
            double s = 0;
            for (int e = 0; e < d; ++e) s += double(ToFloat(sc.dtype, q[e])) * double(ToFloat(sc.dtype, k[e]));
            m = std::max(m, c * s);
          }
          return m;
        };
        const double low = max_score(0, 300), first_rise = max_score(300, 500);
        const double before = max_score(500, 700), peak = max_score(700, 1100), tail = max_score(1100, 1300);
        EXPECT_GT(first_rise - low, 12.0) << sc.name << " request " << i << " head " << h;
        EXPECT_GT(peak - before, 128.0) << sc.name << " request " << i << " head " << h;
        EXPECT_GT(peak - tail, 60.0) << sc.name << " request " << i << " head " << h;
        ++rows_checked;
      }
  }
  EXPECT_GT(rows_checked, 0) << sc.name << ": no group's prefix reaches token 1300";
}

// Scores that step through fixed levels along each group's prefix (base 2, each score ±1 of its
// level): 0 from token 0, +20 from 300, +30 from 600, +170 from 700, +100 from 1100. q = (16, x,
// 0, …) with x random in [−1, 1] for every row, and each key's first element set so that
// 16 · k0 · c lands on its token's level (c = sm_scale / ln 2). So a chunk that starts before
// token 300 sees its max rise by ~20 inside its walk (a rescale's worth, far past any sum limit),
// one that starts before 700 sees it rise by ~140 (past fp32's 2^x range), and one that reaches
// past 1100 has tiles whose P are all below 2^−60 (zero as fp16); V stays random.
inline void RisingMax(const Scenario& sc, Problem& pr, std::mt19937_64& rng) {
  const int d = sc.head_dim;
  const double c = pr.sm_scale / std::log(2.0);
  const float a = 16.f;
  std::uniform_real_distribution<float> jitter(-1.f, 1.f);
  const uint16_t zero = FromFloat(sc.dtype, 0.f);
  for (int64_t row = 0; row < int64_t(pr.num_requests) * pr.num_qo_heads; ++row) {
    std::fill(pr.q.begin() + row * d, pr.q.begin() + (row + 1) * d, zero);
    pr.q[row * d] = FromFloat(sc.dtype, a);
    pr.q[row * d + 1] = FromFloat(sc.dtype, jitter(rng));
  }
  auto level = [](int t) { return t < 300 ? 0.0 : t < 600 ? 20.0 : t < 700 ? 30.0 : t < 1100 ? 170.0 : 100.0; };
  const KvPoolShape& shape = pr.pool.shape;
  for (const PrefixGroup& g : pr.groups)
    for (int t = 0; t < g.prefix.num_tokens; ++t)
      for (int h = 0; h < sc.num_kv_heads; ++h) {
        uint16_t* key = &pr.pool.k[shape.Offset(pr.layer, int64_t(g.prefix.first_page) * sc.page_size + t, h)];
        key[0] = FromFloat(sc.dtype, float((level(t) + jitter(rng)) / (a * c)));
      }
  ExpectRisingMaxRises(sc, pr);
}

inline Problem BuildProblem(const Scenario& sc, std::mt19937_64& rng) {
  Problem pr;
  const int d = sc.head_dim;
  pr.num_qo_heads = sc.num_kv_heads * sc.gqa;
  pr.sm_scale = 1.0 / std::sqrt(double(d));

  // Pages: group prefixes back to back after one unused page (first_page ≠ 0).
  KvPoolShape shape;
  shape.num_layers = 2;
  shape.page_size = sc.page_size;
  shape.num_kv_heads = sc.num_kv_heads;
  shape.head_dim = d;
  shape.dtype = sc.dtype;
  int next_page = 1;
  for (const GroupSpec& g : sc.groups) {
    PrefixGroup group;
    group.prefix = {next_page, g.prefix_tokens};
    group.first_request = pr.num_requests;
    group.num_requests = g.num_requests;
    pr.groups.push_back(group);
    next_page += (g.prefix_tokens + sc.page_size - 1) / sc.page_size;
    pr.num_requests += g.num_requests;
  }
  shape.num_pages = next_page + 1;
  pr.pool = test::RandomKvPool(rng, shape);

  pr.state_indptr.push_back(0);
  for (size_t gi = 0; gi < sc.groups.size(); ++gi)
    for (int r = 0; r < sc.groups[gi].num_requests; ++r)
      pr.state_indptr.push_back(pr.state_indptr.back() + int(sc.groups[gi].chunk_bounds.size()));
  pr.num_slots = pr.state_indptr.back();

  // Queries: flat random, or a planted copy of one key this row can see (peaky softmax).
  pr.q = test::RandomBits(rng, int64_t(pr.num_requests) * pr.num_qo_heads * d, sc.dtype, sc.q_scale);
  if (sc.plant_gain > 0) {
    for (size_t gi = 0; gi < sc.groups.size(); ++gi) {
      const PrefixGroup& g = pr.groups[gi];
      for (int i = 0; i < g.num_requests; ++i) {
        int visible = g.prefix.num_tokens;
        if (sc.causal) visible = std::min(visible, sc.q_offset + i + 1);
        if (visible <= 0) continue;
        for (int h = 0; h < pr.num_qo_heads; ++h) {
          const int64_t slot = int64_t(g.prefix.first_page) * sc.page_size + int64_t(rng() % visible);
          uint16_t* row = &pr.q[(int64_t(g.first_request + i) * pr.num_qo_heads + h) * d];
          test::PlantKey(pr.pool, pr.layer, slot, h / sc.gqa, sc.plant_gain, row);
        }
      }
    }
  }

  // Items: every (group, kv head, chunk, row block); row blocks innermost, as a planner would
  // order them so that items sharing K/V run side by side.
  const int item_rows = sc.item_rows > 0 ? sc.item_rows : PrefixAttentionTileRows(d);
  for (size_t gi = 0; gi < sc.groups.size(); ++gi) {
    const GroupSpec& spec = sc.groups[gi];
    if (spec.prefix_tokens == 0) continue;
    const int rows = spec.num_requests * sc.gqa;
    for (int kv_head = 0; kv_head < sc.num_kv_heads; ++kv_head)
      for (size_t c = 0; c + 1 < spec.chunk_bounds.size(); ++c)
        for (int r0 = 0; r0 < rows; r0 += item_rows) {
          PrefixWorkItem item;
          item.group = int32_t(gi);
          item.kv_head = kv_head;
          item.row_begin = r0;
          item.row_end = std::min(rows, r0 + item_rows);
          item.kv_begin = spec.chunk_bounds[c];
          item.kv_end = spec.chunk_bounds[c + 1];
          item.chunk = int32_t(c);
          pr.items.push_back(item);
        }
  }
  if (sc.round_all_p_up && !RoundAllPUp(sc, pr)) ADD_FAILURE() << "no key puts P in its rounding window";
  if (sc.rising_max) RisingMax(sc, pr, rng);
  if (sc.poison_outside_prefix) {
    const int64_t slots = int64_t(shape.num_pages) * sc.page_size;
    std::vector<char> in_prefix(size_t(slots), 0);
    for (const PrefixGroup& g : pr.groups)
      for (int t = 0; t < g.prefix.num_tokens; ++t) in_prefix[size_t(int64_t(g.prefix.first_page) * sc.page_size + t)] = 1;
    for (int64_t slot = 0; slot < slots; ++slot) {
      if (in_prefix[size_t(slot)]) continue;
      const int64_t offset = shape.Offset(pr.layer, slot, 0);
      std::fill(pr.pool.k.begin() + offset, pr.pool.k.begin() + offset + shape.TokenStride(), uint16_t(0xFFFF));
      std::fill(pr.pool.v.begin() + offset, pr.pool.v.begin() + offset + shape.TokenStride(), uint16_t(0xFFFF));
    }
  }
  return pr;
}

// Expected state of every (slot, qo head) an item writes: v [num_slots][H_qo][D], s [..][H_qo].
// `written` marks them; the rest (spare slots) must stay poisoned.
struct Expected {
  std::vector<double> v, s;
  std::vector<char> written;
};

inline Expected Oracle(const Scenario& sc, const Problem& pr) {
  const int d = sc.head_dim, h_qo = pr.num_qo_heads;
  Expected ex{std::vector<double>(int64_t(pr.num_slots) * h_qo * d, 0.0),
              std::vector<double>(int64_t(pr.num_slots) * h_qo, 0.0),
              std::vector<char>(int64_t(pr.num_slots) * h_qo, 0)};
  for (const PrefixWorkItem& item : pr.items) {
    const PrefixGroup& g = pr.groups[item.group];
    for (int row = item.row_begin; row < item.row_end; ++row) {
      const int local_request = row / sc.gqa;
      const int request = g.first_request + local_request;
      const int head = item.kv_head * sc.gqa + row % sc.gqa;
      std::vector<int64_t> slots;
      for (int t = item.kv_begin; t < item.kv_end; ++t) {
        if (sc.causal && t > sc.q_offset + local_request) break;
        slots.push_back(int64_t(g.prefix.first_page) * sc.page_size + t);
      }
      const test::RefState st = test::NaiveAttention(
          pr.pool, pr.layer, item.kv_head, &pr.q[(int64_t(request) * h_qo + head) * d], slots,
          pr.sm_scale);
      const int64_t state = int64_t(pr.state_indptr[request] + item.chunk) * h_qo + head;
      std::copy(st.v.begin(), st.v.end(), ex.v.begin() + state * d);
      ex.s[state] = st.s;
      ex.written[state] = 1;
    }
  }
  return ex;
}

// Standard deviation of the natural-log scores of a few rows against their whole prefix.
inline double ScoreStd(const Scenario& sc, const Problem& pr) {
  const int d = sc.head_dim;
  double sum = 0, sum2 = 0;
  int64_t n = 0;
  const PrefixGroup& g = pr.groups[0];
  for (int i = 0; i < std::min(g.num_requests, 4); ++i) {
    const uint16_t* q = &pr.q[int64_t(g.first_request + i) * pr.num_qo_heads * d];
    for (int t = 0; t < g.prefix.num_tokens; ++t) {
      double dot = 0;
      for (int k = 0; k < d; ++k)
        dot += ToFloat(sc.dtype, q[k]) *
               pr.pool.K(pr.layer, int64_t(g.prefix.first_page) * sc.page_size + t, 0, k);
      dot *= pr.sm_scale;
      sum += dot;
      sum2 += dot * dot;
      ++n;
    }
  }
  const double mean = sum / double(n);
  return std::sqrt(std::max(0.0, sum2 / double(n) - mean * mean));
}

// Builds the scenario, launches PrefixAttention once (whichever kernel SelectPrefixKernel picks
// under the current environment; reported through `ran`) and checks every state against the
// float64 oracle, untouched spare slots, and exact empty states. The caller checks for a GPU.
// shared_q (optional): a device buffer of at least the problem's q bytes that the queries are
// copied into and read from, so that two calls can use one query buffer of different batch sizes.
inline void CheckPrefixAttention(const Scenario& sc, PrefixKernelPath* ran = nullptr, void* shared_q = nullptr) {
  const uint64_t seed = test::TestSeed();
  SCOPED_TRACE("seed " + std::to_string(seed) + " (set PREFIXD_TEST_SEED to replay)");
  std::mt19937_64 rng(seed);

  const Problem pr = BuildProblem(sc, rng);
  if (sc.plant_gain > 0) EXPECT_GE(ScoreStd(sc, pr), 10.0) << "scenario is not peaky enough";
  const Expected ex = Oracle(sc, pr);

  // Only one layer is handed to the kernel: the pool's layer `pr.layer`.
  const KvPoolShape& shape = pr.pool.shape;
  const DeviceBuffer k = DeviceBuffer::From(pr.pool.k), v = DeviceBuffer::From(pr.pool.v);
  const DeviceBuffer q = DeviceBuffer::From(pr.q);
  const DeviceBuffer items = DeviceBuffer::From(pr.items);
  const DeviceBuffer groups = DeviceBuffer::From(pr.groups);
  const DeviceBuffer indptr = DeviceBuffer::From(pr.state_indptr);
  const int64_t num_states = int64_t(pr.num_slots) * pr.num_qo_heads;
  DeviceBuffer out_v(num_states * sc.head_dim * sizeof(float)), out_s(num_states * sizeof(float));
  // Poison: 0xFF bytes are NaN, so an unwritten output can never pass.
  PREFIXD_CUDA_CHECK(cudaMemset(out_v.get(), 0xFF, num_states * sc.head_dim * sizeof(float)));
  PREFIXD_CUDA_CHECK(cudaMemset(out_s.get(), 0xFF, num_states * sizeof(float)));

  PrefixAttentionParams p;
  p.settings = PrefixKernelSettings::FromEnvironment();  // the test's PREFIXD_PREFIX_KERNEL, PREFIXD_SM90A_*
  p.k = k.as<uint16_t>() + shape.Offset(pr.layer, 0, 0);
  p.v = v.as<uint16_t>() + shape.Offset(pr.layer, 0, 0);
  p.token_stride = shape.TokenStride();
  p.page_size = shape.page_size;
  p.q = q.get();
  if (shared_q != nullptr) {
    PREFIXD_CUDA_CHECK(cudaMemcpy(shared_q, pr.q.data(), pr.q.size() * sizeof(uint16_t), cudaMemcpyHostToDevice));
    p.q = shared_q;
  }
  p.num_requests = pr.num_requests;  // partial warpgroups' queries by TMA too (PREFIXD_SM90A_Q_TMA_PARTIAL)
  p.num_qo_heads = pr.num_qo_heads;
  p.num_kv_heads = sc.num_kv_heads;
  p.head_dim = sc.head_dim;
  p.dtype = sc.dtype;
  p.sm_scale_log2 = float(pr.sm_scale / std::log(2.0));
  p.causal = sc.causal;
  p.q_offset = sc.q_offset;
  p.items = items.as<PrefixWorkItem>();
  p.num_items = int(pr.items.size());
  p.groups = groups.as<PrefixGroup>();
  p.state_indptr = indptr.as<int32_t>();
  p.partial_v = out_v.as<float>();
  p.partial_s = out_s.as<float>();
  p.max_item_rows = sc.row_hint;
  if (sc.row_hint < 0) {
    p.max_item_rows = 0;
    for (const PrefixWorkItem& it : pr.items) p.max_item_rows = std::max(p.max_item_rows, it.row_end - it.row_begin);
  }

  cudaStream_t stream;
  PREFIXD_CUDA_CHECK(cudaStreamCreate(&stream));
  if (ran != nullptr) *ran = SelectPrefixKernel(p);
  PrefixAttention(p, stream);
  PREFIXD_CUDA_CHECK(cudaStreamSynchronize(stream));
  PREFIXD_CUDA_CHECK(cudaStreamDestroy(stream));

  const std::vector<float> got_v = out_v.ToHost<float>(), got_s = out_s.ToHost<float>();
  // Written states against the oracle; spare slots must still hold the poison (no stray writes).
  std::vector<float> v_written, s_written;
  std::vector<double> v_want, s_want;
  int64_t stray = 0, empty = 0;
  for (int64_t st = 0; st < num_states; ++st) {
    if (!ex.written[st]) {
      uint32_t bits;
      std::memcpy(&bits, &got_s[st], 4);
      if (bits != 0xFFFFFFFFu) ++stray;
      for (int i = 0; i < sc.head_dim; ++i) {
        std::memcpy(&bits, &got_v[st * sc.head_dim + i], 4);
        if (bits != 0xFFFFFFFFu) ++stray;
      }
      continue;
    }
    if (std::isinf(ex.s[st])) ++empty;
    v_written.insert(v_written.end(), got_v.begin() + st * sc.head_dim,
                     got_v.begin() + (st + 1) * sc.head_dim);
    v_want.insert(v_want.end(), ex.v.begin() + st * sc.head_dim, ex.v.begin() + (st + 1) * sc.head_dim);
    s_written.push_back(got_s[st]);
    s_want.push_back(ex.s[st]);
  }
  ASSERT_FALSE(s_want.empty()) << "scenario writes no state";
  EXPECT_EQ(stray, 0) << "values written outside the items' states";
  test::ExpectAllClose(v_written.data(), v_want.data(), int64_t(v_want.size()),
                       test::OutputTolerance(sc.dtype), "v");
  test::ExpectLseClose(s_written.data(), s_want.data(), int64_t(s_want.size()), 2e-4, "s (base 2)");
  if (sc.lse_abs_tolerance > 0) {
    double worst = 0;
    for (size_t i = 0; i < s_want.size(); ++i)
      if (std::isfinite(s_want[i])) worst = std::max(worst, std::abs(double(s_written[i]) - s_want[i]));
    EXPECT_LE(worst, sc.lse_abs_tolerance) << "largest LSE error (base 2) over the bound";
    ::testing::Test::RecordProperty("max_lse_error", std::to_string(worst));
  }
  // Empty states must be exactly v = 0 (ExpectAllClose already rejects NaN).
  for (size_t i = 0; i < s_want.size(); ++i)
    if (std::isinf(s_want[i]))
      for (int j = 0; j < sc.head_dim; ++j)
        ASSERT_EQ(v_written[i * sc.head_dim + j], 0.f) << "empty state " << i << " has v != 0";
  ::testing::Test::RecordProperty("states", int(s_want.size()));
  ::testing::Test::RecordProperty("empty_states", int(empty));
}

// The oracle cases of prefix_attention_test.cc (every dtype × head_dim × GQA size, peaky, causal,
// empty ranges, several groups and page sizes, big items, the small-tile hint, a long chunk).
// Scenarios that prefix_attention_sm90a_test.cc reruns with poisoned pools (and its own names).
// One row (one request, one head) against less than one KV tile.
inline Scenario SingleRowScenario(DType dt, const std::string& name) {
  Scenario s;
  s.dtype = dt;
  s.name = name;
  s.num_kv_heads = 1;
  s.groups = {{37, 1, {0, 37}}};
  return s;
}

// Several groups (one without a prefix), four KV heads.
inline Scenario GroupsScenario(DType dt, int page_size, const std::string& name) {
  Scenario s;
  s.dtype = dt;
  s.name = name;
  s.page_size = page_size;
  s.num_kv_heads = 4;
  s.gqa = 2;
  s.groups = {{150, 3, {0, 150}}, {0, 2, {}}, {515, 6, {0, 64, 129, 515}}, {90, 1, {0, 45, 90}}};
  return s;
}

// Every P but the max's rounded up (RoundAllPUp); one chunk of 1000 tokens, two row tiles at g = 4.
// A row sum over P as rounded for P·V (session 41's ROWSUM_BY_MMA, fp16 head_dim 64 and 256) is
// then high by ~4.2e-4 relative: |Δs| ≈ 6.1e-4, under the bound of 8e-4 (the worst case, P just
// above the midpoint, is log2(1 + 2^-11) ≈ 7.0e-4); a sum of fp32 P stays near 1e-6. A rounded
// sum at bf16 (3.4e-3 relative, Δs ≈ 4.8e-3) would fail it, as the kernel's comment says.
inline Scenario RoundAllPUpScenario(DType dt, int head_dim) {
  Scenario s;
  s.dtype = dt;
  s.head_dim = head_dim;
  s.name = std::string("RoundAllPUp_") + DTypeName(dt) + "_d" + std::to_string(head_dim);
  s.num_kv_heads = 2;
  s.gqa = 4;
  s.round_all_p_up = true;
  s.lse_abs_tolerance = 8e-4;
  s.groups = {{1000, 40, {0, 1000}}};
  return s;
}

// A long chunk: many KV tiles through the double buffer, peaky.
inline Scenario LongChunkScenario(DType dt, const std::string& name) {
  Scenario s;
  s.dtype = dt;
  s.name = name;
  s.gqa = 4;
  s.num_kv_heads = 2;
  s.plant_gain = 40.f;
  s.groups = {{4100, 12, {0, 4100}}};
  return s;
}

inline std::vector<Scenario> Scenarios() {
  std::vector<Scenario> out;
  const DType dtypes[] = {DType::kFloat16, DType::kBFloat16};
  // Flat inputs, every dtype × head_dim × GQA size; 20 requests × g rows: at g = 8 two row tiles
  // (the second partial); chunks of 256 / 77 / 367 tokens, none a multiple of the KV tile.
  for (DType dt : dtypes)
    for (int d : {64, 128, 256})
      for (int g : {1, 2, 4, 8}) {
        Scenario s;
        s.name = std::string("Flat_") + DTypeName(dt) + "_d" + std::to_string(d) + "_g" + std::to_string(g);
        s.dtype = dt;
        s.head_dim = d;
        s.gqa = g;
        s.groups = {{700, 20, {0, 256, 333, 700}}};
        out.push_back(s);
      }
  // Peaky: planted keys, score std >= 10 (a wrong max or log base fails loudly). RisingMax: a max
  // that rises by a rescale's worth, then past 2^x's range, inside the walks of two chunks.
  for (DType dt : dtypes)
    for (int d : {64, 128, 256}) {
      Scenario s;
      s.name = std::string("Peaky_") + DTypeName(dt) + "_d" + std::to_string(d);
      s.dtype = dt;
      s.head_dim = d;
      s.gqa = 4;
      s.plant_gain = 40.f;
      s.groups = {{1000, 9, {0, 448, 1000}}};
      out.push_back(s);
      s.name = std::string("RisingMax_") + DTypeName(dt) + "_d" + std::to_string(d);
      s.plant_gain = 0.f;
      s.rising_max = true;
      s.groups = {{1300, 9, {0, 500, 1300}}};
      out.push_back(s);
    }
  for (DType dt : dtypes) {
    const std::string suffix = std::string("_") + DTypeName(dt);
    Scenario s = SingleRowScenario(dt, "SingleRow" + suffix);
    out.push_back(s);
    // An empty chunk between two others: its state is (0, −inf).
    s.name = "EmptyRange" + suffix;
    s.num_kv_heads = 2;
    s.gqa = 2;
    s.groups = {{300, 5, {0, 100, 100, 300}}};
    out.push_back(s);
    // Causal with an offset: request i sees [0, 50 + i]; chunk [70, 100) is empty for i < 20,
    // partly visible for the rest; the last chunk is beyond every row (all empty).
    s.name = "Causal" + suffix;
    s.head_dim = 64;
    s.causal = true;
    s.q_offset = 50;
    s.gqa = 2;
    s.groups = {{200, 40, {0, 64, 70, 100, 200}}};
    out.push_back(s);
    // Causal prefill from position 0 with many rows per tile and a peaky softmax.
    s.name = "CausalPeaky" + suffix;
    s.head_dim = 128;
    s.q_offset = 0;
    s.gqa = 4;
    s.plant_gain = 40.f;
    s.groups = {{300, 70, {0, 40, 300}}};
    out.push_back(s);
    // Several groups (one without a prefix), page sizes 1 and 7, four KV heads.
    out.push_back(GroupsScenario(dt, 1, "Groups_page1" + suffix));
    out.push_back(GroupsScenario(dt, 7, "Groups_page7" + suffix));
    // Items with more rows than one tile: the CTA walks its row tiles one after the other.
    s = Scenario();
    s.dtype = dt;
    s.name = "BigItems" + suffix;
    s.gqa = 8;
    s.num_kv_heads = 1;
    s.item_rows = 300;
    s.groups = {{333, 40, {0, 333}}};
    out.push_back(s);
    // The small-tile kernel (max_item_rows ≤ 64): items of ≤ 64 rows, flat and peaky.
    for (int d : {64, 128}) {
      s = Scenario();
      s.dtype = dt;
      s.name = "SmallTile_d" + std::to_string(d) + suffix;
      s.head_dim = d;
      s.gqa = 2;
      s.item_rows = 64;
      s.row_hint = -1;
      s.groups = {{700, 20, {0, 256, 333, 700}}};
      out.push_back(s);
      s.name = "SmallTilePeaky_d" + std::to_string(d) + suffix;
      s.plant_gain = 40.f;
      s.groups = {{1000, 50, {0, 448, 1000}}};  // 100 rows: items of 64 and 36
      out.push_back(s);
    }
    s.name = "SmallTileCausal" + suffix;
    s.plant_gain = 0.f;
    s.head_dim = 128;
    s.causal = true;
    s.q_offset = 50;
    s.groups = {{200, 40, {0, 64, 70, 100, 200}}};
    out.push_back(s);
    // A hint smaller than the items: the small-tile CTA walks 64-row tiles, still correct.
    s.name = "SmallTileUnderHint" + suffix;
    s.causal = false;
    s.q_offset = 0;
    s.item_rows = 150;
    s.row_hint = 64;
    s.gqa = 4;
    s.groups = {{333, 40, {0, 100, 333}}};
    out.push_back(s);
    out.push_back(LongChunkScenario(dt, "LongChunk" + suffix));
  }
  return out;
}

}  // namespace prefixd::kernels::cuda::prefix_test
