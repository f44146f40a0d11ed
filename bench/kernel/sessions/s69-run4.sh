#!/usr/bin/env bash
# Session 69, run 4 (nvidia-h200): the whole GPU suite (launch/gpu-check.sh: every GPU test in 8
# shards, memcheck and racecheck on its default lists) on the final binaries, with the length rule's
# one-warp decode CTA (≥ 8192 GQA-1 items of ≤ 32 tokens).
#   CARRY=.carry/s69d bash bench/kernel/sessions/s69-run4.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s69-run4
run_whole_suite
pack_logs
