// The streaming variant of the tensor-core decode kernel: one CTA per SM (DecodeAttentionParams::
// max_sms), each taking the items blockIdx.x, + gridDim.x, ... and keeping every warp's K/V copies
// in flight ACROSS them. Included only by kernels/cuda/inst/decode_attention_*.cu.
//
// Why: a decode item is short (S = 256 to 512 tokens: 2 to 4 tiles per warp with 8 warps), and the
// one-item-at-a-time loop (decode_attention_mma.cuh) pays at every item a serial chain that nothing
// overlaps: item → page table → first K/V tile in (three dependent memory latencies), then after
// the last tile the cross-warp ⊕ and the state or output write. With one CTA per SM that chain is
// not hidden by other CTAs: on 108 SMs beside the state exchange the decode ran at about half the
// copy bandwidth (bench/scaling/README.md, session 6).
//
// Here each warp's tiles form one stream over all of its CTA's items: the issue side runs
// kMmaStages − 1 tiles ahead of the compute side and crosses into the next item (its descriptor
// loaded one item ahead, its first page offsets one tile ahead) while the compute side finishes the
// current one, so the next item's first tiles land during the current item's last tiles and its
// epilogue. The epilogue's exchange area lies after the ring (it never waits for the ring to
// drain), and FinishDecodeItem reads the prefix chunks' states straight from L2 (as it does for
// every decode kernel). Tile math, copies and the warp state are decode_attention_mma.cuh's.
#pragma once

#include "kernels/cuda/decode_attention_mma.cuh"

namespace prefixd::kernels::cuda {
namespace decode {

constexpr int kStreamWarps = 8;  // one CTA per SM: 8 warps' tiles in flight (8 × 16 KiB at D = 128)

template <int HEAD_DIM>
constexpr int StreamRingBytes(int warps) { return warps * kMmaStages * 2 * MmaTileBytes<HEAD_DIM>(); }

template <int HEAD_DIM, int GQA, int WARPS>
constexpr int DecodeMmaStreamSmemBytes() {
  return StreamRingBytes<HEAD_DIM>(WARPS) + PartStateBytes<HEAD_DIM, GQA, WARPS>();
}

template <typename T, int HEAD_DIM, int GQA, int WARPS>
__global__ void __launch_bounds__(32 * WARPS, 1)
    DecodeAttentionMmaStreamKernel(const __grid_constant__ DecodeAttentionParams p) {
  static_assert(GQA <= 8 && (HEAD_DIM == 64 || HEAD_DIM == 128), "as the tensor-core kernel");
  constexpr int TILE = MmaTileBytes<HEAD_DIM>();
  constexpr int STEP = WARPS * kMmaWarpTokens;  // tokens per CTA step
  extern __shared__ __align__(128) uint8_t decode_stream_smem[];
  uint8_t* parts = decode_stream_smem + StreamRingBytes<HEAD_DIM>(WARPS);  // FinishDecodeItem's area
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const uint32_t warp_ring = SmemAddress(decode_stream_smem) + warp * kMmaStages * 2 * TILE;
  const uint64_t kv_policy = KvStreamPolicy(p.evict_first);
  const int stride = gridDim.x;
  const T* k_pool = static_cast<const T*>(p.k);
  const T* v_pool = static_cast<const T*>(p.v);
  auto steps_of = [](const DecodeWorkItem& it) { return (it.kv_end - it.kv_begin + STEP - 1) / STEP; };

  // ---- Issue side: the position (item, step) of this warp's next tile to copy; items without
  // tokens have no tiles and are skipped here (the compute side still finishes them). The item's
  // step count and copy path are set once when the position enters it.
  int is_index = 0, is_step = 0, is_page_base = 0, is_steps = 0;
  bool is_contiguous = false;
  DecodeWorkItem is_item{};
  int nx_index = blockIdx.x, nx_page_base = 0;  // the item after it, loaded ahead
  DecodeWorkItem nx_item{};
  auto load_next = [&] {
    if (nx_index < p.num_items) {
      nx_item = p.items[nx_index];
      nx_page_base = ItemBases(p, nx_item, nx_index).x;
    }
  };
  auto advance_item = [&] {
    do {
      is_index = nx_index;
      is_item = nx_item;
      is_page_base = nx_page_base;
      nx_index += stride;
      load_next();
      is_steps = steps_of(is_item);
    } while (is_index < p.num_items && is_steps == 0);
    is_step = 0;
    is_contiguous = MmaTilesArePageContiguous(p, is_item);
  };
  const MmaLaneOffsets<HEAD_DIM> lane_offsets(lane);
  // The source of the tile at the issue position (decode_attention_mma.cuh), looked up one tile ahead.
  auto lookup = [&] {
    return LookupMmaTile(p, is_contiguous, is_page_base,
                         is_item.kv_begin + is_step * STEP + warp * kMmaWarpTokens, is_item.kv_end, lane);
  };
  load_next();
  advance_item();
  MmaTileSource next;
  if (is_index < p.num_items) next = lookup();
  int issue_stage = 0;
  auto issue = [&] {
    if (is_index < p.num_items) {
      IssueMmaTileCopies<T, HEAD_DIM>(warp_ring + issue_stage * 2 * TILE, k_pool + is_item.kv_head * HEAD_DIM,
                                      v_pool + is_item.kv_head * HEAD_DIM, is_contiguous, next, p.token_stride,
                                      lane_offsets, lane, kv_policy);
      if (++is_step == is_steps) advance_item();
      if (is_index < p.num_items) next = lookup();
    }
    CpAsyncCommit();  // an empty group past the last item keeps the wait count uniform
    issue_stage = issue_stage + 1 == kMmaStages ? 0 : issue_stage + 1;
  };
#pragma unroll
  for (int s = 0; s < kMmaStages - 1; ++s) issue();

  // ---- Compute side: the items in the same order, tile by tile from the ring.
  int compute_stage = 0;
  int index = blockIdx.x;  // < num_items: the grid has at most one CTA per item
  DecodeWorkItem item = p.items[index];
  int2 bases = ItemBases(p, item, index);  // {page_indptr, state_indptr}[item.request]
  while (true) {
    const int next_index = index + stride;  // the next item's descriptor, loaded now, used later
    DecodeWorkItem next_item{};
    int2 next_bases{};
    if (next_index < p.num_items) {
      next_item = p.items[next_index];
      next_bases = ItemBases(p, next_item, next_index);
    }
    const GroupHeads heads = ItemHeads<GQA>(p, item.kv_head);
    uint32_t q_frag[HEAD_DIM / 16][4];
    LoadMmaQueries<T, HEAD_DIM>(p, item, heads, lane, q_frag);
    PrefetchPrefixStates<HEAD_DIM, GQA, 32 * WARPS>(p, item, heads, bases.y);

    MmaWarpState<HEAD_DIM> state;
    state.Reset();
    const int num_steps = steps_of(item);
    for (int step = 0; step < num_steps; ++step) {
      issue();
      CpAsyncWait<kMmaStages - 1>();
      __syncwarp();  // every lane's copies of this tile are visible to the whole warp
      MmaDecodeTile<T, HEAD_DIM, GQA>(q_frag, warp_ring + compute_stage * 2 * TILE,
                                      item.kv_begin + step * STEP + warp * kMmaWarpTokens, item.kv_end,
                                      p.sm_scale_log2, lane_offsets, lane, state);
      __syncwarp();  // all reads of this stage are done before a later issue refills it
      compute_stage = compute_stage + 1 == kMmaStages ? 0 : compute_stage + 1;
    }
    __syncthreads();  // the previous item's FinishDecodeItem is done reading the parts area
    StoreMmaWarpState<HEAD_DIM, GQA, WARPS>(parts, warp, lane, state);
    __syncthreads();
    FinishDecodeItem<T, HEAD_DIM, GQA, WARPS, 32 * WARPS>(p, item, heads, bases.y, parts);
    if (next_index >= p.num_items) break;
    index = next_index;
    item = next_item;
    bases = next_bases;
  }
  CpAsyncWait<0>();  // only empty groups are left; nothing may be in flight at exit
}

// On a GPU with less shared memory per CTA than the ring needs (e.g. 164 KiB on an A100), the
// one-item-at-a-time kernel with 8 warps instead.
template <typename T, int HEAD_DIM, int GQA>
void LaunchDecodeAttentionMmaStream(const DecodeAttentionParams& params, cudaStream_t stream) {
  RequireFp32States(params, "cp.async streaming decode");
  constexpr int smem = DecodeMmaStreamSmemBytes<HEAD_DIM, GQA, kStreamWarps>();
  if (smem > DecodeSmemLimits().max_per_block) {
    DecodeAttentionParams p = params;
    p.mma_warps = kStreamWarps;
    return LaunchDecodeAttentionMma<T, HEAD_DIM, GQA>(p, stream);
  }
  LaunchDecodeKernel<DecodeAttentionMmaStreamKernel<T, HEAD_DIM, GQA, kStreamWarps>>(32 * kStreamWarps, smem, params,
                                                                                     stream);
}

}  // namespace decode
}  // namespace prefixd::kernels::cuda

#define PREFIXD_INSTANTIATE_DECODE_ATTENTION_MMA_STREAM(T, HEAD_DIM)                                         \
  namespace prefixd::kernels::cuda::decode {                                                                 \
  template void LaunchDecodeAttentionMmaStream<T, HEAD_DIM, 4>(const DecodeAttentionParams&, cudaStream_t); \
  template void LaunchDecodeAttentionMmaStream<T, HEAD_DIM, 8>(const DecodeAttentionParams&, cudaStream_t); \
  }
