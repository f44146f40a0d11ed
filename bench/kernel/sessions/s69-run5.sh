#!/usr/bin/env bash
# Session 69, run 5 (nvidia-h200): the planner check on the final binaries (the one-warp decode CTA
# makes the cascade's decode of large GQA-1 short-item batches faster: the plans chosen must stay
# within 5% of plain decode and of the better layout), and whether the decode of GQA-1 items is
# bound by their 256-byte rows: the same 134 MB as 4096 items of 64 tokens at 32/32 (B128, rows of
# 256 bytes 8 KiB apart) and at 1/1 (B4096, each item's K and V contiguous), suffix part against a
# read of its bytes.
#   CARRY=.carry/s69d bash bench/kernel/sessions/s69-run5.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s69-run5
for h in 32/32:128 1/1:4096; do
  timeout 100 $B --heads ${h%:*} -b ${h#*:} -p 1024 -s 64 --dtype fp16 --no-baseline --no-graph -c 1 --read-floor \
    --csv "$OUT/layout-${h%%/*}.csv" >"$OUT/layout-${h%%/*}.txt" 2>&1
  echo "layout $h rc=$?"
  awk -F, 'NR>1 {printf "  %s/%s B%s S%s decode items %s | suffix part %6.1f us, read of its bytes %6.1f us\n",$3,$4,$6,$8,$10,$14,$36}' "$OUT/layout-${h%%/*}.csv"
done
run_planner_check fp16 bf16
pack_logs
