#include "prefixd/coordinator/rank_setup.h"

#include "prefixd/comm/mpi_check.h"
#include "prefixd/common/error.h"

namespace prefixd::coordinator {

RankDevice ChooseRankDevice(const comm::MpiSession& session, const std::string& flag) {
  PREFIXD_CHECK_ARG(flag == "auto" || flag == "cuda" || flag == "cpu",
                    "--backend must be auto, cuda or cpu, got '" << flag << "'");
  RankDevice d;
  d.device = flag == "cpu" ? -1 : comm::SelectLocalDevice(session);
  int all_have_gpu = d.device >= 0 ? 1 : 0;
  PREFIXD_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &all_have_gpu, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
  if (flag == "cuda") PREFIXD_CHECK_ARG(all_have_gpu, "--backend cuda: some rank has no usable GPU");
  d.cuda = all_have_gpu == 1;
  if (!d.cuda) d.device = -1;
  return d;
}

std::unique_ptr<kernels::Backend> MakeRankBackend(const RankDevice& device) {
  if (!device.cuda) return kernels::MakeCpuBackend();
  kernels::BackendOptions options;
  options.device = device.device;
  return kernels::MakeCudaBackend(options);
}

std::unique_ptr<Engine> MakeEngine(const EngineOptions& options, const RankDevice& device, MPI_Comm control,
                                   int chunks) {
  PREFIXD_CHECK_ARG(chunks >= 1 && chunks <= 16, "pipeline chunks must be in [1, 16], got " << chunks);
  std::unique_ptr<kernels::Backend> backend = MakeRankBackend(device);
  std::unique_ptr<comm::Comm> data;
  if (device.cuda) {
    comm::CommOptions co;
    co.check_sizes = false;
    data = comm::MakeNcclComm(control, device.device, backend->stream(), co);
  } else {
    data = comm::MakeMpiComm(control);
  }
  auto engine = std::make_unique<Engine>(options, control, std::move(backend), std::move(data));
  for (int c = 1; c < chunks; ++c) engine->worker().AddPipelineBackend(MakeRankBackend(device));
  if (options.worker.split_own_rows)
    for (int c = 0; c < chunks; ++c) engine->worker().AddSplitBackend(MakeRankBackend(device));
  return engine;
}

}  // namespace prefixd::coordinator
