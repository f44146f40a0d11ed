#!/usr/bin/env bash
# Session 77, run 4 (nvidia-h200): where the single-step decode pipeline pays. Run 3 (A/B in one
# process): 32/8 B256 S8 / S16 steps −1.5 to −2.8 µs; the grid's 32/8 S32 rows even (B256) or
# +2.3 to +2.8 (B64); GQA 8 S32 +2 to +4. Here, twice, --variants default,single on items of 4-24
# tokens: 32/8 B64 / B128 / B256, P1024, S 4 / 8 / 16 / 24 at fp16 and bf16 head_dim 128 and fp16
# head_dim 64; 64/8 (GQA 8) at S 8 / 16.
#   CARRY=.carry/s77b bash bench/kernel/sessions/s77-run4.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s77-run4
V=default,PREFIXD_DECODE_PIPELINE=single
for round in 1 2; do
  RUN_TIMEOUT=150 run_variants g4-$round $V -d 128 --heads 32/8 -b 64,128,256 -p 1024 -s 4,8,16,24 --dtype fp16,bf16
  RUN_TIMEOUT=100 run_variants d64-$round $V -d 64 --heads 32/8 -b 64,128,256 -p 1024 -s 4,8,16,24 --dtype fp16
  RUN_TIMEOUT=100 run_variants g8-$round $V -d 128 --heads 64/8 -b 64,256 -p 1024 -s 8,16 --dtype fp16
done
SHOW_LINES=40 show_variants g4-1 g4-2 d64-1 d64-2 g8-1 g8-2 | grep -E "^  (fp|bf)16|^# shape|^#$" | head -200
pack_logs
