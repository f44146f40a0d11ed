#!/usr/bin/env bash
# Session 96, run 2, on .carry/s96c (a5a65d4): PREFIXD_CONCURRENT_CHAIN=all now launches the one-item decode
# as a CTA per item (the prefix grid's programmatic dependent, only the last CTA waiting for the
# prefix grid at its exit), not as an early grid capped at the k SMs (run 1: +10.1 / +2.7 µs at fp16
# / bf16 32/8 D256 B256 P32768 S256 on an H100; the decode outlasts the prefix grid there and stayed
# on the k SMs). ForEachDecodeItem's exit wait changed for every one-CTA-per-item early_chain grid.
# (1) the A/B at the head_dim-256 32/8 rows (B128 / B256, P8192 / P32768, S256; the model's plans),
#     default against =all, fp16 then bf16; (2) the GPU tests of the chain, the concurrent mode, the
#     early decode and the graphs; memcheck on the new tests; (3) on an H200, the bar's head_dim rows.
#   CARRY=.carry/s96c bash bench/kernel/sessions/s96-run2.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s96-run2
for dt in fp16 bf16; do
  RUN_TIMEOUT=150 run_variants chain-d256-$dt "default,PREFIXD_CONCURRENT_CHAIN=all" --heads 32/8 -d 256 -b 128,256 \
    -p 8192,32768 -s 256 --dtype $dt
  SHOW_LINES=14 show_variants chain-d256-$dt
  show_parts chain-d256-$dt
done
GPU_TESTS_TIMEOUT=200 run_gpu_tests 'CudaConcurrentCascade.*:CudaEarlyDecode.*:CudaGraph.*'
timeout 100 compute-sanitizer --tool memcheck --error-exitcode 9 /tmp/b/prefixd_gpu_tests --gtest_brief=1 \
  --gtest_filter='*OneItem*' >"$OUT/memcheck.log" 2>&1
echo "memcheck rc=$? $(grep -E 'ERROR SUMMARY|^\[  PASSED' "$OUT/memcheck.log" | tr '\n' ' ')"
if [ "$SECONDS" -lt 330 ] && nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  timeout 200 $B --heads 32/32,32/8 -d 64,256 -b 256 -p 32768 -s 256 --dtype fp16,bf16 --variants \
    "default,PREFIXD_CONCURRENT_CHAIN=all" --csv "$OUT/dims.csv" >"$OUT/dims.txt" 2>&1
  echo "dims rc=$?"; sed -n '/^# variants/,$p' "$OUT/dims.txt" | head -14
fi
echo "elapsed ${SECONDS} s"
pack_logs
