#!/usr/bin/env bash
# Session 29, device calls on nvidia-h200: why the tensor-core decode (GQA 4) reads its suffix
# slower than a plain stream of the same bytes (32/8 B256 S256: 268 MB in ~82.6 µs against the L2
# probe's 71.3 µs for 256 MiB after the same write flush, session 19). Binaries carried as
# $CARRY/bins.tar.xz. Runs are the session's device calls (logs: bench/kernel/results/s29/runN/):
#   run 1: CARRY=.carry/s29a PART=1   (the same 2048 items of 256 tokens at GQA 4, with 1, 2, 4 and
#                                      8 KV heads: token rows of 256 B to 2 KiB, so each item's
#                                      16-row tiles go from contiguous 4 KiB runs to 256-byte
#                                      pieces at a 2 KiB stride; write and clean flush; the L2
#                                      probe's plain stream of 64 and 256 MiB beside them)
#   run 2: CARRY=.carry/s29a PART=2   (the same bytes in 2048 to 256 items, with and without the
#                                      fused ⊕; the decode kernel's existing settings)
#   run 3: CARRY=.carry/s29b PART=3   (the streaming kernel filling the SMs: its tests and the
#                                      steps; no faster, reverted: binaries built with
#                                      results/s29/fill-sms.patch applied, which PART=3 needs)
# Runs 2-3 were called as `CARRY=... PART=N OUT=/tmp/rN bash bench/kernel/sessions/s29-decode.sh; cp
# /tmp/rN/all.tgz $OUT/runN.tgz` (one archive: the device returns a limited number of files).
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s29-decode
export RUN_TIMEOUT=${RUN_TIMEOUT:-240}
case "${PART:-1}" in
1)
  for flush in write clean; do
    for hb in 4/1:2048 8/2:1024 16/4:512 32/8:256 4/1:512 32/8:64; do
      h=${hb%%:*}; b=${hb##*:}
      run_variants "layout-$flush-${h/\//-}-b$b" default --heads "$h" -b "$b" -p 1024 -s 256 --flush "$flush"
    done
  done
  timeout 60 /tmp/b/prefixd_l2_probe --mib 64,256 >"$OUT/l2probe.txt" 2>&1; echo "probe rc=$?"
  echo "flush heads B | prefix_us suffix_us total_us suffix_GB/s pct_copy"
  for f in "$OUT"/layout-*.csv; do
    n=$(basename "$f" .csv)
    awk -F, -v n="$n" 'NR>1{printf "%-28s | %8.1f %8.1f %8.1f %8.0f %6.1f\n", n, $13, $14, $16, $20, $21}' "$f"
  done
  grep -E "default|cp.async" "$OUT/l2probe.txt"
  ;;
2)
  # Where the ~12 µs go: the same 268 MB (32/8, S·B = 65536 tokens per KV head) in fewer, longer
  # items; without the fused ⊕ (no finishing items: no prefix states read, a merge kernel after);
  # and the decode kernel's settings (warps per CTA, one streaming CTA per SM, TMA, no prefetch).
  for sb in 256:256 512:128 1024:64 2048:32; do
    s=${sb%%:*}; b=${sb##*:}
    run_variants "items-s$s" default --heads 32/8 -b "$b" -p 1024 -s "$s"
    run_variants "items-nofuse-s$s" default --heads 32/8 -b "$b" -p 1024 -s "$s" --no-fuse
  done
  run_variants settings default,w1,w2,w4,persistent,persistent-items,tma,noprefetch,noevict \
    --heads 32/8 -b 64,256 -p 1024 -s 256
  show_variants settings
  echo "file | B S | prefix_us suffix_us merge_us total_us suffix_GB/s pct_copy"
  for f in "$OUT"/items-*.csv; do
    n=$(basename "$f" .csv)
    awk -F, -v n="$n" 'NR>1{printf "%-18s | B%s S%s | %7.1f %7.1f %6.1f %7.1f %6.0f %5.1f\n", n, $6, $8, $13, $14, $15, $16, $20, $21}' "$f"
  done
  ;;
3)
  # The streaming decode kernel as four 2-warp CTAs per SM (PREFIXD_DECODE_FILL, preset fill; new)
  # against the default (one 2-warp CTA per item), the one-CTA-per-SM streaming kernel (persistent)
  # and the one-item kernel looping on as many CTAs (fill-items): its GPU tests, memcheck and
  # racecheck on two, then the steps at 32/8 where the decode is large.
  run_gpu_tests '*CudaDecodeVariantTest*'
  grep -E "FAILED|Failure" "$OUT/tests.log" | head -20
  run_sanitizers '*CudaDecodeVariantTest*fill*'
  run_variants fill default,fill,fill-items,persistent --heads 32/8 -b 64,256 -p 1024,8192,32768 -s 256
  run_variants fill-s32 default,fill,fill-items --heads 32/8 -b 256 -p 1024,8192 -s 32
  run_variants fill-d64 default,fill,fill-items --heads 32/8 -b 256 -p 32768 -s 256 -d 64
  run_variants fill-bf16 default,fill --heads 32/8 -b 16,64,256 -p 8192 -s 256 --dtype bf16
  show_variants fill fill-s32 fill-d64 fill-bf16
  ;;
esac
tar -C "$OUT" -czf "/tmp/s29-out.tgz" . && mv /tmp/s29-out.tgz "$OUT/all.tgz" 
