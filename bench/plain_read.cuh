// Plain streaming reads of device memory, the yardstick for memory-bound kernels: no arithmetic,
// every byte read once. Two users: prefixd_l2_probe (bench/l2_probe.cu: what each load form pays for
// the flush's dirty lines) and prefixd_kernel_bench --read-floor (bench/kernel/bench_cuda.cu: the
// time of one read of a grid shape's K/V bytes under the issue's method, i.e. what no kernel that
// reads those bytes can beat by much).
//
// A read covers up to two spans (a cascade step's K and V arrays) in one launch, so that it pays
// one kernel boundary like the kernels it is compared with. Both kernels XOR what they read into a
// value written only if it equals one random data never gives, so the loads cannot be dropped; with
// xor_out they also XOR it into *xor_out, which a check compares with the host's XOR of the spans
// (every 16-byte piece read exactly once: bench/kernel/bench_cuda.cu, CheckPlainReads).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace prefixd::bench::plain_read {

// Up to two byte ranges read as one; b may be empty. Sizes are multiples of 16 bytes.
struct Spans {
  const uint8_t* a = nullptr;
  int64_t a_bytes = 0;
  const uint8_t* b = nullptr;
  int64_t b_bytes = 0;
  __host__ __device__ int64_t Bytes() const { return a_bytes + b_bytes; }
  // The address of byte `offset` of the concatenation a ++ b.
  __device__ const uint8_t* At(int64_t offset) const { return offset < a_bytes ? a + offset : b + (offset - a_bytes); }
};

enum class LoadForm { kDefault, kNonCoherent, kLastUse, kPolicyEvictFirst, kCpAsyncPolicy };

template <LoadForm FORM>
__device__ __forceinline__ uint4 Load16(const uint4* p, uint64_t policy) {
  uint4 v;
  if constexpr (FORM == LoadForm::kDefault) {
    v = *p;
  } else if constexpr (FORM == LoadForm::kNonCoherent) {
    asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  } else if constexpr (FORM == LoadForm::kLastUse) {
    asm volatile("ld.global.lu.v4.u32 {%0,%1,%2,%3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  } else {
    asm volatile("ld.global.L1::no_allocate.L2::cache_hint.v4.u32 {%0,%1,%2,%3}, [%4], %5;"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p), "l"(policy));
  }
  return v;
}

constexpr int kThreads = 256;
constexpr int kInFlight = 4;

// How a read takes part in a programmatic dependent launch (PDL), as the cascade's two kernels do:
// kNone; kPrimary triggers its dependent grid at its start (the prefix kernel triggers it at each
// CTA's last item); kDependent reads its bytes and only then waits for the primary grid's completion
// and memory flush (the decode kernel waits before it reads the prefix's states).
enum class PdlRole { kNone, kPrimary, kDependent };

// Every thread reads kInFlight 16-byte pieces per round, grid-stride over the spans.
template <LoadForm FORM, PdlRole PDL = PdlRole::kNone>
__global__ void __launch_bounds__(kThreads) StreamReadKernel(Spans spans, uint32_t* sink, uint32_t* xor_out = nullptr) {
  if constexpr (PDL == PdlRole::kPrimary) asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  uint64_t policy = 0;
  if constexpr (FORM == LoadForm::kPolicyEvictFirst || FORM == LoadForm::kCpAsyncPolicy)
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
  const int64_t n16 = spans.Bytes() / 16;
  const int64_t stride = int64_t(gridDim.x) * kThreads;
  auto piece = [&](int64_t i) { return reinterpret_cast<const uint4*>(spans.At(i * 16)); };
  uint32_t acc = 0;
  if constexpr (FORM == LoadForm::kCpAsyncPolicy) {
    __shared__ uint4 stage[kInFlight][kThreads];
    for (int64_t base = int64_t(blockIdx.x) * kThreads + threadIdx.x; base < n16; base += stride * kInFlight) {
#pragma unroll
      for (int u = 0; u < kInFlight; ++u) {
        const int64_t i = base + u * stride;
        const uint32_t dst = static_cast<uint32_t>(__cvta_generic_to_shared(&stage[u][threadIdx.x]));
        asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2, %3;"
                     ::"r"(dst), "l"(piece(i < n16 ? i : 0)), "r"(i < n16 ? 16 : 0), "l"(policy));
      }
      asm volatile("cp.async.commit_group;\ncp.async.wait_group 0;" ::: "memory");
#pragma unroll
      for (int u = 0; u < kInFlight; ++u) {
        const uint4 v = stage[u][threadIdx.x];
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
      }
    }
  } else {
    for (int64_t base = int64_t(blockIdx.x) * kThreads + threadIdx.x; base < n16; base += stride * kInFlight) {
      uint4 v[kInFlight];
#pragma unroll
      for (int u = 0; u < kInFlight; ++u) {
        const int64_t i = base + u * stride;
        v[u] = i < n16 ? Load16<FORM>(piece(i), policy) : make_uint4(0, 0, 0, 0);
      }
#pragma unroll
      for (int u = 0; u < kInFlight; ++u) acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
    }
  }
  if constexpr (PDL == PdlRole::kDependent) asm volatile("griddepcontrol.wait;" ::: "memory");
  if (acc == 0x9e3779b9u) sink[blockIdx.x] = acc;
  if (xor_out != nullptr) atomicXor(xor_out, acc);
}

// The bulk copy engine's form (the prefix kernel's TMA loads): thread 0 copies kBulkChunk-byte
// chunks (the spans' last ones shorter) into a STAGES-deep ring (mbarrier completion), every thread
// reads its share of each landed chunk. Launch one CTA per SM with STAGES · kBulkChunk bytes of
// dynamic shared memory (their shared memory keeps a second CTA off the SM).
constexpr int kBulkChunk = 32 << 10, kBulkStages = 4;
// With wrap > 0 the chunks' offsets wrap at `wrap` bytes (a multiple of kBulkChunk, within span a):
// spans.Bytes() / wrap passes over the same region (the probe's L2-hit table).
// CONTIGUOUS: each CTA reads one contiguous run of chunks (CTA b: chunks [b·n, (b + 1)·n), n =
// ceil(chunks / grid)), as each prefix-kernel CTA streams one item's K/V range, instead of every
// grid-th chunk (the probe's question: does a fixed contiguous share per CTA stream slower?).
template <bool POLICY, int STAGES = kBulkStages, bool CONTIGUOUS = false>
__global__ void __launch_bounds__(kThreads) BulkReadKernel(Spans spans, uint32_t* sink, int64_t wrap = 0,
                                                           uint32_t* xor_out = nullptr) {
  extern __shared__ __align__(128) uint8_t ring[];
  __shared__ __align__(8) uint64_t full[STAGES];
  uint64_t policy = 0;
  if constexpr (POLICY) asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
  // Chunks never straddle the two spans: span a's chunks, then span b's.
  const int64_t chunks_a = (spans.a_bytes + kBulkChunk - 1) / kBulkChunk;
  const int64_t chunks = chunks_a + (spans.b_bytes + kBulkChunk - 1) / kBulkChunk;
  const int64_t run = (chunks + gridDim.x - 1) / gridDim.x;  // CONTIGUOUS: chunks per CTA
  const int my_chunks = CONTIGUOUS ? int(max(int64_t(0), min(run, chunks - int64_t(blockIdx.x) * run)))
                                   : int((chunks - blockIdx.x + gridDim.x - 1) / gridDim.x);
  auto bar = [&](int st) { return static_cast<uint32_t>(__cvta_generic_to_shared(&full[st])); };
  if (threadIdx.x == 0)
    for (int st = 0; st < STAGES; ++st) asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(bar(st)));
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  __syncthreads();
  // The bytes of this CTA's k-th chunk, and where they start.
  auto chunk_of = [&](int k, const uint8_t** src) {
    const int64_t c = CONTIGUOUS ? int64_t(blockIdx.x) * run + k : int64_t(blockIdx.x) + int64_t(k) * gridDim.x;
    const bool in_a = c < chunks_a;
    int64_t offset = (in_a ? c : c - chunks_a) * kBulkChunk;
    if (wrap > 0 && in_a) offset %= wrap;
    const int64_t span_bytes = in_a ? spans.a_bytes : spans.b_bytes;
    *src = (in_a ? spans.a : spans.b) + offset;
    return uint32_t(span_bytes - offset < kBulkChunk ? span_bytes - offset : kBulkChunk);
  };
  auto issue = [&](int k) {
    if (threadIdx.x != 0 || k >= my_chunks) return;
    const int st = k % STAGES;
    const uint8_t* src = nullptr;
    const uint32_t bytes = chunk_of(k, &src);
    const uint32_t dst = static_cast<uint32_t>(__cvta_generic_to_shared(ring + st * kBulkChunk));
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar(st)), "r"(bytes) : "memory");
    if constexpr (POLICY)
      asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], %4;"
                   ::"r"(dst), "l"(src), "r"(bytes), "r"(bar(st)), "l"(policy) : "memory");
    else
      asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                   ::"r"(dst), "l"(src), "r"(bytes), "r"(bar(st)) : "memory");
  };
  for (int k = 0; k < STAGES; ++k) issue(k);
  uint32_t acc = 0;
  for (int k = 0; k < my_chunks; ++k) {
    const int st = k % STAGES;
    const uint32_t parity = (k / STAGES) & 1;
    asm volatile("{\n.reg .pred p;\nWAIT_%=:\nmbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n@!p bra WAIT_%=;\n}"
                 ::"r"(bar(st)), "r"(parity) : "memory");
    const uint8_t* unused = nullptr;
    const int pieces = int(chunk_of(k, &unused) / 16);
    const uint4* chunk = reinterpret_cast<const uint4*>(ring + st * kBulkChunk);
    for (int i = threadIdx.x; i < pieces; i += kThreads) {
      const uint4 v = chunk[i];
      acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    __syncthreads();  // the stage is read: refill it
    issue(k + STAGES);
  }
  if (acc == 0x9e3779b9u) sink[blockIdx.x] = acc;
  if (xor_out != nullptr) atomicXor(xor_out, acc);
}

}  // namespace prefixd::bench::plain_read
