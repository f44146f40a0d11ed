#!/usr/bin/env bash
# The GPU check, run from the repository root on a GPU machine:
#   1. binaries: a carried build if there is one (PREFIXD_BIN_DIR, .carry/build — a CMake build
#      tree — or .carry/cuda — binaries side by side), else configure and build here (-j16);
#   2. tests: the GPU tests and the CPU unit tests (ctest -L gpu / -L cpu on a build made here; the
#      test binaries directly when carried, since a carried build's ctest files name the paths of
#      the machine that built it);
#   3. compute-sanitizer --tool memcheck and --tool racecheck on a filtered subset of the GPU tests;
#   4. the kernel benchmark's default grid (prefixd_kernel_bench), CSV and JSON beside its log;
# then prints a short table last. Logs go to ${OUT:-/tmp/prefixd-gpu-check}. Exit status: 0 when
# every step passed, 1 otherwise.
#
# Knobs (environment): PREFIXD_TIMEOUT_TESTS / _MEMCHECK / _RACECHECK / _BENCH (seconds per step,
# defaults 900/600/600/1200; a step that runs out is reported as failed), PREFIXD_TEST_SHARDS
# (carried test binaries run as this many gtest shards at once, 4), PREFIXD_BIN_DIR, PREFIXD_GPU_FILTER (gtest filter of the GPU tests, default
# all), PREFIXD_MEMCHECK_FILTER, PREFIXD_RACECHECK_FILTER, PREFIXD_BENCH_ARGS (extra benchmark
# flags), PREFIXD_SKIP_CPU_TESTS=1, PREFIXD_SKIP_SANITIZER=1, PREFIXD_SKIP_BENCH=1.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/prefixd-gpu-check}
mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
status=0
summary=()
note() { summary+=("$(printf '%-28s %s' "$1" "$2")"); }

nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv \
  >"$out/nvidia-smi.txt" 2>&1 || true

# --- 1. binaries ---------------------------------------------------------------------------------
find_bin() {  # name -> path of the first executable found in the candidate dirs, or nothing
  local name=$1 dir
  for dir in "${PREFIXD_BIN_DIR:-}" .carry/build .carry/cuda build-gpu; do
    [ -n "$dir" ] || continue
    for path in "$dir/$name" "$dir/tests/$name" "$dir/bench/$name"; do
      if [ -x "$path" ]; then echo "$path"; return; fi
    done
  done
}
gpu_tests=$(find_bin prefixd_gpu_tests)
build_dir=""
if [ -z "$gpu_tests" ]; then
  echo "== no carried binaries: configuring and building in build-gpu"
  if cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release >"$out/build.log" 2>&1 &&
     cmake --build build-gpu -j16 >>"$out/build.log" 2>&1; then
    note "build" "OK (build-gpu)"
  else
    note "build" "FAILED (see build.log)"
    tail -30 "$out/build.log"
    status=1
  fi
  build_dir=build-gpu
  gpu_tests=$(find_bin prefixd_gpu_tests)
else
  note "build" "carried: $(dirname "$gpu_tests")"
fi
unit_tests=$(find_bin prefixd_unit_tests)
bench=$(find_bin prefixd_kernel_bench)

# gtest summary of a log -> "passed P, failed F, skipped S", summed over the runs the log holds
# (one per shard, run_tests).
gtest_counts() {
  local log=$1 p f s
  p=$(grep -Eo '^\[  PASSED  \] [0-9]+' "$log" | grep -Eo '[0-9]+$' | awk '{n += $1} END {print n + 0}')
  f=$(grep -Eo '^\[  FAILED  \] [0-9]+ test' "$log" | grep -Eo '[0-9]+' | awk '{n += $1} END {print n + 0}')
  s=$(grep -Eo '^\[  SKIPPED \] [0-9]+ test' "$log" | grep -Eo '[0-9]+' | awk '{n += $1} END {print n + 0}')
  echo "passed $p, failed $f, skipped $s"
}

# --- 2. tests ------------------------------------------------------------------------------------
run_tests() {  # label binary ctest-label
  local label=$1 bin=$2 ctest_label=$3 log="$out/$1.log"
  if [ -n "$build_dir" ] && [ -f "$build_dir/CTestTestfile.cmake" ]; then
    timeout "${PREFIXD_TIMEOUT_TESTS:-900}" ctest --test-dir "$build_dir" -L "$ctest_label" --output-on-failure -j 8 >"$log" 2>&1
    local rc=$?
    local line
    line=$(grep -E 'tests passed|tests failed' "$log" | tail -1)
    local skipped
    skipped=$(grep -c '(Skipped)\|\*\*\*Skipped' "$log" || true)
    note "$label" "${line:-no summary} ; skipped $skipped (ctest)"
    [ $rc -eq 0 ] || status=1
  elif [ -n "$bin" ]; then
    # PREFIXD_TEST_SHARDS (4) gtest shards side by side: the tests' float64 oracles run on the host,
    # and on the H100 machines (about half the H200 machines' host speed) the GPU suite takes
    # ~650 s in one process, more than a device call allows (bench/RESULTS.md, session 30).
    local shards=${PREFIXD_TEST_SHARDS:-4} i rc=0 pids=()
    for ((i = 0; i < shards; ++i)); do
      GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$i timeout "${PREFIXD_TIMEOUT_TESTS:-900}" "$bin" \
        ${PREFIXD_GPU_FILTER:+--gtest_filter="$PREFIXD_GPU_FILTER"} >"$log.shard$i" 2>&1 &
      pids+=($!)
    done
    for ((i = 0; i < shards; ++i)); do wait "${pids[$i]}" || rc=$?; done
    for ((i = 0; i < shards; ++i)); do cat "$log.shard$i"; rm -f "$log.shard$i"; done >"$log"
    note "$label" "$(gtest_counts "$log") in $shards shards (rc $rc)"
    [ $rc -eq 0 ] || status=1
  else
    note "$label" "MISSING binary"
    status=1
  fi
  grep -E '^\[  FAILED  \]' "$log" | head -20
}
echo "== GPU tests"
run_tests gpu_tests "$gpu_tests" gpu
if [ "${PREFIXD_SKIP_CPU_TESTS:-0}" != 1 ]; then
  echo "== CPU tests"
  PREFIXD_GPU_FILTER="" run_tests cpu_tests "$unit_tests" cpu
fi

# --- 3. compute-sanitizer ------------------------------------------------------------------------
sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
memcheck_filter=${PREFIXD_MEMCHECK_FILTER:-'*CudaCascadeTest*b1_suffix1*:*CudaCascadeTest*fine_chunks*:*CudaCascadeTest*odd_page5*:*CudaCoresDecodeTest*flat_bf16*:*CudaCascadeTest*mixed_groups*:*CudaCascadeTest*finest_page5*:*CudaPrefixAttentionTest*causal_append_bf16*:*CudaMergeStates*:*CudaMergeStateInPlace*:*CudaCastStates*:*CudaBackendErrors*:*CudaGraph*:*PrefixAttentionKernelTest*wgmma_PoisonGroups_page7*:*PrefixAttentionKernelTest*wgmma_RisingMax_fp16_d64*:*CudaConcurrentCascade*AnyDecode*:*PrefixAttentionKernelTest*wgmma_kvfirst*bf16*:*CudaFusedCascadeTest*mixed_groups*:*CudaFusedCascadeTest*page8*:*CudaFusedCascadeTest*finest_page5*:*CudaFusedCascadeTest*empty_requests*:CudaFusedCascade.NaNOutside*:*DecodeWarmup*:*DecodePipelineTest*h8kv8*shallow*:*DecodePipelineTest*h32kv8_bf16_d128_p5_shallow*:*DecodeNextWave*:*DecodeItemPages*:*PrefixAttentionKernelTest*wgmma_wg1_Groups_page7_bf16*:*PrefixAttentionKernelTest*wgmma_ctas3_wg1_ManyItems*:*CudaDecodeVariantTest*warps8_pdl_persistent_tma:*CudaDecodeVariantTest*warps8_nopdl_noevict_noprefetch_persistent_tma:*BalancedPrefixGrid*:CudaConcurrentCascade.ThePlansTmaDecodeRunsOnTheKSms:CudaConcurrentCascade.TheChainedStepMatchesItsParts'}
racecheck_filter=${PREFIXD_RACECHECK_FILTER:-'*CudaCascadeTest*mixed_groups*:*CudaCascadeTest*fine_chunks*:*CudaCascadeTest*peaky_fp16_h8kv2_d256*:*CudaMergeStates*n3_*:*CudaMergeStates*n44_*:*CudaFusedCascadeTest*mixed_groups*:*CudaFusedCascadeTest*page32*:*CudaFusedMergeTest*:*DecodePipelineTest*h8kv8*shallow*:*DecodePipelineTest*h32kv8_fp16*shallow*:*PrefixAttentionKernelTest*wgmma_wg1_Groups_page7_fp16*:*PrefixAttentionKernelTest*wgmma_PoisonShortPrefix_d256_fp16*:*CudaDecodeVariantTest*warps8_pdl_persistent_tma:*CudaDecodeVariantTest*warps4_pdl_persistent_tma:*BalancedPrefixGrid*:CudaConcurrentCascade.ThePlansTmaDecodeRunsOnTheKSms:CudaConcurrentCascade.TheChainedStepMatchesItsParts'}
if [ "${PREFIXD_SKIP_SANITIZER:-0}" != 1 ] && [ -n "$gpu_tests" ] && [ -x "$sanitizer" ]; then
  echo "== compute-sanitizer"
  timeout "${PREFIXD_TIMEOUT_MEMCHECK:-600}" "$sanitizer" --tool memcheck --leak-check no --error-exitcode 9 "$gpu_tests" --gtest_filter="$memcheck_filter" \
    >"$out/memcheck.log" 2>&1
  rc=$?
  errors=$(grep -Eo 'ERROR SUMMARY: [0-9]+' "$out/memcheck.log" | grep -Eo '[0-9]+' | tail -1)
  note "memcheck" "${errors:-?} errors; tests $(gtest_counts "$out/memcheck.log") (rc $rc)"
  [ $rc -eq 0 ] || status=1
  timeout "${PREFIXD_TIMEOUT_RACECHECK:-600}" "$sanitizer" --tool racecheck --error-exitcode 9 "$gpu_tests" --gtest_filter="$racecheck_filter" \
    >"$out/racecheck.log" 2>&1
  rc=$?
  hazards=$(grep -Eo 'RACECHECK SUMMARY: [0-9]+ hazard' "$out/racecheck.log" | grep -Eo '[0-9]+' | tail -1)
  note "racecheck" "${hazards:-0} hazards; tests $(gtest_counts "$out/racecheck.log") (rc $rc)"
  [ $rc -eq 0 ] || status=1
else
  note "sanitizer" "skipped (no binary, no compute-sanitizer, or PREFIXD_SKIP_SANITIZER=1)"
fi

# --- 4. kernel benchmark -------------------------------------------------------------------------
if [ "${PREFIXD_SKIP_BENCH:-0}" != 1 ] && [ -n "$bench" ]; then
  echo "== kernel benchmark"
  # shellcheck disable=SC2086
  timeout "${PREFIXD_TIMEOUT_BENCH:-1200}" "$bench" --csv "$out/bench.csv" --json "$out/bench.json" ${PREFIXD_BENCH_ARGS:-} >"$out/bench.log" 2>&1
  rc=$?
  note "kernel bench" "$(grep -E '^# wrong results' "$out/bench.log" | tail -1) (rc $rc)"
  [ $rc -eq 0 ] || status=1
elif [ "${PREFIXD_SKIP_BENCH:-0}" != 1 ]; then
  note "kernel bench" "MISSING binary"
  status=1
fi

# --- summary (last, so it ends the output) -------------------------------------------------------
echo
echo "================ prefixd gpu-check summary (logs in $out) ================"
head -2 "$out/nvidia-smi.txt" 2>/dev/null | tail -1 | sed 's/^/gpu: /'
for line in "${summary[@]}"; do echo "$line"; done
if [ -f "$out/bench.log" ]; then
  echo "---- kernel benchmark (µs; ratio = time / roofline floor) ----"
  grep -E '^# (backend|ceilings|  GEMM)' "$out/bench.log"
  awk '/^# +dtype/ || /^ +(fp16|bf16) / {
         # dtype page heads D B P S | prefix suffix merge total graph | TFLOP GB sfxGB %copy | pflr sflr ratio | base brat speedup | check
         if ($1 == "#") { printf "%-7s %5s %5s %6s %5s | %9s %9s %8s %9s %9s | %6s %6s | %9s %6s\n", "heads", "B", "P", "S", "D", "prefix", "suffix", "merge", "total", "graph", "%copy", "ratio", "baseline", "speedup"; next }
         printf "%-7s %5s %5s %6s %5s | %9s %9s %8s %9s %9s | %6s %6s | %9s %6s %s\n", $3, $5, $6, $7, $4, $9, $10, $11, $12, $13, $18, $22, $24, $26, $28 }' \
    "$out/bench.log"
fi
echo "overall: $([ $status -eq 0 ] && echo PASS || echo FAIL)"
exit $status
