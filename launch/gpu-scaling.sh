#!/usr/bin/env bash
# The multi-GPU check of the distributed engine, run from the repository root on a machine with
# several GPUs (one call on the lent nvidia-h200-x4 machine does all of it):
#   1. the MPI test binary with NCCL + CUDA on 2, 3 and 4 GPUs (one rank per GPU), and the NCCL
#      failure tests (a throwing / killed rank ends the job non-zero within 30 s);
#   2. the scaling benchmark, each run with the host one step ahead of the GPUs (the default) and
#      synchronising every step (--sync-steps): strong (P = 262144, both reductions, with the per-phase breakdown), weak
#      (131072 tokens per GPU), exposed communication at P = 65536 with 32 layers; strong and
#      exposed again with --no-send-before-decode and with --split; and a 1M-token document with Llama-3-70B-shaped KV (80 layers, 64/8 heads × 128,
#      bf16: 320 GiB) on every GPU;
#   3. the main job's embedded default on every GPU; a plot of the CSV;
# PREFIXD_SCALING_ONLY=1 leaves out step 1 (the tests); PREFIXD_MPI_FILTER (a gtest filter, e.g.
# '*cuda*': the CPU-backend cases are CI's) narrows the MPI tests; PREFIXD_SCALING_EXTRA=1 adds head-chunk
# and pipeline-chunk variants.
# then prints a short table last. Binaries: PREFIXD_BIN_DIR (default .carry/lead, as carried),
# else build/. Logs and CSV: ${OUT:-/tmp/prefixd-gpu-scaling}.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/prefixd-gpu-scaling}
mkdir -p "$out"
bin=${PREFIXD_BIN_DIR:-.carry/lead}
[ -x "$bin/prefixd" ] || bin=build
find_exe() { for p in "$bin/$1" "$bin/launch/$1" "$bin/bench/$1" "$bin/tests/$1" "$bin/tests/mpi/failure/$1"; do [ -x "$p" ] && { echo "$p"; return; }; done; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
mpi() { local np=$1; shift; mpirun --allow-run-as-root --oversubscribe --bind-to none -np "$np" -x NCCL_NVLS_ENABLE=0 "$@"; }
summary=()
note() { summary+=("$(printf '%-34s %s' "$1" "$2")"); }
status=0

mpi_tests=$(find_exe prefixd_mpi_tests)
# PREFIXD_SCALING_ONLY=1: skip the MPI and failure tests (a scaling-only pass within one call).
only=${PREFIXD_SCALING_ONLY:-0}
for np in ${PREFIXD_MPI_NPS:-2 3 4}; do
  [ "$only" = 1 ] && break
  [ "$np" -le "$gpus" ] || continue
  timeout ${PREFIXD_TIMEOUT_MPI_TESTS:-330} bash -c "$(declare -f mpi); mpi $np $mpi_tests ${PREFIXD_MPI_FILTER:+--gtest_filter=$PREFIXD_MPI_FILTER}" >"$out/mpi_np$np.log" 2>&1
  rc=$?
  note "mpi tests np$np (NCCL)" "rc $rc; $(grep -E '^\[  (PASSED|FAILED|SKIPPED) \]' "$out/mpi_np$np.log" | tr '\n' ' ' | head -c 160)"
  [ $rc -eq 0 ] || status=1
done

failure_rank=$(find_exe prefixd_failure_rank)
driver=tests/mpi/failure/run_failure_test.sh
if [ -n "$failure_rank" ] && [ "$gpus" -ge 2 ] && [ "$only" != 1 ] && [ "${PREFIXD_SKIP_FAILURE:-0}" != 1 ]; then
  for scenario in "throw:nonzero:throw --rank 1 --at 20 --backend nccl" "kill:nonzero:kill --rank 1 --at 20 --backend nccl"; do
    IFS=: read -r name expect args <<<"$scenario"
    # shellcheck disable=SC2086
    timeout 90 bash "$driver" --expect "$expect" --pattern "rank 1" -- \
      mpirun --allow-run-as-root --oversubscribe --bind-to none -x NCCL_NVLS_ENABLE=0 -np 2 "$failure_rank" $args \
      >"$out/failure_$name.log" 2>&1
    rc=$?
    note "nccl failure: $name" "rc $rc ($(tail -1 "$out/failure_$name.log" | head -c 100))"
    [ $rc -eq 0 ] || status=1
  done
fi

# PREFIXD_TESTS_ONLY=1: the tests above and nothing else (launch/gpu-all.sh runs them beside the
# kernel checks, on the GPUs those leave free).
csv="$out/scaling.csv"
if [ "${PREFIXD_TESTS_ONLY:-0}" != 1 ]; then
scaling=$(find_exe prefixd_scaling_bench)
run_scaling() {  # label, timeout, args...
  local label=$1 limit=$2; shift 2
  timeout "$limit" bash -c "$(declare -f mpi); mpi $gpus $scaling --csv $csv $*" >"$out/scaling_$label.log" 2>&1
  local rc=$?
  note "scaling $label" "rc $rc"
  [ $rc -eq 0 ] || status=1
}
# Each configuration twice: the host synchronising at the end of every step (--sync-steps), and
# the host one step ahead of the device (the default). PREFIXD_SCALING_EXTRA=1 adds head chunks at P = 262144 and
# 2 pipeline chunks at P = 65536.
for ra in "--sync-steps" ""; do
  tag=${ra:+_sync}
  bd=""; [ -n "$ra" ] && bd=--breakdown  # the fenced breakdown syncs every phase: once is enough
  run_scaling "strong$tag" 240 --mode strong --prefix 262144 --batch 128 --suffix 512 --layers 1 --reduction both $bd $ra
  run_scaling "weak$tag" 240 --mode weak --prefix-per-gpu 131072 --batch 128 --suffix 512 --layers 1 $ra
  run_scaling "exposed_c1$tag" 180 --mode strong --prefix 65536 --batch 128 --suffix 512 --layers 32 --gpus "$gpus" $ra
done
# The states sent before the own rows' decode is the default; each cascade whole, for comparison.
run_scaling strong_nosend 240 --mode strong --prefix 262144 --batch 128 --suffix 512 --layers 1 --no-send-before-decode
run_scaling exposed_nosend 180 --mode strong --prefix 65536 --batch 128 --suffix 512 --layers 32 --gpus "$gpus" --no-send-before-decode
# Own rows off the critical path (--split): the exchanges overlap own-row work.
run_scaling strong_split 240 --mode strong --prefix 262144 --batch 128 --suffix 512 --layers 1 --split
run_scaling weak_split 240 --mode weak --prefix-per-gpu 131072 --batch 128 --suffix 512 --layers 1 --split
run_scaling exposed_split 180 --mode strong --prefix 65536 --batch 128 --suffix 512 --layers 32 --gpus "$gpus" --split
if [ "${PREFIXD_SCALING_EXTRA:-0}" = 1 ]; then
  run_scaling exposed_heads2 180 --mode strong --prefix 65536 --batch 128 --suffix 512 --layers 32 --gpus "$gpus" --head-chunks 2
  run_scaling strong_heads2 180 --mode strong --prefix 262144 --batch 128 --suffix 512 --layers 1 --head-chunks 2
  run_scaling exposed_c2 180 --mode strong --prefix 65536 --batch 128 --suffix 512 --layers 32 --gpus "$gpus" --chunks 2
fi
run_scaling doc1m 240 --mode strong --prefix 1048576 --batch 16 --suffix 128 --layers 80 --qo-heads 64 --kv-heads 8 --gpus "$gpus" -n 3 -w 1

main=$(find_exe prefixd)
timeout 240 bash -c "$(declare -f mpi); mpi $gpus $main" >"$out/main_default.log" 2>&1
rc=$?
note "main job (default, $gpus GPUs)" "rc $rc; $(grep -E '^# done' "$out/main_default.log" | head -c 150)"
[ $rc -eq 0 ] || status=1

if /usr/bin/python3 -c 'import matplotlib' 2>/dev/null || python3 -c 'import matplotlib' 2>/dev/null; then
  py=/usr/bin/python3; $py -c 'import matplotlib' 2>/dev/null || py=python3
  $py bench/scaling/plot.py "$csv" -o "$out/scaling.png" --title "prefixd on $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1) x$gpus" >"$out/plot.log" 2>&1 || true
fi

fi

echo
echo "================ prefixd gpu-scaling summary ($gpus GPUs; logs in $out) ================"
for line in "${summary[@]}"; do echo "$line"; done
echo "---- scaling rows ----"
[ -f "$csv" ] && cut -d, -f1-6,11-17,22- "$csv" | { if command -v column >/dev/null; then column -s, -t; else tr , '\t'; fi; } | cut -c1-260
echo "overall: $([ $status -eq 0 ] && echo PASS || echo FAIL)"
exit $status
