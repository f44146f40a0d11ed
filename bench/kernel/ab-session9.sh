#!/usr/bin/env bash
# Session 9's device runs of the one-launch fused cascade kernel (PREFIXD_FUSED=1; one device call
# per STAGE). Binaries: $BIN (carried: prefixd_gpu_tests, prefixd_kernel_bench). Logs: $OUT.
# Kept as the record of those runs: the session-9 kernel and its variants fused-pf, fused-df,
# fused-s3 and fused-c3 were replaced in session 10 (git history has them; device-check.sh (session-10 settings) is
# the current script).
set -uo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-/tmp/b}
OUT=${OUT:-/tmp/ab-s9}
mkdir -p "$OUT"
STAGE=${STAGE:-1}
KB=$BIN/prefixd_kernel_bench
# The fused kernel's GPU tests; the foundation grid (B 64/256 × P 8192/32768, S 256, 32/32 and
# 32/8, fp16) with the given --variants, interleaved per shape (grid TIMEOUT VARIANTS).
fused_tests() {
  timeout 150 $BIN/prefixd_gpu_tests --gtest_filter='*Fused*' >"$OUT/gpu_tests_fused.txt" 2>&1
  echo "fused gpu tests: rc $? $(grep -E '^\[  (PASSED|FAILED)' "$OUT/gpu_tests_fused.txt" | tr '\n' ' ')" | tee -a "$OUT/ab.log"
  grep -E "^\[  FAILED|Failure|error" "$OUT/gpu_tests_fused.txt" | head -20 >>"$OUT/ab.log"
}
grid() {
  timeout "$1" $KB --heads 32/8,32/32 -b 64,256 -p 8192,32768 -s 256 --no-baseline -c 1 \
    --variants "$2" --csv "$OUT/grid-fused.csv" >"$OUT/grid-fused.txt" 2>&1
  echo "kernel grid (variants): rc $?" | tee -a "$OUT/ab.log"
  grep -A40 "^# shape" "$OUT/grid-fused.txt" | cut -c1-150
}
# Run 1 (STAGE=1, nvidia-h200): first contact.
#  a. the fused kernel's GPU tests (every cascade case, twice per backend; item orders; graph);
#  b. the foundation grid (B 64/256 × P 8192/32768, S 256, 32/32 and 32/8, fp16), two-kernel
#     cascade against the fused kernel and its item orders, interleaved per shape.
if [ "$STAGE" = 1 ]; then
fused_tests
grid 200 default,fused,fused-pf,fused-df,fused-s3
fi
# Run 2 (STAGE=2, nvidia-h200): after run 1 (fused 2.4-4.3x the floors; the suffix alone 1.6 TB/s;
# the whole step slower than its parts): the ⊕'s slot loads batched (they were one dependent L2
# round trip per slot), page ids loaded before the producer waits for a stage, decode items
# alternating between the two consumer warpgroups (queries of the next loaded during the last
# tile of the previous). Same tests and grid, plus the scheduler's suffix tile cost at 3.
if [ "$STAGE" = 2 ]; then
fused_tests
grid 200 default,fused,fused-df,fused-c3,fused-df+fused-c3
fi
# Run 3 (STAGE=3, nvidia-h200): after run 2 (suffix alone 29 → 36 µs at 32/8 B64; the whole step
# still far slower than its parts: the ⊕ of the last arrival, ~8 µs of dependent L2 round trips
# under the suffix traffic, stalled both warpgroups through the turn barriers and the ring):
# decode items now run on one warpgroup each, independently (plain schedule, 2 arrivals per warp
# on the empty barriers, the other warpgroup skips the tiles), so one warpgroup's ⊕ overlaps the
# other's next decode item. Same tests and grid.
if [ "$STAGE" = 3 ]; then
fused_tests
grid 200 default,fused,fused-pf,fused-df,fused-s3
fi
# Run 4 (STAGE=4, nvidia-h200; run 5 = the same stage after the tidy-up commit that factored the
# ring set-up, the prefix item's producer and consumer walks and the cascade inputs into shared
# helpers, behaviour unchanged): the code of run 2 again (run 3's skipping deadlocked and was
# reverted), as committed: the whole GPU suite (the prefix kernel was refactored for the fused
# one), compute-sanitizer memcheck and racecheck on the fused cases, the grid once more.
if [ "$STAGE" = 4 ]; then
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
timeout 240 $BIN/prefixd_gpu_tests >"$OUT/gpu_tests_all.txt" 2>&1
echo "gpu tests (all): rc $? $(grep -E '^\[  (PASSED|FAILED|SKIPPED)' "$OUT/gpu_tests_all.txt" | tr '\n' ' ')" | tee -a "$OUT/ab.log"
grep -E "^\[  FAILED" "$OUT/gpu_tests_all.txt" | head -20 >>"$OUT/ab.log"
F='*CudaFusedCascadeTest*mixed_groups*:*CudaFusedCascadeTest*page8*:*CudaFusedCascadeTest*finest_page5*:*CudaFusedCascadeTest*empty_requests*:*CudaGraph*Fused*'
timeout 150 $SAN --tool memcheck --leak-check no --error-exitcode 9 $BIN/prefixd_gpu_tests --gtest_filter="$F" >"$OUT/memcheck_fused.txt" 2>&1
echo "memcheck (fused): rc $? $(grep -E 'ERROR SUMMARY' "$OUT/memcheck_fused.txt" | tail -1)" | tee -a "$OUT/ab.log"
timeout 150 $SAN --tool racecheck --error-exitcode 9 $BIN/prefixd_gpu_tests --gtest_filter='*CudaFusedCascadeTest*mixed_groups*:*CudaFusedCascadeTest*page32*' >"$OUT/racecheck_fused.txt" 2>&1
echo "racecheck (fused): rc $? $(grep -E 'RACECHECK SUMMARY' "$OUT/racecheck_fused.txt" | tail -1)" | tee -a "$OUT/ab.log"
grid 150 default,fused,fused-df
fi
