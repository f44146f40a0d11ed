#!/usr/bin/env bash
# Session 72, run 5 (nvidia-h200): the issue's grid and head_dim rows on the final binaries (the two
# producer threads of run 1; the kernel benchmark now also prints cuBLAS's bf16 GEMM rate, as
# information, where bf16 shapes run).
#   CARRY=.carry/s72e bash bench/kernel/sessions/s72-run5.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
OUT=${OUT:-/tmp/s72-run5}/grid bash bench/kernel/issue4-grid.sh 2>&1 | grep -vE '^$' | tail -16
grep -h "GEMM\|information" "${OUT:-/tmp/s72-run5}"/grid/grid.txt | head -4
tar -C "${OUT:-/tmp/s72-run5}" -czf /tmp/s72-run5-all.tgz grid && mv /tmp/s72-run5-all.tgz "${OUT:-/tmp/s72-run5}/all.tgz"
