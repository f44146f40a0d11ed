#!/usr/bin/env bash
# Session 87, run 8 — NOT RUN in session 87 (its device budget was spent): the next device call
# for issue 4, on an H200 (the bar's card; the model's home). With this tree's binaries (the cost
# model's TMA step refitted to scale 0.86 in session 87 on an H100's table):
#  1. the grid and head_dim rows (issue4-grid.sh): does 32/8 B256 P32768 S256 now run on k = 16
#     and cross its bar, fp16 and bf16 (predicted ~240 / ~241 µs against 251.5-251.8, 26 of 72)?
#     The measured choice now times the mode's neighbouring k too (its first GPU run: the grid
#     log's measured-choice column names them, fewer-sms / more-sms).
#  2. the planner's GPU tests (CudaPlanner.MeasuredChoice... times the neighbouring k at 32/8 B200
#     P5000 S100, where the model takes the mode: its first run on a GPU);
#  3. run 7 (the forced-k table of the 20 mode shapes, two rounds) on the H200, refitted there by
#     tma_mode_fit.py, and the planner check with the built-in and the refitted model: whether
#     the H200's own fit moves the scale from the H100's 0.86.
# Carry .carry/s87 (ignored, local; rebuild it on a fresh checkout):
#   mkdir -p .carry/s87 && tar -C build -cf - --transform 's,.*/,./,' bench/prefixd_kernel_bench \
#     tests/prefixd_gpu_tests launch/prefixd tests/prefixd_mpi_tests | xz -6 -T2 > .carry/s87/bins.tar.xz
#   CARRY=.carry/s87 bash bench/kernel/sessions/s87-run8.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s87-run8
OUT=$OUT/grid bash bench/kernel/issue4-grid.sh 2>&1 | grep -v '^NVIDIA'
grep -E '^ +(fp16|bf16) +16 +32/8 +128 +256 +32768 +256 ' "$OUT/grid/grid.txt" | cut -c1-110
GPU_TESTS_TIMEOUT=150 run_gpu_tests 'CudaPlanner*:*Measured*'
OUT=$OUT/table bash bench/kernel/sessions/s87-run7.sh 2>&1 | grep -vE '^NVIDIA|^  fp16 32/8 D128 B(64|128)'
pack_logs
