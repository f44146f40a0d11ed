#!/usr/bin/env bash
# Session 87, run 1 (nvidia-h200 asked: the bar's card): session 86's run 1 cut to what its H100
# could not give. The speculative softmax's A/B on the bar card (old = 5e5cbbe's kernel bench,
# spec = this tree's; two rounds each, in turn), then issue4-grid.sh's grid and head_dim rows
# with spec (measured choice), so that the README's Measured table can move off s84's kernels.
# Carry: .carry/s86 (s86-run1.sh's header says how it was built; the early build is not used).
#   CARRY=.carry/s86 bash bench/kernel/sessions/s87-run1.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s87-run1
for b in old spec; do mkdir -p /tmp/$b && cp /tmp/b/prefixd_kernel_bench_$b /tmp/$b/prefixd_kernel_bench; done

run_build_rounds ab "old spec" --heads 32/32,32/8 -b 64,256 -p 8192,32768 -s 256 --head-dim 64,128 --dtype fp16 \
  --no-baseline --no-graph -c 1
show_prefix_rounds ab "old spec"

# issue4-grid.sh's two commands with this tree's build; each table's last lines in the call's
# output too, in case the tarball does not come back.
for b in spec; do
  mkdir -p "$OUT/$b"
  timeout 150 /tmp/$b/prefixd_kernel_bench --heads 32/32,32/8 -b 16,64,256 -p 1024,8192,32768 -s 32,256 \
    --dtype fp16,bf16 --no-baseline -c 1 --read-floor --measured-choice --csv "$OUT/$b/grid.csv" >"$OUT/$b/grid.txt" 2>&1
  echo "$b grid rc=$?"
  timeout 80 /tmp/$b/prefixd_kernel_bench --heads 32/32,32/8 -b 256 -p 32768 -s 256 --head-dim 64,256 \
    --dtype fp16,bf16 --no-baseline -c 1 --read-floor --measured-choice --csv "$OUT/$b/dims.csv" >"$OUT/$b/dims.txt" 2>&1
  echo "$b dims rc=$?"
  for t in grid dims; do
    python3 bench/kernel/fused_floor_table.py "$OUT/$b/$t.csv" --log "$OUT/$b/$t.txt" >"$OUT/$b/$t-fused-floor.md" 2>&1
    echo "$b $t: $(grep -E 'shapes within the bar|^ceilings' "$OUT/$b/$t-fused-floor.md" | tr '\n' ' ')"
    tail -14 "$OUT/$b/$t-fused-floor.md"
  done
done
pack_logs
