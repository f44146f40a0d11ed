#!/usr/bin/env bash
# Registers, spill and (with CUOBJDUMP) instruction and local-memory counts of the kernels of some
# CUDA objects, this tree against an older commit, without a GPU: each object compiled with the
# build's own command line (build/, ninja) plus -Xptxas -v, once here and once in a worktree of
# BASE, then bench/kernel/ptxas_regs.py. Session 79's register and SASS figures come from it:
#   bench/kernel/ptxas_diff.sh 91689bc kernels/cuda/inst/decode_attention_fp16_d128.cu
#   CUOBJDUMP=/path/to/cuobjdump bench/kernel/ptxas_diff.sh 91689bc kernels/cuda/inst/decode_attention_fp16_d128.cu
# (cuobjdump: PyPI's nvidia-cuda-cuobjdump wheel, `pip download --no-deps nvidia-cuda-cuobjdump`,
# unzipped: nvidia/cu13/bin/cuobjdump; a development tool only, as sass_config.sh's nvdisasm.)
# Slow: the decode instantiations take a few minutes each on two cores. Logs in $OUT (/tmp/ptxas-diff).
set -euo pipefail
cd "$(dirname "$0")/../.."
BASE=${1:?usage: ptxas_diff.sh BASE_COMMIT SOURCE.cu...}; shift
OUT=${OUT:-/tmp/ptxas-diff}; WT=$OUT/base; ROOT=$PWD
mkdir -p "$OUT"
[ -d "$WT" ] || git worktree add -f "$WT" "$BASE" -q
git -C "$WT" checkout -q "$BASE"
for src in "$@"; do
  tag=$(basename "$src" .cu)
  obj=$(ninja -C build -t targets all | grep -o "[^ :]*/${src#kernels/}.o" | head -1)
  cmd=$(ninja -C build -t commands "$obj" | tail -1 | sed -e 's|^[^ ]*ccache ||' -e 's| -MD -MT [^ ]* -MF [^ ]*||' \
    -e 's| -o [^ ]*$||')
  (cd build && eval "$cmd -o $OUT/$tag-new.o -Xptxas -v" >"$OUT/$tag-new.log" 2>&1)
  (cd build && eval "${cmd//$ROOT/$WT} -o $OUT/$tag-old.o -Xptxas -v" >"$OUT/$tag-old.log" 2>&1)
  sass=()
  if [ -n "${CUOBJDUMP:-}" ]; then
    "$CUOBJDUMP" -sass "$OUT/$tag-old.o" >"$OUT/$tag-old.sass"
    "$CUOBJDUMP" -sass "$OUT/$tag-new.o" >"$OUT/$tag-new.sass"
    sass=("$OUT/$tag-old.sass" "$OUT/$tag-new.sass")
  fi
  echo "== $tag ($BASE -> this tree)"
  python3 bench/kernel/ptxas_regs.py "$OUT/$tag-old.log" "$OUT/$tag-new.log" "${sass[@]}"
done
