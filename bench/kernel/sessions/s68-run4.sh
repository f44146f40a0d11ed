#!/usr/bin/env bash
# Session 68, run 4 (nvidia-h200): the one-launch fused cascade (PREFIXD_FUSED=1, preset `fused`)
# against the default two-launch cascade and the plain-read floors, on the memory-bound misses
# whose bar is below the two-launch read (run 3): what lever 5 (ISSUE4.md) starts from.
#   CARRY=.carry/s68b bash bench/kernel/sessions/s68-run4.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s68-run4
for dt in fp16 bf16; do
  RUN_TIMEOUT=120 run_variants "fused-$dt-a" "default,fused" --heads 32/32 -b 16,64 -p 1024 -s 32,256 --dtype $dt --read-floor
  RUN_TIMEOUT=120 run_variants "fused-$dt-b" "default,fused" --heads 32/8 -b 16,64,256 -p 1024,8192 -s 32,256 --dtype $dt --read-floor
done
echo "== dtype heads D B P S variant | prefix suffix merge total | read, one launch | read, two launches"
for n in fused-fp16-a fused-fp16-b fused-bf16-a fused-bf16-b; do
  awk -F, 'NR>1 {printf "%s %s/%s D%s B%s P%s S%s %-8s %7.1f %7.1f %6.1f %7.1f | %6.1f | %6.1f\n",$1,$3,$4,$5,$6,$7,$8,$NF,$13,$14,$15,$16,$32,$33}' "$OUT/$n.csv"
done
pack_logs
