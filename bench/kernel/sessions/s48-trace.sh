#!/usr/bin/env bash
# Session 48, run 1 (nvidia-h200): HEAD's binaries (session 47's last commits had not run on a GPU)
# and where the concurrent step's time goes.
#   1. the concurrent step's decode kernels, A/B in one process (each shape timed once per variant
#      in turn): the default (the planner's k, the one-CTA-per-item decode that spreads over every
#      SM once the prefix CTAs exit) against the persistent TMA decode on exactly the k SMs
#      (PREFIXD_DECODE_PERSISTENT=1 PREFIXD_DECODE_TMA=1), 32/8 D128 B256 P32768 S256 fp16/bf16,
#      and off the grid B128 / B256 P32768 S512;
#   2. the same two under the CUPTI trace (bench/trace/cupti_trace.cc): each kernel's start and
#      end in the timed steps (timeline.py, steps split at the benchmark's 256 MiB flush; run 1
#      split them at HoldKernel, one per shape, and was analysed by hand the same way);
#   3. launch/gpu-check.sh (no benchmarks): the whole GPU suite.
#   CARRY=.carry/s48a bash bench/kernel/sessions/s48-trace.sh   (bins.tar.xz + trace.tar.xz)
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s48-trace
tar -C /tmp/b -xJf "$CARRY/trace.tar.xz"
V=default,persistent+tma
RUN_TIMEOUT=150 run_variants s256 "$V" -d 128 --heads 32/8 -b 256 -p 32768 -s 256 --dtype fp16,bf16
RUN_TIMEOUT=150 run_variants s512 "$V" -d 128 --heads 32/8 -b 128,256 -p 32768 -s 512 --dtype fp16
echo "== prefix / suffix / merge / total us (parts timed alone), wrong"
for n in s256 s512; do
  awk -F, 'NR>1 {printf "%s %s/%s D%s B%s P%s S%s %-20s %7.1f %7.1f %6.1f %7.1f %s\n",$1,$3,$4,$5,$6,$7,$8,$NF,$13,$14,$15,$16,$31}' "$OUT/$n.csv"
  grep -o "concurrent(k=[0-9]*)" "$OUT/$n.txt" | sort | uniq -c
done
mkdir -p "$OUT/trace"
for v in default persistent+tma; do
  d="$OUT/trace/$v"; mkdir -p "$d"
  LD_LIBRARY_PATH=/tmp/b CUDA_INJECTION64_PATH=/tmp/b/libprefixd_cupti_trace.so PREFIXD_TRACE_DIR="$d" \
    timeout 120 $B -d 128 --heads 32/8 -b 256 -p 32768 -s 256,512 --dtype fp16 --no-baseline --no-graph -c 0 \
    --variants "$v" >"$d/out.txt" 2>&1
  echo "== trace $v rc=$?"
  /usr/bin/python3 bench/trace/timeline.py "$d"/trace.*.csv --flush-mib 200 --top 8 >"$d/timeline.txt" 2>&1
  grep -A5 "signature of 3[0-9] steps.*, 4 activities" "$d/timeline.txt"
done
OUT=$OUT/check PREFIXD_BIN_DIR=/tmp/b PREFIXD_SKIP_CPU_TESTS=1 PREFIXD_SKIP_BENCH=1 PREFIXD_TIMEOUT_TESTS=300 \
  bash launch/gpu-check.sh 2>&1 | tail -8
pack_logs
