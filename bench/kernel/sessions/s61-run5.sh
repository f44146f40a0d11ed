#!/usr/bin/env bash
# Session 61, run 5 (nvidia-h200): the automatic early share after run 4 (its +35 us at 32/32 B64
# P32768 S32, share 85%): now at most 40% and only beside a predicted prefix part of >= 180 us
# (EarlyDecodeRule). (1) A/B against PREFIXD_EARLY_DECODE_PERCENT=0 at the P32768 rows, in one
# process; (2) the issue's grid on these (the session's final) binaries.
#   CARRY=.carry/s61d bash bench/kernel/sessions/s61-run5.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s61-run5
O=PREFIXD_EARLY_DECODE_PERCENT=0
RUN_TIMEOUT=200 run_variants auto "default,$O,default,$O" -d 128 --heads 32/32,32/8 -b 64,256 -p 32768 -s 32 --dtype fp16,bf16
RUN_TIMEOUT=60 run_variants auto256 "default,$O" -d 128 --heads 32/32 -b 64 -p 32768 -s 256 --dtype fp16,bf16
SHOW_LINES=12 show_variants auto auto256 | grep -v "^#$" | cut -c1-200
OUT=$OUT/grid bash bench/kernel/issue4-grid.sh 2>&1 | grep -v "^NVIDIA"
pack_logs
