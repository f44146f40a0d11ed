#!/usr/bin/env bash
# Session 100, run 2, on .carry/s100b (the TMA decode's 16-bit states stored a whole sector per head
# row and store: movmatrix + a pair traded between lanes q and q ^ 1; only the STATES16 kernels'
# ptxas -v changed, +0-10 registers, no spill; plus s100a's kernel benchmark, 11d6dc3's, as
# prefixd_kernel_bench_old). (1) The concurrent, merge, 16-bit and decode-variant GPU tests;
# memcheck on the 16-bit ones. (2) On an H200 (the bar's card): the bar grid and head_dim rows, the
# headline's k scan and, while under 400 s, the planner checks (run_h200_bar_checks). (3) The new
# stores against 11d6dc3's (old new old new) at 32 concurrent 32/8 S256 shapes.
#   mkdir -p /tmp/carry100b && cp build/bench/prefixd_kernel_bench build/tests/prefixd_gpu_tests \
#     build/launch/prefixd /tmp/carry100b/ && tar -C /tmp/carry100b -xJf .carry/s100a/bins.tar.xz \
#     --transform 's,prefixd_kernel_bench$,prefixd_kernel_bench_old,' ./prefixd_kernel_bench && \
#     mkdir -p .carry/s100b && tar -C /tmp/carry100b -cf - . | xz -6 -T2 > .carry/s100b/bins.tar.xz
#   CARRY=.carry/s100b bash bench/kernel/sessions/s100-run2.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s100-run2
GPU_TESTS_TIMEOUT=200 run_gpu_tests \
  'CudaConcurrentCascade.*:CudaMergeStates*:*SixteenBit*:*StatesIn16Bits*:*CudaDecodeVariantTest*'
MEMCHECK_TIMEOUT=90 run_memcheck '*StatesIn16Bits*:*SixteenBitValues*'
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  PLANNER_BEFORE_S=330 run_h200_bar_checks
fi
[ "$SECONDS" -lt 420 ] && run_bench_ab "$OUT/ab" --heads 32/8 -d 64,128 -b 96,128,192,256 -p 16384,32768 -s 256 \
  --dtype fp16,bf16 --no-baseline --no-graph -c 1
echo "elapsed ${SECONDS} s"
pack_logs
