#!/usr/bin/env bash
# A/B of backend variants of one build in one device call (nvidia-h200): some GPU tests, optionally
# compute-sanitizer memcheck on them, then the foundation grid (32/8 and 32/32 heads, B 64/256,
# P 8192/32768, S 256, fp16) with prefixd_kernel_bench --variants (interleaved per shape),
# REPEATS times. Binaries carried as the tarball $BINS (prefixd_gpu_tests, prefixd_kernel_bench;
# sm_90 + sm_90a). Logs: $OUT.
# Session 12 (bench/kernel/results/s12/):
#   run 1, the decode start warmed in L2: BINS=.carry/s12a/bins.tar.xz FILTER='*Warmup*:*Cascade*:*Graph*:*Decode*'
#     MEMCHECK='*Warmup*' VARIANTS=default,nowarm,warm8,warm32 REPEATS=2 (16 MiB by default then; run 2
#     with each (request, chunk)'s rows in one bulk prefetch per page; run 3 adds per-line prefetches,
#     PREFIXD_DECODE_WARMUP_LINES, since removed; runs 4-5 the final form's variants, metadata only
#     by default: VARIANTS=default,nowarm,warm4,warm8[,...] REPEATS=3; see bench/RESULTS.md)
#   run 7, the missed shape only: BINS=.carry/s12a/bins.tar.xz FILTER='*Warmup*' REPEATS=8
#     SHAPES='--heads 32/8 -b 64 -p 8192 -s 256' VARIANTS=default,nowarm,warm0,warm8
#   run 8, the warm-up issued at the last tile's issue (then PREFIXD_DECODE_WARMUP_AT_ISSUE=1, since the
#     default): REPEATS=6 SHAPES='--heads 32/8 -b 64 -p 8192,32768 -s 256'
#     VARIANTS=default,default+PREFIXD_DECODE_WARMUP_AT_ISSUE=1,nowarm
#   run 9 (after device-check.sh, final code): REPEATS=6 SHAPES='--heads 32/8 -b 64 -p 8192 -s 256'
#     VARIANTS=default,nowarm
#   run 11 (a fresh machine): FILTER='*Warmup*' REPEATS=4 VARIANTS=default
#   run 13 (after the tidy commit f049e1a): FILTER='*Warmup*:*Cascade*:*Fused*:*Concurrent*:*Graph*'
#     MEMCHECK='*Warmup*' REPEATS=2 SHAPES='--heads 32/8 -b 64 -p 8192 -s 256' VARIANTS=default,nowarm
set -uo pipefail
cd "$(dirname "$0")/../.."
BINS=${BINS:?set BINS to the carried tarball}
OUT=${OUT:-/tmp/ab-variants}
mkdir -p /tmp/b "$OUT" && tar -C /tmp/b -xJf "$BINS"
cd /tmp/b
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader
timeout 250 ./prefixd_gpu_tests --gtest_brief=1 --gtest_filter="${FILTER:-*}" >"$OUT/gpu-tests.txt" 2>&1
echo "gpu tests rc=$?"; tail -3 "$OUT/gpu-tests.txt"
if [ -n "${MEMCHECK:-}" ]; then
  SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  timeout 200 "$SAN" --tool memcheck --error-exitcode 9 ./prefixd_gpu_tests --gtest_brief=1 --gtest_filter="$MEMCHECK" \
    >"$OUT/memcheck.txt" 2>&1
  echo "memcheck rc=$?"; grep -E "ERROR SUMMARY|PASSED|FAILED" "$OUT/memcheck.txt" | tail -3
fi
for i in $(seq 1 "${REPEATS:-1}"); do
  # SHAPES: other prefixd_kernel_bench shape flags instead of the foundation grid's.
  timeout 150 ./prefixd_kernel_bench ${SHAPES:---heads 32/8,32/32 -b 64,256 -p 8192,32768 -s 256} --no-baseline -c 1 \
    --variants "${VARIANTS:-default}" --csv "$OUT/grid$i.csv" >"$OUT/grid$i.txt" 2>&1
  echo "== grid $i rc=$?"; grep -A9 "^# shape" "$OUT/grid$i.txt" | cut -c1-130 | grep -v "^#  "; grep "wrong results" "$OUT/grid$i.txt"
done
