#!/usr/bin/env bash
# Session 90, run 4 (an H200 only; on another card it stops unless ANY_CARD=1, which skips the grid
# and runs the scans there): the grid and head_dim rows again (a
# second read of run 1), then settings scans at the near misses of run 1 — the decode's settings at
# the memory-bound rows 0.4-2.3 µs over their bars (32/8 B16/B256 P1024 S256, 32/8 B256 P8192
# S256, 32/32 B16/B64 P8192 S32) and the concurrent step's at the headline row (fp16 32/8 B256
# P32768 S256, 3.6 µs over ≤ 1.28 at run 1's 753 TFLOP/s) — each step the measured choice's plan.
#   CARRY=.carry/s90a bash bench/kernel/sessions/s90-run4.sh   (.carry/s90a: see s90-run2.sh)
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s90-run4
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || [ "${ANY_CARD:-0}" = 1 ] ||
  { echo "not an H200: stopped"; exit 0; }
run_bar_grid
V=default,PREFIXD_DECODE_TARGET_ITEMS=132,PREFIXD_DECODE_TARGET_ITEMS=528,PREFIXD_DECODE_EVICT_FIRST=0
V=$V,PREFIXD_DECODE_WARMUP=0,PREFIXD_SEQUENTIAL_TMA=0,PREFIXD_DECODE_TMA_WARPS=8,PREFIXD_DECODE_PIPELINE=deep
V=$V,PREFIXD_DECODE_NEXT_WAVE=0,PREFIXD_DECODE_PREFETCH=0
run_variants near-a "$V" --measured-choice --heads 32/8 -b 16,256 -p 1024 -s 256 --dtype fp16
run_variants near-b "$V" --measured-choice --heads 32/8 -b 256 -p 8192 -s 256 --dtype fp16
run_variants near-c "$V" --measured-choice --heads 32/32 -b 16,64 -p 8192 -s 32 --dtype fp16
H=default,PREFIXD_MERGE_ROWS_PER_WARP=1,PREFIXD_MERGE_ROWS_PER_WARP=2,PREFIXD_MERGE_SKIP_EMPTY=0
H=$H,PREFIXD_PREFIX_STREAM_NARROW=0,PREFIXD_SM90A_KV_TILE=128,PREFIXD_DECODE_TMA_ITEMS_PER_CTA=2
H=$H,PREFIXD_DECODE_EVICT_FIRST=0,PREFIXD_SM90A_KV_POLICY=normal
run_variants head "$H" --measured-choice --heads 32/8 -b 256 -p 32768 -s 256 --dtype fp16
SHOW_LINES=8 show_variants near-a near-b near-c head
pack_logs
