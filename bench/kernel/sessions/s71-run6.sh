#!/usr/bin/env bash
# Session 71, run 6 (nvidia-h200): run 5 read this build's steps 1.3-4.5 µs slower than session 70's
# at B256 (prefix and suffix parts alone equal). Three builds in turn, twice, separate processes:
# old (session 70's final, ac9d5cc), nodiag (this session's tree before PREFIXD_SM90A_DIAG), new
# (with it): is it the diagnostic's second consumer path in the prefix kernel, or the build?
#   CARRY=.carry/s71e bash bench/kernel/sessions/s71-run6.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s71-run6
for i in 1 2; do for b in old nodiag new; do
  exe=$B; [ $b != new ] && exe=/tmp/b/prefixd_kernel_bench_$b
  for sh in 32/32:256:32768 32/8:256:8192 32/8:256:32768; do
    IFS=: read -r h bb p <<<"$sh"
    timeout 60 $exe --heads $h -b $bb -p $p -s 32 --dtype fp16 --no-baseline --no-graph -c 1 --csv "$OUT/$b$i-${h/\//-}-$p.csv" \
      >"$OUT/$b$i-${h/\//-}-$p.txt" 2>&1
  done
  echo "$b $i: $(for f in "$OUT"/$b$i-*.csv; do awk -F, 'NR>1 {printf "%s/%s P%s total %.1f (prefix %.1f, suffix %.1f) | ", $3, $4, $7, $16, $13, $14}' "$f"; done)"
done; done
pack_logs
