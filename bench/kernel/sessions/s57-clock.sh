#!/usr/bin/env bash
# Session 57, run 1 (nvidia-h200). Two things in one call:
#  1. This session's changes on the GPU: the prefix kernel's setting tests (PREFIXD_SM90A_STAGES now
#     2|3, every deep-ring oracle case sets it), the main job at 32/8 (its KV pool's room, whose
#     lookup was restructured for the CPU backend's host room), and an explicit pool larger than
#     the GPU refused with the figures.
#  2. Does the GEMM ceiling run at a higher SM clock than the compute-bound prefix kernel? nvidia-smi
#     samples power and SM clock every 20 ms while (G) cuBLAS fp16 8192^3 runs 700 times back to
#     back (~1 s; the benchmark's ceiling is the median of 10 of them, after 3 warm-ups) and (P) the
#     prefix-bound step 32/8 D128 B256 P32768 S32 fp16 runs 2000 iterations without the L2 flush
#     (its prefix part, ~213 us a launch on all SMs, is most of the load). Session 55 read this
#     prefix at ~1.71 GHz by clock64 over %globaltimer (beside idle SMs); the question is what the
#     ceiling's GEMM runs at.
#   CARRY=.carry/s57a bash bench/kernel/sessions/s57-clock.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s57-clock
GPU_TESTS_TIMEOUT=240 run_gpu_tests '*PrefixAttentionKernelSelection*:*_s3*'
run_main_job_heads 32/8
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
timeout 60 mpirun --allow-run-as-root -np 1 /tmp/b/prefixd --pages-per-rank 100000000 --layers 4 >"$OUT/pool-refused.txt" 2>&1
echo "pool refusal rc=$? $(grep -o 'asks for .*' "$OUT/pool-refused.txt" | head -1)"

nvidia-smi --query-gpu=timestamp,power.draw,clocks.sm,clocks_throttle_reasons.active \
  --format=csv,noheader -lms 20 >"$OUT/smi.csv" 2>&1 &
smi=$!
sleep 1
mark() { echo "$1 $(date '+%Y/%m/%d %H:%M:%S.%3N')" >>"$OUT/marks.txt"; }
mark G0
timeout 60 $B --gemm-n 8192 --gemm-reps 700 --settle-ms 0 --heads 32/8 -b 16 -p 1024 -s 32 -n 1 -w 0 \
  --no-baseline --no-graph -c 1 >"$OUT/gemm.txt" 2>&1
echo "gemm rc=$? $(grep -A1 'ceilings measured now' "$OUT/gemm.txt" | tail -1)"
mark G1
sleep 2
mark P0
timeout 120 $B --gemm-n 1024 --settle-ms 0 -d 128 --heads 32/8 -b 256 -p 32768 -s 32 --dtype fp16 --flush none \
  -n 2000 -w 5 --no-baseline --no-graph -c 1 --csv "$OUT/prefix.csv" >"$OUT/prefix.txt" 2>&1
echo "prefix rc=$? $(grep 'wrong results' "$OUT/prefix.txt")"
awk -F, 'NR>1 {printf "prefix part %.1f us (%.1f TFLOP/s), step %.1f us\n", $13, 4*$6*$3*$7*$5/($13*1e-6)/1e12, $16}' "$OUT/prefix.csv"
mark P1
sleep 1
kill $smi 2>/dev/null; wait $smi 2>/dev/null
# Per phase (bench/kernel/smi_phases.py; run 1 ran the same summary inline, without the clock trace).
python3 bench/kernel/smi_phases.py "$OUT/smi.csv" "$OUT/marks.txt" "GEMM 8192^3 x700:G0:G1" \
  "prefix 32/8 B256 P32768 S32 x2000:P0:P1"
pack_logs
