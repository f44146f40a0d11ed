#!/usr/bin/env bash
# Session 78, run 4 (nvidia-h200), the session's final binaries (the register epilogue of the
# decode kernels; the shallow 2-warp CTA's registers capped at GQA ≤ 4):
#   1. the issue's grid and head_dim rows (issue4-grid.sh: the measured choice, read floors);
#   2. the whole GPU suite with both sanitizers (launch/gpu-check.sh's default lists), 12 shards;
#   3. the engine's tests on this GPU with NCCL (1 rank);
#   4. at 64/8 head_dim 64 (GQA 8, uncapped: 136 registers, 7 CTAs per SM; run 3: steps +0.2 to
#      +1.2 µs against the build before although its suffix parts alone are faster at B64), the
#      build d64g8 (capped there too: 128 registers, 4 bytes of spill) against this one (the build
#      before is left out: the carry's 64 MiB).
# Not lent in session 78 ("no new device machine is lent at present"); for a next session: build,
# pack the carry as session 78 did (prefixd_kernel_bench, prefixd_gpu_tests, prefixd_mpi_tests,
# and for item 4 prefixd_kernel_bench_d64g8: this tree with MmaMinCtasPerSm's shallow condition
# `GQA <= 4 || (GQA <= 8 && HEAD_DIM == 64)`, kernels/cuda/decode_attention_mma.cuh); item 4 is
# skipped when that binary is not carried.
#   CARRY=.carry/s78d bash bench/kernel/sessions/s78-run4.sh
# Superseded by s79-run2.sh and s79-run3.sh: session 79 put the head_dim-64 cap of item 4 into the tree (every group).
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s78-run4
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
OUT=$OUT/grid bash bench/kernel/issue4-grid.sh 2>&1 | tail -14
if [ -x /tmp/b/prefixd_kernel_bench_d64g8 ]; then
  mkdir -p /tmp/d64g8
  ln -sf /tmp/b/prefixd_kernel_bench_d64g8 /tmp/d64g8/prefixd_kernel_bench
  run_build_rounds g8d64 "b d64g8" -d 64 --heads 64/8 -b 64,256 -p 1024,8192 -s 16,32 --dtype fp16 --no-baseline \
    --no-graph -c 1 --copy-gib 1 --gemm-n 2048 --settle-ms 200
fi
PREFIXD_TEST_SHARDS=12 PREFIXD_TIMEOUT_TESTS=150 PREFIXD_TIMEOUT_MEMCHECK=180 PREFIXD_TIMEOUT_RACECHECK=150 run_whole_suite
timeout 120 mpirun --allow-run-as-root --oversubscribe -np 1 /tmp/b/prefixd_mpi_tests --gtest_brief=1 \
  --gtest_filter='*cuda*' >"$OUT/mpi.log" 2>&1
echo "mpi engine (cuda, np 1) rc=$? $(grep -aE 'MPI.*test results' "$OUT/mpi.log")"
pack_logs
