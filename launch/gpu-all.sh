#!/usr/bin/env bash
# Every GPU check of prefixd in ONE call on a lent multi-GPU machine (built for nvidia-h200-x4):
#   A. in parallel, on disjoint GPUs:
#      GPU 0   — launch/gpu-check.sh: every GPU test, compute-sanitizer memcheck + racecheck, then
#                the kernel benchmark grid with the variants in $PREFIXD_BENCH_VARIANTS (one table),
#                the planner check (prefixd_kernel_bench --planner-check);
#      GPUs 1+ — the MPI tests with NCCL + CUDA at np 2 and 3, and the NCCL failure tests;
#   B. on all GPUs — the MPI tests at np 4 and launch/gpu-scaling.sh's scaling runs and main job;
# then the summaries last; the logs so far are snapshotted to $OUT/logs.tgz every 30 s.
# The whole script takes ~600 s on 4 H200s, past the device tool's 600-s call limit with the start:
# PREFIXD_PART=A or PREFIXD_PART=B runs one half per call (~300 s each; default: both).
# Binaries: PREFIXD_BIN_DIR (default .carry/lead: prefixd,
# prefixd_scaling_bench, prefixd_mpi_tests, prefixd_failure_rank, prefixd_gpu_tests,
# prefixd_kernel_bench, side by side). Logs: one tarball and the CSVs under $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/prefixd-gpu-all}
work=$(mktemp -d)
mkdir -p "$out"
export PREFIXD_BIN_DIR=${PREFIXD_BIN_DIR:-.carry/lead}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
nvidia-smi -L
variants=${PREFIXD_BENCH_VARIANTS:-default,notrigger}
# Every 30 s, the logs so far into $out/logs.tgz: a call cut off by its time limit still returns
# what ran (session 3 lost a whole call's logs that way).
( while sleep 30; do tar czf "$out/logs.tgz.part" -C "$work" . 2>/dev/null && mv -f "$out/logs.tgz.part" "$out/logs.tgz"; done ) &
snapshot_pid=$!
trap 'kill $snapshot_pid 2>/dev/null' EXIT

part=${PREFIXD_PART:-all}
case "$part" in A|B|all) ;; *) echo "PREFIXD_PART must be A, B or all, got '$part'" >&2; exit 2 ;; esac

# --- A. GPU 0: kernels; GPUs 1..: distributed tests (2 and 3 ranks) --------------------------
if [ "$part" != B ]; then
(
  export CUDA_VISIBLE_DEVICES=0
  OUT=$work/check PREFIXD_SKIP_CPU_TESTS=1 PREFIXD_SKIP_BENCH=1 bash launch/gpu-check.sh >"$work/check.txt" 2>&1
  echo "gpu-check exit $?" >>"$work/check.txt"
  timeout "${PREFIXD_TIMEOUT_BENCH:-300}" "$PREFIXD_BIN_DIR/prefixd_kernel_bench" --heads 32/32,32/8 --variants "$variants" \
    --csv "$work/kernel_bench.csv" >"$work/kernel_bench.txt" 2>&1
  echo "kernel bench exit $?" >>"$work/kernel_bench.txt"
  # The planner's layout choice (on by default): measured against both layouts on its default grid.
  timeout 120 "$PREFIXD_BIN_DIR/prefixd_kernel_bench" --planner-check >"$work/planner_check.txt" 2>&1
  echo "planner check exit $?" >>"$work/planner_check.txt"
) &
check_pid=$!
if [ "$gpus" -ge 4 ]; then
  (
    export CUDA_VISIBLE_DEVICES=$(seq -s, 1 $((gpus - 1)))
    OUT=$work/dist PREFIXD_SCALING_ONLY=0 PREFIXD_MPI_NPS="2 3" PREFIXD_TESTS_ONLY=1 \
      bash launch/gpu-scaling.sh >"$work/dist.txt" 2>&1
  ) &
  dist_pid=$!
  wait $dist_pid
fi
wait $check_pid
fi

# --- B. all GPUs: 4-rank tests, scaling, main job ---------------------------------------------
if [ "$part" != A ]; then
  OUT=$work/scaling PREFIXD_MPI_NPS="$gpus" PREFIXD_SKIP_FAILURE=1 bash launch/gpu-scaling.sh >"$work/scaling.txt" 2>&1
fi

cp "$work"/kernel_bench.csv "$work"/scaling/scaling.csv "$work"/scaling/scaling.png "$out"/ 2>/dev/null
kill $snapshot_pid 2>/dev/null; wait $snapshot_pid 2>/dev/null
tar czf "$out/logs.tgz" -C "$work" .
if [ "$part" != B ]; then
  echo "================ A. gpu-check (GPU 0) ================"; tail -12 "$work/check.txt"
  echo "================ A. distributed tests (GPUs 1-$((gpus - 1))) ================"; grep -A20 'summary' "$work/dist.txt" | head -12
  echo "================ kernel benchmark: variants ================"; tail -40 "$work/kernel_bench.txt"
  echo "================ planner check ================"; tail -2 "$work/planner_check.txt"
fi
if [ "$part" != A ]; then
  echo "================ B. scaling ($gpus GPUs) ================"; grep -A40 'summary' "$work/scaling.txt" | cut -c1-200
fi
