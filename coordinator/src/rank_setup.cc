#include "prefixd/coordinator/rank_setup.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <unistd.h>

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

std::unique_ptr<kernels::Backend> MakeRankBackend(const RankDevice& device, bool single_rank) {
  if (!device.cuda) return kernels::MakeCpuBackend();
  kernels::BackendOptions options;
  options.device = device.device;
  options.concurrent_prefix_decode = single_rank;
  return kernels::MakeCudaBackend(options);
}

int64_t ReservedDeviceBytes(int64_t total_bytes) { return std::max<int64_t>(int64_t(2) << 30, total_bytes / 20); }

int64_t PagesThatFit(int64_t free_bytes, int64_t total_bytes, int64_t page_bytes) {
  PREFIXD_CHECK_ARG(page_bytes > 0, "PagesThatFit: page_bytes must be positive, got " << page_bytes);
  return std::max<int64_t>(0, free_bytes - ReservedDeviceBytes(total_bytes)) / page_bytes;
}

int64_t ReservedHostBytes(int64_t share_bytes) { return share_bytes / 2; }

int64_t HostAvailableBytes() {
  if (FILE* f = std::fopen("/proc/meminfo", "r")) {
    char line[256];
    long long kib = -1;
    while (std::fgets(line, sizeof(line), f))
      if (std::sscanf(line, "MemAvailable: %lld kB", &kib) == 1) break;
    std::fclose(f);
    if (kib >= 0) return int64_t(kib) * 1024;
  }
  const long pages = sysconf(_SC_AVPHYS_PAGES), page_bytes = sysconf(_SC_PAGESIZE);
  return pages > 0 && page_bytes > 0 ? int64_t(pages) * page_bytes : 0;
}

KvPoolRoom FindKvPoolRoom(MPI_Comm comm, const RankDevice& device, const kernels::KvPoolShape& pool) {
  KvPoolRoom room;
  room.host = !device.cuda;
  const int64_t page_bytes = pool.BytesPerPage();
  int64_t mine[3] = {0, 0, 0};  // pages, free (or share) bytes, reserved bytes
  if (device.cuda) {
    const kernels::DeviceMemory m = kernels::CudaDeviceMemory(device.device);
    mine[0] = PagesThatFit(m.free_bytes, m.total_bytes, page_bytes);
    mine[1] = m.free_bytes;
    mine[2] = ReservedDeviceBytes(m.total_bytes);
  } else {
    // The ranks on one host share its memory: each sizes its pool from its part of it.
    MPI_Comm local = MPI_COMM_NULL;
    PREFIXD_MPI_CHECK(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local));
    int local_ranks = 1;
    PREFIXD_MPI_CHECK(MPI_Comm_size(local, &local_ranks));
    PREFIXD_MPI_CHECK(MPI_Comm_free(&local));
    const int64_t share = HostAvailableBytes() / local_ranks;
    mine[1] = share;
    mine[2] = ReservedHostBytes(share);
    mine[0] = std::max<int64_t>(0, share - mine[2]) / page_bytes;
  }
  int size = 0;
  PREFIXD_MPI_CHECK(MPI_Comm_size(comm, &size));
  std::vector<int64_t> all(3 * size_t(size));
  PREFIXD_MPI_CHECK(MPI_Allgather(mine, 3, MPI_INT64_T, all.data(), 3, MPI_INT64_T, comm));
  size_t fullest = 0;
  for (size_t r = 1; r < size_t(size); ++r)
    if (all[3 * r] < all[3 * fullest]) fullest = r;
  room.pages = all[3 * fullest];
  room.free_bytes = all[3 * fullest + 1];
  room.reserved_bytes = std::min(all[3 * fullest + 2], room.free_bytes);
  return room;
}

std::string FormatBytes(double bytes) {
  char buf[32];
  if (bytes >= double(int64_t(1) << 30)) std::snprintf(buf, sizeof(buf), "%.2f GiB", bytes / double(int64_t(1) << 30));
  else std::snprintf(buf, sizeof(buf), "%.2f MiB", bytes / double(1 << 20));
  return buf;
}

std::string KvPoolShortfall(const kernels::KvPoolShape& pool, const KvPoolRoom& room) {
  const double page_bytes = double(pool.BytesPerPage());
  const std::string free_bytes = FormatBytes(double(room.free_bytes));
  const std::string kept_bytes = FormatBytes(double(room.reserved_bytes));
  const std::string where =
      room.host ? "share of host memory is " + free_bytes + ", of which " + kept_bytes + " stay for workspaces"
                : "GPU has " + free_bytes + " free, of which " + kept_bytes + " stay for workspaces and NCCL";
  return std::to_string(pool.num_pages) + " KV pages per rank (" + FormatBytes(page_bytes * pool.num_pages) +
         "), but the fullest rank's " + where + ": room for " + std::to_string(room.pages) + " pages of " +
         FormatBytes(page_bytes) + " (K and V of " + std::to_string(pool.page_size) + " tokens in " +
         std::to_string(pool.num_layers) + " layers)";
}

std::unique_ptr<Engine> MakeEngine(const EngineOptions& options, const RankDevice& device, MPI_Comm control,
                                   int chunks) {
  PREFIXD_CHECK_ARG(chunks >= 1 && chunks <= 16, "pipeline chunks must be in [1, 16], got " << chunks);
  int ranks = 0;
  PREFIXD_MPI_CHECK(MPI_Comm_size(control, &ranks));
  // The concurrent prefix/decode mode on one rank only (BackendOptions::concurrent_prefix_decode;
  // the mode measured slower in the multi-rank engine, bench/RESULTS.md session 7).
  const bool single_rank = ranks == 1;
  std::unique_ptr<kernels::Backend> backend = MakeRankBackend(device, single_rank);
  std::unique_ptr<comm::Comm> data;
  if (device.cuda) {
    comm::CommOptions co;
    co.check_sizes = false;
    data = comm::MakeNcclComm(control, device.device, backend->stream(), co);
  } else {
    data = comm::MakeMpiComm(control);
  }
  auto engine = std::make_unique<Engine>(options, control, std::move(backend), std::move(data));
  for (int c = 1; c < chunks; ++c) engine->worker().AddPipelineBackend(MakeRankBackend(device, single_rank));
  if (options.worker.split_own_rows)
    for (int c = 0; c < chunks; ++c) engine->worker().AddSplitBackend(MakeRankBackend(device, single_rank));
  return engine;
}

}  // namespace prefixd::coordinator
