#!/usr/bin/env bash
# Session 90, run 5 (any card): the concurrent mode with the TMA decode forced on many SMs (k = 36 to
# 112 of 132) at decode-dominated steps (short or mid prefix, S256), against the planner's plan (the
# measured choice's). Question: where the suffix's bytes dominate, does a decode on most SMs (DRAM-
# bound already at ~48 SMs of ~90 GB/s each) beside a prefix on the rest beat the cascade's decode
# after (or partly beside) a prefix on all SMs — i.e. are larger k worth the planner's candidates?
#   CARRY=.carry/s90a bash bench/kernel/sessions/s90-run5.sh   (.carry/s90a: see s90-run2.sh)
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s90-run5
V=default
for k in 36 48 64 80 96 112; do V=$V,PREFIXD_CONCURRENT_DECODE_SMS=$k+PREFIXD_CONCURRENT_DECODE_TMA=force; done
run_variants bigk-a "$V" --measured-choice --heads 32/8 -b 16,64,256 -p 1024 -s 256 --dtype fp16
run_variants bigk-b "$V" --measured-choice --heads 32/8 -b 64,256 -p 8192 -s 256 --dtype fp16
run_variants bigk-c "$V" --measured-choice --heads 32/32 -b 16,64 -p 1024 -s 256 --dtype fp16
SHOW_LINES=30 show_variants bigk-a bigk-b bigk-c
pack_logs
