#include "prefixd/comm/bootstrap.h"

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <mutex>

#include "prefixd/comm/mpi_check.h"
#include "prefixd/common/error.h"

namespace prefixd::comm {
namespace {

std::string HostName() {
  char name[256] = {0};
  if (gethostname(name, sizeof(name) - 1) != 0) return "unknown-host";
  return name;
}

const char* ThreadLevelName(int level) {
  switch (level) {
    case MPI_THREAD_SINGLE: return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED: return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED: return "MPI_THREAD_SERIALIZED";
    case MPI_THREAD_MULTIPLE: return "MPI_THREAD_MULTIPLE";
  }
  return "unknown";
}

int CheckedInt(size_t n, const char* what) {
  PREFIXD_CHECK_ARG(n <= size_t(INT_MAX), what << " of " << n << " bytes exceeds MPI's int count");
  return static_cast<int>(n);
}

std::mutex g_abort_mutex;
std::vector<Comm*>& AbortRegistry() {
  static std::vector<Comm*> comms;
  return comms;
}

}  // namespace

MpiSession::MpiSession(int* argc, char*** argv, int thread_level) : host_(HostName()) {
  int initialized = 0;
  PREFIXD_MPI_CHECK(MPI_Initialized(&initialized));
  int provided = MPI_THREAD_SINGLE;
  if (initialized) {
    PREFIXD_MPI_CHECK(MPI_Query_thread(&provided));
  } else {
    // MPI_Init_thread's return code can only be reported through MPI_ERRORS_ARE_FATAL here.
    PREFIXD_MPI_CHECK(MPI_Init_thread(argc, argv, thread_level, &provided));
    owns_mpi_ = true;
  }
  PREFIXD_MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  PREFIXD_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank_));
  PREFIXD_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size_));
  SetErrorRank(rank_);
  if (provided < thread_level) {
    const std::string message = std::string("MPI provides ") + ThreadLevelName(provided) +
                                ", prefixd needs " + ThreadLevelName(thread_level);
    if (owns_mpi_) MPI_Finalize();
    ThrowError(ErrorKind::kUnsupported, "MPI", message, __FILE__, __LINE__);
  }
  PREFIXD_MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_,
                                        MPI_INFO_NULL, &node_));
  PREFIXD_MPI_CHECK(MPI_Comm_rank(node_, &local_rank_));
  PREFIXD_MPI_CHECK(MPI_Comm_size(node_, &local_size_));
}

MpiSession::~MpiSession() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  if (node_ != MPI_COMM_NULL) MPI_Comm_free(&node_);
  // Errors in a destructor cannot be thrown; MPI_Finalize failing leaves nothing to clean up.
  if (owns_mpi_) MPI_Finalize();
}

LocalRank NodeLocalRank(MPI_Comm comm) {
  int rank = 0;
  PREFIXD_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  MPI_Comm node = MPI_COMM_NULL;
  PREFIXD_MPI_CHECK(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node));
  LocalRank out;
  const int rc_rank = MPI_Comm_rank(node, &out.rank);
  const int rc_size = MPI_Comm_size(node, &out.size);
  MPI_Comm_free(&node);
  PREFIXD_MPI_CHECK(rc_rank);
  PREFIXD_MPI_CHECK(rc_size);
  return out;
}

int DeviceForLocalRank(int local_rank, int device_count) {
  PREFIXD_CHECK_ARG(local_rank >= 0, "local rank " << local_rank << " is negative");
  if (device_count <= 0) return -1;
  return local_rank % device_count;
}

void RegisterForAbort(Comm* comm) {
  std::lock_guard<std::mutex> lock(g_abort_mutex);
  AbortRegistry().push_back(comm);
}

void UnregisterForAbort(Comm* comm) {
  std::lock_guard<std::mutex> lock(g_abort_mutex);
  auto& comms = AbortRegistry();
  comms.erase(std::remove(comms.begin(), comms.end(), comm), comms.end());
}

void AbortAllComms() noexcept {
  std::lock_guard<std::mutex> lock(g_abort_mutex);
  for (Comm* comm : AbortRegistry()) {
    try {
      comm->Abort();
    } catch (...) {
      // Best effort: the job is going down through MPI_Abort next anyway.
    }
  }
}

void BroadcastBytes(MPI_Comm comm, std::vector<uint8_t>& data, int root) {
  // The size first, so non-root ranks can size their buffers (one extra tiny broadcast).
  uint64_t n = data.size();
  PREFIXD_MPI_CHECK(MPI_Bcast(&n, 1, MPI_UINT64_T, root, comm));
  data.resize(n);
  // Large plans go in int-sized pieces: MPI counts are int.
  const size_t kChunk = size_t(1) << 30;
  for (size_t begin = 0; begin < n; begin += kChunk) {
    const size_t len = std::min<size_t>(kChunk, n - begin);
    PREFIXD_MPI_CHECK(MPI_Bcast(data.data() + begin, CheckedInt(len, "broadcast piece"), MPI_BYTE,
                                root, comm));
  }
}

void BroadcastInts(MPI_Comm comm, std::vector<int32_t>& data, int root) {
  uint64_t n = data.size();
  PREFIXD_MPI_CHECK(MPI_Bcast(&n, 1, MPI_UINT64_T, root, comm));
  data.resize(n);
  const size_t kChunk = size_t(1) << 28;
  for (size_t begin = 0; begin < n; begin += kChunk) {
    const size_t len = std::min<size_t>(kChunk, n - begin);
    PREFIXD_MPI_CHECK(MPI_Bcast(data.data() + begin, static_cast<int>(len), MPI_INT32_T, root, comm));
  }
}

void BroadcastString(MPI_Comm comm, std::string& text, int root) {
  std::vector<uint8_t> bytes(text.begin(), text.end());
  BroadcastBytes(comm, bytes, root);
  text.assign(bytes.begin(), bytes.end());
}

std::vector<int32_t> AllGatherInt(MPI_Comm comm, int32_t value) {
  int size = 0;
  PREFIXD_MPI_CHECK(MPI_Comm_size(comm, &size));
  std::vector<int32_t> out(size);
  PREFIXD_MPI_CHECK(MPI_Allgather(&value, 1, MPI_INT32_T, out.data(), 1, MPI_INT32_T, comm));
  return out;
}

std::vector<RankStatus> GatherStatus(MPI_Comm comm, const RankStatus& mine, int root) {
  int rank = 0, size = 0;
  PREFIXD_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  PREFIXD_MPI_CHECK(MPI_Comm_size(comm, &size));
  const int32_t header[2] = {mine.code, CheckedInt(mine.message.size(), "status message")};
  std::vector<int32_t> headers(rank == root ? 2 * size : 0);
  PREFIXD_MPI_CHECK(MPI_Gather(header, 2, MPI_INT32_T, headers.data(), 2, MPI_INT32_T, root, comm));
  std::vector<int> counts, displs;
  std::vector<char> text;
  if (rank == root) {
    counts.resize(size);
    displs.resize(size);
    size_t total = 0;
    for (int r = 0; r < size; ++r) {
      counts[r] = headers[2 * r + 1];
      displs[r] = CheckedInt(total, "gathered status messages");
      total += counts[r];
    }
    text.resize(total);
  }
  PREFIXD_MPI_CHECK(MPI_Gatherv(mine.message.data(), header[1], MPI_CHAR, text.data(),
                                counts.data(), displs.data(), MPI_CHAR, root, comm));
  std::vector<RankStatus> out;
  if (rank != root) return out;
  out.resize(size);
  for (int r = 0; r < size; ++r) {
    out[r].code = headers[2 * r];
    out[r].message.assign(text.data() + displs[r], counts[r]);
  }
  return out;
}

}  // namespace prefixd::comm
