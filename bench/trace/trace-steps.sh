#!/usr/bin/env bash
# Device timelines of the distributed step on a lent multi-GPU machine, one call: where the
# strong-scaling step (P = 262144, B = 128, S = 512, 1 layer, bf16, 32/8) goes at each GPU count
# in $NPS. Every run executes under the CUPTI injection library (cupti_trace.cc); timeline.py
# prints the most frequent step signature of ranks 0 and NP-1. Binaries, libprefixd_cupti_trace.so
# and libcupti.so.13 carried as $CARRY/scal.tar.xz. Output: $OUT/trace.log, $OUT/traces.tgz.
#   session 14: CARRY=.carry/s14 NPS="8 4" (nvidia-h200-x8)
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/trace-steps}
NPS=${NPS:-"8 4"}
ARGS=${ARGS:-"--mode strong --prefix 262144 --batch 128 --suffix 512 --layers 1 -n 30"}
NP=1 . bench/scaling/device-setup.sh
W=$(mktemp -d)
export LD_LIBRARY_PATH=/tmp/s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
for np in $NPS; do
  d="$W/np$np"; mkdir -p "$d"
  echo "== np $np: $ARGS --gpus $np ${EXTRA:-}" | tee -a "$OUT/trace.log"
  timeout 150 mpirun --allow-run-as-root --oversubscribe --bind-to none -np "$np" -x NCCL_NVLS_ENABLE=0 \
    -x LD_LIBRARY_PATH -x CUDA_INJECTION64_PATH=/tmp/s/libprefixd_cupti_trace.so -x PREFIXD_TRACE_DIR="$d" \
    /tmp/s/prefixd_scaling_bench $ARGS --gpus "$np" ${EXTRA:-} >"$d/out.txt" 2>&1
  echo "   rc $?" | tee -a "$OUT/trace.log"
  grep -E "^(strong|weak) |^# check" "$d/out.txt" | tee -a "$OUT/trace.log"
  files=$(ls "$d"/trace.*.csv | sort -t. -k2 -n)
  python3 bench/trace/timeline.py $(echo "$files" | head -1) $(echo "$files" | tail -1) --top 1 \
    --marker ${MARKER:-UploadBatchKernel} >>"$OUT/trace.log" 2>&1
done
tar czf "$OUT/traces.tgz" -C "$W" .
cat "$OUT/trace.log"
# Optionally, NCCL MPI test cases at the largest count ($MPI_FILTER, a gtest filter).
if [ -n "${MPI_FILTER:-}" ]; then
  np=${NPS%% *}
  timeout ${MPI_TIMEOUT:-150} mpirun --allow-run-as-root --oversubscribe --bind-to none -np "$np" -x NCCL_NVLS_ENABLE=0 \
    /tmp/s/prefixd_mpi_tests --gtest_filter="$MPI_FILTER" >"$OUT/mpi_np$np.log" 2>&1
  echo "mpi np$np rc=$?"; grep -E "test results|FAILED|PASSED|OK \]" "$OUT/mpi_np$np.log" | tail -12
fi
