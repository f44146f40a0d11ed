#!/usr/bin/env bash
# Session 30: the first runs on an H100 (`nvidia-h100-x1`: one H100 80GB HBM3, 132 SMs, 50 MB L2,
# ~3.0 TB/s copy). Every earlier device call ran on H200s; the H100 is the device kind a plain
# `run` gets and the Hopper part most users have. Binaries carried as $CARRY/bins.tar.xz
# (prefixd, prefixd_gpu_tests, prefixd_kernel_bench; built on the project machine, sm_90 + sm_90a).
# Logs in $OUT (runs were called as `CARRY=... PART=N OUT=/tmp/rN bash bench/kernel/sessions/s30-h100.sh;
# cp /tmp/rN/all.tgz $OUT/runN.tgz`: the device hands back a limited number of files).
#   PART=1: correctness: the whole GPU suite and compute-sanitizer (launch/gpu-check.sh's filters),
#           then the README's main job (launch/run-local.sh, the embedded workload, one rank).
#           The suite took > 300 s there (its float64 oracles run on the host, about half the
#           H200 machines' speed: 97 s against 48 s for the longest test), so:
#   PART=4: the whole GPU suite again, as SHARDS (4) gtest shards in parallel on the one GPU.
#   PART=5: the main job's refusals on the smaller device (a 1M-token document of 32 layers needs
#           ~128 GiB of KV; a pool too small for the workload; an explicit pool larger than the
#           GPU) and a long one that fits. Run 4 with the binaries of .carry/s30a (before the
#           pool was capped at the device's memory), run 5 with .carry/s30b (after), run 10 with
#           .carry/s30g (the review mend b3db1f0).
#   PART=6: the session's last binaries (.carry/s30c): launch/gpu-check.sh as committed (the GPU
#           suite now in 4 gtest shards at once, then memcheck and racecheck), the README's main
#           job, and the refusal of a 1M-token document of 32 layers on one GPU.
#   PART=7 (on nvidia-h200, the binaries of commit 586a049, .carry/s30d): the same as
#           PART=6, and a 1M-token document of 32 layers on one H200 (139 GiB), whose pool sized
#           from the workload (145 GiB) is larger than the GPU (the H100's failed in cudaMalloc,
#           run 4; the binary before the cap was not run on the H200).
#   PART=8 (on nvidia-h200-x2, .carry/s30e): the pool cap's collective on two GPU ranks: the
#           default main job, the 1M-token document (fits: 64 GiB per rank) and an explicit pool
#           too large for the GPUs, refused on both ranks at once (the job must end, non-zero).
#   PART=9 (on nvidia-h200-x2, .carry/s30f: the room computation moved to coordinator/rank_setup,
#           the scaling bench's skip): the main job on 2 ranks, the 1M-token document on 1 rank
#           (capped, served), and prefixd_scaling_bench --gpus 1,2 at P = 1M, 32 layers (one GPU
#           cannot hold it: skipped, efficiency against 2) and at P = 262144, 1 layer (as before).
#   PART=2: the planner check with the built-in (H200-fitted) cost model on the issue's grid
#           (fp16; P 128-32768), then the issue's grid and head_dim rows (fp16) against this
#           device's own ceilings (copy bandwidth, GEMM rate), as on the H200.
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s30-h100
case "${PART:-1}" in
1)
  PREFIXD_BIN_DIR=/tmp/b PREFIXD_SKIP_CPU_TESTS=1 PREFIXD_SKIP_BENCH=1 PREFIXD_TIMEOUT_TESTS=300 \
    PREFIXD_TIMEOUT_MEMCHECK=150 PREFIXD_TIMEOUT_RACECHECK=100 OUT=$OUT/check \
    bash launch/gpu-check.sh >"$OUT/check.log" 2>&1
  tail -8 "$OUT/check.log"
  grep -E '^\[  FAILED  \]' "$OUT/check/gpu_tests.log" 2>/dev/null | head -20
  PREFIXD_BIN=/tmp/b/prefixd timeout 150 bash launch/run-local.sh >"$OUT/main-job.txt" 2>&1
  echo "main job rc=$?"; tail -14 "$OUT/main-job.txt"
  ;;
2)
  timeout 200 $B --planner-check --dtype fp16 -c 1 >"$OUT/planner.txt" 2>&1
  echo "== planner check (built-in H200 model) rc=$?"; grep -E "SLOW|WRONG|worst|over|^# planner" "$OUT/planner.txt" | head -16
  timeout 240 $B --heads 32/32,32/8 -b 16,64,256 -p 1024,8192,32768 -s 32,256 --dtype fp16 --no-baseline -c 1 \
    --csv "$OUT/grid.csv" >"$OUT/grid.txt" 2>&1
  echo "grid rc=$?"; grep "wrong results" "$OUT/grid.txt"
  timeout 60 $B --heads 32/32,32/8 -b 256 -p 32768 -s 256 --head-dim 64,256 --dtype fp16 --no-baseline -c 1 \
    --csv "$OUT/dims.csv" >"$OUT/dims.txt" 2>&1
  echo "dims rc=$?"; grep "wrong results" "$OUT/dims.txt"
  python3 bench/kernel/fused_floor_table.py "$OUT/grid.csv" --log "$OUT/grid.txt" >"$OUT/grid-floor.md" 2>&1
  python3 bench/kernel/fused_floor_table.py "$OUT/dims.csv" --log "$OUT/dims.txt" >"$OUT/dims-floor.md" 2>&1
  head -2 "$OUT/grid-floor.md"; tail -1 "$OUT/grid-floor.md"; tail -1 "$OUT/dims-floor.md"
  ;;
4)
  n=${SHARDS:-4}
  for i in $(seq 0 $((n - 1))); do
    GTEST_TOTAL_SHARDS=$n GTEST_SHARD_INDEX=$i timeout 540 /tmp/b/prefixd_gpu_tests --gtest_brief=1 \
      >"$OUT/gpu-tests-shard$i.log" 2>&1 &
  done
  wait
  for i in $(seq 0 $((n - 1))); do
    echo "shard $i: $(grep -E '^\[  (PASSED|FAILED|SKIPPED) |tests from .* ran' "$OUT/gpu-tests-shard$i.log" | tr '\n' ' ')"
  done
  grep -h -E '^\[  FAILED  \]' "$OUT"/gpu-tests-shard*.log | head -20
  ;;
5)
  run_main() {  # label, prefixd options...
    local label=$1; shift
    PREFIXD_BIN=/tmp/b/prefixd timeout 120 bash launch/run-local.sh "$@" >"$OUT/main-$label.txt" 2>&1
    echo "== $label ($*): rc=$?"; grep -iE "error|refus|done:|memory rank|check: [0-9]+ of" "$OUT/main-$label.txt" | head -4
  }
  run_main doc1m --doc-tokens 1048576
  run_main tiny-pool --pages-per-rank 1000
  run_main huge-pool --pages-per-rank 100000
  run_main doc512k-8layers --doc-tokens 524288 --layers 8 --decode-steps 4
  ;;
6|7)
  PREFIXD_BIN_DIR=/tmp/b PREFIXD_SKIP_CPU_TESTS=1 PREFIXD_SKIP_BENCH=1 PREFIXD_TIMEOUT_TESTS=400 \
    PREFIXD_TIMEOUT_MEMCHECK=150 PREFIXD_TIMEOUT_RACECHECK=100 OUT=$OUT/check \
    bash launch/gpu-check.sh >"$OUT/check.log" 2>&1
  tail -7 "$OUT/check.log"
  gzip -f "$OUT/check/gpu_tests.log"
  PREFIXD_BIN=/tmp/b/prefixd timeout 150 bash launch/run-local.sh >"$OUT/main-job.txt" 2>&1
  echo "main job rc=$?"; tail -3 "$OUT/main-job.txt"
  PREFIXD_BIN=/tmp/b/prefixd timeout $([ "$PART" = 7 ] && echo 240 || echo 120) bash launch/run-local.sh \
    --doc-tokens 1048576 >"$OUT/main-doc1m.txt" 2>&1
  echo "doc1m rc=$?"; grep -E "capped|every question|done:|memory rank|check: [0-9]+ of" "$OUT/main-doc1m.txt" | cut -c1-300
  gzip -f "$OUT/main-doc1m.txt"
  ;;
8)
  run_main2() {  # label, prefixd options...
    local label=$1; shift
    local t0=$SECONDS
    PREFIXD_RANKS=2 PREFIXD_BIN=/tmp/b/prefixd timeout 240 bash launch/run-local.sh "$@" >"$OUT/main2-$label.txt" 2>&1
    echo "== $label ($*): rc=$? after $((SECONDS - t0)) s"
    grep -E "capped|prefixd out of|every question|done:|check: [0-9]+ of" "$OUT/main2-$label.txt" | cut -c1-260 | head -4
  }
  run_main2 default
  run_main2 huge-pool --pages-per-rank 100000
  run_main2 doc1m --doc-tokens 1048576
  ;;
9)
  PREFIXD_RANKS=2 PREFIXD_BIN=/tmp/b/prefixd timeout 120 bash launch/run-local.sh >"$OUT/main2-default.txt" 2>&1
  echo "== main, 2 ranks: rc=$?"; grep -E "done:|check: [0-9]+ of" "$OUT/main2-default.txt" | cut -c1-200
  PREFIXD_RANKS=1 PREFIXD_BIN=/tmp/b/prefixd timeout 240 bash launch/run-local.sh --doc-tokens 1048576 >"$OUT/main1-doc1m.txt" 2>&1
  echo "== main, 1 rank, 1M document: rc=$?"; grep -E "capped|done:|check: [0-9]+ of" "$OUT/main1-doc1m.txt" | cut -c1-200
  for args in "--prefix 1048576 --layers 32" "--prefix 262144 --layers 1"; do
    PREFIXD_RANKS=2 PREFIXD_BIN=/tmp/b/prefixd_scaling_bench timeout 200 bash launch/run-local.sh --mode strong \
      $args --batch 128 --suffix 512 --gpus 1,2 --reduction a2a -n 5 -w 2 >"$OUT/scaling-${args// /_}.txt" 2>&1
    echo "== scaling $args: rc=$?"; grep -vE "^#   |NCCL" "$OUT/scaling-${args// /_}.txt" | tail -3
  done
  ;;
3)
  # The cost model fitted on this device (--calibrate: every layout's parts timed per shape), and
  # the planner check on the issue's grid with the fitted parameters (one call; the check prints
  # how each choice compares with the fastest layout timed in the same run).
  timeout 560 $B --calibrate "$OUT/cost_model_h100.txt" --planner-check --dtype fp16 -c 1 >"$OUT/calibrate.txt" 2>&1
  echo "== calibrate + planner check rc=$?"; grep -E "SLOW|WRONG|worst|over|^# fit|^# planner" "$OUT/calibrate.txt" | head -16
  ;;
esac
tar -C "$OUT" -czf "$OUT/all.tgz" --exclude=all.tgz . 2>/dev/null
