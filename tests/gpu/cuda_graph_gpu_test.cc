// A decode step captured in a CUDA graph and replayed: same results as the oracle, and a replay
// after new queries are written to the same buffer computes with the new queries. The fused,
// concurrent and early-decode steps too (one root node for the fused step).
//
// Every test starts with a GPU guard and skips (with the reason) when there is no usable GPU;
// PREFIXD_GPU_TESTS_CPU_STAND_IN=1 runs the backend-level ones with the CPU backend in the GPU's
// place (gpu_backend_fixture.h). The helpers these files share are in gpu_backend_fixture.h.
#include "gpu/gpu_backend_fixture.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "prefixd/kernels/plan.h"
#include "support/backend_step.h"
#include "support/test_support.h"
#include "unit/kernels/random_batch.h"

#ifdef PREFIXD_HAVE_CUDA
#include <cuda_runtime.h>

#include "kernels/cuda/cascade_fused.h"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/sm90a/prefix_attention_sm90a.h"
#endif

namespace prefixd::test {
namespace {

#ifdef PREFIXD_HAVE_CUDA
// Captures one RunCascade of `device` and replays it twice (the second time with new queries);
// *root_nodes: the captured graph's root nodes (kernels with no dependency); *kernel_priorities (if
// given): the captured kernel nodes' priorities.
void ExpectCapturedStepReplays(Backend& device, size_t* root_nodes, std::vector<int>* kernel_priorities = nullptr) {
  PREFIXD_SEEDED_RNG(rng);
  const std::vector<GroupSpec> groups = {{700, {17, 40, 1}}, {0, {300}}, {130, {0, 9}}};
  const KvPoolShape shape{1, PagesNeeded(groups, 16) + 2, 16, 8, 128, kF16};
  kernels::PageAllocator alloc(shape.num_pages);
  const DecodeBatch batch = BuildBatch(groups, 32, 16, alloc, rng);
  const HostKvPool pool = RandomKvPool(rng, shape);
  const CascadePlan plan = kernels::PlanCascade(batch, shape, CascadeOptions(device));
  ASSERT_FALSE(plan.prefix_items.empty());
  ASSERT_FALSE(plan.decode_items.empty());
  const int64_t rows = int64_t(batch.num_requests()) * batch.num_qo_heads, n = rows * shape.head_dim;

  BackendBuffers mem(device);
  std::vector<uint16_t> q = MakeQueries(rng, pool, 0, batch, true, kPeakyScale);
  const kernels::CascadeArgs args = StepArgs(mem, pool, 0, q, rows);
  device.LoadPlan(plan);
  device.RunCascade(args);  // warm-up outside the capture (first launches set kernel attributes)
  device.Synchronize();

  // Global mode: the capture fails if RunCascade makes any call unsafe during capture
  // (allocation, synchronisation, a synchronous copy).
  auto stream = static_cast<cudaStream_t>(device.stream());
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), cudaSuccess);
  device.RunCascade(args);
  ASSERT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
  ASSERT_EQ(cudaGraphGetRootNodes(graph, nullptr, root_nodes), cudaSuccess);
  if (kernel_priorities != nullptr) {
    size_t count = 0;
    ASSERT_EQ(cudaGraphGetNodes(graph, nullptr, &count), cudaSuccess);
    std::vector<cudaGraphNode_t> nodes(count);
    ASSERT_EQ(cudaGraphGetNodes(graph, nodes.data(), &count), cudaSuccess);
    for (cudaGraphNode_t node : nodes) {
      cudaGraphNodeType type;
      ASSERT_EQ(cudaGraphNodeGetType(node, &type), cudaSuccess);
      if (type != cudaGraphNodeTypeKernel) continue;
      cudaLaunchAttributeValue value{};
      ASSERT_EQ(cudaGraphKernelNodeGetAttribute(node, cudaLaunchAttributePriority, &value), cudaSuccess);
      kernel_priorities->push_back(value.priority);
    }
  }
  // With the captured streams' priorities (the concurrent step's prefix first; cuda_backend.h).
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, cudaGraphInstantiateFlagUseNodePriority), cudaSuccess);

  for (int replay = 0; replay < 2; ++replay) {
    if (replay == 1) {  // new queries in the captured buffer
      q = MakeQueries(rng, pool, 0, batch, false, kPeakyScale);
      device.CopyToDevice(const_cast<void*>(args.q), q.data(), q.size() * 2);
    }
    device.Fill(args.o, 0xFF, n * 2);
    device.Fill(args.v_out, 0xFF, n * 4);
    device.Fill(args.s_out, 0xFF, rows * 4);
    ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
    const StepResult got = DownloadStep(mem, args, shape.dtype, rows, shape.head_dim);
    const RefOutput want = NaiveCascade(pool, 0, batch, q, 1.0 / std::sqrt(double(shape.head_dim)));
    ExpectMatchesOracle(got, want, shape.dtype, "graph replay " + std::to_string(replay));
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
}
#endif

// The fused step is ONE kernel: a captured step has a single root node and replays correctly.
TEST(CudaGraph, FusedStepIsOneNodeAndReplaysCorrectly) {
#ifdef PREFIXD_HAVE_CUDA
  PREFIXD_REQUIRE_FUSED();
  size_t roots = 0;
  ExpectCapturedStepReplays(Fused(), &roots);
  EXPECT_EQ(roots, 1u) << "the fused step should be one kernel node";
#else
  GTEST_SKIP() << "built without CUDA";
#endif
}

TEST(CudaGraph, CapturedStepReplaysCorrectly) {
  PREFIXD_REQUIRE_GPU();
#ifdef PREFIXD_HAVE_CUDA
  size_t roots = 0;
  ExpectCapturedStepReplays(Device(), &roots);
#endif
}

// The concurrent step on two streams (PREFIXD_CONCURRENT_CHAIN=0: fork/join through events)
// captures too: the prefix and decode kernels are both roots of the graph (neither waits for the
// other), and the replays are correct.
TEST(CudaGraph, ConcurrentStepReplaysCorrectly) {
  PREFIXD_REQUIRE_GPU();
#ifdef PREFIXD_HAVE_CUDA
  const std::unique_ptr<Backend> two_streams = MakeCudaBackendWithEnv(
      {{"PREFIXD_CONCURRENT_DECODE_SMS", std::to_string(ConcurrentDecodeSms(32))}, {"PREFIXD_CONCURRENT_CHAIN", "0"}});
  size_t roots = 0;
  std::vector<int> priorities;
  ExpectCapturedStepReplays(*two_streams, &roots, &priorities);
  EXPECT_GE(roots, 2u) << "the prefix and decode kernels should be independent graph nodes";
  // The streams' priorities travel into the nodes (the prefix's above the decode's), which a graph
  // instantiated with cudaGraphInstantiateFlagUseNodePriority then keeps (cuda_backend.h).
  ASSERT_GE(priorities.size(), 2u);
  int least = 0, greatest = 0;
  ASSERT_EQ(cudaDeviceGetStreamPriorityRange(&least, &greatest), cudaSuccess);
  EXPECT_NE(std::find(priorities.begin(), priorities.end(), greatest), priorities.end()) << "no node at the prefix's priority";
  EXPECT_NE(std::find(priorities.begin(), priorities.end(), least), priorities.end()) << "no node at the decode's priority";
#endif
}

// The concurrent step chained on one stream (PREFIXD_CONCURRENT_CHAIN=1; three launches, each the
// previous one's programmatic dependent) captures and replays correctly, chained in the capture.
TEST(CudaGraph, ChainedConcurrentStepReplaysCorrectly) {
  PREFIXD_REQUIRE_GPU();
#ifdef PREFIXD_HAVE_CUDA
  std::unique_ptr<Backend> backend =
      MakeCudaBackendWithEnv({{"PREFIXD_CONCURRENT_DECODE_SMS", std::to_string(ConcurrentDecodeSms(16))},
                              {"PREFIXD_CONCURRENT_DECODE_TMA", "force"},
                              {"PREFIXD_CONCURRENT_CHAIN", "1"}});
  auto& device = dynamic_cast<kernels::cuda::CudaBackend&>(*backend);
  size_t roots = 0;
  ExpectCapturedStepReplays(*backend, &roots, nullptr);
  if (!kernels::cuda::sm90a::DeviceReady()) GTEST_SKIP() << "no sm_90a kernels on this device: nothing chains";
  EXPECT_GE(device.chained_steps(), 2) << "the warm-up and the capture should have run chained";
#endif
}

// The concurrent step chained with the one-item decode (PREFIXD_CONCURRENT_CHAIN=all, the default;
// the TMA decode off) captures and replays correctly, chained in the capture.
TEST(CudaGraph, OneItemChainedConcurrentStepReplaysCorrectly) {
  PREFIXD_REQUIRE_GPU();
#ifdef PREFIXD_HAVE_CUDA
  std::unique_ptr<Backend> backend =
      MakeCudaBackendWithEnv({{"PREFIXD_CONCURRENT_DECODE_SMS", std::to_string(ConcurrentDecodeSms(16))},
                              {"PREFIXD_CONCURRENT_DECODE_TMA", "0"},
                              {"PREFIXD_CONCURRENT_CHAIN", "all"}});
  auto& device = dynamic_cast<kernels::cuda::CudaBackend&>(*backend);
  size_t roots = 0;
  ExpectCapturedStepReplays(*backend, &roots, nullptr);
  if (!kernels::cuda::sm90a::DeviceReady()) GTEST_SKIP() << "no sm_90a kernels on this device: nothing chains";
  EXPECT_EQ(device.concurrent_tma_steps(), 0);
  EXPECT_GE(device.chained_steps(), 2) << "the warm-up and the capture should have run chained";
#endif
}

// The early decode's step (three launches on one stream, each the previous one's programmatic
// dependent) captures and replays correctly, its early items run in the capture.
TEST(CudaGraph, EarlyDecodeStepReplaysCorrectly) {
  PREFIXD_REQUIRE_GPU();
#ifdef PREFIXD_HAVE_CUDA
  std::unique_ptr<Backend> backend = MakeCudaBackendWithEnv({{"PREFIXD_EARLY_DECODE_PERCENT", "50"}});
  auto& device = dynamic_cast<kernels::cuda::CudaBackend&>(*backend);
  size_t roots = 0;
  ExpectCapturedStepReplays(*backend, &roots, nullptr);
  EXPECT_GE(device.early_decode_steps(), 2) << "the warm-up and the capture should have run early items";
#endif
}

}  // namespace
}  // namespace prefixd::test
