#!/usr/bin/env bash
# Session 39, runs 2-3 (nvidia-h200): the P·V wait kept below the softmax's exponentials.
# Run 1 (s39-stalls.sh) found ptxas had hoisted that wait (WARPGROUP.DEPBAR) above them.
# Run 2: the wait, the pack and V's release moved to open the next tile's block, after its ring
# waits (patch results/s39/pv-wait-next-block.patch). Run 3: FA3's order kept, with a re-wait on
# the in-flight V tile's full barrier (done already) between the softmax and the wait: a loop, so
# a basic-block boundary ptxas does not hoist the wait across.
# Binaries carried as $CARRY/bins.tar.xz: prefixd_gpu_tests, prefixd_kernel_bench and
# prefixd_prefix_probe of this build, prefixd_kernel_bench_old and prefixd_prefix_probe_old of the
# commit before. Logs in $OUT, also $OUT/all.tgz.
#   1. GPU tests: every prefix-kernel, cascade and fused case (the walk is shared by all three);
#   2. the prefix probe, old new old new, compute- and memory-bound shapes at head_dim 64/128/256;
#   3. the kernel benchmark, old new old new, on the issue's 36 fp16 grid shapes; an A/B table;
#   4. Nsight Compute's stall samples of the new kernel (as run 1).
#   CARRY=.carry/s39a [TESTS=0] bash bench/kernel/sessions/s39-pv-wait.sh   (TESTS=0: timings only)
# (Since the runs, its loops are device-setup.sh's run_probe_rounds and run_bench_ab: the same
# commands; the probe's status line now lists its rows' times instead of a few columns per row.)
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s39-pv-wait
SHAPES=(--shape 32/8:256:32768 --shape 32/32:256:32768 --shape 32/8:256:8192 --shape 32/8:64:32768
  --shape 32/8:256:32768:64 --shape 32/32:256:32768:64 --shape 32/8:256:32768:256 --shape 32/8:256:32768:128:bf16
  --shape 32/32:16:8192)
run_probe_rounds "old new" --kernel wgmma --iters 20 "${SHAPES[@]}"
GRID=(--heads 32/32,32/8 -b 16,64,256 -p 1024,8192,32768 -s 32,256 --dtype fp16 --no-baseline --no-graph -c 1)
run_bench_ab "$OUT" "${GRID[@]}"
timeout 120 ncu --kernel-name regex:PrefixAttentionWgmma --launch-skip 2 --launch-count 1 --clock-control none \
  --section WarpStateStats --section SourceCounters \
  --metrics sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active \
  -f -o "$OUT/prof" /tmp/b/prefixd_prefix_probe --kernel wgmma --iters 3 --warmup 1 --shape 32/8:256:32768 >"$OUT/ncu.txt" 2>&1
ncu -i "$OUT/prof.ncu-rep" --page details --print-details all >"$OUT/details.txt" 2>&1
grep -E "Duration|Tensor|pipe_xu|Eligible Warps|Warp Cycles Per Issued|Stall (Wait|Barrier|Dispatch)" "$OUT/details.txt" | head -12
ncu -i "$OUT/prof.ncu-rep" --page source --csv --print-source sass >"$OUT/sass.csv" 2>&1
rm -f "$OUT/prof.ncu-rep"
if [ "${TESTS:-1}" = 1 ]; then
  # (Run 2 ran '*PrefixAttention*:*CudaCascade*:*Fused*:*EveryGroupSize*' under run_gpu_tests' 200 s:
  # cut off, rc=124. Run 3: the wgmma kernel's oracle cases and the cascades, 330 s.)
  GPU_TESTS_TIMEOUT=330 run_gpu_tests '*PrefixAttentionKernelTest*wgmma*:*CudaCascade*:*EveryGroupSize*:*QueryMap*'
  grep -hE '^\[  FAILED' "$OUT/tests.log" | head -10
fi
pack_logs
