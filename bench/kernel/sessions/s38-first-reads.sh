#!/usr/bin/env bash
# Session 38, run 5 (nvidia-h200): the sm_90a prefix kernel's first reads prefetched at its entry
# (PrefetchFirstReads: the tensor maps, the CTA's first item's line and the group array's first
# line, before the ring's set-up). Binaries carried as $CARRY/bins.tar.xz: prefixd_gpu_tests,
# prefixd_kernel_bench and prefixd_prefix_probe of this build, prefixd_kernel_bench_old and
# prefixd_prefix_probe_old of the commit before. Logs in $OUT, also $OUT/all.tgz.
#   1. GPU tests: the cascade cases, the narrow CTA, grids of 1-3 CTAs (many items each), short prefixes;
#   2. the probe's timeline (first K tile, exits), old new old new, on three memory-bound shapes;
#   3. the kernel benchmark, old new old new, on the issue's 36 fp16 grid shapes; an A/B table.
#   CARRY=.carry/s38e bash bench/kernel/sessions/s38-first-reads.sh
# PART=check (run 6, the committed binaries: prefixd_gpu_tests, prefixd_kernel_bench, prefixd):
# the whole GPU suite and compute-sanitizer (bench/kernel/device-check.sh), then the main job.
#   CARRY=.carry/s38f PART=check bash bench/kernel/sessions/s38-first-reads.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s38-first-reads
if [ "${PART:-ab}" = check ]; then
  OUT=$OUT/check VARIANTS=default bash bench/kernel/device-check.sh
  run_main_job_heads 32/8 32/32
  pack_logs
  exit 0
fi
GRID=(--heads 32/32,32/8 -b 16,64,256 -p 1024,8192,32768 -s 32,256 --dtype fp16 --no-baseline --no-graph -c 1)
run_gpu_tests '*CudaCascadeTest*:*QueryMap*:*wgmma_wg1_*:*wgmma_*ctas*:*PoisonShort*'
grep -hE '^\[  FAILED' "$OUT/tests.log" | head -10
for i in 1 2; do for b in old new; do
  probe=/tmp/b/prefixd_prefix_probe; [ $b = old ] && probe=/tmp/b/prefixd_prefix_probe_old
  timeout 60 $probe --kernel wgmma --timeline --iters 20 --shape 32/32:16:8192 --shape 32/8:16:32768 \
    --shape 32/8:64:8192 >"$OUT/probe-$b$i.txt" 2>&1
  echo "probe $b $i rc=$?"; grep -E "^wgmma|# timeline|first K tile|  exit" "$OUT/probe-$b$i.txt" | cut -c1-120
done; done
for i in 1 2; do for b in old new; do
  exe=$B; [ $b = old ] && exe=/tmp/b/prefixd_kernel_bench_old
  timeout 100 $exe "${GRID[@]}" --csv "$OUT/$b$i.csv" >"$OUT/$b$i.txt" 2>&1
  echo "grid $b $i rc=$? $(grep 'wrong results' "$OUT/$b$i.txt")"
done; done
python3 bench/kernel/ab_builds.py "$OUT" | tee "$OUT/ab.txt"
pack_logs
# Run 7 (after run 6 found CudaBackendErrors.UnsupportedGroupSizeIsRefusedAtLoad stale since
# session 36; rewritten as EveryGroupSizeLoadsAndMatchesTheOracle, then still in the
# CudaBackendErrors suite, since moved to CudaCascade: filter '*EveryGroupSize*' now), from the
# repository root:
#   CARRY=.carry/s38g bash -c '. bench/kernel/device-setup.sh s38-run7; run_gpu_tests "*CudaBackendErrors*";
#     run_sanitizers "*CudaBackendErrors*"; pack_logs'
# Run 8 (the review mends of commit "Review mends, behaviour unchanged": the consumers' Q-map
# prefetch dropped, the entry in one block), from the repository root:
#   CARRY=.carry/s38h bash -c '. bench/kernel/device-setup.sh s38-run8; /tmp/b/prefixd_exp2_probe --bogus;
#     run_gpu_tests "*CudaCascadeTest*:*QueryMap*:*wgmma_wg1_*:*wgmma_*ctas*:*PoisonShort*:*EveryGroupSize*:*_qcp_*";
#     run_sanitizers "*EveryGroupSize*:*wgmma_PoisonGroups_page7_fp16*:*wgmma_wg1_Groups_page7_fp16*";
#     /tmp/b/prefixd_prefix_probe --kernel wgmma --timeline --iters 20 --shape 32/32:16:8192 | grep -E "first K|^wgmma"; pack_logs'
