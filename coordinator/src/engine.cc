#include "prefixd/coordinator/engine.h"

#include <algorithm>
#include <limits>
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

namespace {

// The control-plane message of a step, in one MPI_Bcast of kInlineInts (a second one carries
// the rest of a longer message): [total ints, kind, ...].
//  kind kDelta: nothing but decoding happened and the decode list names the same requests in the
//    same order as the last step's: [step lo, step hi, n, n tokens]. Every rank then reuses its
//    last plan with the new step number and tokens (no events).
//  kind kFull: the StepPlan's serialised form.
constexpr int kInlineInts = 1024;
constexpr int32_t kDelta = 1, kFull = 2;

bool SameRequests(const worker::StepPlan& a, const worker::StepPlan& b) {
  if (a.decode.size() != b.decode.size()) return false;
  for (size_t i = 0; i < a.decode.size(); ++i)
    if (a.decode[i].request_id != b.decode[i].request_id) return false;
  return true;
}

}  // namespace

const worker::StepPlan& Engine::Step() {
  const double t0 = MPI_Wtime();
  std::vector<int32_t>& wire = wire_;
  bool delta = false;
  if (rank_ == 0) {
    worker::StepPlan next = coordinator_->MakeStep();
    delta = has_plan_ && next.events.empty() && SameRequests(next, plan_);
    wire.assign(2, 0);
    if (delta) {
      wire[1] = kDelta;
      wire.push_back(int32_t(uint32_t(uint64_t(next.step) & 0xffffffffu)));
      wire.push_back(int32_t(uint32_t(uint64_t(next.step) >> 32)));
      wire.push_back(int32_t(next.decode.size()));
      for (const worker::DecodeEntry& e : next.decode) wire.push_back(e.token);
    } else {
      wire[1] = kFull;
      const std::vector<int32_t> full = next.Serialize();
      wire.insert(wire.end(), full.begin(), full.end());
    }
    PREFIXD_CHECK_ARG(wire.size() <= size_t(std::numeric_limits<int32_t>::max()),
                      "step plan of " << wire.size() << " ints is too long to broadcast");
    wire[0] = int32_t(wire.size());
    plan_ = std::move(next);
  }
  const double t_made = MPI_Wtime();
  if (size_ > 1) {
    wire.resize(std::max<size_t>(wire.size(), kInlineInts));
    PREFIXD_MPI_CHECK(MPI_Bcast(wire.data(), kInlineInts, MPI_INT32_T, 0, control_));
    const int32_t total = wire[0];
    PREFIXD_CHECK_INTERNAL(total >= 2, "step plan message of " << total << " ints");
    if (total > kInlineInts) {
      wire.resize(size_t(total));
      PREFIXD_MPI_CHECK(MPI_Bcast(wire.data() + kInlineInts, total - kInlineInts, MPI_INT32_T, 0, control_));
    }
    delta = wire[1] == kDelta;
    if (rank_ != 0) {
      if (delta) {
        const int32_t n = wire[4];
        PREFIXD_CHECK_INTERNAL(has_plan_ && n == int32_t(plan_.decode.size()) && total == 5 + n,
                               "delta step plan for " << n << " requests, the last plan had " << plan_.decode.size());
        plan_.step = int64_t(uint64_t(uint32_t(wire[2])) | (uint64_t(uint32_t(wire[3])) << 32));
        plan_.events.clear();
        for (int32_t i = 0; i < n; ++i) plan_.decode[i].token = wire[5 + i];
      } else {
        PREFIXD_CHECK_INTERNAL(wire[1] == kFull, "step plan message of unknown kind " << wire[1]);
        plan_ = worker::StepPlan::Deserialize(std::vector<int32_t>(wire.begin() + 2, wire.begin() + total));
      }
    }
  }
  has_plan_ = true;
  ++(delta ? delta_steps_ : full_steps_);
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
