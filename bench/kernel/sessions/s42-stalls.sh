#!/usr/bin/env bash
# Session 42, run 6 (nvidia-h200): why S two tiles ahead (run 5's build) is slower. Nsight
# Compute's PC sampling on one launch of the prefix probe (32/8 B256 P32768 head_dim 64 fp16),
# HEAD's kernel (old) and run 5's (new): the stall totals and the SASS lines with the most samples.
# Binaries ($CARRY/bins.tar.xz): run 5's (.carry/s42e).
#   CARRY=.carry/s42e bash bench/kernel/sessions/s42-stalls.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s42-stalls
for b in old new; do
  P=/tmp/b/prefixd_prefix_probe; [ $b = old ] && P=/tmp/b/prefixd_prefix_probe_old
  timeout 200 ncu --kernel-name regex:PrefixAttentionWgmma --launch-skip 2 --launch-count 1 --clock-control none \
    --section SpeedOfLight --section WarpStateStats --section SourceCounters --section SchedulerStats \
    --metrics sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active \
    -f -o "$OUT/prof-$b" $P --kernel wgmma --iters 3 --warmup 1 --shape 32/8:256:32768:64 >"$OUT/ncu-$b.txt" 2>&1
  echo "ncu $b rc=$?"
  ncu -i "$OUT/prof-$b.ncu-rep" --page details --print-details all >"$OUT/details-$b.txt" 2>&1
  grep -E "Duration|gmma|pipe_xu|Eligible|Issued Warp|Warp Cycles Per Issued|Stall" "$OUT/details-$b.txt" | head -24
  ncu -i "$OUT/prof-$b.ncu-rep" --page source --csv --print-source sass >"$OUT/sass-$b.csv" 2>&1
  python3 - "$OUT/sass-$b.csv" <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
head = rows[0]; body = [r for r in rows[1:] if len(r) == len(head)]
col = next(i for i, h in enumerate(head) if h.startswith("Warp Stall Sampling (All"))
src = next(i for i, h in enumerate(head) if h == "Source")
total = sum(float(r[col] or 0) for r in body)
reasons = [i for i, h in enumerate(head) if h.startswith("stall_") or "Stall" in h and i != col]
print(f"samples {total:.0f}; top lines:")
for r in sorted(body, key=lambda r: -float(r[col] or 0))[:14]:
    print(f"  {100*float(r[col] or 0)/total:5.1f}%  {r[src][:70]}")
PY
  rm -f "$OUT/prof-$b.ncu-rep"
done
pack_logs
