#include "support/backend_step.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>

namespace prefixd::test {

using kernels::Backend;
using kernels::KvPoolShape;

BackendBuffers::~BackendBuffers() {
  backend_.Synchronize();
  for (void* p : owned_) backend_.Free(p);
}

void* BackendBuffers::Upload(const void* src, size_t bytes) {
  void* p = Poisoned(bytes);
  backend_.CopyToDevice(p, src, bytes);
  return p;
}

void* BackendBuffers::Poisoned(size_t bytes) {
  void* p = backend_.Alloc(bytes);
  owned_.push_back(p);
  backend_.Fill(p, 0xFF, bytes);
  return p;
}

kernels::CascadeArgs StepArgs(BackendBuffers& mem, const HostKvPool& pool, int layer, const std::vector<uint16_t>& q,
                              int64_t rows) {
  const int64_t n = rows * pool.shape.head_dim;
  kernels::CascadeArgs args;
  args.kv = kernels::KvPoolView{pool.shape, mem.Upload(pool.k.data(), pool.k.size() * 2),
                                mem.Upload(pool.v.data(), pool.v.size() * 2)};
  args.layer = layer;
  args.q = mem.Upload(q.data(), q.size() * 2);
  args.o = mem.Poisoned(n * 2 + 2);
  args.v_out = static_cast<float*>(mem.Poisoned(n * 4 + 4));
  args.s_out = static_cast<float*>(mem.Poisoned(rows * 4 + 4));
  return args;
}

StepResult DownloadStep(BackendBuffers& mem, const kernels::CascadeArgs& args, DType dtype, int64_t rows,
                        int head_dim) {
  const int64_t n = rows * head_dim;
  StepResult out;
  const std::vector<uint16_t> o_bits = mem.Download<uint16_t>(args.o, n);
  out.v = mem.Download<float>(args.v_out, n);
  out.s = mem.Download<float>(args.s_out, rows);
  out.o.resize(n);
  for (int64_t i = 0; i < n; ++i) out.o[i] = kernels::ToFloat(dtype, o_bits[i]);
  return out;
}

void ExpectEmptyStates(const StepResult& got, int64_t first_row, int64_t end_row, int head_dim) {
  ASSERT_GE(int64_t(got.s.size()), end_row);
  ASSERT_GE(int64_t(got.v.size()), end_row * head_dim);
  ASSERT_GE(int64_t(got.o.size()), end_row * head_dim);
  for (int64_t i = first_row * head_dim; i < end_row * head_dim; ++i) {
    ASSERT_EQ(got.v[i], 0.f) << "v element " << i;
    ASSERT_EQ(got.o[i], 0.f) << "o element " << i;
  }
  for (int64_t row = first_row; row < end_row; ++row)
    EXPECT_EQ(got.s[row], -std::numeric_limits<float>::infinity()) << "row " << row;
}

StepResult RunStep(Backend& backend, const HostKvPool& pool, int layer, const kernels::CascadePlan& plan,
                   const std::vector<uint16_t>& q) {
  BackendBuffers mem(backend);
  const int64_t rows = int64_t(plan.num_requests) * plan.num_qo_heads;
  const kernels::CascadeArgs args = StepArgs(mem, pool, layer, q, rows);
  backend.LoadPlan(plan);
  backend.RunCascade(args);
  return DownloadStep(mem, args, pool.shape.dtype, rows, pool.shape.head_dim);
}

StepResult ExpectCascadePartsMatchWhole(Backend& backend, const HostKvPool& pool, int layer,
                                        const kernels::CascadePlan& plan, const std::vector<uint16_t>& q) {
  const int64_t rows = int64_t(plan.num_requests) * plan.num_qo_heads;
  backend.LoadPlan(plan);
  auto run = [&](std::initializer_list<unsigned> parts) {
    BackendBuffers mem(backend);
    const kernels::CascadeArgs args = StepArgs(mem, pool, layer, q, rows);
    for (const unsigned part : parts) backend.RunCascadeParts(args, part);
    return DownloadStep(mem, args, pool.shape.dtype, rows, pool.shape.head_dim);
  };
  auto expect_same = [](const StepResult& got, const StepResult& want, const char* order) {
    SCOPED_TRACE(order);
    // EXPECT_EQ on the vectors: a NaN anywhere fails it (NaN != NaN), as it should.
    EXPECT_EQ(got.v, want.v);
    EXPECT_EQ(got.s, want.s);
    EXPECT_EQ(got.o, want.o);
  };
  const StepResult whole = run({Backend::kAllParts});
  expect_same(run({Backend::kPrefixPart, Backend::kDecodePart, Backend::kMergePart}), whole,
              "prefix, decode, merge as three calls");
  if (!plan.MergeNeedsDecode())
    expect_same(run({Backend::kPrefixPart | Backend::kMergePart, Backend::kDecodePart}), whole,
                "prefix + merge, then decode");
  // The worker's send-before-decode order: the merge halves apart, around the decode.
  expect_same(run({Backend::kPrefixPart | Backend::kMergeNoDecodePart, Backend::kDecodePart | Backend::kMergeAfterDecodePart}),
              whole, "prefix + merge without decode, then decode + merge after decode");
  expect_same(run({Backend::kPrefixPart, Backend::kMergeNoDecodePart, Backend::kDecodePart, Backend::kMergeAfterDecodePart}),
              whole, "four calls");
  return whole;
}

void ExpectMergePartPacksRows(Backend& backend, const HostKvPool& pool, int layer, const kernels::CascadePlan& plan,
                              const std::vector<uint16_t>& q) {
  const int heads = plan.num_qo_heads, dim = plan.head_dim;
  const int64_t rows = int64_t(plan.num_requests) * heads, packed_floats = int64_t(heads) * (dim + 1);
  const StepResult whole = RunStep(backend, pool, layer, plan, q);
  std::vector<int32_t> packed_row(size_t(plan.num_requests), -1);
  const int num_packed = int(plan.merge_requests.size());
  for (int i = 0; i < num_packed; ++i) packed_row[size_t(plan.merge_requests[size_t(i)])] = num_packed - 1 - i;

  BackendBuffers mem(backend);
  kernels::CascadeArgs args = StepArgs(mem, pool, layer, q, rows);
  args.merge_packed_row = static_cast<const int32_t*>(mem.Upload(packed_row.data(), packed_row.size() * 4));
  args.merge_packed_out = static_cast<float*>(mem.Poisoned(size_t(num_packed * packed_floats) * 4 + 4));
  backend.LoadPlan(plan);
  // As the worker runs it when it sends states before the decode: each merge half packs its rows.
  backend.RunCascadeParts(args, Backend::kPrefixPart | Backend::kMergeNoDecodePart);
  backend.RunCascadeParts(args, Backend::kDecodePart | Backend::kMergeAfterDecodePart);
  const StepResult got = DownloadStep(mem, args, pool.shape.dtype, rows, dim);
  const std::vector<float> packed = mem.Download<float>(args.merge_packed_out, size_t(num_packed * packed_floats));
  const uint32_t poison = 0xFFFFFFFFu;  // BackendBuffers::Poisoned's bytes
  auto bits = [](float x) { return kernels::FloatBits(x); };
  for (int r = 0; r < plan.num_requests; ++r) {
    SCOPED_TRACE("request " + std::to_string(r) + (packed_row[size_t(r)] >= 0 ? " (packed)" : ""));
    for (int h = 0; h < heads; ++h) {
      const int64_t row = int64_t(r) * heads + h;
      if (packed_row[size_t(r)] < 0) {  // finished by the decode part as usual
        ASSERT_EQ(bits(got.s[size_t(row)]), bits(whole.s[size_t(row)])) << "head " << h;
        for (int d = 0; d < dim; ++d)
          ASSERT_EQ(bits(got.v[size_t(row * dim + d)]), bits(whole.v[size_t(row * dim + d)])) << "head " << h << ", d " << d;
        continue;
      }
      const float* p = packed.data() + packed_row[size_t(r)] * packed_floats;
      ASSERT_EQ(bits(p[int64_t(heads) * dim + h]), bits(whole.s[size_t(row)])) << "packed s, head " << h;
      ASSERT_EQ(bits(got.s[size_t(row)]), poison) << "s_out written for a packed request, head " << h;
      for (int d = 0; d < dim; ++d) {
        ASSERT_EQ(bits(p[int64_t(h) * dim + d]), bits(whole.v[size_t(row * dim + d)])) << "packed v, head " << h << ", d " << d;
        ASSERT_EQ(bits(got.v[size_t(row * dim + d)]), poison) << "v_out written for a packed request, head " << h;
      }
    }
  }
}

std::vector<double> ToDouble(const std::vector<float>& x) { return std::vector<double>(x.begin(), x.end()); }

bool Planted(int request, int head) { return head % 3 == request % 3; }

std::vector<uint16_t> MakeQueries(std::mt19937_64& rng, const HostKvPool& pool, int layer,
                                  const kernels::DecodeBatch& batch, bool peaky, float peaky_scale) {
  const KvPoolShape& s = pool.shape;
  const int h = batch.num_qo_heads, g = h / s.num_kv_heads, b = batch.num_requests();
  std::vector<uint16_t> q = RandomBits(rng, int64_t(b) * h * s.head_dim, s.dtype, peaky ? peaky_scale : 1.f);
  if (!peaky) return q;
  for (int r = 0; r < b; ++r) {
    const std::vector<int64_t> slots = RequestSlots(batch, r, s.page_size);
    if (slots.empty()) continue;
    for (int head = 0; head < h; ++head) {
      if (!Planted(r, head)) continue;
      const int64_t slot = slots[std::uniform_int_distribution<size_t>(0, slots.size() - 1)(rng)];
      PlantKey(pool, layer, slot, head / g, 33.f, &q[(int64_t(r) * h + head) * s.head_dim]);
    }
  }
  return q;
}

namespace {

// Tokens of the prefix that query i sees.
int Visible(const PrefixCase& c, int i) {
  return c.causal ? std::min(c.prefix_tokens, c.q_offset + i + 1) : c.prefix_tokens;
}

}  // namespace

PrefixProblem MakePrefixProblem(std::mt19937_64& rng, const PrefixCase& c, float peaky_scale) {
  const int first_page = PrefixProblem::kFirstPage, pages = (c.prefix_tokens + c.page_size - 1) / c.page_size;
  const KvPoolShape shape{2, first_page + pages + 1, c.page_size, c.num_kv_heads, c.head_dim, c.dtype};
  PrefixProblem p;
  p.pool = RandomKvPool(rng, shape);
  const int h = c.num_qo_heads, dim = c.head_dim;
  p.q = RandomBits(rng, int64_t(c.num_queries) * h * dim, c.dtype, c.peaky ? peaky_scale : 1.f);
  if (c.peaky && c.prefix_tokens > 0)
    for (int i = 0; i < c.num_queries; ++i) {
      const int64_t slot = int64_t(first_page) * c.page_size + int64_t(rng() % Visible(c, i));
      PlantKey(p.pool, PrefixProblem::kLayer, slot, 0, 33.f, &p.q[int64_t(i) * h * dim]);
    }
  return p;
}

StepResult RunPrefixCase(Backend& backend, const PrefixCase& c, const PrefixProblem& p) {
  const int64_t rows = int64_t(c.num_queries) * c.num_qo_heads, dim = c.head_dim;
  BackendBuffers mem(backend);
  kernels::PrefixAttentionArgs args;
  args.kv = {p.pool.shape, mem.Upload(p.pool.k.data(), p.pool.k.size() * 2),
             mem.Upload(p.pool.v.data(), p.pool.v.size() * 2)};
  args.layer = PrefixProblem::kLayer;
  args.prefix = {PrefixProblem::kFirstPage, c.prefix_tokens};
  args.num_queries = c.num_queries;
  args.num_qo_heads = c.num_qo_heads;
  args.q = mem.Upload(p.q.data(), p.q.size() * 2);
  args.causal = c.causal;
  args.q_offset = c.q_offset;
  args.v_out = static_cast<float*>(mem.Poisoned(rows * dim * 4));
  args.s_out = static_cast<float*>(mem.Poisoned(rows * 4));
  backend.RunPrefixAttention(args);
  StepResult out;
  out.v = mem.Download<float>(args.v_out, rows * dim);
  out.s = mem.Download<float>(args.s_out, rows);
  return out;
}

RefOutput NaivePrefixCase(const PrefixCase& c, const PrefixProblem& p) {
  const int h = c.num_qo_heads, g = h / c.num_kv_heads, dim = c.head_dim;
  const int64_t rows = int64_t(c.num_queries) * h;
  RefOutput want{std::vector<double>(rows * dim), std::vector<double>(rows)};
  for (int i = 0; i < c.num_queries; ++i) {
    std::vector<int64_t> slots;
    for (int t = 0; t < Visible(c, i); ++t) slots.push_back(int64_t(PrefixProblem::kFirstPage) * c.page_size + t);
    for (int head = 0; head < h; ++head) {
      const int64_t row = int64_t(i) * h + head;
      const RefState st =
          NaiveAttention(p.pool, PrefixProblem::kLayer, head / g, &p.q[row * dim], slots, 1.0 / std::sqrt(double(dim)));
      std::copy(st.v.begin(), st.v.end(), want.v.begin() + row * dim);
      want.s[row] = st.s;
    }
  }
  return want;
}

}  // namespace prefixd::test
