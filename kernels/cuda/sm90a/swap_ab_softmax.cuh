// The online softmax of one step of a decode tile computed with the query heads as the N of
// m16n8k16 ("swap AB"): Sᵀ = K·qᵀ is tokens × 8 heads, so each head is a column whose 16 tokens
// per subtile lie in the 8 lanes of equal lane % 4. Shared by the two kernels that tile this way:
// the TMA streaming decode (decode_stream_tma_sm90a.cuh, one 16-token subtile a step) and the
// fused cascade kernel's suffix warps (suffix_warps_sm90a.cuh, two subtiles a step).
#pragma once

#include <cuda.h>

#include "kernels/cuda/attention_state.cuh"
#include "kernels/cuda/mma_sm80.cuh"
#include "kernels/cuda/sm90a/sm90a_primitives.cuh"

namespace prefixd::kernels::cuda::sm90a {

// s[u]: subtile u's raw scores in Sᵀ's C layout, element 0 (token lane/4, head 2·(lane % 4)), 1 (the
// same token, the next head), 2 and 3 (token lane/4 + 8); masked tokens −inf. `scale` > 0 takes a
// score to base-2 units (sm_scale · log2 e). Per head column c of the lane: the running max m[c]
// (scaled) and this lane's part of the running sum l[c] are brought up to date, rescale[c] is what
// the caller must multiply its Oᵀ columns by before adding this step's Vᵀ·Pᵀ (0 while nothing was
// seen), and p_b[u] are Pᵀ's two B fragments of subtile u (the transposes of Sᵀ's 8×8 halves).
template <typename T, int U>
__device__ __forceinline__ void SwapAbSoftmax(const float (&s)[U][4], float scale, float (&m)[2], float (&l)[2],
                                              float (&rescale)[2], uint32_t (&p_b)[U][2]) {
  // Each head's max over the step's tokens: the lane's, then across the 8 lanes of its column.
  // (Seeded by subtile 0, not −inf: fmaxf(−inf, x) is not folded away, and such instructions, two
  // per tile, made the TMA decode ~0.8% slower, bench/RESULTS.md session 55.)
  float col_max[2] = {fmaxf(s[0][0], s[0][2]), fmaxf(s[0][1], s[0][3])};
#pragma unroll
  for (int u = 1; u < U; ++u) {
    col_max[0] = fmaxf(col_max[0], fmaxf(s[u][0], s[u][2]));
    col_max[1] = fmaxf(col_max[1], fmaxf(s[u][1], s[u][3]));
  }
#pragma unroll
  for (int x = 4; x < 32; x *= 2)
#pragma unroll
    for (int c = 0; c < 2; ++c) col_max[c] = fmaxf(col_max[c], __shfl_xor_sync(0xffffffffu, col_max[c], x));
  float subtract[2];
#pragma unroll
  for (int c = 0; c < 2; ++c) {
    const float new_max = fmaxf(m[c], col_max[c] * scale);
    subtract[c] = SafeMax(new_max);
    rescale[c] = FastExp2(m[c] - subtract[c]);  // 0 while nothing was seen (m = −inf)
    m[c] = new_max;
  }
  float add[2];  // this step's part of the lane's sums (seeded by subtile 0: 0 + x is not folded either)
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const float p0 = FastExp2(fmaf(s[u][0], scale, -subtract[0])), p1 = FastExp2(fmaf(s[u][1], scale, -subtract[1]));
    const float p2 = FastExp2(fmaf(s[u][2], scale, -subtract[0])), p3 = FastExp2(fmaf(s[u][3], scale, -subtract[1]));
    add[0] = u == 0 ? p0 + p2 : add[0] + (p0 + p2);
    add[1] = u == 0 ? p1 + p3 : add[1] + (p1 + p3);
    p_b[u][0] = MovMatrixTrans(MmaOp<T>::Pack(p0, p1));
    p_b[u][1] = MovMatrixTrans(MmaOp<T>::Pack(p2, p3));
  }
  l[0] = fmaf(l[0], rescale[0], add[0]);
  l[1] = fmaf(l[1], rescale[1], add[1]);
}

}  // namespace prefixd::kernels::cuda::sm90a
