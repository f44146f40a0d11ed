#!/usr/bin/env bash
# Session 11's final device call (nvidia-h200): the whole GPU suite and compute-sanitizer through
# launch/gpu-check.sh (no CPU tests, no default grid), then the foundation grid with Q by TMA (the
# default) and by cp.async (qcp), twice, interleaved per shape. Binaries carried as
# .carry/s11/bins.tar.xz (prefixd_gpu_tests, prefixd_kernel_bench; built with sm_90 + sm_90a).
# Logs: $OUT (bench/kernel/results/s11/run4-*).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/s11}
mkdir -p /tmp/b "$OUT" && tar -C /tmp/b -xJf .carry/s11/bins.tar.xz
PREFIXD_BIN_DIR=/tmp/b PREFIXD_SKIP_CPU_TESTS=1 PREFIXD_SKIP_BENCH=1 PREFIXD_TIMEOUT_TESTS=330 OUT=$OUT/check \
  bash launch/gpu-check.sh >"$OUT/check.log" 2>&1
tail -12 "$OUT/check.log"
cd /tmp/b
timeout 200 ./prefixd_kernel_bench --heads 32/8,32/32 -b 64,256 -p 8192,32768 -s 256 --no-baseline -c 1 \
  --variants default,qcp,default+PREFIXD_SM90A_Q_TMA=1,qcp+PREFIXD_DECODE_PDL=1 --csv "$OUT/grid.csv" >"$OUT/grid.txt" 2>&1
echo "grid rc=$?"
grep -A12 "# shape  " "$OUT/grid.txt" | head -12
