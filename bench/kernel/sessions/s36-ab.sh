#!/usr/bin/env bash
# Session 36, run 3 (nvidia-h200): does serving every GQA group size (commit a5547a8: runtime head
# guards in the decode kernels and their epilogue) cost the compiled group sizes anything? The
# kernel benchmark of the commit before (prefixd_kernel_bench_old, b344ba7) and of a5547a8,
# alternating old new old new, on the decode-sensitive shapes: GQA 1, 2, 4 and 8, short and long
# suffixes, one and several waves (fp16, D 128).
# Run 3: CARRY=.carry/s36c bash bench/kernel/sessions/s36-ab.sh (GQA 1 B256 S32 suffix parts +0.8 µs: the
#   runtime head guards; GQA 1 and 2 now fold them away at compile time).
# Run 4: CARRY=.carry/s36d bash bench/kernel/sessions/s36-ab.sh (new = that fix; the carried GPU tests first).
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s36-ab
run_cascade_shards
SHAPES="--heads 32/32,32/16,32/8,32/4 -b 16,256 -p 1024,8192 -s 32,256 --dtype fp16"
for i in 1 2; do for b in old new; do
  exe=$B; [ $b = old ] && exe=/tmp/b/prefixd_kernel_bench_old
  timeout 120 $exe $SHAPES --no-baseline --no-graph -c 1 --csv "$OUT/$b$i.csv" >"$OUT/$b$i.txt" 2>&1
  echo "$b $i rc=$? $(grep 'wrong results' "$OUT/$b$i.txt")"
done; done
python3 - "$OUT" <<'PY'
import csv, sys, statistics
out = sys.argv[1]
def load(n):
    return {(r["h_qo"], r["h_kv"], r["batch"], r["prefix"], r["suffix"]): (float(r["total_us"]), float(r["suffix_us"]))
            for r in csv.DictReader(open(f"{out}/{n}.csv"))}
o1, o2, n1, n2 = (load(n) for n in ("old1", "old2", "new1", "new2"))
dt, ds, same = [], [], []
for k in o1:
    old_t = (o1[k][0] + o2[k][0]) / 2; new_t = (n1[k][0] + n2[k][0]) / 2
    old_s = (o1[k][1] + o2[k][1]) / 2; new_s = (n1[k][1] + n2[k][1]) / 2
    dt.append(new_t - old_t); ds.append(new_s - old_s); same.append(abs(o1[k][0] - o2[k][0]))
    print(f"{k[0]}/{k[1]} B{k[2]} P{k[3]} S{k[4]}: total old {old_t:.1f} new {new_t:.1f} ({new_t - old_t:+.2f}); suffix part {old_s:.1f} -> {new_s:.1f} ({new_s - old_s:+.2f})")
print(f"{len(dt)} shapes: totals new - old sum {sum(dt):+.1f} us, median {statistics.median(dt):+.2f}, min {min(dt):+.2f}, max {max(dt):+.2f}; "
      f"suffix parts sum {sum(ds):+.1f}, median {statistics.median(ds):+.2f}; same-build spread (old1 vs old2) median {statistics.median(same):.2f} us")
PY
pack_logs
