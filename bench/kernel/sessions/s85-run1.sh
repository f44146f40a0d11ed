#!/usr/bin/env bash
# Session 85, run 1 (nvidia-h200), one call for two things:
#  (a) session 84's run 5, not run there: the main job on its embedded default (the README's first
#      command's job) on one rank, and the engine's MPI tests with the CUDA backend on one rank;
#  (b) the head_dim-64 prefix part against its bar item (>= 60% of the GEMM rate; s84 runs 3-4 read
#      58.2-59.9% at the four B256 P32768 S256 rows): the prefix kernel's plan settings as variants
#      interleaved per shape in one process, two rounds, so that a setting that pays shows as a
#      same-run ratio, not a cross-run one.
# Carry: this tree's launch/prefixd, tests/prefixd_mpi_tests, bench/prefixd_kernel_bench and
# tests/prefixd_gpu_tests, flattened:
#   mkdir -p .carry/s85 && tar -C build -cJf .carry/s85/bins.tar.xz --transform 's,.*/,./,' \
#     launch/prefixd tests/prefixd_mpi_tests bench/prefixd_kernel_bench tests/prefixd_gpu_tests
#   CARRY=.carry/s85 bash bench/kernel/sessions/s85-run1.sh
# Not run in session 85: no machine started for it (seven refused starts spent the device budget).
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s85-run1
run_main_job_one_rank '*cuda*:*nccl*'

V=default,stages3,plain,PREFIXD_SM90A_KV_TILE=128,PREFIXD_PREFIX_BALANCE=0,kvfirst,kvlast
V=$V,PREFIXD_SM90A_KV_POLICY=normal,PREFIXD_PREFIX_TARGET_ITEMS=264,PREFIXD_PREFIX_BALANCE_STREAM=1
for r in 1 2; do
  run_variants d64-r$r "$V" --heads 32/32,32/8 -b 256 -p 32768 -s 256 --head-dim 64 --dtype fp16,bf16
done
show_parts d64-r1 d64-r2
SHOW_LINES=30 show_variants d64-r1 d64-r2
pack_logs
