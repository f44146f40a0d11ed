#!/usr/bin/env bash
# Session 17: the grid's small shapes under backend variants, interleaved per shape
# (prefixd_kernel_bench --variants), fp16, in one device call (nvidia-h200). Parts ($PARTS):
#   s32    S = 32 at every B (16/64/256) and P (1024/8192/32768), both head pairs;
#   p1024  P = 1024, S = 256, every B, both head pairs;
#   b16    B = 16, P 8192/32768, S 32/256, both head pairs;
#   b256   32/8, B = 256, P 1024/8192, S = 256.
# Binaries carried as $CARRY/bins.tar.xz (prefixd_kernel_bench; sm_90 + sm_90a). Logs: $OUT.
#   run 1: CARRY=.carry/s17a PARTS="s32 p1024" VARIANTS=default,persistent,PREFIXD_MIN_PREFIX_CHUNK=128,fused,fused-mk
#   run 5: CARRY=.carry/s17a PARTS="b16 b256"
#          VARIANTS=default,conc16,conc32,conc48,PREFIXD_DECODE_KERNEL=simt,w4,w1
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s17-small
for part in ${PARTS:-s32 p1024}; do
  case $part in
    s32) shapes="--heads 32/8,32/32 -b 16,64,256 -p 1024,8192,32768 -s 32" ;;
    p1024) shapes="--heads 32/8,32/32 -b 16,64,256 -p 1024 -s 256" ;;
    b16) shapes="--heads 32/8,32/32 -b 16 -p 8192,32768 -s 32,256" ;;
    b256) shapes="--heads 32/8 -b 256 -p 1024,8192 -s 256" ;;
    *) echo "unknown part '$part' (s32, p1024, b16, b256)"; exit 2 ;;
  esac
  timeout 240 $B $shapes --no-baseline -c 1 --variants "${VARIANTS:-default}" --csv "$OUT/$part.csv" >"$OUT/$part.txt" 2>&1
  echo "== $part rc=$?"; grep -A40 "^# shape" "$OUT/$part.txt" | cut -c1-220 | grep -v "^#  "; grep "wrong results" "$OUT/$part.txt"
done
