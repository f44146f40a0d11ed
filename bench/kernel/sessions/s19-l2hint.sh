#!/usr/bin/env bash
# Session 19, one device call (nvidia-h200): the prefix K/V stream's L2 hint (prefix_l2_hint.h).
# The GPU tests of the prefix kernel and the cascade, then the issue's fp16 grid and 48 bf16 shapes
# it was not chosen on, each with three settings interleaved per shape: the plan's hint (default),
# never (PREFIXD_SM90A_KV_POLICY=normal), always (=first). Binaries carried as $CARRY/bins.tar.xz
# (prefixd_kernel_bench, prefixd_gpu_tests). Logs: $OUT.
#   run 4: CARRY=.carry/s19b (the rule with decodes up to 2 x L2)
#   run 7: CARRY=.carry/s19e SKIP_TESTS=1 SKIP_GRID=1 UNSEEN="--heads 32/32,16/16 -b 12,20,24,40,48
#          -p 4096,16384 -s 128,256 --dtype fp16" (up to 3 x L2: decodes of 13-201 MB it was not set on)
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s19-l2hint
if [ -z "${SKIP_TESTS:-}" ]; then
  timeout 200 /tmp/b/prefixd_gpu_tests --gtest_filter="${TESTS:-*Prefix*:*CudaDecodeVariant*:*Cascade*}" >"$OUT/tests.log" 2>&1
  echo "tests rc=$? $(grep -E '^\[  (PASSED|FAILED) ' "$OUT/tests.log" | tr '\n' ' ')"
fi
V="default,PREFIXD_SM90A_KV_POLICY=normal,PREFIXD_SM90A_KV_POLICY=first"
sets="unseen"
if [ -z "${SKIP_GRID:-}" ]; then
  sets="grid unseen"
  timeout 200 $B --heads 32/32,32/8 -b 16,64,256 -p 1024,8192,32768 -s 32,256 --dtype fp16 --no-baseline --no-graph -c 1 \
    --variants "$V" --csv "$OUT/grid.csv" >"$OUT/grid.txt" 2>&1
  echo "grid rc=$?"; grep "wrong results" "$OUT/grid.txt"
fi
timeout 200 $B ${UNSEEN:---heads 32/32,32/8,64/8,16/16 -b 8,32,128 -p 2048,16384 -s 64,512 --dtype bf16} --no-baseline --no-graph -c 1 \
  --variants "$V" --csv "$OUT/unseen.csv" >"$OUT/unseen.txt" 2>&1
echo "unseen rc=$?"; grep "wrong results" "$OUT/unseen.txt"
for f in $sets; do
  python3 - "$OUT/$f.csv" <<'PY'
import csv, sys, collections
rows = list(csv.DictReader(open(sys.argv[1])))
by = collections.defaultdict(dict)
for r in rows:
    key = (r['dtype'], r['h_qo'] + '/' + r['h_kv'], int(r['batch']), int(r['prefix']), int(r['suffix']))
    by[key][r['variant']] = float(r['total_us'])
names = ['default', 'PREFIXD_SM90A_KV_POLICY=normal', 'PREFIXD_SM90A_KV_POLICY=first']
d_norm = [v[names[0]] - v[names[1]] for v in by.values()]
d_best = [v[names[0]] - min(v[names[1]], v[names[2]]) for v in by.values()]
print(f"{sys.argv[1]}: {len(by)} shapes; plan hint - never: sum {sum(d_norm):+.1f} us, "
      f"min {min(d_norm):+.1f}, max {max(d_norm):+.1f}; plan hint - best of never/always: max {max(d_best):+.1f}")
for k, v in sorted(by.items()):
    dn, df = v[names[0]] - v[names[1]], v[names[0]] - v[names[2]]
    if abs(dn) >= 1.0 or df >= 1.0 or df <= -1.0:
        print(f"  {k[0]} {k[1]} B{k[2]} P{k[3]} S{k[4]}: plan {v[names[0]]:.1f}, never {v[names[1]]:.1f}, always {v[names[2]]:.1f}")
PY
done
