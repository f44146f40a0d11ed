# Helpers of the per-session A/B scripts (ab-session4.sh to ab-session7.sh): one mpirun line, a
# named run with environment assignments, the GPU tests, memcheck, the MPI tests at 4 ranks and a
# traced run. The caller sets BIN (carried binaries), OUT (logs that come back) and WORK (scratch).
# Every variable named in AB_FORWARD (and the ones below) is passed to the ranks when set;
# AB_BASE_ENV (assignments) is exported before a run's own, for a session whose switches start on.
mkdir -p "$OUT" "$WORK"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
export AB_FORWARD="PREFIXD_DECODE_ON_SIDE_STREAM PREFIXD_UPLOAD_BATCH NCCL_NTHREADS PREFIXD_COMM_STREAM_PRIORITY PREFIXD_DECODE_WARPS
  PREFIXD_DECODE_FREE_SMS NCCL_MAX_CTAS NCCL_MAX_P2P_NCHANNELS ${AB_FORWARD:-}"
mpi() {
  local fwd=() v
  for v in $AB_FORWARD; do fwd+=(-x "$v"); done
  mpirun --allow-run-as-root --oversubscribe --bind-to none -np 4 -x NCCL_NVLS_ENABLE=0 "${fwd[@]}" "$@"
}
S="--mode strong --prefix 262144 --batch 128 --suffix 512 --layers 1 -n 20"
W="$S --gpus 4,1,2,4"  # a 4-GPU pass first: every GPU has just run when 1, 2, 4 are timed
E="--mode strong --prefix 65536 --batch 128 --suffix 512 --layers 32 --gpus 4 -n 10"
run() {  # name, env assignments (space-separated, may be empty), bench args
  local name=$1 envs=$2; shift 2
  echo "== $name: $envs $*" | tee -a "$OUT/ab.log"
  ( for e in ${AB_BASE_ENV:-} $envs; do export "$e"; done
    timeout 150 bash -c "$(declare -f mpi); mpi $BIN/prefixd_scaling_bench $* --csv $WORK/$name.csv" ) >"$WORK/$name.txt" 2>&1
  echo "   rc $?" | tee -a "$OUT/ab.log"
  grep -E "^(strong|weak) |^# check" "$WORK/$name.txt" | tee -a "$OUT/ab.log"
  tar czf "$OUT/runs.tgz" -C "$WORK" .
}
gpu_tests() {  # gtest filter
  timeout 200 $BIN/prefixd_gpu_tests --gtest_filter="$1" >"$OUT/gpu_tests.log" 2>&1
  echo "gpu tests ($1): rc $? $(grep -E '^\[  (PASSED|FAILED)' "$OUT/gpu_tests.log" | tr '\n' ' ')" | tee -a "$OUT/ab.log"
}
memcheck() {  # gtest filter
  timeout 200 compute-sanitizer --tool memcheck $BIN/prefixd_gpu_tests --gtest_filter="$1" >"$OUT/memcheck.log" 2>&1
  echo "memcheck ($1): rc $? $(grep -E 'ERROR SUMMARY' "$OUT/memcheck.log" | tr '\n' ' ')" | tee -a "$OUT/ab.log"
}
mpi_tests_np4() {  # gtest filter: the NCCL + CUDA MPI tests at 4 ranks
  ( for e in ${AB_BASE_ENV:-}; do export "$e"; done
    timeout 200 bash -c "$(declare -f mpi); mpi $BIN/prefixd_mpi_tests --gtest_filter='$1'" ) >"$OUT/mpi_np4.log" 2>&1
  echo "mpi tests np4: rc $? $(tail -1 "$OUT/mpi_np4.log")" | tee -a "$OUT/ab.log"
}
traced() {  # name, env assignments, bench args: one run under the CUPTI library, its per-step table
  local name=$1 envs=$2; shift 2
  mkdir -p "$WORK/$name"
  ( for e in $envs; do export "$e"; done
    export LD_LIBRARY_PATH=$BIN CUDA_INJECTION64_PATH=$BIN/libprefixd_cupti_trace.so PREFIXD_TRACE_DIR=$WORK/$name
    timeout 100 bash -c "$(declare -f mpi); mpi -x LD_LIBRARY_PATH -x CUDA_INJECTION64_PATH -x PREFIXD_TRACE_DIR \
      $BIN/prefixd_scaling_bench $*" ) >"$WORK/$name/out.txt" 2>&1
  python3 bench/trace/timeline.py "$WORK/$name"/trace.*.csv --top 3 >"$OUT/$name.txt" 2>&1
  tar czf "$OUT/runs.tgz" -C "$WORK" .
}
