#include "bench/kernel/kernel_bench_common.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "prefixd/common/error.h"
#include "prefixd/kernels/kv_cache.h"

namespace prefixd::bench {

std::string Fmt(const char* fmt, double x) {
  if (std::isnan(x)) return "-";
  char buf[64];
  std::snprintf(buf, sizeof(buf), fmt, x);
  return buf;
}

double Median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double Tolerance(DType dtype) { return dtype == DType::kFloat16 ? 2e-3 : 1e-2; }

DecodeBatch MakeBatch(const Shape& s, std::mt19937_64& rng, KvPoolShape* pool) {
  const int prefix_pages = (s.prefix + s.page_size - 1) / s.page_size;
  const int suffix_pages = (s.suffix + s.page_size - 1) / s.page_size;
  *pool = KvPoolShape{1, kernels::OneGroupPoolPages(s.prefix, s.batch, s.suffix, s.page_size), s.page_size, s.h_kv,
                      s.head_dim, s.dtype};
  pool->Validate();
  std::vector<int32_t> pages(size_t(s.batch) * suffix_pages);
  std::iota(pages.begin(), pages.end(), prefix_pages);
  std::shuffle(pages.begin(), pages.end(), rng);
  DecodeBatch batch;
  batch.num_qo_heads = s.h_qo;
  batch.groups.push_back(kernels::PrefixGroup{kernels::PrefixRun{0, s.prefix}, 0, s.batch});
  for (int r = 0; r < s.batch; ++r) {
    std::vector<int32_t> own(pages.begin() + int64_t(r) * suffix_pages, pages.begin() + int64_t(r + 1) * suffix_pages);
    batch.suffix.AddSeq(own, s.suffix == 0 ? 0 : (s.suffix - 1) % s.page_size + 1);
  }
  return batch;
}

std::vector<int> SampleRequests(int batch, int count, std::mt19937_64& rng) {
  std::vector<int> all(batch);
  std::iota(all.begin(), all.end(), 0);
  if (count >= batch) return all;
  std::vector<int> sample = {0, batch - 1};
  std::shuffle(all.begin() + 1, all.end() - 1, rng);
  for (int i = 1; int(sample.size()) < count; ++i) sample.push_back(all[i]);
  sample.resize(std::min<size_t>(sample.size(), size_t(count)));
  std::sort(sample.begin(), sample.end());
  sample.erase(std::unique(sample.begin(), sample.end()), sample.end());
  return sample;
}


HostStates CpuReference(const KvPoolShape& pool, const std::vector<uint16_t>& k, const std::vector<uint16_t>& v,
                        const DecodeBatch& batch, const std::vector<int>& sample, const std::vector<uint16_t>& q) {
  const int h = batch.num_qo_heads, d = pool.head_dim;
  DecodeBatch sub;
  sub.num_qo_heads = h;
  sub.groups.push_back(kernels::PrefixGroup{batch.groups[0].prefix, 0, int32_t(sample.size())});
  std::vector<uint16_t> q_sub;
  for (int r : sample) {
    sub.suffix.AddSeq(std::vector<int32_t>(batch.suffix.indices.begin() + batch.suffix.indptr[r],
                                           batch.suffix.indices.begin() + batch.suffix.indptr[r + 1]),
                      batch.suffix.last_page_len[r]);
    q_sub.insert(q_sub.end(), q.begin() + int64_t(r) * h * d, q.begin() + int64_t(r + 1) * h * d);
  }
  auto cpu = kernels::MakeCpuBackend();
  cpu->LoadPlan(kernels::PlanCascade(sub, pool, cpu->DefaultPlanOptions()));
  HostStates out{std::vector<float>(sample.size() * h * d), std::vector<float>(sample.size() * h)};
  kernels::CascadeArgs args;
  args.kv = kernels::KvPoolView{pool, const_cast<uint16_t*>(k.data()), const_cast<uint16_t*>(v.data())};
  args.q = q_sub.data();
  args.v_out = out.v.data();
  args.s_out = out.s.data();
  cpu->RunCascade(args);
  return out;
}

bool CheckRows(const HostStates& got_all, const HostStates& want, const std::vector<int>& sample, int h, int d,
               DType dtype, Row* row) {
  double num = 0, den = 0, s_err = 0;
  bool finite = true;
  for (size_t i = 0; i < sample.size(); ++i)
    for (int head = 0; head < h; ++head) {
      const int64_t got_row = int64_t(sample[i]) * h + head, want_row = int64_t(i) * h + head;
      for (int e = 0; e < d; ++e) {
        const double g = got_all.v[got_row * d + e], w = want.v[want_row * d + e];
        finite &= std::isfinite(g);
        num += (g - w) * (g - w);
        den += w * w;
      }
      const double gs = got_all.s[got_row], ws = want.s[want_row];
      if (std::isinf(ws)) finite &= std::isinf(gs) && gs < 0;
      else {
        finite &= std::isfinite(gs);
        s_err = std::max(s_err, std::abs(gs - ws) / std::max(1.0, std::abs(ws)));
      }
    }
  const double v_err = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  row->check_v_err = std::max(row->check_v_err, std::isfinite(v_err) ? v_err : 1e30);
  row->check_s_err = std::max(row->check_s_err, s_err);
  const bool ok = finite && v_err <= Tolerance(dtype) && s_err <= kLseTol;
  if (!ok) ++row->wrong;
  return ok;
}

#ifdef PREFIXD_HAVE_CUDA
TimingOptions TimingFor(const Config& cfg) {
  TimingOptions t;
  t.warmups = cfg.warmups;
  t.iters = cfg.iters;
  t.flush_l2 = cfg.flush;
  t.flush = cfg.flush_mode;
  return t;
}
#endif

}  // namespace prefixd::bench
