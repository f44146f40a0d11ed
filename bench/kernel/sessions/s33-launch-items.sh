#!/usr/bin/env bash
# Session 33's device calls (nvidia-h200), one per PART: each sm_90a prefix CTA's first work item
# carried in the launch's parameters (LaunchItems, prefix_attention_sm90a.cuh;
# PREFIXD_SM90A_LAUNCH_ITEMS=0 reads it from the device arrays as before). Binaries carried as
# $CARRY/bins.tar.xz (and HEAD's before the change as $CARRY_A/bins.tar.xz for PART=2); logs in
# $OUT, also packed as $OUT/all.tgz.
#   PART=1: the prefix, cascade, fused and graph GPU tests; the probe's per-CTA timeline of the
#           memory-bound prefixes with and without the launch's first items; the two variants
#           interleaved per shape on the issue's fp16 grid (36 shapes) and on unseen bf16 shapes.
#           Run 1 (CARRY=.carry/s33a): its tests ran past run_gpu_tests' 200 s (nothing logged);
#           the new ManyCtas cases were then cut to 4 and the tests run sharded (PART=2).
#   PART=2: the GPU tests of PART 1 in 4 shards side by side; then the same grid, HEAD's binaries
#           (A, before the change) against the new ones (B), A B A B in separate processes: what
#           the larger launch parameters cost besides what the items save.
#           Run 2: CARRY_A=.carry/s33head CARRY=.carry/s33b
# The launch's first items were reverted after run 2 (bench/kernel/results/s33/launch-items.patch).
#   PART=3: partial warpgroups' queries by TMA (PREFIXD_SM90A_Q_TMA_PARTIAL; run 1's timeline showed
#           the 16-row items of 32/32 B16 waiting for their cp.async queries until ~7.8 µs, behind
#           the ring's first 128 KiB of K/V): the GPU tests in 4 shards, memcheck and racecheck on
#           the query-row cases, the probe's timeline with and without, and the two variants
#           interleaved per shape on the issue's fp16 grid and on unseen bf16 shapes.
#           Run 3: CARRY=.carry/s33c
# Runs 4-9 (HEAD's binaries, commit a03b45c, as .carry/s33d; the previous ones as .carry/s33head):
#   run 4: CARRY=.carry/s33d OUT=$OUT/check bash bench/kernel/device-check.sh
#   run 5: CARRY=.carry/s33d VARIANTS=default PLANNER_ENVS=- bash bench/kernel/sessions/s17-grid.sh
#   run 6: SHAPES="--heads 32/32,32/8 -b 256 -p 32768 -s 256 --head-dim 64 --dtype fp16" (then bf16)
#          CARRY_A=.carry/s33head CARRY=.carry/s33d bash bench/kernel/sessions/s19-ab.sh
#   run 7: for r in 1 2 3: prefixd_kernel_bench --heads 32/32 -b 256 -p 32768 -s 256 --head-dim 64
#          --dtype fp16,bf16 --no-baseline --no-graph -c 1 --variants default,PREFIXD_SM90A_Q_TMA_PARTIAL=0;
#          then s19-ab.sh twice more on the fp16 shape
#   run 8: 6 rounds of that shape (fp16) with --variants default,PREFIXD_SM90A_Q_TMA_PARTIAL=0,default
#   run 9: 4 rounds of it, the new binary with --variants PREFIXD_SM90A_Q_TMA_PARTIAL=0,default,
#          PREFIXD_SM90A_Q_TMA_PARTIAL=0 and the old one with --variants default,default,default
#   run 10: 2 rounds of PREFIXD_SM90A_Q_TMA_PARTIAL=1, then 0: prefixd_prefix_probe --kernel wgmma
#          --timeline --iters 20 --shape 16/16:8:3072:128:bf16 --shape 32/16:8:3072:128:bf16
#          --shape 16/16:8:12288:128:bf16 --shape 32/32:16:8192
#   run 11: CARRY=.carry/s33d PHASE=1 bash bench/kernel/sessions/s24-calibrate.sh (the cost model's
#          calibration grid, heads 32/32 and 32/8; bench/NOTES-planner.md, session 33)
#   run 12 (the review mend: the Q map re-encoded in place for a new batch size; .carry/s33e):
#          prefixd_gpu_tests --gtest_filter='PrefixAttentionQueryMap*', then in 4 shards
#          --gtest_filter='*PrefixAttention*:*CudaCascade*:*Fused*:*Graph*:*CudaPlanner*:*DecodePipeline*',
#          then compute-sanitizer --tool memcheck on 'PrefixAttentionQueryMap*:*wgmma_QueryRows_g1*'
# After the runs the repeated blocks became the functions below (same commands, not re-run).
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s33-launch-items
GRID="--heads 32/32,32/8 -b 16,64,256 -p 1024,8192,32768 -s 32,256 --dtype fp16"
# The GPU tests matching $FILTER (PART 1's set by default) as 4 gtest shards side by side (the
# float64 oracles run on the host), logs $OUT/tests.N.log, then the summary and the first failures.
run_tests_sharded() {
  for i in 0 1 2 3; do
    GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i timeout 400 /tmp/b/prefixd_gpu_tests --gtest_brief=1 \
      --gtest_filter="${FILTER:-*PrefixAttention*:*CudaCascade*:*Fused*:*Graph*:*CudaPlanner*}" >"$OUT/tests.$i.log" 2>&1 &
  done
  wait
  echo "tests: $(cat "$OUT"/tests.*.log | grep -E '^\[  (PASSED|FAILED|SKIPPED) ' | tr '\n' ' ')"
  cat "$OUT"/tests.*.log | grep -m3 -B4 '^\[  FAILED  \]'
}

# timeline_pair VAR TAG SHAPE...: the probe's per-CTA timeline of those shapes (HQO/HKV:B:P) with
# VAR=1, then VAR=0 ($OUT/probe-TAG1.txt, probe-TAG0.txt).
timeline_pair() {
  local var=$1 tag=$2 shapes=() v
  shift 2
  for v in "$@"; do shapes+=(--shape "$v"); done
  for v in 1 0; do
    env "$var=$v" timeout 120 /tmp/b/prefixd_prefix_probe --kernel wgmma --timeline --iters 20 "${shapes[@]}" \
      >"$OUT/probe-$tag$v.txt" 2>&1
    echo "probe $var=$v rc=$?"
    grep -E "^# timeline|Q loaded|first K tile|tiles done|exit" "$OUT/probe-$tag$v.txt" | head -24
  done
}
# time_pair VAR UNSEEN_ARGS...: the default against VAR=0, interleaved per shape, on the grid and on
# unseen bf16 shapes (P 3072 / 12288, S 64 / 384; heads and batches from UNSEEN_ARGS), and the sums.
time_pair() {
  local v="default,$1=0"
  shift
  RUN_TIMEOUT=280 run_variants grid "$v" $GRID
  run_variants unseen "$v" "$@" -p 3072,12288 -s 64,384 --dtype bf16
  python3 bench/kernel/variant_diff.py "$OUT/grid.csv" "$OUT/unseen.csv"
}

case "${PART:-1}" in
1)
  run_gpu_tests "${FILTER:-*PrefixAttention*:*CudaCascade*:*Fused*:*Graph*:*CudaPlanner*}"
  grep -m1 -B4 '^\[  FAILED  \]' "$OUT/tests.log"
  timeline_pair PREFIXD_SM90A_LAUNCH_ITEMS "" 32/32:16:8192 32/32:64:8192 32/8:16:32768 32/8:256:8192
  time_pair PREFIXD_SM90A_LAUNCH_ITEMS --heads 16/16,32/4,64/8 -b 24,96
  SHOW_LINES=${SHOW_LINES:-45} show_variants grid
  ;;
2)
  run_tests_sharded
  mkdir -p /tmp/a && tar -C /tmp/a -xJf "${CARRY_A:?}/bins.tar.xz"
  OUT=$OUT SHAPES="$GRID" CARRY_A=$CARRY_A CARRY=$CARRY bash bench/kernel/sessions/s19-ab.sh
  ;;
3)
  run_tests_sharded
  run_sanitizers "*wgmma_QueryRows*:*wgmma_wg1_QueryRows*:*wgmma_ctas3_wg1_QueryRows*:*wgmma_PoisonSingleRow*"
  timeline_pair PREFIXD_SM90A_Q_TMA_PARTIAL q 32/32:16:8192 32/32:16:32768 32/32:8:8192 32/8:8:32768
  time_pair PREFIXD_SM90A_Q_TMA_PARTIAL --heads 16/16,32/32,32/16 -b 8,24,40
  ;;
esac
pack_logs
