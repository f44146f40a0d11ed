#!/usr/bin/env bash
# One device call (nvidia-h200) that checks a build and times the foundation grid: the whole GPU
# suite and compute-sanitizer through launch/gpu-check.sh (no CPU tests, no default grid), then
# the grid (32/8 and 32/32 heads, B 64/256, P 8192/32768, S 256, fp16) with the backend variants
# VARIANTS (prefixd_kernel_bench --variants; interleaved per shape), then optionally one row of
# DIAG_VARIANTS at 32/8 B256 P32768 (diagnostics that may be wrong on purpose and so exit non-zero).
# Binaries carried as $CARRY/bins.tar.xz (prefixd_gpu_tests, prefixd_kernel_bench; sm_90 + sm_90a).
#   session 10 (bench/kernel/results/s10/run8-*, run17-*): CARRY=.carry/s10 VARIANTS=default,fused,fused-mk
#     DIAG_VARIANTS=default,fused-mk,fused-mk+PREFIXD_FUSED_DIAG=1
#   session 11 (bench/kernel/results/s11/run4-*): CARRY=.carry/s11
#     VARIANTS=default,qcp,default+PREFIXD_SM90A_Q_TMA=1,qcp+PREFIXD_DECODE_PDL=1
#   session 12 (bench/kernel/results/s12/run6-*, run9-*): CARRY=.carry/s12a
#     VARIANTS=default,nowarm,default+PREFIXD_DECODE_WARMUP=1,nowarm+PREFIXD_DECODE_WARMUP_MIB=4
#   session 17 (bench/kernel/results/s17/run8-*): CARRY=.carry/s17e VARIANTS=default
#   session 25 (bench/kernel/results/s25/run10-*, the last binaries, commit 699c544): CARRY=.carry/s25i VARIANTS=default,tma
set -uo pipefail
cd "$(dirname "$0")/../.."
CARRY=${CARRY:?set CARRY to the directory holding bins.tar.xz}
OUT=${OUT:-/tmp/device-check}
mkdir -p /tmp/b "$OUT" && tar -C /tmp/b -xJf "$CARRY/bins.tar.xz"
PREFIXD_BIN_DIR=/tmp/b PREFIXD_SKIP_CPU_TESTS=1 PREFIXD_SKIP_BENCH=1 PREFIXD_TIMEOUT_TESTS=450 OUT=$OUT/check \
  bash launch/gpu-check.sh >"$OUT/check.log" 2>&1
tail -12 "$OUT/check.log"
cd /tmp/b
timeout 200 ./prefixd_kernel_bench --heads 32/8,32/32 -b 64,256 -p 8192,32768 -s 256 --no-baseline -c 1 \
  --variants "${VARIANTS:-default}" --csv "$OUT/grid.csv" >"$OUT/grid.txt" 2>&1
echo "grid rc=$?"
grep -A12 "# shape  " "$OUT/grid.txt" | head -12
if [ -n "${DIAG_VARIANTS:-}" ]; then
  timeout 60 ./prefixd_kernel_bench --heads 32/8 -b 256 -p 32768 -s 256 --no-baseline -c 1 \
    --variants "$DIAG_VARIANTS" >"$OUT/diag.txt" 2>&1
  tail -16 "$OUT/diag.txt" | head -6
fi
