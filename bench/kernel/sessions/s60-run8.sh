#!/usr/bin/env bash
# Session 60, run 8 (nvidia-h200): run 7's skip of the empty states' v loads in the merge measured
# +3 µs on the merge (each load's predicate took a 64-bit modulo and a division); now the row's KV
# head's bits once per row. Its GPU tests, both sanitizers on the new test, and the A/B again.
#   CARRY=.carry/s60g bash bench/kernel/sessions/s60-run8.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s60-run8
GPU_TESTS_TIMEOUT=200 run_gpu_tests 'CudaMergeStates*:CudaConcurrent*:CudaCascade.Balanced*'
run_sanitizers 'CudaMergeStates.SkippedEmptyStatesGiveTheBitsOfLoadedOnes'
S=PREFIXD_MERGE_SKIP_EMPTY=0
RUN_TIMEOUT=150 run_variants skip "default,$S,default,$S" -d 128 --heads 32/8 -b 256 -p 32768 -s 256 --dtype fp16,bf16
RUN_TIMEOUT=100 run_variants skip-d256 "default,$S,default,$S" -d 256 --heads 32/8 -b 256 -p 32768 -s 256 --dtype fp16
show_parts skip skip-d256 | sort -k1,1 -k4,4 -k5,5
SHOW_LINES=8 show_variants skip skip-d256 | cut -c1-300
pack_logs
