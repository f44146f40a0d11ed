#!/usr/bin/env bash
# Session 61, run 6 (nvidia-h200): the session's final binaries (run 5's automatic early share at
# groups of one head only, EarlyDecodeRule::max_gqa, after 32/8 B256 P32768 S32 measured +4.0 to
# +4.8 us with it): the whole GPU suite (8 shards, launch/gpu-check.sh's default memcheck and
# racecheck lists), the issue's grid, both sanitizers on the session's new GPU tests.
#   CARRY=.carry/s61e bash bench/kernel/sessions/s61-run6.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s61-run6
run_whole_suite
OUT=$OUT/grid bash bench/kernel/issue4-grid.sh 2>&1 | grep -v "^NVIDIA"
run_sanitizers 'CudaEarlyDecode.AutoShareWhereTheRuleTakesIt:CudaCascade.SequentialTma*'
pack_logs
