#!/usr/bin/env bash
# Session 56, runs 1-2 (nvidia-h200): would a decode with less arithmetic let the concurrent step give
# the prefix more SMs? The concurrent step with the TMA decode's copies only (PREFIXD_DECODE_TMA_DIAG=1,
# WRONG results on purpose: an upper bound for any leaner decode tile) at smaller k than the
# planner's, against the default, at the two concurrent grid rows over their bars (fp16).
# (Run 1 forced k without the TMA decode, which a forced k did not take then: every variant ran
# the one-CTA-per-item decode, so the diagnostics changed nothing; hence =force.)
#   CARRY=.carry/s56b bash bench/kernel/sessions/s56-copies.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s56-copies
C=PREFIXD_CONCURRENT_DECODE_TMA=force+PREFIXD_CONCURRENT_DECODE_SMS
D=PREFIXD_DECODE_TMA_DIAG=1
run_variants p32k "default,$C=20,$C=20+$D,$C=16+$D,$C=14+$D,$C=12+$D,$C=16" \
  -d 128 --heads 32/8 -b 256 -p 32768 -s 256 --dtype fp16
run_variants p8k "default,$C=36,$C=36+$D,$C=28+$D,$C=24+$D,$C=20+$D,$C=28" \
  -d 128 --heads 32/8 -b 256 -p 8192 -s 256 --dtype fp16
show_parts p32k p8k
show_variants p32k p8k
pack_logs
