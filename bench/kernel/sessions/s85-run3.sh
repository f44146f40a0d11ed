#!/usr/bin/env bash
# Session 85, run 3 (nvidia-h200 asked): three builds of the kernel benchmark in turn, twice
# (run_build_rounds): old = HEAD 5e5cbbe; spec = the speculative softmax as in run 2 (P·V's wait
# after the softmax, where the new code's branches leave it); early = the same with the wait for
# the previous tile's P·V written before the softmax (where ptxas had hoisted it in HEAD's build).
# Run 2 (an H100) had the speculative softmax 3-9% faster on the prefix parts of long head_dim-128
# items (160-token tiles) and of the concurrent 32/8 B256 steps, but 2-4% slower at 32/32 B256
# P8192 and 32/8 B64 (128-token tiles), ~1% faster at head_dim 64. Then issue4-grid.sh's grid and
# head_dim rows with early's and spec's benchmark, and early's prefix and cascade GPU tests.
# Carry (flattened): early's prefixd_kernel_bench and prefixd_gpu_tests, spec's and HEAD's benchmark
# as prefixd_kernel_bench_spec and prefixd_kernel_bench_old (xz -9):
#   CARRY=.carry/s85c bash bench/kernel/sessions/s85-run3.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s85-run3
for b in old spec; do mkdir -p /tmp/$b && cp /tmp/b/prefixd_kernel_bench_$b /tmp/$b/prefixd_kernel_bench; done
mkdir -p /tmp/early && cp /tmp/b/prefixd_kernel_bench /tmp/early/prefixd_kernel_bench

common=(--no-baseline --no-graph -c 1)
run_build_rounds d128 "old spec early" --heads 32/32,32/8 -b 64,256 -p 8192,32768 -s 256 --dtype fp16,bf16 "${common[@]}"
run_build_rounds d64 "old spec early" --heads 32/32,32/8 -b 256 -p 32768 -s 256 --head-dim 64 --dtype fp16,bf16 "${common[@]}"
echo "== prefix part us per shape: old1 spec1 early1 old2 spec2 early2"
for n in d128 d64; do
  for i in 1 2; do for b in old spec early; do awk -F, 'NR>1{print $13}' "$OUT/$n-$b$i.csv" > "$OUT/$n-$b$i.pfx"; done; done
  paste <(awk -F, 'NR>1{printf "%s D%s %s/%s B%s P%s\n",$1,$5,$3,$4,$6,$7}' "$OUT/$n-old1.csv") \
    "$OUT/$n-old1.pfx" "$OUT/$n-spec1.pfx" "$OUT/$n-early1.pfx" "$OUT/$n-old2.pfx" "$OUT/$n-spec2.pfx" "$OUT/$n-early2.pfx"
done

# issue4-grid.sh's two commands, with each build's benchmark.
for b in early spec; do
  timeout 200 /tmp/$b/prefixd_kernel_bench --heads 32/32,32/8 -b 16,64,256 -p 1024,8192,32768 -s 32,256 --dtype fp16,bf16 \
    --no-baseline -c 1 --read-floor --measured-choice --csv "$OUT/grid-$b.csv" >"$OUT/grid-$b.txt" 2>&1
  echo "grid $b rc=$?"
  timeout 100 /tmp/$b/prefixd_kernel_bench --heads 32/32,32/8 -b 256 -p 32768 -s 256 --head-dim 64,256 --dtype fp16,bf16 \
    --no-baseline -c 1 --read-floor --measured-choice --csv "$OUT/dims-$b.csv" >"$OUT/dims-$b.txt" 2>&1
  echo "dims $b rc=$?"
  for t in grid dims; do
    python3 bench/kernel/fused_floor_table.py "$OUT/$t-$b.csv" --log "$OUT/$t-$b.txt" >"$OUT/$t-$b-fused-floor.md" 2>&1
    echo "$t $b: $(grep -E 'shapes within the bar|^ceilings' "$OUT/$t-$b-fused-floor.md" | tr '\n' ' ')"
  done
done
GTEST_TIMEOUT=150 run_test_shards '*PrefixAttention*:*RisingMax*:*Cascade*:*Fused*:*Concurrent*'
pack_logs
