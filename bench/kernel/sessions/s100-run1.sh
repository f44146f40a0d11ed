#!/usr/bin/env bash
# Session 100, run 1 (session 99's planned run 5), on .carry/s100a (11d6dc3's
# binaries: PREFIXD_CONCURRENT_STATES16 on by default; plus s97a's kernel benchmark as
# prefixd_kernel_bench_old). Whichever card comes:
# - the concurrent, merge and 16-bit GPU tests (the mended TheStatesIn16BitsStayWithinTheirRounding,
#   now against PREFIXD_CONCURRENT_STATES16=0, has not run on a GPU), memcheck on the 16-bit ones;
# - on an H200 (the bar's card), while under 200 s: the bar grid and head_dim rows on the new
#   default (run_bar_grid), then the headline's k scan;
# - on an H100: the default against s97a's build (old new old new) at 32/8 D64/D128 B128/B256
#   P8192/P32768 S256 (the default's 16-bit gain against the build before).
#   mkdir -p /tmp/carry100a && cp build/bench/prefixd_kernel_bench build/tests/prefixd_gpu_tests \
#     build/launch/prefixd /tmp/carry100a/ && tar -C /tmp/carry100a -xJf .carry/s97a/bins.tar.xz \
#     --transform 's,prefixd_kernel_bench$,prefixd_kernel_bench_old,' ./prefixd_kernel_bench && \
#     mkdir -p .carry/s100a && tar -C /tmp/carry100a -cf - . | xz -6 -T2 > .carry/s100a/bins.tar.xz
#   CARRY=.carry/s100a bash bench/kernel/sessions/s100-run1.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s100-run1
GPU_TESTS_TIMEOUT=150 run_gpu_tests 'CudaConcurrentCascade.*:CudaMergeStates*:*SixteenBit*:*StatesIn16Bits*'
MEMCHECK_TIMEOUT=90 run_memcheck '*StatesIn16Bits*:*SixteenBitValues*'
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  [ "$SECONDS" -lt 200 ] && run_bar_grid
  if [ "$SECONDS" -lt 480 ]; then
    v=default; for k in 14 16 18; do v=$v,PREFIXD_CONCURRENT_DECODE_SMS=$k+PREFIXD_CONCURRENT_DECODE_TMA=force; done
    RUN_TIMEOUT=80 run_variants kscan "$v" --heads 32/8 -b 256 -p 32768 -s 256 --dtype fp16,bf16
    SHOW_LINES=14 show_variants kscan
  fi
else
  run_bench_ab "$OUT/ab" --heads 32/8 -d 64,128 -b 128,256 -p 8192,32768 -s 256 --dtype fp16,bf16 --no-baseline \
    --no-graph -c 1
fi
echo "elapsed ${SECONDS} s"
pack_logs
