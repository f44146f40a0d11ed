#!/usr/bin/env bash
# Session 41, run 1 (nvidia-h200): the row sums of P by the tensor cores at head_dim 64, fp16
# (WgmmaPrefixConfig::ROWSUM_BY_MMA: per k16 step of P·V one m64n8k16 wgmma of the same P
# fragments against a tile of ones; the softmax's 64 FADDs per tile and the epilogue's quad sums go),
# and the shared-memory base / warpgroup hint (UNIFORM_BASE) at head_dim 256 (with its stages) and
# at head_dim 64 (alone), the two combinations session 40 left unmeasured.
# Binaries ($CARRY/bins.tar.xz): this build (new: ROWSUM_BY_MMA at fp16 head_dim 64, UNIFORM_BASE at
# 128 and 256), prefixd_prefix_probe_x (HEAD with UNIFORM_BASE at 64 and 128), and the *_old
# binaries of HEAD (f016cd6).
#   1. the prefix probe, old new x, twice: head_dim 64 fp16 (changed in new and x), bf16 (changed in x
#      only), head_dim 256 (changed in new), head_dim 128 (unchanged: the control);
#   2. the kernel benchmark, old new old new: the issue's head_dim 64 / 256 rows;
#   3. GPU tests of this build: every head_dim 64 case.
#   CARRY=.carry/s41a bash bench/kernel/sessions/s41-rowsum.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s41-rowsum
SHAPES=(--shape 32/8:256:32768:64 --shape 32/32:256:32768:64 --shape 32/8:256:8192:64 --shape 32/8:64:32768:64
  --shape 32/8:256:32768:64:bf16 --shape 32/8:256:32768:256 --shape 32/32:256:32768:256:bf16 --shape 32/8:256:32768)
run_probe_rounds "old new x" --kernel wgmma --iters 20 "${SHAPES[@]}"
DIMS=(-d 64,256 --heads 32/32,32/8 -b 256 -p 32768 -s 32,256 --dtype fp16,bf16 --no-baseline --no-graph -c 1)
run_bench_ab "$OUT/dims" "${DIMS[@]}"
GPU_TESTS_TIMEOUT=${GPU_TESTS_TIMEOUT:-200} run_gpu_tests '*d64*'
grep -hE '^\[  FAILED' "$OUT/tests.log" | head -10
pack_logs
