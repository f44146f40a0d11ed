#include "prefixd/worker/reference.h"

#include "prefixd/common/error.h"
#include "prefixd/kernels/decode_batch.h"
#include "prefixd/kernels/plan.h"
#include "prefixd/kernels/synthetic_kv.h"
#include "prefixd/worker/backend_buffer.h"

namespace prefixd::worker {

void ReferenceDecode(kernels::Backend& backend, const ReferenceShape& shape, const std::vector<int32_t>& prefix,
                     const std::vector<int32_t>& suffix, int layer, std::vector<float>* v, std::vector<float>* s) {
  std::vector<int32_t> tokens = prefix;
  tokens.insert(tokens.end(), suffix.begin(), suffix.end());
  const int64_t n = int64_t(tokens.size());
  PREFIXD_CHECK_ARG(n > 0, "ReferenceDecode: empty sequence");
  kernels::KvPoolShape pool;
  pool.num_layers = 1;
  pool.page_size = shape.page_size;
  pool.num_pages = int((n + shape.page_size - 1) / shape.page_size);
  pool.num_kv_heads = shape.num_kv_heads;
  pool.head_dim = shape.head_dim;
  pool.dtype = shape.dtype;
  pool.Validate();
  const int hq = shape.num_qo_heads, d = shape.head_dim;

  BackendBuffer k(&backend), vv(&backend), q(&backend), v_out(&backend), s_out(&backend), q_meta(&backend);
  k.Reserve(size_t(pool.BytesPerArray()));
  vv.Reserve(size_t(pool.BytesPerArray()));
  kernels::KvPoolView kv{pool, k.get(), vv.get()};
  const std::vector<uint64_t> hashes = kernels::PrefixHashes(tokens);
  // Slots 0..n-1 in order: pages 0, 1, ... hold the sequence.
  kernels::FillSyntheticKvFromHost(backend, kv, hashes.data(), nullptr, nullptr, n, 0, 0, layer);

  // The last token's query: its hash and position.
  const uint64_t hash = hashes.back();
  const int64_t pos = n - 1;
  q_meta.Reserve(16);
  backend.CopyToDevice(q_meta.get(), &hash, 8);
  backend.CopyToDevice(q_meta.get<uint8_t>() + 8, &pos, 8);
  q.Reserve(size_t(hq) * d * 2);
  kernels::SyntheticQueries sq;
  sq.hashes = q_meta.get<uint64_t>();
  sq.positions = reinterpret_cast<const int64_t*>(q_meta.get<uint8_t>() + 8);
  sq.n = 1;
  sq.num_heads = hq;
  sq.head_dim = d;
  sq.dtype = shape.dtype;
  sq.layer = layer;
  sq.q = q.get();
  kernels::FillSyntheticQueries(backend, sq);

  kernels::DecodeBatch batch;
  batch.num_qo_heads = hq;
  batch.groups.push_back(kernels::PrefixGroup{kernels::PrefixRun{0, 0}, 0, 1});
  std::vector<int32_t> pages(pool.num_pages);
  for (int i = 0; i < pool.num_pages; ++i) pages[i] = i;
  batch.suffix.AddSeq(pages, int(n - int64_t(pool.num_pages - 1) * shape.page_size));
  backend.LoadPlan(kernels::PlanCascade(batch, pool, backend.DefaultPlanOptions()));
  v_out.Reserve(size_t(hq) * d * 4);
  s_out.Reserve(size_t(hq) * 4);
  kernels::CascadeArgs args;
  args.kv = kv;
  args.layer = 0;
  args.q = q.get();
  args.sm_scale = shape.sm_scale;
  args.v_out = v_out.get<float>();
  args.s_out = s_out.get<float>();
  backend.RunCascade(args);
  backend.Synchronize();
  v->resize(size_t(hq) * d);
  s->resize(hq);
  backend.CopyToHost(v->data(), v_out.get(), v->size() * 4);
  backend.CopyToHost(s->data(), s_out.get(), s->size() * 4);
}

}  // namespace prefixd::worker
