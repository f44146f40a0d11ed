#!/usr/bin/env bash
# Session 42, run 5 (nvidia-h200): where run 4's slowdown of S two tiles ahead comes from.
# Binaries ($CARRY/bins.tar.xz): new = S_AHEAD with P through shared memory (stmatrix, SS wgmma)
# and a re-wait on V's full barrier before the wait for P·V (a block boundary, so that ptxas keeps
# the wait below the softmax's exponentials; session 39's trick); prefixd_prefix_probe_c = P
# through shared memory on HEAD's schedule (PREFIXD_EXP_S_AHEAD=0); *_old = HEAD.
#   1. the prefix probe, old new c, twice, head_dim 64 (after a head_dim-128 warm-up shape);
#   2. GPU tests of new: every head_dim 64 case.
#   CARRY=.carry/s42e bash bench/kernel/sessions/s42-p-smem.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s42-p-smem
SHAPES=(--shape 32/8:256:32768 --shape 32/8:256:32768:64 --shape 32/32:256:32768:64 --shape 32/8:256:8192:64
  --shape 32/8:256:32768:64:bf16)
run_probe_rounds "old new c" --kernel wgmma --iters 20 "${SHAPES[@]}"
GPU_TESTS_TIMEOUT=150 run_gpu_tests '*d64*'
grep -hE '^\[  FAILED' "$OUT/tests.log" | head -10
pack_logs
