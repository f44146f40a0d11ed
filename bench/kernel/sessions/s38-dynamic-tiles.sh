#!/usr/bin/env bash
# Session 38's device calls (nvidia-h200) for dynamic tiles: the chunk items of one prefix row tile
# take its KV tiles from a shared counter (PREFIXD_SM90A_DYNAMIC_TILES; prefix_tile_share.h), and
# the producer warpgroup at 40 registers, the consumers at 232 (216 narrow; head_dim 256 as before).
# Binaries carried as $CARRY/bins.tar.xz (prefixd_gpu_tests, prefixd_kernel_bench, the kernel
# benchmark of the commit before as prefixd_kernel_bench_old, prefixd); logs in $OUT, $OUT/all.tgz.
#   PART=ab (default): the new GPU tests (dynamic tiles over every cascade case, three runs each,
#     whole grid and 3 CTAs; the settings' refusal), then the kernel benchmark old / new
#     (default,dyn interleaved) / old / new on the memory-bound grid shapes (narrow prefix CTA:
#     32/32 B16-64, 32/8 B16) and two compute-bound controls; then a table of prefix parts and
#     totals per shape.
#   PART=check: the whole GPU suite (prefix kernel tests, cascade/decode/fused shards, the rest),
#     sanitizers on the dynamic-tile cases, and the main job.
# Run 2: CARRY=.carry/s38b bash bench/kernel/sessions/s38-dynamic-tiles.sh (PART=ab), binaries built with
# results/s38/dynamic-tiles.patch applied (not kept: measured slower, bench/RESULTS.md session 38).
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s38-dynamic-tiles
OLD=/tmp/b/prefixd_kernel_bench_old
SHAPES=(--heads 32/32,32/8 -b 16,64 -p 1024,8192,32768 -s 32,256 --dtype fp16)
if [ "${PART:-ab}" = ab ]; then
  run_gpu_tests '*DynamicTiles*:*BadSettings*:*KernelSelection*:*SharePrefixTiles*'
  grep -hE '^\[  FAILED' "$OUT/tests.log" | head -10
  for i in 1 2; do
    timeout 120 $OLD "${SHAPES[@]}" --no-baseline --no-graph -c 1 --csv "$OUT/old$i.csv" >"$OUT/old$i.txt" 2>&1
    echo "old $i rc=$? $(grep 'wrong results' "$OUT/old$i.txt")"
    RUN_TIMEOUT=200 run_variants new$i default,PREFIXD_SM90A_DYNAMIC_TILES=1 "${SHAPES[@]}"
  done
  timeout 100 $B --heads 32/8,32/32 -b 256 -p 8192 -s 256 --dtype fp16 --no-baseline --no-graph -c 1 \
    --variants default,PREFIXD_SM90A_DYNAMIC_TILES=1 --csv "$OUT/ctl-new.csv" >"$OUT/ctl-new.txt" 2>&1
  timeout 60 $OLD --heads 32/8,32/32 -b 256 -p 8192 -s 256 --dtype fp16 --no-baseline --no-graph -c 1 \
    --csv "$OUT/ctl-old.csv" >"$OUT/ctl-old.txt" 2>&1
  echo "controls rc=$? $(grep 'wrong results' "$OUT/ctl-new.txt" "$OUT/ctl-old.txt" | tr '\n' ' ')"
  python3 bench/kernel/ab_builds.py "$OUT" default PREFIXD_SM90A_DYNAMIC_TILES=1 | tee "$OUT/ab.txt"
fi
if [ "${PART:-ab}" = check ]; then
  timeout 200 /tmp/b/prefixd_gpu_tests --gtest_brief=1 --gtest_filter='*PrefixAttention*' >"$OUT/tests-prefix.log" 2>&1
  echo "prefix tests rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$OUT/tests-prefix.log" | tr '\n' ' ')"
  run_cascade_shards
  timeout 150 /tmp/b/prefixd_gpu_tests --gtest_brief=1 --gtest_filter='-*PrefixAttention*:*Cascade*:*Decode*:*Fused*' \
    >"$OUT/tests-rest.log" 2>&1
  echo "other tests rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$OUT/tests-rest.log" | tr '\n' ' ')"
  grep -hsE '^\[  FAILED' "$OUT"/tests-*.log | head -20
  run_sanitizers '*DynamicTiles*long_prefix*:*DynamicTiles*finest*:*wgmma_wg1_ManyItems_d128_fp16*'
  run_main_job_heads 32/8
fi
pack_logs
