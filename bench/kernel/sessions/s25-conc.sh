#!/usr/bin/env bash
# Session 25, device calls on nvidia-h200: prefix and decode side by side on disjoint SMs with a
# BALANCED prefix split (session 20 run 4 measured the concurrent mode only with unbalanced prefix
# items). PREFIXD_CONCURRENT_DECODE_SMS=k caps the prefix grid at 132 − k CTAs and runs the
# existing decode kernel on a second stream; PREFIXD_PREFIX_TARGET_ITEMS=n is chosen so that the
# prefix items divide evenly over the 132 − k CTAs (whole chunks per row tile). Also the bulk-copy
# read rate of k SMs (prefixd_l2_probe --ctas). Binaries carried as $CARRY/bins.tar.xz.
# Runs are the session's device calls (logs: bench/kernel/results/s25/runN-*; call 1 ran nothing,
# CARRY unset):
#   run 2: CARRY=.carry/s25a            (the existing concurrent mode, balanced prefix; l2_probe --ctas)
#   run 3: CARRY=.carry/s25b PART=2     (the decode as the cp.async streaming kernel on exactly the k
#                                        SMs: PREFIXD_DECODE_PERSISTENT=1 beside a concurrent prefix)
#   run 4: CARRY=.carry/s25c PART=3     (the TMA streaming decode kernel, PREFIXD_DECODE_TMA, first
#                                        version: items split over the CTA's warps; GPU tests first)
#   run 5: CARRY=.carry/s25d PART=3     (each warp its own items)
#   run 6: CARRY=.carry/s25e PART=3     (tile slots one item ahead, descriptors two)
#   run 7: CARRY=.carry/s25f PART=4     (4 warps × 6 stages against 8 × 3)
#   run 9: CARRY=.carry/s25h PART=5     (the TMA kernel's copies only / arithmetic only: PREFIXD_DECODE_TMA_DIAG)
#   run 11: CARRY=.carry/s25j PART=6    (after the launcher's last change: the decode and concurrent GPU tests)
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s25-conc
RUN_TIMEOUT=150 SHOW_LINES=40
gpu_tests() { run_gpu_tests "$1"; grep -E "FAILED|Failure|error" "$OUT/tests.log" | head -20; }
C=PREFIXD_CONCURRENT_DECODE_SMS T=PREFIXD_PREFIX_TARGET_ITEMS
if [ "${PART:-1}" = 6 ]; then
  gpu_tests '*DecodeVariant*:*CudaConcurrentCascade*:*DecodePartOnAnotherStream*:*DecodePipeline*:*CudaGraph*'
  run_variants p6b256 "default,tma,$C=36+$T=192+tma" --heads 32/8 -b 256 -p 8192 -s 256 --dtype fp16,bf16
  show_variants p6b256
  exit 0
fi
if [ "${PART:-1}" = 5 ]; then  # diagnostics: WRONG results on purpose, so the runs exit non-zero
  D=PREFIXD_DECODE_TMA_DIAG
  run_variants p5b256 "tma,tma+$D=1,tma+$D=2,$C=36+$T=192+tma,$C=36+$T=192+tma+$D=1,$C=36+$T=192+tma+$D=2" --heads 32/8 -b 256 -p 1024 -s 256 --dtype fp16
  run_variants p5b64 "tma,tma+$D=1,tma+$D=2,$C=36+$T=96+tma,$C=36+$T=96+tma+$D=1,$C=36+$T=96+tma+$D=2" --heads 32/8 -b 64 -p 8192 -s 256 --dtype fp16
  show_variants p5b256 p5b64
  exit 0
fi
if [ "${PART:-1}" = 4 ]; then
  gpu_tests '*DecodeVariant*tma*:*CudaConcurrentCascade*DecodeOnExactly*'
  run_variants p4b256 "default,tma,tma+w4,$C=36+$T=192+tma,$C=36+$T=192+tma+w4,$C=68+$T=128+tma+w4" --heads 32/8 -b 256 -p 1024,8192 -s 256 --dtype fp16
  run_variants p4b64 "default,tma,tma+w4,$C=36+$T=96+tma,$C=36+$T=96+tma+w4" --heads 32/8 -b 64 -p 8192 -s 256 --dtype fp16
  show_variants p4b256 p4b64
  exit 0
fi
if [ "${PART:-1}" = 3 ]; then
  gpu_tests '*DecodeVariant*:*CudaConcurrentCascade*:*DecodePartOnAnotherStream*'
  P=persistent
  run_variants p3b256 "default,tma,$C=36+$T=192+$P,$C=36+$T=192+tma,$C=68+$T=128+tma,$C=100+$T=64+tma" --heads 32/8 -b 256 -p 1024,8192,32768 -s 256 --dtype fp16
  run_variants p3b64 "default,tma,$C=36+$T=96+$P,$C=36+$T=96+tma,$C=68+$T=128+tma,$C=100+$T=64+tma" --heads 32/8 -b 64 -p 1024,8192 -s 256 --dtype fp16
  show_variants p3b256 p3b64
  exit 0
fi
if [ "${PART:-1}" = 2 ]; then
  P=persistent
  run_variants p2b256 "default,$C=36+$T=192,$C=36+$T=192+$P,$C=68+$T=128+$P,$C=100+$T=64+$P" --heads 32/8 -b 256 -p 1024,8192,32768 -s 256 --dtype fp16
  run_variants p2b64 "default,$C=36+$T=96,$C=36+$T=96+$P,$C=68+$T=128+$P,$C=100+$T=64+$P" --heads 32/8 -b 64 -p 1024,8192 -s 256 --dtype fp16
  show_variants p2b256 p2b64
  exit 0
fi
# 64 row tiles of 128 rows (32/8 B256, 32/32 B256): 96 CTAs × 2 items, 64 × 2, 32 × 2
run_variants b256 "default,$C=36+$T=192,$C=68+$T=128,$C=100+$T=64" --heads 32/8 -b 256 -p 1024,8192,32768 -s 256 --dtype fp16
run_variants h32s32 "default,$C=36+$T=192,$C=68+$T=128,$C=100+$T=64" --heads 32/32 -b 256 -p 1024,8192 -s 32 --dtype fp16
# 16 row tiles (32/8 B64): 96 × 1, 64 × 2, 32 × 2
run_variants b64 "default,$C=36+$T=96,$C=68+$T=128,$C=100+$T=64" --heads 32/8 -b 64 -p 1024,8192 -s 256 --dtype fp16
timeout 60 /tmp/b/prefixd_l2_probe --ctas 36,48,68,100 --mib 64,256 >"$OUT/probe.txt" 2>&1; echo "probe rc=$?"
show_variants b256 h32s32 b64
cat "$OUT/probe.txt" | tail -20
