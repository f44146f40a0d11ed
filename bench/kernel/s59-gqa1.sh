#!/usr/bin/env bash
# Session 59, run 2 (nvidia-h200): why the prefix part of 32/32 B256 P32768 is ~7% slower than
# 32/8's at the same FLOPs (s58 run 3: 224.4 / 218.7 µs fp16 / bf16 against 209.7 / 204.4), the
# step 32/32 B256 P32768 S32 being 1.6-4% over its bar. 32/32 streams 4x the K/V bytes (537 MB,
# ~2.4 TB/s beside the MMAs): is its 2-stage ring starved by HBM latency, by the flush's write-back,
# or by the L2 policy? Prefix K/V settings at both head pairs, then the default under each flush mode.
#   CARRY=.carry/s59a bash bench/kernel/s59-gqa1.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
. bench/kernel/device-setup.sh s59-gqa1
RUN_TIMEOUT=250 run_variants kv "default,PREFIXD_SM90A_KV_TILE=128,stages3+PREFIXD_SM90A_KV_TILE=128,kvfirst,kvlast,PREFIXD_SM90A_KV_POLICY=normal,default" \
  -d 128 --heads 32/32,32/8 -b 256 -p 32768 -s 32 --dtype fp16,bf16
for f in clean none; do
  run_variants flush-$f default -d 128 --heads 32/32,32/8 -b 256 -p 32768 -s 32 --dtype fp16,bf16 --flush $f
done
show_parts kv flush-clean flush-none | sort -k1,1 -k2,2 | head -60
SHOW_LINES=16 show_variants kv | cut -c1-400
pack_logs
