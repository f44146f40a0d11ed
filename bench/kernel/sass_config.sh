#!/usr/bin/env bash
# The SASS of one configuration of the sm_90a prefix kernel, without a GPU: compiles a one-config
# translation unit to an sm_90a cubin with the build's flags, disassembles it and runs
# sass_turns.py on it (turn lengths, where the P·V wait sits against the softmax).
#   bench/kernel/sass_config.sh [T=__half] [HEAD_DIM=128] [STAGES=2] [OVERLAP=true] [CONSUMER_WGS=2] [OUT_DIR] [BLOCK_N=0]
# (BLOCK_N: tokens per K/V tile, 0 for the head_dim's default; e.g. 160 at head_dim 128.)
# Needs nvcc and nvdisasm. The CUDA toolkit here has nvcc but no nvdisasm / cuobjdump; session 39
# took nvdisasm from PyPI's nvidia-cuda-nvdisasm wheel (pip download --no-deps
# nvidia-cuda-nvdisasm, then unzip it: nvidia/cu13/bin/nvdisasm), a development tool only.
set -euo pipefail
cd "$(dirname "$0")/../.."
T=${1:-__half}; D=${2:-128}; ST=${3:-2}; OV=${4:-true}; CW=${5:-2}; OUT=${6:-/tmp/prefixd-sass}; BN=${7:-0}
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
command -v nvdisasm >/dev/null || { echo "sass_config.sh: no nvdisasm on PATH (see the header)" >&2; exit 2; }
mkdir -p "$OUT"
tag="${T}_d${D}_s${ST}_${OV}_wg${CW}_n${BN}"
cat >"$OUT/$tag.cu" <<CU
#include "kernels/cuda/sm90a/prefix_attention_sm90a.cuh"
namespace prefixd::kernels::cuda::sm90a {
template void LaunchWgmmaConfig<WgmmaPrefixConfig<$T, $D, $ST, $OV, $CW, $BN>>(const WgmmaLaunch&, cudaStream_t);
}
CU
if ! "$NVCC" -I"$PWD/kernels/include" -I"$PWD" -I"$PWD/common/include" -O3 -DNDEBUG -std=c++17 \
  -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -Xptxas -v -cubin "$OUT/$tag.cu" \
  -o "$OUT/$tag.cubin" >"$OUT/$tag.log" 2>&1; then
  grep -E "error" "$OUT/$tag.log" | head -5 >&2
  echo "sass_config.sh: $tag does not compile (log: $OUT/$tag.log)" >&2
  exit 1
fi
grep -E "spill|Used [0-9]+ registers" "$OUT/$tag.log" || true
nvdisasm -c "$OUT/$tag.cubin" >"$OUT/$tag.sass"
echo "# $OUT/$tag.sass"
python3 bench/kernel/sass_turns.py "$OUT/$tag.sass"
