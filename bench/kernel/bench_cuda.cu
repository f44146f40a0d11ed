#include "bench/kernel/bench_cuda.h"

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include "prefixd/common/cuda_check.h"
#include "prefixd/common/error.h"
#include "bench/plain_read.cuh"
#include "kernels/cuda/programmatic_launch.cuh"

#define PREFIXD_CUBLAS_CHECK(call)                                                                   \
  do {                                                                                               \
    const cublasStatus_t prefixd_status_ = (call);                                                   \
    if (prefixd_status_ != CUBLAS_STATUS_SUCCESS)                                                    \
      ::prefixd::ThrowError(::prefixd::ErrorKind::kLibrary, "cuBLAS",                                \
                            std::string(cublasGetStatusString(prefixd_status_)) + " in `" #call "`", \
                            __FILE__, __LINE__);                                                     \
  } while (0)

namespace prefixd::bench {
namespace {

constexpr size_t kFlushBytes = size_t(256) << 20;  // > 4× the H200's 60 MiB L2
constexpr size_t kMaxRegionsPerHold = 64;           // timed regions queued behind one hold kernel
constexpr long long kHoldMaxCycles = 40'000'000'000LL;  // ~20 s at 2 GHz: then give up, loudly

// Spins until the host sets *flag (host-mapped memory), so that everything queued behind it
// starts back to back, without host launch gaps.
__global__ void HoldKernel(const volatile int* flag, int* timed_out) {
  const long long start = clock64();
  while (*flag == 0) {
    if (clock64() - start > kHoldMaxCycles) {
      *timed_out = 1;
      return;
    }
  }
}

// Reads n 16-byte words (to pull them into L2 as clean lines); writes only if the impossible happens,
// so the loads cannot be optimised away.
__global__ void ReadKernel(const uint4* data, int64_t n, uint4* sink) {
  uint32_t acc = 0;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const uint4 x = data[i];
    acc ^= x.x ^ x.y ^ x.z ^ x.w;
  }
  if (acc == 0x9e3779b9u && sink != nullptr) sink[0] = make_uint4(acc, 0, 0, 0);
}

__global__ void EmptyKernel() {}

__device__ __forceinline__ uint64_t Mix(uint64_t x) {  // splitmix64 finaliser
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

template <typename T>
__global__ void FillRandomKernel(T* out, int64_t count, float scale, uint64_t seed) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    const float u = float(Mix(seed ^ (uint64_t(i) * 0x2545f4914f6cdd1dull)) >> 40) * (1.f / 16777216.f);  // [0, 1)
    const float x = (2.f * u - 1.f) * scale;
    if constexpr (std::is_same_v<T, __half>) out[i] = __float2half_rn(x);
    else out[i] = __float2bfloat16_rn(x);
  }
}

float Median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Flusher {
  void* buffer = nullptr;
  void* read_buffer = nullptr;  // kClean's read pass
  Flusher() {
    PREFIXD_CUDA_CHECK(cudaMalloc(&buffer, kFlushBytes));
    PREFIXD_CUDA_CHECK(cudaMalloc(&read_buffer, kFlushBytes));
    PREFIXD_CUDA_CHECK(cudaMemset(read_buffer, 0x5a, kFlushBytes));
    PREFIXD_CUDA_CHECK(cudaDeviceSynchronize());
  }
  ~Flusher() {
    cudaFree(buffer);
    cudaFree(read_buffer);
  }
};

}  // namespace

const char* FlushModeName(FlushMode mode) {
  switch (mode) {
    case FlushMode::kNone: return "none";
    case FlushMode::kWrite: return "write";
    case FlushMode::kClean: return "clean";
  }
  return "?";
}

std::vector<float> TimeOnStream(void* stream, const std::function<void()>& fn, const TimingOptions& o) {
  return TimeOnStreamInterleaved(stream, {fn}, o).front();
}

std::vector<std::vector<float>> TimeOnStreamInterleaved(void* stream_ptr, const std::vector<std::function<void()>>& fns,
                                                        const TimingOptions& o) {
  auto stream = static_cast<cudaStream_t>(stream_ptr);
  const size_t n = fns.size();
  // A function's first run may allocate or synchronize, which behind the hold kernel below would
  // block the host until the hold times out: it runs untimed first, as a warm-up.
  PREFIXD_CHECK_ARG(o.warmups >= 1 && o.iters >= 1,
                    "TimeOnStream: needs ≥ 1 warm-up and ≥ 1 iteration, got " << o.warmups << " and " << o.iters);
  static Flusher flusher;  // one 256 MiB buffer for the process
  int iteration = 0;
  auto flush = [&] {
    if (!o.flush_l2 || o.flush == FlushMode::kNone) return;
    PREFIXD_CUDA_CHECK(cudaMemsetAsync(flusher.buffer, iteration++ & 0xff, kFlushBytes, stream));
    if (o.flush == FlushMode::kClean) {
      ReadKernel<<<132 * 8, 256, 0, stream>>>(static_cast<const uint4*>(flusher.read_buffer), int64_t(kFlushBytes / 16),
                                              static_cast<uint4*>(flusher.buffer));
      PREFIXD_CUDA_CHECK_LAUNCH();
    }
  };
  for (int i = 0; i < o.warmups; ++i)
    for (const auto& fn : fns) {
      flush();
      fn();
    }
  PREFIXD_CUDA_CHECK(cudaStreamSynchronize(stream));

  int* flag = nullptr;
  int* timed_out = nullptr;
  PREFIXD_CUDA_CHECK(cudaHostAlloc(&flag, sizeof(int), cudaHostAllocMapped));
  PREFIXD_CUDA_CHECK(cudaHostAlloc(&timed_out, sizeof(int), cudaHostAllocMapped));
  *timed_out = 0;
  // Event pair e = i · n + f times iteration i of function f.
  const size_t events = size_t(o.iters) * n;
  std::vector<cudaEvent_t> start(events), stop(events);
  for (size_t e = 0; e < events; ++e) {
    PREFIXD_CUDA_CHECK(cudaEventCreate(&start[e]));
    PREFIXD_CUDA_CHECK(cudaEventCreate(&stop[e]));
  }
  // In rounds of whole iterations, each queued behind its own hold: a step enqueues up to ~9
  // operations with its flush and events, and the driver's launch queue behind a spinning kernel is
  // finite (were it full, the host's next launch would block and the hold time out; not measured,
  // a bound kept well inside). Each round's first region still follows its flush, so the GPU is
  // busy before it as before every other region.
  const size_t per_round = std::max<size_t>(1, kMaxRegionsPerHold / n) * n;
  bool hold_timed_out = false;
  for (size_t round = 0; round < events && !hold_timed_out; round += per_round) {
    *flag = 0;
    HoldKernel<<<1, 1, 0, stream>>>(flag, timed_out);
    PREFIXD_CUDA_CHECK_LAUNCH();
    for (size_t e = round; e < std::min(events, round + per_round); ++e) {
      flush();
      PREFIXD_CUDA_CHECK(cudaEventRecord(start[e], stream));
      fns[e % n]();
      PREFIXD_CUDA_CHECK(cudaEventRecord(stop[e], stream));
    }
    __atomic_store_n(flag, 1, __ATOMIC_SEQ_CST);
    PREFIXD_CUDA_CHECK(cudaStreamSynchronize(stream));
    hold_timed_out = *timed_out != 0;
  }
  std::vector<std::vector<float>> ms(n, std::vector<float>(size_t(o.iters)));
  for (size_t e = 0; e < events; ++e) {
    if (!hold_timed_out) PREFIXD_CUDA_CHECK(cudaEventElapsedTime(&ms[e % n][e / n], start[e], stop[e]));
    cudaEventDestroy(start[e]);
    cudaEventDestroy(stop[e]);
  }
  cudaFreeHost(flag);
  cudaFreeHost(timed_out);
  if (hold_timed_out)
    PREFIXD_THROW(ErrorKind::kInternal, "the stream hold kernel timed out: queuing the timed work took > 20 s");
  return ms;
}

double EmptyRegionUs(void* stream, const TimingOptions& options) {
  auto s = static_cast<cudaStream_t>(stream);
  const std::vector<float> ms = TimeOnStream(
      stream,
      [&] {
        EmptyKernel<<<1, 32, 0, s>>>();
        PREFIXD_CUDA_CHECK_LAUNCH();
      },
      options);
  return double(Median(ms)) * 1e3;
}

namespace {

// What the plain reads share: the device's SM count (their grids: one bulk CTA or 8 load CTAs per
// SM) and a sink of one word per CTA, written only if the XOR of the data hits a value it never does.
struct PlainReadDevice {
  int sms = 0;
  uint32_t* sink = nullptr;
};
const PlainReadDevice& PlainReadSetUp() {
  static const PlainReadDevice device = [] {
    PlainReadDevice d;
    int ordinal = 0;
    PREFIXD_CUDA_CHECK(cudaGetDevice(&ordinal));
    PREFIXD_CUDA_CHECK(cudaDeviceGetAttribute(&d.sms, cudaDevAttrMultiProcessorCount, ordinal));
    PREFIXD_CUDA_CHECK(cudaMalloc(&d.sink, size_t(d.sms) * 8 * sizeof(uint32_t)));
    PREFIXD_CUDA_CHECK(cudaFuncSetAttribute(plain_read::BulkReadKernel<true>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                            plain_read::kBulkStages * plain_read::kBulkChunk));
    return d;
  }();
  return device;
}

}  // namespace

void EnqueuePlainRead(PlainReadForm form, const void* a, int64_t a_bytes, const void* b, int64_t b_bytes,
                      void* stream, uint32_t* xor_out) {
  namespace pr = plain_read;
  PREFIXD_CHECK_ARG(a_bytes >= 0 && b_bytes >= 0 && a_bytes % 16 == 0 && b_bytes % 16 == 0,
                    "EnqueuePlainRead: sizes must be multiples of 16 bytes, got " << a_bytes << " and " << b_bytes);
  const PlainReadDevice& d = PlainReadSetUp();
  const pr::Spans spans{static_cast<const uint8_t*>(a), a_bytes, static_cast<const uint8_t*>(b), b_bytes};
  auto s = static_cast<cudaStream_t>(stream);
  if (form == PlainReadForm::kBulkEvictFirst)
    pr::BulkReadKernel<true><<<d.sms, pr::kThreads, pr::kBulkStages * pr::kBulkChunk, s>>>(spans, d.sink, 0, xor_out);
  else
    pr::StreamReadKernel<pr::LoadForm::kNonCoherent><<<d.sms * 8, pr::kThreads, 0, s>>>(spans, d.sink, xor_out);
  PREFIXD_CUDA_CHECK_LAUNCH();
}

void EnqueuePlainReadPdlPair(const void* a1, const void* b1, int64_t bytes1, const void* a2, const void* b2,
                             int64_t bytes2, void* stream, uint32_t* xor_out) {
  namespace pr = plain_read;
  PREFIXD_CHECK_ARG(bytes1 >= 0 && bytes2 >= 0 && bytes1 % 16 == 0 && bytes2 % 16 == 0,
                    "EnqueuePlainReadPdlPair: sizes must be multiples of 16 bytes, got " << bytes1 << " and " << bytes2);
  const PlainReadDevice& d = PlainReadSetUp();
  auto s = static_cast<cudaStream_t>(stream);
  auto u8 = [](const void* p) { return static_cast<const uint8_t*>(p); };
  const pr::Spans first{u8(a1), bytes1, u8(b1), bytes1}, second{u8(a2), bytes2, u8(b2), bytes2};
  pr::StreamReadKernel<pr::LoadForm::kNonCoherent, pr::PdlRole::kPrimary><<<d.sms * 8, pr::kThreads, 0, s>>>(first, d.sink, xor_out);
  PREFIXD_CUDA_CHECK_LAUNCH();
  kernels::cuda::LaunchMaybeProgrammatic(pr::StreamReadKernel<pr::LoadForm::kNonCoherent, pr::PdlRole::kDependent>,
                                         dim3(unsigned(d.sms * 8)), dim3(pr::kThreads), 0, s, true, second, d.sink,
                                         xor_out);
}

int64_t CheckPlainReads(void* stream) {
  auto s = static_cast<cudaStream_t>(stream);
  // Uneven sizes: chunk tails in both spans, span b shorter than one bulk chunk, and an empty b.
  constexpr int64_t kA = (int64_t(5) << 20) + 48, kB = (int64_t(3) << 20) + 16 * 1001, kSmallB = 16 * 37;
  uint8_t* a = nullptr;
  uint8_t* b = nullptr;
  uint32_t* result = nullptr;
  PREFIXD_CUDA_CHECK(cudaMalloc(&a, kA));
  PREFIXD_CUDA_CHECK(cudaMalloc(&b, kB));
  PREFIXD_CUDA_CHECK(cudaMalloc(&result, sizeof(uint32_t)));
  FillRandom(a, kA / 2, kernels::DType::kFloat16, 1.f, 101, stream);
  FillRandom(b, kB / 2, kernels::DType::kFloat16, 1.f, 202, stream);
  std::vector<uint32_t> host_a(kA / 4), host_b(kB / 4);
  PREFIXD_CUDA_CHECK(cudaMemcpyAsync(host_a.data(), a, kA, cudaMemcpyDeviceToHost, s));
  PREFIXD_CUDA_CHECK(cudaMemcpyAsync(host_b.data(), b, kB, cudaMemcpyDeviceToHost, s));
  PREFIXD_CUDA_CHECK(cudaStreamSynchronize(s));
  auto host_xor = [](const std::vector<uint32_t>& words, int64_t bytes) {
    uint32_t x = 0;
    for (int64_t i = 0; i < bytes / 4; ++i) x ^= words[size_t(i)];
    return x;
  };
  int64_t checked = 0;
  auto check = [&](const char* form, int64_t a_bytes, int64_t b_bytes, const std::function<void()>& read) {
    PREFIXD_CUDA_CHECK(cudaMemsetAsync(result, 0, sizeof(uint32_t), s));
    read();
    uint32_t got = 0;
    PREFIXD_CUDA_CHECK(cudaMemcpyAsync(&got, result, sizeof(uint32_t), cudaMemcpyDeviceToHost, s));
    PREFIXD_CUDA_CHECK(cudaStreamSynchronize(s));
    const uint32_t want = host_xor(host_a, a_bytes) ^ host_xor(host_b, b_bytes);
    PREFIXD_CHECK_INTERNAL(got == want, "plain read '" << form << "' of " << a_bytes << " + " << b_bytes
                                                       << " bytes did not read every byte once (XOR " << got
                                                       << ", host " << want << ")");
    checked += a_bytes + b_bytes;
  };
  for (const int64_t b_bytes : {kB, kSmallB, int64_t(0)}) {
    check("bulk evict-first", kA, b_bytes, [&] { EnqueuePlainRead(PlainReadForm::kBulkEvictFirst, a, kA, b, b_bytes, s, result); });
    check("ld.global.nc", kA, b_bytes, [&] { EnqueuePlainRead(PlainReadForm::kNonCoherentLoads, a, kA, b, b_bytes, s, result); });
  }
  // The pair: the first kernel reads a[0, h) and b[0, h), the dependent a[h, 2h) and b[h, 2h).
  constexpr int64_t kHalf = kB / 32 * 16;  // 2 · kHalf ≤ kB < kA
  check("PDL pair", 2 * kHalf, 2 * kHalf,
        [&] { EnqueuePlainReadPdlPair(a, b, kHalf, a + kHalf, b + kHalf, kHalf, s, result); });
  PREFIXD_CUDA_CHECK(cudaFree(a));
  PREFIXD_CUDA_CHECK(cudaFree(b));
  PREFIXD_CUDA_CHECK(cudaFree(result));
  return checked;
}

void FillRandom(void* ptr, int64_t count, kernels::DType dtype, float scale, uint64_t seed, void* stream) {
  if (count <= 0) return;
  const int threads = 256;
  const int blocks = int(std::min<int64_t>((count + threads - 1) / threads, 132 * 32));
  auto s = static_cast<cudaStream_t>(stream);
  if (dtype == kernels::DType::kFloat16)
    FillRandomKernel<<<blocks, threads, 0, s>>>(static_cast<__half*>(ptr), count, scale, seed);
  else
    FillRandomKernel<<<blocks, threads, 0, s>>>(static_cast<__nv_bfloat16*>(ptr), count, scale, seed);
  PREFIXD_CUDA_CHECK_LAUNCH();
}

double MeasureCopyBandwidth(int64_t bytes, int reps) {
  void *src = nullptr, *dst = nullptr;
  cudaStream_t stream = nullptr;
  PREFIXD_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  PREFIXD_CUDA_CHECK(cudaMalloc(&src, size_t(bytes)));
  PREFIXD_CUDA_CHECK(cudaMalloc(&dst, size_t(bytes)));
  FillRandom(src, bytes / 2, kernels::DType::kFloat16, 1.f, 17, stream);
  TimingOptions o;
  o.warmups = 2;
  o.iters = reps;
  o.flush_l2 = false;  // 4 GiB streams through L2 anyway
  const std::vector<float> ms = TimeOnStream(
      stream, [&] { PREFIXD_CUDA_CHECK(cudaMemcpyAsync(dst, src, size_t(bytes), cudaMemcpyDeviceToDevice, stream)); }, o);
  cudaFree(src);
  cudaFree(dst);
  cudaStreamDestroy(stream);
  return 2.0 * double(bytes) / (double(Median(ms)) * 1e-3);
}

double MeasureGemmRate(int n, int reps, kernels::DType dtype) {
  cudaStream_t stream = nullptr;
  PREFIXD_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cublasHandle_t handle = nullptr;
  PREFIXD_CUBLAS_CHECK(cublasCreate(&handle));
  PREFIXD_CUBLAS_CHECK(cublasSetStream(handle, stream));
  const size_t elems = size_t(n) * n;
  void *a = nullptr, *b = nullptr, *c = nullptr;
  PREFIXD_CUDA_CHECK(cudaMalloc(&a, elems * 2));
  PREFIXD_CUDA_CHECK(cudaMalloc(&b, elems * 2));
  PREFIXD_CUDA_CHECK(cudaMalloc(&c, elems * 2));
  FillRandom(a, int64_t(elems), dtype, 1.f, 1, stream);  // random, never zeros
  FillRandom(b, int64_t(elems), dtype, 1.f, 2, stream);
  const cudaDataType_t type = dtype == kernels::DType::kBFloat16 ? CUDA_R_16BF : CUDA_R_16F;
  const float alpha = 1.f, beta = 0.f;
  TimingOptions o;
  o.warmups = 3;
  o.iters = reps;
  o.flush_l2 = false;
  const std::vector<float> ms = TimeOnStream(
      stream,
      [&] {
        PREFIXD_CUBLAS_CHECK(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, a, type, n, b, type, n,
                                          &beta, c, type, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
      },
      o);
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
  cublasDestroy(handle);
  cudaStreamDestroy(stream);
  return 2.0 * double(n) * n * n / (double(Median(ms)) * 1e-3);
}

CapturedGraph::CapturedGraph(void* stream, const std::function<void()>& fn) : stream_(stream) {
  auto s = static_cast<cudaStream_t>(stream);
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  PREFIXD_CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  try {
    fn();
  } catch (...) {
    cudaStreamEndCapture(s, &graph);
    if (graph) cudaGraphDestroy(graph);
    throw;
  }
  PREFIXD_CUDA_CHECK(cudaStreamEndCapture(s, &graph));
  graph_ = graph;
  // The kernel nodes keep the priorities of the streams they were captured from (the concurrent
  // step's prefix on the highest, its decode on the lowest, cuda_backend.h) only with this flag;
  // without it every node runs at the launch stream's priority. (Not the cause of the replay's
  // intermittent excess at head_dim 256, which was the clock's drift over the run: bench/RESULTS.md
  // session 54, runs 4-7.)
  PREFIXD_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, cudaGraphInstantiateFlagUseNodePriority));
  exec_ = exec;
}

CapturedGraph::~CapturedGraph() {
  if (exec_) cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(exec_));
  if (graph_) cudaGraphDestroy(static_cast<cudaGraph_t>(graph_));
}

void CapturedGraph::Launch() {
  PREFIXD_CUDA_CHECK(cudaGraphLaunch(static_cast<cudaGraphExec_t>(exec_), static_cast<cudaStream_t>(stream_)));
}

}  // namespace prefixd::bench
