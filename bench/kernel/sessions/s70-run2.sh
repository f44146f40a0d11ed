#!/usr/bin/env bash
# Session 70, run 2 (nvidia-h200): the early decode (a share of the suffix beside the prefix grid on
# the SMs it leaves idle) at P1024 S256, where the prefix grid is 64 CTAs and leaves 68 SMs idle for
# ~13 µs — the suffix rows session 63 did not try (it measured S32 and 32/32 B64 S256). Shares 20 /
# 35 / 50%, and the automatic share with its shortest prefix part at 0 (GQA 1 only), twice.
#   CARRY=.carry/s70a bash bench/kernel/sessions/s70-run2.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s70-run2
V="default,PREFIXD_EARLY_DECODE_PERCENT=20,PREFIXD_EARLY_DECODE_PERCENT=35,PREFIXD_EARLY_DECODE_PERCENT=50,PREFIXD_EARLY_DECODE_MIN_PREFIX_US=0"
for i in 1 2; do
  RUN_TIMEOUT=150 run_variants early$i "$V" --heads 32/32 -b 16,64 -p 1024 -s 256 --dtype fp16
  RUN_TIMEOUT=150 run_variants early8_$i "$V" --heads 32/8 -b 16,64,256 -p 1024 -s 256 --dtype fp16
done
SHOW_LINES=12 show_variants early1 early8_1 early2 early8_2
pack_logs
