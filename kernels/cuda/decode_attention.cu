// The one dispatch place of the decode kernel: runtime (dtype, head_dim, GQA group size) → the
// template instantiation compiled in kernels/cuda/inst/decode_attention_<dtype>_d<D>.cu.
#include "kernels/cuda/decode_attention.h"

#include <algorithm>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "prefixd/common/cuda_check.h"
#include "kernels/cuda/decode_attention_epilogue.cuh"
#include "kernels/cuda/decode_stream_tma.h"
#include "prefixd/kernels/decode_kernel_choice.h"

namespace prefixd::kernels::cuda {
namespace decode {
template <typename T, int HEAD_DIM, int GQA>
void LaunchDecodeAttention(const DecodeAttentionParams& params, cudaStream_t stream);
template <typename T, int HEAD_DIM, int GQA>
void LaunchDecodeAttentionMma(const DecodeAttentionParams& params, cudaStream_t stream);
template <typename T, int HEAD_DIM, int GQA>
void LaunchDecodeAttentionMmaStream(const DecodeAttentionParams& params, cudaStream_t stream);
}  // namespace decode

namespace {

// Whether a launch of one CTA per SM looping over items (max_sms) runs the TMA streaming kernel:
// asked for (stream_items, stream_tma) and applicable (decode_stream_tma.h).
bool RunsTmaDecode(const DecodeAttentionParams& p) {
  return p.max_sms > 0 && p.stream_items && p.stream_tma && DecodeStreamTmaApplies(p);
}

// One CTA per SM looping over items (max_sms): the streaming kernel (its TMA variant where asked
// for and applicable), unless turned off. Both serve the compiled groups of 4 and 8 only: another g
// runs the one-item-at-a-time kernel.
template <typename T, int HEAD_DIM, int GQA>
void LaunchTensorCoreKernel(const DecodeAttentionParams& p, cudaStream_t stream) {
  if constexpr (HEAD_DIM <= 128 && GQA <= 8) {  // the streaming kernels exist up to head_dim 128
    if (p.max_sms > 0 && p.stream_items && p.group_size == GQA) {
      if (RunsTmaDecode(p)) return DecodeStreamTma(p, stream);
      return decode::LaunchDecodeAttentionMmaStream<T, HEAD_DIM, GQA>(p, stream);
    }
  }
  decode::LaunchDecodeAttentionMma<T, HEAD_DIM, GQA>(p, stream);  // also loops over items (max_sms)
}

// The compiled group size `rows` that serves g (DecodeSlicingFor, decided once by DecodeAttention,
// which also set the launch's group_size and group_slices); tensor_cores: DecodeUsesTensorCores.
template <typename T, int HEAD_DIM>
void DispatchGroupSize(const DecodeAttentionParams& p, int rows, bool tensor_cores, cudaStream_t stream) {
  switch (rows) {
    case 1:
    case 2:  // the CUDA-core kernel, or where asked for the TMA decode (built at every group of ≤ 8)
      if (RunsTmaDecode(p)) return DecodeStreamTma(p, stream);
      return rows == 1 ? decode::LaunchDecodeAttention<T, HEAD_DIM, 1>(p, stream)
                       : decode::LaunchDecodeAttention<T, HEAD_DIM, 2>(p, stream);
    case 4:
      if constexpr (TensorCoreDecodeBuilt(4, HEAD_DIM)) {  // instantiated in kernels/cuda/inst/
        if (tensor_cores) return LaunchTensorCoreKernel<T, HEAD_DIM, 4>(p, stream);
      }
      return decode::LaunchDecodeAttention<T, HEAD_DIM, 4>(p, stream);
    case 8:
      if constexpr (TensorCoreDecodeBuilt(8, HEAD_DIM)) {  // instantiated in kernels/cuda/inst/
        if (tensor_cores) return LaunchTensorCoreKernel<T, HEAD_DIM, 8>(p, stream);
      }
      return decode::LaunchDecodeAttention<T, HEAD_DIM, 8>(p, stream);
    case 16:  // tensor cores only (DecodeSlicingFor)
      if constexpr (TensorCoreDecodeBuilt(16, HEAD_DIM)) return LaunchTensorCoreKernel<T, HEAD_DIM, 16>(p, stream);
      break;
  }
  PREFIXD_THROW(ErrorKind::kInternal, "DecodeAttention: no kernel serves GQA group size " << p.group_size);
}

template <typename T>
void DispatchHeadDim(const DecodeAttentionParams& p, int rows, bool tensor_cores, cudaStream_t stream) {
  switch (p.head_dim) {
    case 64: return DispatchGroupSize<T, 64>(p, rows, tensor_cores, stream);
    case 128: return DispatchGroupSize<T, 128>(p, rows, tensor_cores, stream);
    case 256: return DispatchGroupSize<T, 256>(p, rows, tensor_cores, stream);
  }
  PREFIXD_THROW(ErrorKind::kUnsupported,
                "DecodeAttention: head_dim " << p.head_dim << " is not compiled (supported: 64, 128, 256)");
}

}  // namespace

// The tensor-core kernel where it is built and pays (prefixd/kernels/decode_kernel_choice.h), unless
// the CUDA-core kernel is forced.
bool DecodeUsesTensorCores(const DecodeAttentionParams& p) {
  const int g = p.num_kv_heads > 0 ? p.num_qo_heads / p.num_kv_heads : 0;  // served as DecodeSlicing says
  return p.kernel != DecodeKernel::kCudaCores &&
         TensorCoreDecodeApplies(g, p.head_dim, p.max_item_tokens, p.kernel == DecodeKernel::kTensorCores);
}

bool DecodeShallowPipeline(const DecodeAttentionParams& p, int step_tokens, int stages) {
  switch (p.pipeline) {
    case DecodePipeline::kDeep: return false;
    case DecodePipeline::kShallow: return true;
    case DecodePipeline::kByItemLength:
    case DecodePipeline::kNarrow:
    case DecodePipeline::kWarp:
    case DecodePipeline::kSingle: break;  // the CUDA-core GQA 1-2 / tensor-core launchers'; else the rule
  }
  return p.max_item_tokens > 0 && p.max_item_tokens <= (stages - 1) * step_tokens;
}

namespace decode {
SmemLimits DecodeSmemLimits() {
  int device = 0, per_sm = 0, per_block = 0, reserved = 0;
  PREFIXD_CUDA_CHECK(cudaGetDevice(&device));
  PREFIXD_CUDA_CHECK(cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, device));
  PREFIXD_CUDA_CHECK(cudaDeviceGetAttribute(&per_block, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  PREFIXD_CUDA_CHECK(cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, device));
  // Two CTAs need 2 · (smem + reserved) ≤ per_sm: a little more than half the rest keeps one out.
  return SmemLimits{std::min(per_block, (per_sm - 2 * reserved) / 2 + 16), per_block};
}
}  // namespace decode

void RequireFp32States(const DecodeAttentionParams& p, const char* kernel) {
  PREFIXD_CHECK_ARG(!p.states_16bit, "DecodeAttention: 16-bit states (states_16bit) come only from the TMA decode; "
                                     "this launch runs the "
                                         << kernel);
}

// Without a request, 2 warps (4 CTAs per SM at head_dim 128): bench/RESULTS.md has the comparison.
// The CUDA backend asks for 4 where there are at most two items per SM (cuda_backend.cc).
int DecodeMmaWarps(int requested) {
  return requested == 1 || requested == 2 || requested == 4 || requested == 8 ? requested : 2;
}

void DecodeAttention(const DecodeAttentionParams& p, cudaStream_t stream) {
  PREFIXD_CHECK_ARG(p.num_kv_heads > 0 && p.num_qo_heads % p.num_kv_heads == 0,
                    "DecodeAttention: num_qo_heads " << p.num_qo_heads
                                                     << " is not a multiple of num_kv_heads "
                                                     << p.num_kv_heads);
  PREFIXD_CHECK_ARG(p.page_size > 0, "DecodeAttention: page_size must be positive");
  PREFIXD_CHECK_ARG(p.early_sms >= 0 && !(p.early_sms > 0 && (p.max_sms > 0 || !p.early_chain)),
                    "DecodeAttention: early_sms " << p.early_sms << " needs early_chain and excludes max_sms ("
                                                  << p.max_sms << ")");
  if (p.num_items == 0) return;
  DecodeAttentionParams launch = p;
  launch.group_size = p.num_qo_heads / p.num_kv_heads;
  const bool tensor_cores = DecodeUsesTensorCores(launch);
  const DecodeGroupSlicing slicing = DecodeSlicingFor(launch.group_size, p.head_dim, tensor_cores);
  launch.group_slices = slicing.slices;
  if (p.dtype == DType::kFloat16) return DispatchHeadDim<__half>(launch, slicing.rows, tensor_cores, stream);
  return DispatchHeadDim<__nv_bfloat16>(launch, slicing.rows, tensor_cores, stream);
}

}  // namespace prefixd::kernels::cuda
