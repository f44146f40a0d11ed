#!/usr/bin/env bash
# Session 88, run 4: which prefix-kernel setting carries the speculative softmax's short-item loss.
# Run 3 (an H100): in the prefix probe, which launches the 2-stage 128-token-tile kernel, the
# speculative softmax loses nothing at 32/8 B64 P8192 (25.2-25.3 us both builds, first K tile at
# the same time) and gains at 32/32 B256 P8192 (65.7-66.2 -> 64.3-64.5); in the kernel benchmark
# (run 2) it lost at both, where the planner takes the 160-token tile (32/32 B256 P8192) and the
# deeper ring. ptxas: the speculative build's 160-token overlap kernel spills 96 / 104 bytes
# (stores / loads) against 52 / 40 in s84's. Here the kernel benchmark's prefix part with the tile
# and the ring depth forced, both builds in turn (old = s84's HEAD 5e5cbbe, new = this tree), twice.
# Carry .carry/s88b (ignored, local): prefixd_kernel_bench (this tree) and prefixd_kernel_bench_old.
#   CARRY=.carry/s88b bash bench/kernel/sessions/s88-run4.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s88-run4
V="default,PREFIXD_SM90A_KV_TILE=128,PREFIXD_SM90A_KV_TILE=160,PREFIXD_SM90A_STAGES=2,PREFIXD_SM90A_STAGES=3"
for r in 1 2; do
  for b in old new; do
    exe=/tmp/b/prefixd_kernel_bench; [ $b = old ] && exe=/tmp/b/prefixd_kernel_bench_old
    B=$exe RUN_TIMEOUT=120 run_variants tile-$b$r "$V" --heads 32/32,32/8 -b 64,256 -p 8192,32768 -s 256 --dtype fp16
  done
done
echo "== prefix part alone (us): shape variant | old1 new1 old2 new2"
python3 - "$OUT" <<'PY'
import csv, sys, collections
out = sys.argv[1]; runs = ["old1", "new1", "old2", "new2"]; t = collections.defaultdict(dict)
for r in runs:
    for row in csv.DictReader(open(f"{out}/tile-{r}.csv")):
        key = f"{row['h_qo']}/{row['h_kv']} B{row['batch']} P{row['prefix']} {row['variant']}"
        t[key][r] = float(row["prefix_us"])
for k, v in t.items():
    print(f"{k:58s} " + " ".join(f"{v.get(r, float('nan')):7.1f}" for r in runs))
PY
grep -ho "prefix-plan([^)]*)" "$OUT"/tile-new1.txt | sort | uniq -c
pack_logs
