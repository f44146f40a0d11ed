#!/usr/bin/env bash
# Session 98, run 2, on .carry/s98a (this session's build: 16-bit concurrent states,
# PREFIXD_CONCURRENT_STATES16, off by default; plus s97a's kernel benchmark as
# prefixd_kernel_bench_old). (1) The two new tests with every concurrent, merge, cascade, graph and
# early-decode GPU test; memcheck on the new ones. (2) The setting's A/B in one process, interleaved
# per shape, at the concurrent TMA-decode steps of the grid (32/8 B128-256 P8192-32768 S256, fp16
# and bf16) and head_dim 64. (3) The default against the build before (the prefix kernel's epilogue
# has a second store form, and ptxas moved a few spills: 32/8 D128 tile 160, D256), old new old new
# in separate processes, at the B256 P32768 S256 rows of head_dim 64, 128 and 256.
#   mkdir -p /tmp/carry98 && cp build/bench/prefixd_kernel_bench build/tests/prefixd_gpu_tests \
#     build/launch/prefixd /tmp/carry98/ && tar -C /tmp/carry98 -xJf .carry/s97a/bins.tar.xz \
#     --transform 's,prefixd_kernel_bench$,prefixd_kernel_bench_old,' ./prefixd_kernel_bench && \
#     mkdir -p .carry/s98a && tar -C /tmp/carry98 -cf - . | xz -6 -T2 > .carry/s98a/bins.tar.xz
#   CARRY=.carry/s98a bash bench/kernel/sessions/s98-run2.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s98-run2
GPU_TESTS_TIMEOUT=200 \
  run_gpu_tests 'CudaConcurrentCascade.*:CudaMergeStates*:CudaCascade.*:CudaGraph.*:CudaEarlyDecode.*'
MEMCHECK_TIMEOUT=90 run_memcheck '*StatesIn16Bits*:*SixteenBitValues*'
RUN_TIMEOUT=150 run_variants s16 "default,PREFIXD_CONCURRENT_STATES16=1" --heads 32/8 -b 128,256 -p 8192,32768 -s 256 \
  --dtype fp16,bf16
RUN_TIMEOUT=60 run_variants s16d64 "default,PREFIXD_CONCURRENT_STATES16=1" --heads 32/8 -d 64 -b 256 -p 32768 -s 256 \
  --dtype fp16,bf16
SHOW_LINES=20 show_variants s16 s16d64
run_bench_ab "$OUT/ab" --heads 32/8 -d 64,128,256 -b 256 -p 32768 -s 256 --dtype fp16 --no-baseline --no-graph -c 1
echo "elapsed ${SECONDS} s"
pack_logs
