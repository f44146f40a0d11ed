#!/usr/bin/env bash
# Session 54, run 4 (nvidia-h200): the CUDA-graph replay of the whole step with the captured
# kernel nodes' priorities (cudaGraphInstantiateFlagUseNodePriority: the concurrent step's prefix
# above its decode) against the build before (instantiated with no flag: every node at the launch
# stream's priority), alternated twice, one process each (old new old new): the head_dim 64 / 128 /
# 256 rows at B256 P32768 S256 (the head_dim-256 replay up to +40 µs over the stream-launched step,
# sessions 45-53) and 32/8 D128 B256 P8192 S256; then the graph GPU tests.
#   CARRY=.carry/s54d bash bench/kernel/sessions/s54-graph.sh   (bins.tar.xz holds prefixd_kernel_bench_old)
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s54-graph
for i in 1 2; do for b in old new; do
  exe=$B; [ $b = old ] && exe=/tmp/b/prefixd_kernel_bench_old
  for d in 256 64; do
    timeout 100 $exe -d $d --heads 32/8,32/32 -b 256 -p 32768 -s 256 --dtype fp16,bf16 --no-baseline -c 1 \
      --csv "$OUT/$b$i-d$d.csv" >"$OUT/$b$i-d$d.txt" 2>&1
    echo "$b $i d$d rc=$? $(grep 'wrong results' "$OUT/$b$i-d$d.txt")"
  done
  timeout 100 $exe -d 128 --heads 32/8,32/32 -b 256 -p 8192,32768 -s 256 --dtype fp16,bf16 --no-baseline -c 1 \
    --csv "$OUT/$b$i-d128.csv" >"$OUT/$b$i-d128.txt" 2>&1
  echo "$b $i d128 rc=$? $(grep 'wrong results' "$OUT/$b$i-d128.txt")"
done; done
echo "== dtype heads D B P S: total / graph replay us, old1 new1 old2 new2"
for d in 64 128 256; do
  paste -d, "$OUT"/old1-d$d.csv "$OUT"/new1-d$d.csv "$OUT"/old2-d$d.csv "$OUT"/new2-d$d.csv | awk -F, -v n=32 'NR>1 {
    printf "%s %s/%s D%s B%s P%s S%s", $1, $3, $4, $5, $6, $7, $8;
    for (i = 0; i < 4; ++i) printf " | %6.1f / %6.1f", $(i*n+16), $(i*n+17); printf "\n"}'
done
grep -ho "concurrent(k=[0-9]*[^)]*)" "$OUT"/new1-*.txt | sort | uniq -c
GPU_TESTS_TIMEOUT=120 run_gpu_tests '*CudaGraph*'
pack_logs
