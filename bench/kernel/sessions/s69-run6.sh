#!/usr/bin/env bash
# Session 69, run 6 (nvidia-h200): where the GQA-1 short-item decode's time over a read of its bytes
# goes — the CUDA-core decode with its copies only (PREFIXD_DECODE_SIMT_DIAG=1: no arithmetic; the
# epilogue's ⊕ and writes kept) and without its epilogue (=2: copies and arithmetic, no ⊕, no
# writes), WRONG results on purpose (a diagnostic build, removed after: results/s69/simt-diag.patch), on the one-warp CTA (the
# rule) and on the narrow CTA (rule off), suffix part alone against a read of its bytes.
#   CARRY=.carry/s69e bash bench/kernel/sessions/s69-run6.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s69-run6
OFF=PREFIXD_DECODE_WARP_MIN_ITEMS=0
D=PREFIXD_DECODE_SIMT_DIAG
for s in "32/32 256 1024 32" "32/32 64 1024 32" "64/64 256 2048 8" "32/32 256 1024 8"; do
  set -- $s
  RUN_TIMEOUT=100 run_variants "diag-${1%%/*}-$2-$4" "default,$D=1,$D=2,$OFF,$OFF+$D=1,$OFF+$D=2" --heads $1 -b $2 -p $3 -s $4 \
    --dtype fp16 --read-floor
done
echo "== heads B S variant | suffix part alone, read of the suffix's bytes (µs)"
for f in "$OUT"/diag-*.csv; do
  awk -F, 'NR>1 {printf "%s/%s B%s S%s %-48s | %6.1f %6.1f\n",$3,$4,$6,$8,$NF,$14,$36}' "$f"
done
pack_logs
