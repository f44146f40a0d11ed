#!/usr/bin/env bash
# Session 19, one device call (nvidia-h200): two builds of the kernel benchmark A/B on the issue's
# fp16 grid, alternating A B A B (separate processes, same shapes), then the GPU tests of build B.
# Build A from $CARRY_A/bins.tar.xz, build B from $CARRY/bins.tar.xz. Logs: $OUT.
#   run 5 (A: commit 6ecc06d, B: + prefix item groups): CARRY_A=.carry/s19b CARRY=.carry/s19c
# Session 21 run 5 (A: session 20's final binaries, B: the prefix kernel's two Q buffers):
#   CARRY_A=.carry/s20d CARRY=.carry/s21c TESTS='*PrefixAttention*:*CudaCascade*:*Fused*:*Graph*'
#   run 7 (B: the second Q-buffer version, results/s21/q-buffers-v2.patch): CARRY=.carry/s21e, same TESTS
#   run 8 (B: session 20's kernels, producer 32 / consumers 232 registers): CARRY=.carry/s21f
#     TESTS='*PrefixAttention*:*CudaCascade*:*Fused*'
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s19-ab
mkdir -p /tmp/a && tar -C /tmp/a -xJf "${CARRY_A:?}/bins.tar.xz"
shapes=${SHAPES:-"--heads 32/32,32/8 -b 16,64,256 -p 1024,8192,32768 -s 32,256 --dtype fp16"}
for round in 1 2; do
  for build in a b; do
    bin=/tmp/a/prefixd_kernel_bench; [ $build = b ] && bin=$B
    timeout 120 $bin $shapes --no-baseline --no-graph -c 1 --csv "$OUT/$build$round.csv" >"$OUT/$build$round.txt" 2>&1
    echo "$build$round rc=$? $(grep 'wrong results' "$OUT/$build$round.txt")"
  done
done
python3 - "$OUT" <<'PY'
import csv, sys, statistics
out = sys.argv[1]
def load(n, field='total_us'):
    return {(r['h_qo'] + '/' + r['h_kv'], int(r['batch']), int(r['prefix']), int(r['suffix'])): float(r[field])
            for r in csv.DictReader(open(f"{out}/{n}.csv"))}
a1, a2, b1, b2 = load('a1'), load('a2'), load('b1'), load('b2')
pa = {k: (load('a1', 'prefix_us')[k] + load('a2', 'prefix_us')[k]) / 2 for k in a1}
pb = {k: (load('b1', 'prefix_us')[k] + load('b2', 'prefix_us')[k]) / 2 for k in a1}
d = {k: (b1[k] + b2[k]) / 2 - (a1[k] + a2[k]) / 2 for k in a1}
noise = [abs(a1[k] - a2[k]) for k in a1] + [abs(b1[k] - b2[k]) for k in a1]
print(f"B - A (mean of 2 each): sum {sum(d.values()):+.1f} us over {len(d)} shapes, median {statistics.median(d.values()):+.2f}, "
      f"min {min(d.values()):+.1f}, max {max(d.values()):+.1f}; same-build spread median {statistics.median(noise):.2f}, max {max(noise):.1f}")
for k in sorted(d):
    print(f"  {k[0]} B{k[1]} P{k[2]} S{k[3]}: A {a1[k]:.1f} {a2[k]:.1f}  B {b1[k]:.1f} {b2[k]:.1f}  ({d[k]:+.1f}); "
          f"prefix part A {pa[k]:.1f} B {pb[k]:.1f} ({pb[k] - pa[k]:+.1f})")
PY
if [ -n "${TESTS:-}" ]; then
  timeout 240 /tmp/b/prefixd_gpu_tests --gtest_brief=1 --gtest_filter="$TESTS" >"$OUT/tests.log" 2>&1
  echo "tests rc=$? $(grep -E '^\[  (PASSED|SKIPPED) ' "$OUT/tests.log" | tr '\n' ' ') failed: $(grep -c '^\[  FAILED  \]' "$OUT/tests.log")"
  grep -m1 -B4 '^\[  FAILED  \]' "$OUT/tests.log"  # the first failure, with its message
  gzip -f "$OUT/tests.log"
fi
