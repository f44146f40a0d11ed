// Does a change of the shared-memory carveout between kernels cost launch time? Times, between
// events after a 256 MiB memset (the benchmark's method), one launch of an empty kernel with
// 0 / 100 / 200 KiB of dynamic shared memory, with and without a preferred carveout of 100%.
#include <cstdio>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); return 1; } } while (0)
__global__ void Hold(volatile int* flag) { while (*flag == 0) {} }
__global__ void Empty() {}
__global__ void EmptySmemA() { extern __shared__ int s[]; if (threadIdx.x == 1023) s[0] = 1; }
__global__ void EmptySmemB() { extern __shared__ int s[]; if (threadIdx.x == 1023) s[0] = 1; }
int main() {
  void* buf; CK(cudaMalloc(&buf, 256 << 20));
  cudaStream_t st; CK(cudaStreamCreate(&st));
  int* flag; CK(cudaHostAlloc(&flag, 4, cudaHostAllocMapped));
  CK(cudaFuncSetAttribute(EmptySmemA, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 << 10));
  CK(cudaFuncSetAttribute(EmptySmemB, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 << 10));
  CK(cudaFuncSetAttribute(EmptySmemB, cudaFuncAttributePreferredSharedMemoryCarveout, 100));
  struct Case { const char* name; int kernel; int smem; int grid; int pre; };
  // pre: 0 none, 1 a launch of EmptySmemB (200 KiB) right after the memset, before the start event
  std::vector<Case> cases = {
    {"empty 1x32", 0, 0, 1, 0}, {"empty 132x384", 0, 0, 132, 0},
    {"smem100K 132x384", 1, 100 << 10, 132, 0}, {"smem200K 132x384", 1, 200 << 10, 132, 0},
    {"smem200K carve100 132x384", 2, 200 << 10, 132, 0},
    {"smem200K after smem200K-launch (outside events)", 1, 200 << 10, 132, 1},
    {"empty 132x384 after smem200K-launch", 0, 0, 132, 1},
    {"two: smem200K then empty", 3, 200 << 10, 132, 0},
    {"two: smem200K then smem200K", 4, 200 << 10, 132, 0},
  };
  for (const Case& c : cases) {
    const int iters = 30;
    std::vector<cudaEvent_t> a(iters), b(iters);
    for (int i = 0; i < iters; ++i) { CK(cudaEventCreate(&a[i])); CK(cudaEventCreate(&b[i])); }
    auto launch = [&](int k) {
      if (k == 0) Empty<<<c.grid, 384, 0, st>>>();
      else if (k == 1) EmptySmemA<<<c.grid, 384, c.smem, st>>>();
      else if (k == 2) EmptySmemB<<<c.grid, 384, c.smem, st>>>();
      else if (k == 3) { EmptySmemA<<<c.grid, 384, c.smem, st>>>(); Empty<<<c.grid, 384, 0, st>>>(); }
      else { EmptySmemA<<<c.grid, 384, c.smem, st>>>(); EmptySmemA<<<c.grid, 384, c.smem, st>>>(); }
    };
    for (int w = 0; w < 3; ++w) { CK(cudaMemsetAsync(buf, w, 256 << 20, st)); launch(c.kernel); }
    CK(cudaStreamSynchronize(st));
    *flag = 0;
    Hold<<<1, 1, 0, st>>>(flag);
    for (int i = 0; i < iters; ++i) {
      CK(cudaMemsetAsync(buf, i, 256 << 20, st));
      if (c.pre) EmptySmemB<<<132, 384, 200 << 10, st>>>();
      CK(cudaEventRecord(a[i], st));
      launch(c.kernel);
      CK(cudaEventRecord(b[i], st));
    }
    __atomic_store_n(flag, 1, __ATOMIC_SEQ_CST);
    CK(cudaStreamSynchronize(st));
    std::vector<float> ms(iters);
    for (int i = 0; i < iters; ++i) CK(cudaEventElapsedTime(&ms[i], a[i], b[i]));
    std::sort(ms.begin(), ms.end());
    printf("%-50s median %.2f us  (min %.2f, max %.2f)\n", c.name, ms[iters / 2] * 1e3, ms[0] * 1e3, ms[iters - 1] * 1e3);
  }
  return 0;
}
