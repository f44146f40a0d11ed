#!/usr/bin/env bash
# Session 43, run 5 (nvidia-h200): how much of the suffix the SMs the prefix grid leaves free (4 of
# 132 at B256 P32768: 128 items) could take. The existing concurrent mode
# (PREFIXD_CONCURRENT_DECODE_SMS=4: prefix grid capped at 128 CTAs, i.e. as now; decode on a second
# stream beside it, unfused, then the merge kernel for every request) against the default, on the
# compute-bound B256 P32768 shapes. Binaries ($CARRY/bins.tar.xz): run 4's.
#   CARRY=.carry/s43c bash bench/kernel/sessions/s43-conc.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s43-conc
V=default,PREFIXD_CONCURRENT_DECODE_SMS=4,PREFIXD_CONCURRENT_DECODE_SMS=4+tma
run_variants d128 "$V" --heads 32/32,32/8 -b 256 -p 32768 -s 32,256 --dtype fp16
run_variants d64 "$V" -d 64 --heads 32/32,32/8 -b 256 -p 32768 -s 32,256 --dtype fp16
for n in d128 d64; do grep -E '^ +fp16' "$OUT/$n.txt"; done
show_variants d128 d64
pack_logs
