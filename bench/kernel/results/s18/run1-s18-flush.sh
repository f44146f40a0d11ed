#!/usr/bin/env bash
# Session 18, one device call (nvidia-h200): the issue grid (fp16) under the method's 256 MiB L2
# write done two ways, each against the issue's fused floor: by a fill kernel (--flush write, the
# reference harness's way, new default) and by cudaMemsetAsync (--flush write-memset, sessions
# 1-17), plus the empty region under each. Binaries carried as $CARRY/bins.tar.xz. Logs: $OUT.
#   run 1: CARRY=.carry/s18a
set -uo pipefail
cd "$(dirname "$0")/../.."
. bench/kernel/device-setup.sh s18-flush
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader
for mode in ${MODES:-write write-memset}; do
  timeout ${GRID_TIMEOUT:-200} $B --heads 32/32,32/8 -b 16,64,256 -p 1024,8192,32768 -s 32,256 --dtype ${DTYPES:-fp16} \
    --flush "$mode" --no-baseline -c 1 --csv "$OUT/grid-$mode.csv" >"$OUT/grid-$mode.txt" 2>&1
  echo "== $mode rc=$? $(grep 'empty region' "$OUT/grid-$mode.txt")"; grep "wrong results" "$OUT/grid-$mode.txt"
  python3 bench/kernel/fused_floor_table.py "$OUT/grid-$mode.csv" --log "$OUT/grid-$mode.txt" >"$OUT/floor-$mode.md" 2>&1
  echo "   $(tail -1 "$OUT/floor-$mode.md")"
done
python3 - "$OUT" ${MODES:-write write-memset} <<'PY'
import csv, sys
out, modes = sys.argv[1], sys.argv[2:]
rows = {m: {tuple(r[k] for k in ("dtype", "h_qo", "h_kv", "batch", "prefix", "suffix")): float(r["total_us"])
            for r in csv.DictReader(open(f"{out}/grid-{m}.csv"))} for m in modes}
print("shape total_us " + " ".join(modes) + " ratio")
for k, t in rows[modes[0]].items():
    o = rows[modes[-1]].get(k)
    print(" ".join(k), f"{t:.1f}", f"{o:.1f}" if o else "-", f"{t / o:.3f}" if o else "-")
PY
