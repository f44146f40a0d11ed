#!/usr/bin/env bash
# Session 54, run 5 (nvidia-h200): run 4's head_dim-256 rows only (32/8 and 32/32 B256 P32768 S256,
# fp16 and bf16), the build before (graph instantiated with no flag) and this one
# (cudaGraphInstantiateFlagUseNodePriority) alternated five times, one process each, to catch the
# intermittent excess of the graph replay over the stream-launched step (sessions 45-53: +0.7 to
# +39.7 µs; not seen in run 4).
#   CARRY=.carry/s54d bash bench/kernel/sessions/s54-graph-repeat.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s54-graph-repeat
files=()
for i in 1 2 3 4 5; do for b in old new; do
  exe=$B; [ $b = old ] && exe=/tmp/b/prefixd_kernel_bench_old
  timeout 100 $exe -d 256 --heads 32/8,32/32 -b 256 -p 32768 -s 256 --dtype fp16,bf16 --no-baseline -c 1 \
    --csv "$OUT/$b$i.csv" >"$OUT/$b$i.txt" 2>&1
  echo "$b $i rc=$? $(grep 'wrong results' "$OUT/$b$i.txt")"
  files+=("$OUT/$b$i.csv")
done; done
echo "== dtype heads: graph replay − stream-launched step, us: old new, five times"
paste -d, "${files[@]}" | awk -F, -v n=32 -v runs=${#files[@]} 'NR>1 {printf "%s %s/%s D%s", $1, $3, $4, $5;
  for (i = 0; i < runs; ++i) printf " %+6.1f", $(i*n+17) - $(i*n+16); printf "\n"}'
pack_logs
