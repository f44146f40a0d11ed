#!/usr/bin/env bash
# Session 99, run 1, on .carry/s99a (4510483's binaries: session 98's 16-bit concurrent states,
# PREFIXD_CONCURRENT_STATES16, off by default, and the launcher-refusal tests; plus s97a's kernel
# benchmark as prefixd_kernel_bench_old). Whichever card comes does the most needed first, with
# each later item only while time is left (the call's limit is 600 s):
# - on an H200 (the bar's card): the bar grid and head_dim rows on the default (run_bar_grid; none
#   since s94's, and s96's head_dim-256 chain is untimed there), then the setting's A/B at the
#   headline row and its neighbours, the new tests, the headline's k scan;
# - on an H100: s98-run2.sh's items (the new tests with every concurrent, merge, cascade, graph and
#   early-decode test; memcheck on the new ones; the setting's A/B; old against new).
#   mkdir -p /tmp/carry98 && cp build/bench/prefixd_kernel_bench build/tests/prefixd_gpu_tests \
#     build/launch/prefixd /tmp/carry98/ && tar -C /tmp/carry98 -xJf .carry/s97a/bins.tar.xz \
#     --transform 's,prefixd_kernel_bench$,prefixd_kernel_bench_old,' ./prefixd_kernel_bench && \
#     mkdir -p .carry/s99a && tar -C /tmp/carry98 -cf - . | xz -6 -T2 > .carry/s99a/bins.tar.xz
#   CARRY=.carry/s99a bash bench/kernel/sessions/s99-run1.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s99-run1
NEW_TESTS='*StatesIn16Bits*:*SixteenBitValues*:*SixteenBitStatesOnly*'
S16="default,PREFIXD_CONCURRENT_STATES16=1"
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  run_bar_grid
  [ "$SECONDS" -lt 380 ] && RUN_TIMEOUT=120 run_variants s16 "$S16" --heads 32/8 -b 128,256 -p 8192,32768 -s 256 \
    --dtype fp16,bf16 && SHOW_LINES=20 show_variants s16
  [ "$SECONDS" -lt 480 ] && GPU_TESTS_TIMEOUT=60 run_gpu_tests "$NEW_TESTS"
  if [ "$SECONDS" -lt 480 ]; then
    v=default; for k in 14 16 18; do v=$v,PREFIXD_CONCURRENT_DECODE_SMS=$k+PREFIXD_CONCURRENT_DECODE_TMA=force; done
    RUN_TIMEOUT=80 run_variants kscan "$v" --heads 32/8 -b 256 -p 32768 -s 256 --dtype fp16,bf16
    SHOW_LINES=14 show_variants kscan
  fi
else
  GPU_TESTS_TIMEOUT=200 run_gpu_tests "CudaConcurrentCascade.*:CudaMergeStates*:CudaCascade.*:CudaGraph.*:CudaEarlyDecode.*:$NEW_TESTS"
  MEMCHECK_TIMEOUT=90 run_memcheck '*StatesIn16Bits*:*SixteenBitValues*'
  RUN_TIMEOUT=150 run_variants s16 "$S16" --heads 32/8 -b 128,256 -p 8192,32768 -s 256 --dtype fp16,bf16
  RUN_TIMEOUT=60 run_variants s16d64 "$S16" --heads 32/8 -d 64 -b 256 -p 32768 -s 256 --dtype fp16,bf16
  SHOW_LINES=20 show_variants s16 s16d64
  [ "$SECONDS" -lt 480 ] && run_bench_ab "$OUT/ab" --heads 32/8 -d 64,128,256 -b 256 -p 32768 -s 256 --dtype fp16 \
    --no-baseline --no-graph -c 1
fi
echo "elapsed ${SECONDS} s"
pack_logs
