// The engine: one Worker on every rank, the Coordinator on rank 0, and the step loop between
// them. Step() is collective: rank 0 makes the plan, MPI broadcasts it (MPI is the control plane:
// one MPI_Bcast of a fixed-size message unless the plan is long; in steady decoding only a delta,
// the step number and the tokens, the rest being the last plan's), every rank executes it (the Comm given to the worker is the data plane).
//
// Admission is rank 0's business: call coordinator() there between steps (AddPrefix, AddRequest,
// RemoveRequest, ReleasePrefix); a refusal throws there and changes nothing anywhere, since
// nothing is broadcast until the next Step().
#pragma once

#include <mpi.h>

#include <memory>
#include <vector>

#include "prefixd/coordinator/coordinator.h"
#include "prefixd/worker/step_plan.h"
#include "prefixd/worker/worker.h"

namespace prefixd::coordinator {

struct EngineOptions {
  worker::WorkerOptions worker;   // pool shape (pages per rank), heads, reduction
  PlacementOptions placement;
  uint64_t seed = 0;
  int32_t vocab = 128256;
};

class Engine {
 public:
  // Collective over `control` (whose ranks must be the Comm's ranks, in the same order).
  Engine(const EngineOptions& options, MPI_Comm control, std::unique_ptr<kernels::Backend> backend,
         std::unique_ptr<comm::Comm> comm);

  int rank() const { return rank_; }
  int num_ranks() const { return size_; }
  bool is_coordinator() const { return rank_ == 0; }
  // Rank 0 only (throws elsewhere).
  Coordinator& coordinator();
  worker::Worker& worker() { return *worker_; }

  // Collective. Returns the plan every rank executed.
  const worker::StepPlan& Step();
  const worker::StepPlan& last_plan() const { return plan_; }
  // Steps broadcast as a delta (same requests as the step before, no events: only the step
  // number and the tokens travel) and as a full plan, on rank 0 (the other ranks count too).
  int64_t delta_steps() const { return delta_steps_; }
  int64_t full_steps() const { return full_steps_; }

  // Collective. Final states of the last step at `layer` for the requests `ids` (significant on
  // rank 0 only; every request must have decoded in the last step). On rank 0: v [ids][H_qo][D],
  // s [ids][H_qo]; elsewhere both empty.
  void GatherOutputs(const std::vector<int32_t>& ids, int layer, std::vector<float>* v, std::vector<float>* s);

  // Collective: every rank's memory report, on rank 0 (elsewhere empty).
  std::vector<worker::WorkerMemory> GatherMemory();

 private:
  EngineOptions options_;
  MPI_Comm control_;
  int rank_ = 0, size_ = 1;
  std::unique_ptr<Coordinator> coordinator_;
  std::unique_ptr<worker::Worker> worker_;
  worker::StepPlan plan_;
  bool has_plan_ = false;
  std::vector<int32_t> wire_;        // the step message, kept (no per-step allocation)
  int64_t delta_steps_ = 0, full_steps_ = 0;
};

}  // namespace prefixd::coordinator
