#!/usr/bin/env bash
# Session 28, device calls on nvidia-h200: the wgmma prefix kernel at head_dim 64 with three
# consumer warpgroups (192-row tiles, FlashAttention-3's head_dim-64 CTA), where two left the
# prefix at ~53% of the GEMM rate; then conditional softmax rescaling (FlashAttention-4). Binaries
# carried as $CARRY/bins.tar.xz; run 1's were built with results/s28/three-consumers.patch applied
# (its tests and settings exist only there), and runs 2-3 also carry them as prefixd_kernel_bench_old.
# Runs are the session's device calls (logs: bench/kernel/results/s28/runN/):
#   run 1: CARRY=.carry/s28a PART=1   (the head_dim-64 and three-consumer prefix GPU tests, memcheck
#                                      and racecheck on three of them, then the head_dim-64 rows:
#                                      default (192-row items, three consumers) against the two-
#                                      consumer CTA on 128-row items (PREFIXD_WIDE_TILE_ROWS=0), the
#                                      plain schedule and the deeper ring; all slower: reverted,
#                                      results/s28/three-consumers.patch)
#   run 2: CARRY=.carry/s28b PART=2   (conditional rescaling in the wgmma prefix kernel: the prefix
#                                      and fused GPU tests, memcheck and racecheck on three, then the
#                                      same shapes with run 1's binary (prefixd_kernel_bench_old,
#                                      PREFIXD_WIDE_TILE_ROWS=0: the kernel before this session) and
#                                      with the new one: head_dim 128 at B 64/256, P 8192/32768,
#                                      S 32/256; head_dim 64 and 256 at B256 P32768 S256; the
#                                      prefix tests ran past run_gpu_tests' 200 s, no failure seen)
#   run 3: CARRY=.carry/s28c PART=3   (conditional rescaling at head_dim 256 only: the head_dim-256
#                                      GPU tests, memcheck and racecheck on two, then head_dim 256
#                                      at B 16/64/256, P 8192/32768, S 32/256, old and new binaries)
#   run 4: `CARRY=.carry/s28c OUT=$OUT/check bash bench/kernel/device-check.sh` (the final binaries,
#          commit 2d1f36a: the whole GPU suite, compute-sanitizer, the foundation grid)
#   run 5: CARRY=.carry/s28c PART=4   (the issue's head_dim rows and their floor table, then the
#                                      planner check at head_dim 256)
#   run 6: CARRY=.carry/s28d PART=5   (the overlap schedule without the ping-pong turns,
#                                      PREFIXD_SM90A_PING_PONG=0, against the default, interleaved:
#                                      head_dim 64/128/256, B 64/256, P 8192/32768, S 256; binaries
#                                      built with results/s28/no-ping-pong.patch, not applied)
#   run 7 (after the review mend 9fbf176, TensorCoreDecodeBuilt), inline with .carry/s28e (the GPU tests
#          only): `/tmp/b/prefixd_gpu_tests --gtest_brief=1 --gtest_filter='*CudaDecodeVariantTest*:
#          *DecodePipelineTest*:*CudaConcurrentCascade*:*CudaCascadeTest*d256*:*KernelSelection*'`
# (After the runs, the repeated steps were factored into run_sanitizers (device-setup.sh) and the
# helpers below; they run the same commands, in run 2 in another order: each shape set old then
# new, where run 2 timed both sets with the old binary first.)
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s28-d64
# compare_old_new NAME: per shape, the prefix, suffix and total µs of $OUT/NAME-old.csv (the old
# binary) and $OUT/NAME-new.csv side by side (one variant each, the same shapes in the same order).
compare_old_new() {
  paste -d, <(cut -d, -f1-8,13,14,16 "$OUT/$1-old.csv") <(cut -d, -f13,14,16 "$OUT/$1-new.csv") |
    awk -F, 'NR==1{print "shape,prefix old,new,suffix old,new,total old,new,delta"; next}
             {printf "%s %s/%s D%s B%s P%s S%s,%.1f,%.1f,%.1f,%.1f,%.1f,%.1f,%+.1f\n",$1,$3,$4,$5,$6,$7,$8,$9,$12,$10,$13,$11,$14,$14-$11}'
}
# tests_and_sanitizers TESTS SANITIZED: the GPU tests matching TESTS (failures listed), then
# memcheck and racecheck on those matching SANITIZED.
tests_and_sanitizers() {
  run_gpu_tests "$1"
  grep -E "FAILED|Failure" "$OUT/tests.log" | head -20
  run_sanitizers "$2"
}
# time_old_new NAME BENCH_ARGS...: the shapes with run 1's binary (NAME-old; PREFIXD_WIDE_TILE_ROWS=0
# gives its head_dim-64 default of before) and with the new one (NAME-new, where the setting is not read).
time_old_new() {
  local name=$1 new=$B
  shift
  B=/tmp/b/prefixd_kernel_bench_old
  run_variants "$name-old" PREFIXD_WIDE_TILE_ROWS=0 "$@"
  B=$new
  run_variants "$name-new" PREFIXD_WIDE_TILE_ROWS=0 "$@"
}
if [ "${PART:-1}" = 1 ]; then
  tests_and_sanitizers '*d64*:*wg3*:*WideRows*:*KernelSelection*' \
    '*wgmma_wg3_WideRows_d64_fp16*:*wgmma_plain_s3_wg3_ManyItems_d64_bf16_rows192*:*wgmma_overlap_ctas3_wg3_WideRowsOneItem_d64_fp16_rows400*'
  run_variants d64 "default,PREFIXD_WIDE_TILE_ROWS=0,plain,stages3,PREFIXD_WIDE_TILE_ROWS=0+plain" -d 64 \
    --heads 32/32,32/8 -b 64,256 -p 8192,32768 -s 256 --dtype fp16
  show_variants d64
  exit 0
fi
if [ "${PART:-1}" = 2 ]; then
  tests_and_sanitizers '*PrefixAttention*:*Fused*' \
    '*wgmma_ManyItems_d64_fp16*:*wgmma_plain_PoisonGroups_page7_bf16*:*wgmma_PoisonShortPrefix_d256_bf16*'
  time_old_new d128 --heads 32/32,32/8 -b 64,256 -p 8192,32768 -s 32,256 --dtype fp16
  time_old_new dims -d 64,256 --heads 32/32,32/8 -b 256 -p 32768 -s 256 --dtype fp16,bf16
  for n in d128 dims; do compare_old_new $n; done
  exit 0
fi
if [ "${PART:-1}" = 3 ]; then
  tests_and_sanitizers '*d256*' '*wgmma_ManyItems_d256_bf16*:*wgmma_plain_PoisonGroups_page7_d256_fp16*'
  RUN_TIMEOUT=300 time_old_new d256 -d 256 --heads 32/32,32/8 -b 16,64,256 -p 8192,32768 -s 32,256 --dtype fp16
  compare_old_new d256
  exit 0
fi
if [ "${PART:-1}" = 4 ]; then
  timeout 100 $B --heads 32/32,32/8 -b 256 -p 32768 -s 256 --head-dim 64,256 --dtype fp16,bf16 --no-baseline -c 1 \
    --csv "$OUT/dims.csv" >"$OUT/dims.txt" 2>&1
  echo "dims rc=$?"; grep "wrong results" "$OUT/dims.txt"
  python3 bench/kernel/fused_floor_table.py "$OUT/dims.csv" --log "$OUT/dims.txt" >"$OUT/dims-floor.md" 2>&1
  cat "$OUT/dims-floor.md"
  timeout 300 $B --planner-check -d 256 --heads 32/32,32/8 -b 16,64,256 -p 1024,8192,32768 -s 256 \
    >"$OUT/planner-d256.txt" 2>&1
  echo "planner-d256 rc=$?"; grep -E "SLOW|WRONG|worst|over" "$OUT/planner-d256.txt" | head -12
  exit 0
fi
if [ "${PART:-1}" = 5 ]; then
  RUN_TIMEOUT=400 run_variants pingpong "default,PREFIXD_SM90A_PING_PONG=0" -d 64,128,256 --heads 32/32,32/8 \
    -b 64,256 -p 8192,32768 -s 256 --dtype fp16
  SHOW_LINES=90 show_variants pingpong
  exit 0
fi
