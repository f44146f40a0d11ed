#!/usr/bin/env bash
# Session 55, run 5 (nvidia-h200): the main job (launch/prefixd) on one GPU with the final binaries
# at 32/8 and 32/32 (32768-token document, 4 layers, 8 decode steps, its own sampled check), and a
# malformed flag refused.
#   CARRY=.carry/s55b bash bench/kernel/sessions/s55-main.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s55-main
run_main_job_heads 32/8 32/32 64/8
timeout 60 mpirun --allow-run-as-root -np 1 /tmp/b/prefixd --qo-heads 32 --kv-heads 7 >"$OUT/bad-heads.txt" 2>&1
echo "bad heads rc=$? $(grep -iE 'error' "$OUT/bad-heads.txt" | head -2)"
pack_logs
