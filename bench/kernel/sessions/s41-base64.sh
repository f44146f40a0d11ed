#!/usr/bin/env bash
# Session 41, run 2 (nvidia-h200): the shared-memory base / warpgroup hint (UNIFORM_BASE) at head_dim
# 64 on top of run 1's build (ROWSUM_BY_MMA at fp16 head_dim 64, UNIFORM_BASE at 128 and 256);
# run 1's prefix probe had the hint alone at 64 (HEAD + hint) 3.9% faster at bf16 32/8 B256 P32768.
# Binaries ($CARRY/bins.tar.xz): this build (UNIFORM_BASE everywhere), prefixd_prefix_probe_y (this
# build with ROWSUM_BY_MMA at fp16 head_dim 256 too), and run 1's new binaries as *_old.
#   1. the prefix probe, old new y, twice (a first shape to warm the clocks, not read);
#   2. the kernel benchmark, old new old new: the issue's head_dim 64 rows;
#   3. GPU tests of this build: every head_dim 64 and head_dim 256 case.
#   CARRY=.carry/s41b bash bench/kernel/sessions/s41-base64.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s41-base64
SHAPES=(--shape 32/8:256:8192 --shape 32/8:256:32768:64 --shape 32/32:256:32768:64 --shape 32/8:256:8192:64
  --shape 32/8:256:32768:64:bf16 --shape 32/32:256:32768:64:bf16 --shape 32/8:256:32768:256 --shape 32/32:256:32768:256
  --shape 32/8:256:32768)
run_probe_rounds "old new y" --kernel wgmma --iters 20 "${SHAPES[@]}"
run_bench_ab "$OUT/d64" -d 64 --heads 32/32,32/8 -b 256 -p 32768 -s 32,256 --dtype fp16,bf16 --no-baseline --no-graph -c 1
GPU_TESTS_TIMEOUT=${GPU_TESTS_TIMEOUT:-330} run_gpu_tests '*d64*:*d256*'
grep -hE '^\[  FAILED' "$OUT/tests.log" | head -10
pack_logs
