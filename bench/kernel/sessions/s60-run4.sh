#!/usr/bin/env bash
# Session 60, run 4 (nvidia-h200): (1) the early decode's GPU tests after its launch took the SM
# occupancy from a cache (resident_ctas.cuh) and the idle SMs from the prefix kernel's own grid
# rule (sm90a::PersistentGridCtas); (2) the early decode's share at the grid's S = 32 rows, for a
# planner rule (session 59 run 5: 15% took 32/32 B256 P32768 S32 -1.9 / -2.4 us, 30% +100 us, every
# P8192 shape slower): PREFIXD_EARLY_DECODE_PERCENT 6-15 against the default, one process.
#   CARRY=.carry/s60d bash bench/kernel/sessions/s60-run4.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s60-run4
run_gpu_tests '*EarlyDecode*:CudaMergeStates*:CudaCascade.BalancedPrefixGridMatchesTheOracle'
E=PREFIXD_EARLY_DECODE_PERCENT
RUN_TIMEOUT=280 run_variants early "default,$E=6,$E=9,$E=12,$E=15,default" \
  -d 128 --heads 32/32,32/8 -b 64,256 -p 32768 -s 32 --dtype fp16,bf16
SHOW_LINES=12 show_variants early | cut -c1-300
pack_logs
