#!/usr/bin/env bash
# Session 10's final device call (run 8, nvidia-h200): the whole GPU suite and compute-sanitizer
# through launch/gpu-check.sh (no CPU tests, no default grid), then the foundation grid with the
# two-kernel cascade and the fused kernel with its two ⊕ modes, in one call. Binaries carried as
# .carry/s10/bins.tar.xz (prefixd_gpu_tests, prefixd_kernel_bench; built with sm_90 + sm_90a).
# Logs: $OUT (bench/kernel/results/s10/run8-*).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/s10}
mkdir -p /tmp/b "$OUT" && tar -C /tmp/b -xJf .carry/s10/bins.tar.xz
PREFIXD_BIN_DIR=/tmp/b PREFIXD_SKIP_CPU_TESTS=1 PREFIXD_SKIP_BENCH=1 PREFIXD_TIMEOUT_TESTS=330 OUT=$OUT/check \
  bash launch/gpu-check.sh >"$OUT/check.log" 2>&1
tail -12 "$OUT/check.log"
cd /tmp/b
timeout 150 ./prefixd_kernel_bench --heads 32/8,32/32 -b 64,256 -p 8192,32768 -s 256 --no-baseline -c 1 \
  --variants default,fused,fused-mk --csv "$OUT/grid.csv" >"$OUT/grid.txt" 2>&1
tail -32 "$OUT/grid.txt" | head -11
# Diagnostic (wrong results on purpose, so this one exits non-zero): the fused step at 32/8 B256
# P32768 with the decode warps' arithmetic removed (PREFIXD_FUSED_DIAG=1, loads only).
timeout 60 ./prefixd_kernel_bench --heads 32/8 -b 256 -p 32768 -s 256 --no-baseline -c 1 \
  --variants default,fused-mk,fused-mk+PREFIXD_FUSED_DIAG=1 >"$OUT/diag.txt" 2>&1
tail -16 "$OUT/diag.txt" | head -6
