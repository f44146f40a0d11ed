#!/usr/bin/env bash
# Session 101's next call for the session after it, on .carry/s101a (HEAD's binaries), any card, in
# ~300 s: s101-run4.sh (the fp16/bf16 prefix part under nvidia-smi's clock and power samples, ~60 s)
# then s101-run3.sh (on an H200 the bar grid, head_dim rows and headline k scan; on an H100 the
# planner check where the 8-warp TMA-decode candidate can arise), each with its logs in a folder of
# this call's $OUT.
#   CARRY=.carry/s101a bash bench/kernel/sessions/s101-run5.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s101-run5
OUT=$OUT/clock bash bench/kernel/sessions/s101-run4.sh
OUT=$OUT/bar-or-planner bash bench/kernel/sessions/s101-run3.sh
echo "elapsed ${SECONDS} s"
pack_logs
