// A small MPI program that fails on purpose, for the "fail loudly, never hang" tests
// (run_failure_test.sh drives it under mpirun and checks exit code, time and output).
//
//   prefixd_failure_rank MODE [--rank R] [--at N] [--backend mpi|nccl]
//     MODE ok:     every rank runs 50 all-reduces and exits 0
//     MODE throw:  rank R throws a prefixd::Error at iteration N while the others wait in the
//                  collective of iteration N
//     MODE kill:   rank R sends itself SIGKILL at iteration N (no handler can run)
//     MODE return: rank R's body returns 3 at iteration N
//   --backend nccl uses NcclComm on device buffers (needs a GPU per rank).
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#if defined(PREFIXD_HAVE_CUDA)
#include <cuda_runtime.h>
#endif

#include "prefixd/comm/bootstrap.h"
#include "prefixd/comm/fatal.h"
#include "prefixd/common/error.h"

namespace {

struct Args {
  std::string mode = "ok";
  int rank = 1;
  int at = 20;
  std::string backend = "mpi";
};

Args Parse(int argc, char** argv) {
  Args args;
  if (argc > 1) args.mode = argv[1];
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string key = argv[i];
    if (key == "--rank") args.rank = std::atoi(argv[i + 1]);
    else if (key == "--at") args.at = std::atoi(argv[i + 1]);
    else if (key == "--backend") args.backend = argv[i + 1];
    else PREFIXD_THROW(prefixd::ErrorKind::kInvalidArgument, "unknown option " << key);
  }
  PREFIXD_CHECK_ARG(args.mode == "ok" || args.mode == "throw" || args.mode == "kill" || args.mode == "return",
                    "unknown mode " << args.mode);
  return args;
}

int Body(prefixd::comm::MpiSession& session, int argc, char** argv) {
  using namespace prefixd::comm;
  const Args args = Parse(argc, argv);
  const size_t count = 4096;
  std::unique_ptr<Comm> comm;
  float* data = nullptr;
  std::vector<float> host(count, 1.0f);
  if (args.backend == "nccl") {
#if defined(PREFIXD_HAVE_CUDA)
    const int device = SelectLocalDevice(session);
    PREFIXD_CHECK_ARG(device >= 0, "--backend nccl needs a GPU");
    if (cudaMalloc(&data, count * sizeof(float)) != cudaSuccess)
      PREFIXD_THROW(prefixd::ErrorKind::kOutOfMemory, "cudaMalloc failed");
    cudaMemcpy(data, host.data(), count * sizeof(float), cudaMemcpyHostToDevice);
    cudaDeviceSynchronize();  // the pageable copy's DMA has landed before the Comm's stream reads it
    comm = MakeNcclComm(MPI_COMM_WORLD, device, nullptr);
#else
    PREFIXD_THROW(prefixd::ErrorKind::kUnsupported, "built without CUDA");
#endif
  } else {
    comm = MakeMpiComm(MPI_COMM_WORLD);
    data = host.data();
  }
  const int iterations = args.mode == "ok" ? 50 : 1000000;  // the others wait; the job must end
  for (int it = 0; it < iterations; ++it) {
    if (args.mode != "ok" && session.rank() == args.rank && it == args.at) {
      usleep(300 * 1000);  // let the other ranks settle inside the collective
      std::fprintf(stderr, "rank %d: injecting '%s' at iteration %d\n", session.rank(), args.mode.c_str(), it);
      std::fflush(stderr);
      if (args.mode == "throw")
        PREFIXD_THROW(prefixd::ErrorKind::kInternal, "injected failure at iteration " << it);
      if (args.mode == "kill") raise(SIGKILL);
      if (args.mode == "return") return 3;
    }
    // Max keeps the values bounded however long the loop runs.
    comm->AllReduceMax(data, count, nullptr);
    comm->Synchronize(nullptr);
  }
  comm.reset();
#if defined(PREFIXD_HAVE_CUDA)
  if (args.backend == "nccl") cudaFree(data);
#endif
  if (session.rank() == 0) std::printf("all %d iterations done\n", iterations);
  return 0;
}

}  // namespace

// ctest's skip code: the NCCL scenarios need one GPU per rank of this host. Decided before MPI
// starts, identically on every rank (each sees the same devices and OMPI_COMM_WORLD_LOCAL_SIZE).
constexpr int kSkip = 77;

bool WantsNccl(int argc, char** argv) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--backend") == 0 && std::strcmp(argv[i + 1], "nccl") == 0) return true;
  return false;
}

int main(int argc, char** argv) {
  if (WantsNccl(argc, argv)) {
    const char* local = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
    const int needed = local != nullptr ? std::atoi(local) : 1;
    const int devices = prefixd::comm::CudaDeviceCount();
    if (devices < needed) {
      std::printf("SKIP: --backend nccl needs %d GPUs on this host, %d usable\n", needed, devices);
      return kSkip;
    }
  }
  return prefixd::comm::RunRankMain(argc, argv, [&](prefixd::comm::MpiSession& session) {
    return Body(session, argc, argv);
  });
}
