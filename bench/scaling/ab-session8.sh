#!/usr/bin/env bash
# Session 8's A/B runs (one device call per STAGE). Helpers: ab-lib.sh.
# Binaries: $BIN (carried). Logs: $OUT. Run 1 used the binaries of commit f0c449f (the experiment,
# reverted in the next commit: PREFIXD_DECODE_BESIDE_PREFIX exists only there).
set -uo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-/tmp/b}
OUT=${OUT:-/tmp/ab-s8}
WORK=${WORK:-/tmp/ab-s8-work}
export AB_FORWARD="PREFIXD_DECODE_BESIDE_PREFIX PREFIXD_DECODE_STREAM"
source bench/scaling/ab-lib.sh
STAGE=${STAGE:-1}
# Run 1 (STAGE=1, nvidia-h200-x4): the own rows' decode beside the prefix
# (WorkerOptions::decode_beside_prefix, worker/include/prefixd/worker/decode_beside_prefix.h): one
# decode CTA on each of the 4 SMs the prefix grid leaves idle (128 items on 132 SMs), launched
# before the prefix; the state exchange then runs alone (~20 µs instead of 34-39 beside the
# decode). "always" forces it where it applies (every rank that sends states); the 1-GPU row has
# no exchange and is unchanged. Also the 32-layer shape (forced: its per-layer prefix, ~55 µs, is
# far shorter than the decode on 4 SMs) and the trace that gives the decode's time on 4 SMs.
if [ "$STAGE" = 1 ]; then
run s8_default1 "" $W
run s8_beside1 "PREFIXD_DECODE_BESIDE_PREFIX=always" $W
run s8_beside_stream "PREFIXD_DECODE_BESIDE_PREFIX=always PREFIXD_DECODE_STREAM=1" $S --gpus 4,2
run s8_default2 "" $W
run s8_beside2 "PREFIXD_DECODE_BESIDE_PREFIX=always" $W
run s8_e_default "" $E
run s8_e_beside "PREFIXD_DECODE_BESIDE_PREFIX=always" $E
traced trace4_beside "PREFIXD_DECODE_BESIDE_PREFIX=always" $S --gpus 4
traced trace4_beside_stream "PREFIXD_DECODE_BESIDE_PREFIX=always PREFIXD_DECODE_STREAM=1" $S --gpus 4
mpi_tests_np4 '*cuda_a2a_beside1*:*cuda_a2a_sendfirst1*'
fi
# Run 3 (STAGE=3, nvidia-h200; run 2 was the calibration, bench/kernel/results/h200-s8-*): the
# planner with the session-8 defaults and the plain margin, choose_layout on by default:
#  a. the planner check on its default grid (the shapes the defaults were fitted on);
#  b. the planner check on shapes the fit never saw (heads 64/8 too, other B, P, S; bf16);
#  c. the kernel grid of the foundation and performance issues (planner choices now in effect);
#  d. the whole GPU test suite.
if [ "$STAGE" = 3 ]; then
KB=$BIN/prefixd_kernel_bench
timeout 120 $KB --planner-check >"$OUT/planner-check-defaults.txt" 2>&1
echo "planner check (default grid): rc $? $(tail -1 "$OUT/planner-check-defaults.txt")" | tee -a "$OUT/ab.log"
timeout 200 $KB --planner-check --heads 32/32,32/8,64/8 -b 8,32,128 -p 128,512,2048,8192 -s 64,512 --dtype bf16 \
  >"$OUT/planner-check-unseen.txt" 2>&1
echo "planner check (unseen shapes, bf16): rc $? $(tail -1 "$OUT/planner-check-unseen.txt")" | tee -a "$OUT/ab.log"
timeout 200 $KB --heads 32/32,32/8 -b 16,64,256 -p 1024,8192,32768 -s 32,256 --dtype fp16,bf16 --no-baseline -c 1 \
  --csv "$OUT/grid.csv" >"$OUT/grid.txt" 2>&1
echo "kernel grid: rc $?" | tee -a "$OUT/ab.log"
timeout 240 $BIN/prefixd_gpu_tests >"$WORK/gpu_tests_all.log" 2>&1
echo "gpu tests (all): rc $? $(grep -E '^\[  (PASSED|FAILED)' "$WORK/gpu_tests_all.log" | tr '\n' ' ')" | tee -a "$OUT/ab.log"
grep -E "FAILED|SKIPPED" "$WORK/gpu_tests_all.log" | head -20 >>"$OUT/ab.log"
gzip -c "$WORK/gpu_tests_all.log" >"$OUT/gpu_tests_all.log.gz"
fi
