#!/usr/bin/env bash
# Session 37's device call (nvidia-h200): the tensor-core decode's 16-row group (g = 9-16 in one
# CTA, larger groups in slices of 16; DecodeSlicingFor, prefixd/kernels/decode_kernel_choice.h).
# Binaries carried as $CARRY/bins.tar.xz (the GPU tests, the kernel benchmark of this change and of
# the commit before it as prefixd_kernel_bench_old, prefixd); logs in $OUT, also $OUT/all.tgz.
#   1. the cases of groups of more than 8 heads in every cascade suite, and every decode variant
#      (g = 16 and 24 among its shapes); then every cascade, decode and fused GPU test;
#   2. compute-sanitizer memcheck and racecheck on four of the new path's cascade cases;
#   3. the kernel benchmark old new old new (bf16; each step checked against the CPU backend):
#      groups of 12, 16 and 32 heads beside the compiled 4 and 8;
#   4. the main job on the GPU at 128/8 and 96/8 heads (its own sampled check).
# PART=2 runs 1 and 2 only.
# Run 1: CARRY=.carry/s37a bash bench/kernel/sessions/s37-sixteen.sh (commit 8e64962; the benchmark's first
#   call had -b 64,256: the 16-row group 17-22% slower at B64 for 32/2, 24/2 and 32/1, so run 2
#   (s37-warps.sh) timed the warps per CTA).
# Run 3: CARRY=.carry/s37b bash bench/kernel/sessions/s37-sixteen.sh (8 warps for the 16-row group's CTAs
#   where they are at most one per SM).
# Run 7: CARRY=.carry/s37d PART=2 bash bench/kernel/sessions/s37-sixteen.sh (the final binaries, c10fef3:
#   the cost model of run 6).
# Run 8: CARRY=.carry/s37e PART=2 bash bench/kernel/sessions/s37-sixteen.sh, then run_main_job_heads 128/8
#   (the review's dispatch change: rows and the tensor-core choice decided once).
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s37-sixteen
run_new_cases_checks '*gqa9_*:*gqa10_*:*gqa12_*:*gqa16_*:*gqa24_*:*mqa*:*CudaDecodeVariant*' \
  "*CudaCascadeTest.*gqa16_peaky*:*CudaCascadeTest.*gqa10_*:*CudaCascadeTest.*gqa24_*:*CudaCascadeTest.*mqa32*"
[ "${PART:-1}" = 2 ] && { pack_logs; exit 0; }
for i in 1 2; do for b in old new; do
  exe=$B; [ $b = old ] && exe=/tmp/b/prefixd_kernel_bench_old
  { timeout 150 $exe --heads 32/2,24/2,32/1,128/8,96/8,32/8,64/8 -b 16,64,256 -p 8192 -s 256 -d 128 --dtype bf16 \
      --no-baseline --no-graph -c 1 --csv "$OUT/$b$i-d128.csv"
    timeout 40 $exe --heads 32/2,32/1,32/8 -b 256 -p 8192 -s 32 -d 128 --dtype bf16 \
      --no-baseline --no-graph -c 1 --csv "$OUT/$b$i-s32.csv"
    timeout 40 $exe --heads 32/2,32/1,32/8 -b 256 -p 8192 -s 256 -d 64 --dtype bf16 \
      --no-baseline --no-graph -c 1 --csv "$OUT/$b$i-d64.csv"; } >"$OUT/$b$i.txt" 2>&1
  echo "$b $i rc=$? $(grep 'wrong results' "$OUT/$b$i.txt" | tr '\n' ' ')"
done; done
python3 - "$OUT" <<'PY'
import csv, sys, glob
out = sys.argv[1]
def load(n):
    rows = {}
    for f in sorted(glob.glob(f"{out}/{n}-*.csv")):
        for r in csv.DictReader(open(f)):
            rows[(r["h_qo"], r["h_kv"], r["head_dim"], r["batch"], r["prefix"], r["suffix"])] = r
    return rows
o1, o2, n1, n2 = (load(n) for n in ("old1", "old2", "new1", "new2"))
print("heads D B P S | suffix us old (two runs) -> new (two runs) | new/old | total old -> new | suffix GB/s new (unique bytes)")
for k in o1:
    if k not in n1: continue
    so = [float(x[k]["suffix_us"]) for x in (o1, o2)]; sn = [float(x[k]["suffix_us"]) for x in (n1, n2)]
    to = sum(float(x[k]["total_us"]) for x in (o1, o2)) / 2; tn = sum(float(x[k]["total_us"]) for x in (n1, n2)) / 2
    h_qo, h_kv, d, b, p, s = (int(v) for v in k)
    gbs = 2 * b * s * h_kv * d * 2 / (sum(sn) / 2 * 1e-6) / 1e9
    print(f"{h_qo}/{h_kv} D{d} B{b} P{p} S{s} | {so[0]:.1f} {so[1]:.1f} -> {sn[0]:.1f} {sn[1]:.1f} | {sum(sn)/sum(so):.3f} | "
          f"{to:.1f} -> {tn:.1f} | {gbs:.0f}")
PY
run_main_job_heads 128/8 96/8
pack_logs
