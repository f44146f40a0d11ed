#!/usr/bin/env bash
# Session 77, run 5 (nvidia-h200), the session's final binaries (the single-step decode pipeline
# taken by the length rule at GQA 4, head_dim 128, items of at most 24 tokens):
#   1. A/B in one process, twice: the default (now the rule) against PREFIXD_DECODE_PIPELINE=shallow
#      (the 2-stage CTA, as before this session) on 32/8 B128 / B256, P1024 / P8192, S 8 / 16 / 24
#      / 32, fp16 and bf16 (S32 is outside the rule: even expected);
#   2. the engine's tests on this GPU with NCCL (1 rank);
#   3. the whole GPU suite with both sanitizers (launch/gpu-check.sh's default lists), 12 shards.
#   CARRY=.carry/s77c bash bench/kernel/sessions/s77-run5.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s77-run5
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for round in 1 2; do
  RUN_TIMEOUT=120 run_variants rule-$round default,PREFIXD_DECODE_PIPELINE=shallow -d 128 --heads 32/8 -b 128,256 \
    -p 1024,8192 -s 8,16,24,32 --dtype fp16,bf16
done
SHOW_LINES=22 show_variants rule-1 rule-2 | grep -E "^  (fp|bf)16|total us" | head -80
timeout 200 mpirun --allow-run-as-root --oversubscribe -np 1 /tmp/b/prefixd_mpi_tests --gtest_brief=1 \
  --gtest_filter='*cuda*' >"$OUT/mpi.log" 2>&1
echo "mpi engine (cuda, np 1) rc=$? $(grep -aE 'MPI.*test results' "$OUT/mpi.log")"
PREFIXD_TEST_SHARDS=12 PREFIXD_TIMEOUT_TESTS=200 PREFIXD_TIMEOUT_MEMCHECK=200 PREFIXD_TIMEOUT_RACECHECK=160 run_whole_suite
pack_logs
