#!/usr/bin/env bash
# Session 42, runs 3 and 4 (nvidia-h200): S = Q·Kᵀ two KV tiles ahead at head_dim 64
# (WgmmaPrefixConfig::S_AHEAD, Consumer::RowTileAhead): in FA3's schedule a warpgroup's S of the
# next tile queues behind the other warpgroup's whole turn, so the wait for it separates every
# softmax from the next; issued one turn earlier, into a second S buffer, it is done when needed.
# Binaries ($CARRY/bins.tar.xz): new = S_AHEAD at head_dim 64 (run 3: P·V's A from registers, which
# ptxas serialised, C7511; run 4: P through shared memory, bench/kernel/results/s42/s-ahead-p-smem.patch
# without its re-wait); *_old = HEAD.
# NOTE: the probe's "stages=3" rows below are NOT the deep ring: prefixd_prefix_probe unsets
# PREFIXD_SM90A_STAGES unless --kernel wgmma-s3 (run 7, bench/kernel/sessions/s42-deep-ring.sh, times that).
# The GPU tests *s3*d64* do run the deep ring (each case sets the variable).
#   1. the prefix probe, old / new × default / deep ring, twice, head_dim 64 fp16 and bf16
#      (after a head_dim-128 warm-up shape, unchanged: the control);
#   2. GPU tests of new: every head_dim 64 case (the 2-stage ring) and the deep-ring ones (*s3*d64*);
#   3. the kernel benchmark, old new old new, the issue's head_dim-64 rows;
#   4. compute-sanitizer on four head_dim-64 cases.
#   CARRY=.carry/s42c bash bench/kernel/sessions/s42-s-ahead.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s42-s-ahead
SHAPES=(--shape 32/8:256:32768 --shape 32/8:256:32768:64 --shape 32/32:256:32768:64 --shape 32/8:256:8192:64
  --shape 32/8:64:32768:64 --shape 32/8:256:32768:64:bf16)
for i in 1 2; do for b in old new; do for st in 2 3; do
  probe=/tmp/b/prefixd_prefix_probe; [ $b = old ] && probe=/tmp/b/prefixd_prefix_probe_old
  PREFIXD_SM90A_STAGES=$st timeout 120 $probe --kernel wgmma --iters 20 "${SHAPES[@]}" >"$OUT/probe-$b-s$st-$i.txt" 2>&1
  echo "probe $b stages=$st $i rc=$? $(grep -E '^wgmma' "$OUT/probe-$b-s$st-$i.txt" | awk '{printf "%s%s ", $12, ($16=="OK"?"":"!"$16)}')"
done; done; done
GPU_TESTS_TIMEOUT=150 run_gpu_tests '*d64*'
grep -hE '^\[  FAILED' "$OUT/tests.log" | head -10; cp "$OUT/tests.log" "$OUT/tests-d64.log"
GPU_TESTS_TIMEOUT=60 run_gpu_tests '*s3*d64*'
grep -hE '^\[  FAILED' "$OUT/tests.log" | head -10; cp "$OUT/tests.log" "$OUT/tests-s3.log"
DIMS=(-d 64 --heads 32/32,32/8 -b 256 -p 32768 -s 32,256 --dtype fp16,bf16 --no-baseline --no-graph -c 1)
run_bench_ab "$OUT/dims" "${DIMS[@]}"
run_sanitizers '*wgmma_Flat_fp16_d64_g4:*wgmma_overlap_s3_ManyItems_d64_bf16:*wgmma_ManyItems_d64_fp16:*wgmma_RoundAllPUp_fp16_d64'
pack_logs
