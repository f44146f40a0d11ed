#!/usr/bin/env bash
# Session 71, run 7 (nvidia-h200): run 5 put most of the GQA-1 memory-bound prefix's excess over a
# read in its arithmetic, and at B16 the wgmma kernel's 64-row tiles hold 16 real rows. The
# mma.sync prefix kernel (PREFIXD_PREFIX_KERNEL=mma: 16-row m16 tiles, cp.async) against the
# default at those rows, fp16, interleaved per shape, twice.
#   CARRY=.carry/s71f bash bench/kernel/sessions/s71-run7.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s71-run7
for i in 1 2; do
  RUN_TIMEOUT=120 run_variants mma$i "default,PREFIXD_PREFIX_KERNEL=mma" --heads 32/32 -b 16,64 -p 8192,32768 -s 32,256 --dtype fp16
done
SHOW_LINES=30 show_variants mma1 mma2
pack_logs
