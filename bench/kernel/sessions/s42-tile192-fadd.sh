#!/usr/bin/env bash
# Session 42, run 9 (nvidia-h200): 192-token K/V tiles at head_dim 64 with fp16's row sums by FADD
# (run 8: 192-token tiles made bf16 −7% but fp16, whose row sums came from the tensor cores, +3%).
# Binaries ($CARRY/bins.tar.xz): new = 192-token tiles, ROWSUM_BY_MMA at head_dim 256 only;
# prefixd_prefix_probe_x = run 8's (192-token tiles, fp16 row sums by the tensor cores); *_old = HEAD.
#   1. the prefix probe, old new x, twice, head_dim 64;
#   2. the kernel benchmark, old new old new, the issue's head_dim-64 rows;
#   3. GPU tests of new: every head_dim 64 case; compute-sanitizer on five.
#   CARRY=.carry/s42g bash bench/kernel/sessions/s42-tile192-fadd.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s42-tile192-fadd
SHAPES=(--shape 32/8:256:32768 --shape 32/8:256:32768:64 --shape 32/32:256:32768:64 --shape 32/8:256:8192:64
  --shape 32/8:64:32768:64 --shape 32/8:256:32768:64:bf16)
run_probe_rounds "old new x" --kernel wgmma --iters 20 "${SHAPES[@]}"
DIMS=(-d 64 --heads 32/32,32/8 -b 256 -p 32768 -s 32,256 --dtype fp16,bf16 --no-baseline --no-graph -c 1)
run_bench_ab "$OUT/dims" "${DIMS[@]}"
GPU_TESTS_TIMEOUT=300 run_gpu_tests '*d64*'
grep -hE '^\[  FAILED' "$OUT/tests.log" | head -10
run_sanitizers '*wgmma_Flat_fp16_d64_g4:*wgmma_overlap_s3_ManyItems_d64_bf16:*wgmma_ManyItems_d64_fp16:*wgmma_PoisonShortPrefix_d64_fp16:*wgmma_PoisonGroups_page7_d64_bf16'
pack_logs
