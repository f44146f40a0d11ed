#!/usr/bin/env bash
# Session 76, run 2 (nvidia-h200): the measured choice with all four alternative layouts (the
# cascade, plain decode, the half-target and the narrow cascade), a kept class planning only its
# layout; then the serving path and the whole GPU suite on these binaries (no kernel changed).
#   1. session 75's planner checks (81 fp16 + 32 bf16 off-grid shapes, the default grid's 60 + 60),
#      with the measured choice's columns;
#   2. the engine tests on this GPU with NCCL (one rank; measured choice on by default on CUDA);
#   3. the main job on one GPU at 32/8 and 32/32 (its "# plans:" line: near ties timed);
#   4. the whole GPU suite (launch/gpu-check.sh, 12 shards, no sanitizers: run 1 ran memcheck on the
#      new tests, and no kernel changed).
#   CARRY=.carry/s76b bash bench/kernel/sessions/s76-run2.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s76-run2
check() { local name=$1; shift; timeout 200 $B --planner-check "$@" >"$OUT/$name.txt" 2>&1; local rc=$?
  echo "== planner $name rc=$rc, $(grep -cE '^ +(fp16|bf16) ' "$OUT/$name.txt") shapes"
  grep -E "planner check:|measured choice" "$OUT/$name.txt" | grep -v "must be"; }
check odd-fp16 --dtype fp16 --heads 32/8,40/8,64/8 -b 1,37,200 -p 304,5000,65536 -s 1,100,1000
check odd-bf16 --dtype bf16 --heads 16/2,24/8 -d 64,256 -b 3,100 -p 1000,12344 -s 7,300 --page-size 8
check grid-fp16 --dtype fp16
check grid-bf16 --dtype bf16
timeout 200 mpirun --allow-run-as-root --oversubscribe -np 1 /tmp/b/prefixd_mpi_tests --gtest_brief=1 \
  --gtest_filter='*cuda*' >"$OUT/mpi.log" 2>&1
echo "mpi engine (cuda, np 1) rc=$? $(grep -aE 'MPI.*test results' "$OUT/mpi.log")"
run_main_job_heads 32/8 32/32
grep -h "^# plans" "$OUT"/main-*.txt
PREFIXD_SKIP_SANITIZER=1 PREFIXD_TEST_SHARDS=12 PREFIXD_TIMEOUT_TESTS=200 run_whole_suite
pack_logs
