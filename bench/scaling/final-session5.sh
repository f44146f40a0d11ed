#!/usr/bin/env bash
# Session 5's last call (run 6, nvidia-h200-x4; the final binaries, $BIN): what run 5 did not cover
# with the final code: the NCCL + CUDA MPI tests at 2 and 3 ranks and the failure tests, strong
# scaling on 1-4 GPUs (3 included), weak scaling, the 1M-token document and the main job. Logs and
# the CSV are packed into $OUT/final.tgz as they are written; a summary is printed last.
set -uo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-/tmp/b}
OUT=${OUT:-/tmp/final-s5}
W=$(mktemp -d)
mkdir -p "$OUT"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
mpi() { mpirun --allow-run-as-root --oversubscribe --bind-to none -np 4 -x NCCL_NVLS_ENABLE=0 "$@"; }
pack() { tar czf "$OUT/final.tgz" -C "$W" .; }
PREFIXD_BIN_DIR=$BIN PREFIXD_TESTS_ONLY=1 PREFIXD_MPI_NPS="2 3" PREFIXD_MPI_FILTER='*cuda*' OUT=$W/tests \
  bash launch/gpu-scaling.sh >"$W/tests.txt" 2>&1
echo "tests: rc $?" >>"$W/tests.txt"; pack
B="$BIN/prefixd_scaling_bench --batch 128 --suffix 512 --layers 1 --csv $W/final.csv"
timeout 150 bash -c "$(declare -f mpi); mpi $B --mode strong --prefix 262144 --gpus 1,2,3,4" >"$W/strong.txt" 2>&1; pack
timeout 150 bash -c "$(declare -f mpi); mpi $B --mode weak --prefix-per-gpu 131072 --gpus 1,2,3,4" >"$W/weak.txt" 2>&1; pack
timeout 200 bash -c "$(declare -f mpi); mpi $BIN/prefixd_scaling_bench --mode strong --prefix 1048576 --batch 16 --suffix 128 \
  --layers 80 --qo-heads 64 --kv-heads 8 --gpus 4 -n 3 -w 1 --csv $W/final.csv" >"$W/doc1m.txt" 2>&1; pack
timeout 200 bash -c "$(declare -f mpi); mpi $BIN/prefixd" >"$W/main_default.txt" 2>&1; pack
echo "==== tests"; grep -A12 summary "$W/tests.txt" | head -10; tail -1 "$W/tests.txt"
for f in strong weak doc1m; do echo "==== $f"; grep -E "^(strong|weak) |^# check|mem" "$W/$f.txt" | head -8; done
echo "==== main job"; grep -E "^# (done|check: [0-9])" "$W/main_default.txt"
