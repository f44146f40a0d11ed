#!/usr/bin/env bash
# Session 74, run 2 (nvidia-h200): the issue's grid and head_dim rows re-measured on HEAD's
# binaries (kernels as session 72's; the kernel benchmark gained --without-merge only), on this
# session's machine.
#   CARRY=.carry/s74a bash bench/kernel/sessions/s74-run2.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
OUT=${OUT:-/tmp/s74-run2}/grid bash bench/kernel/issue4-grid.sh 2>&1 | grep -vE '^$' | tail -16
grep -h "GEMM\|information" "${OUT:-/tmp/s74-run2}"/grid/grid.txt | head -4
tar -C "${OUT:-/tmp/s74-run2}" -czf /tmp/s74-run2-all.tgz grid && mv /tmp/s74-run2-all.tgz "${OUT:-/tmp/s74-run2}/all.tgz"
