#include "prefixd/coordinator/engine.h"

#include <algorithm>
#include <map>

#include "prefixd/comm/bootstrap.h"
#include "prefixd/comm/mpi_check.h"
#include "prefixd/common/error.h"

namespace prefixd::coordinator {

Engine::Engine(const EngineOptions& options, MPI_Comm control, std::unique_ptr<kernels::Backend> backend,
               std::unique_ptr<comm::Comm> comm)
    : options_(options), control_(control) {
  PREFIXD_MPI_CHECK(MPI_Comm_rank(control, &rank_));
  PREFIXD_MPI_CHECK(MPI_Comm_size(control, &size_));
  PREFIXD_CHECK_ARG(comm != nullptr && comm->size() == size_ && comm->rank() == rank_,
                    "Engine: the data-plane comm must span the control communicator's ranks in order");
  worker_ = std::make_unique<worker::Worker>(options.worker, std::move(backend), std::move(comm));
  if (rank_ == 0) {
    ClusterConfig config;
    config.num_ranks = size_;
    config.pages_per_rank = options.worker.pool.num_pages;
    config.page_size = options.worker.pool.page_size;
    config.placement = options.placement;
    config.seed = options.seed;
    config.vocab = options.vocab;
    coordinator_ = std::make_unique<Coordinator>(config);
  }
}

Coordinator& Engine::coordinator() {
  PREFIXD_CHECK_ARG(coordinator_ != nullptr, "Engine: the coordinator lives on rank 0, not on rank " << rank_);
  return *coordinator_;
}

const worker::StepPlan& Engine::Step() {
  const double t0 = MPI_Wtime();
  std::vector<int32_t> wire;
  if (rank_ == 0) wire = coordinator_->MakeStep().Serialize();
  const double t_made = MPI_Wtime();
  comm::BroadcastInts(control_, wire, 0);
  plan_ = worker::StepPlan::Deserialize(wire);
  const double t1 = MPI_Wtime();
  worker_->Execute(plan_);
  worker::StepProfile& p = worker_->profile();
  p.plan_ms += (t1 - t0) * 1e3;
  p.plan_make_ms += (t_made - t0) * 1e3;
  p.total_ms += (t1 - t0) * 1e3;
  return plan_;
}

void Engine::GatherOutputs(const std::vector<int32_t>& ids_in, int layer, std::vector<float>* v,
                           std::vector<float>* s) {
  std::vector<int32_t> ids = ids_in;
  comm::BroadcastInts(control_, ids, 0);
  const int hq = options_.worker.num_qo_heads, d = options_.worker.pool.head_dim;
  std::vector<float> my_v, my_s;
  worker_->CopyOutputs(layer, &my_v, &my_s);
  const std::vector<int32_t>& owned = worker_->owned_outputs();
  std::map<int32_t, int> row_of;
  for (size_t j = 0; j < owned.size(); ++j) row_of[owned[j]] = int(j);
  // Each rank sends (index into ids, v row, s row) for the ids it owns, rank 0 places them.
  const int row = hq * d + hq + 1;
  std::vector<float> mine;
  for (size_t i = 0; i < ids.size(); ++i) {
    auto it = row_of.find(ids[i]);
    if (it == row_of.end()) continue;
    mine.push_back(float(i));
    mine.insert(mine.end(), my_v.begin() + int64_t(it->second) * hq * d, my_v.begin() + int64_t(it->second + 1) * hq * d);
    mine.insert(mine.end(), my_s.begin() + int64_t(it->second) * hq, my_s.begin() + int64_t(it->second + 1) * hq);
  }
  int count = int(mine.size());
  std::vector<int> counts(size_), displs(size_);
  PREFIXD_MPI_CHECK(MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, control_));
  std::vector<float> all;
  if (rank_ == 0) {
    int total = 0;
    for (int r = 0; r < size_; ++r) {
      displs[r] = total;
      total += counts[r];
    }
    all.resize(std::max(total, 1));
  }
  PREFIXD_MPI_CHECK(MPI_Gatherv(mine.data(), count, MPI_FLOAT, all.data(), counts.data(), displs.data(), MPI_FLOAT, 0,
                                control_));
  v->clear();
  s->clear();
  if (rank_ != 0) return;
  v->assign(ids.size() * hq * d, 0.f);
  s->assign(ids.size() * hq, 0.f);
  std::vector<uint8_t> found(ids.size(), 0);
  const size_t total = size_t(displs[size_ - 1] + counts[size_ - 1]);
  for (size_t off = 0; off + row <= total; off += row) {
    const size_t i = size_t(all[off]);
    std::copy(all.begin() + off + 1, all.begin() + off + 1 + hq * d, v->begin() + i * hq * d);
    std::copy(all.begin() + off + 1 + hq * d, all.begin() + off + row, s->begin() + i * hq);
    found[i] = 1;
  }
  for (size_t i = 0; i < ids.size(); ++i)
    PREFIXD_CHECK_ARG(found[i], "GatherOutputs: request " << ids[i] << " has no output from the last step on any rank");
}

std::vector<worker::WorkerMemory> Engine::GatherMemory() {
  const worker::WorkerMemory m = worker_->Memory();
  const int64_t mine[5] = {m.pool_bytes, m.pages_total, m.pages_prefix, m.pages_suffix, m.workspace_bytes};
  std::vector<int64_t> all(size_t(size_) * 5);
  PREFIXD_MPI_CHECK(MPI_Gather(mine, 5, MPI_INT64_T, all.data(), 5, MPI_INT64_T, 0, control_));
  std::vector<worker::WorkerMemory> out;
  if (rank_ != 0) return out;
  for (int r = 0; r < size_; ++r) {
    worker::WorkerMemory w;
    w.pool_bytes = all[r * 5];
    w.pages_total = int32_t(all[r * 5 + 1]);
    w.pages_prefix = int32_t(all[r * 5 + 2]);
    w.pages_suffix = int32_t(all[r * 5 + 3]);
    w.workspace_bytes = all[r * 5 + 4];
    out.push_back(w);
  }
  return out;
}

}  // namespace prefixd::coordinator
