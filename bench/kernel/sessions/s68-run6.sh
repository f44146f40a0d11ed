#!/usr/bin/env bash
# Session 68, run 6 (nvidia-h200): the grid with every read yardstick, now also each part's bytes
# read alone (read_prefix_us, read_suffix_us), so that each kernel's excess over a read of its own
# bytes is known per shape (lever 5, ISSUE4.md).
#   CARRY=.carry/s68d bash bench/kernel/sessions/s68-run6.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s68-run6
timeout 400 $B --heads 32/32,32/8 -b 16,64,256 -p 1024,8192,32768 -s 32,256 --dtype fp16,bf16 --no-baseline -c 1 \
  --read-floor --no-graph --csv "$OUT/grid.csv" >"$OUT/grid.txt" 2>&1
echo "grid rc=$?"
python3 bench/kernel/fused_floor_table.py "$OUT/grid.csv" --log "$OUT/grid.txt" >"$OUT/grid-fused-floor.md" 2>&1
tail -5 "$OUT/grid-fused-floor.md"
python3 - "$OUT/grid.csv" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
print("dtype heads B P S | prefix part - its read | suffix part - its read | step - pair read (µs)")
for r in rows:
    if r["dtype"] != "fp16": continue
    f = lambda k: float(r[k])
    print(f"{r['dtype']} {r['h_qo']}/{r['h_kv']} B{r['batch']} P{r['prefix']} S{r['suffix']} | "
          f"{f('prefix_us') - f('read_prefix_us'):6.1f} | {f('suffix_us') - f('read_suffix_us'):6.1f} | "
          f"{f('total_us') - f('read_pdl_us'):6.1f}")
PY
pack_logs
