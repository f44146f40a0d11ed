#!/usr/bin/env bash
# Session 37, run 2 (nvidia-h200): warps per CTA of the tensor-core decode where its CTAs are few.
# Run 1 found the 16-row group 17-22% slower than slices of 8 at 32/2, 24/2 and 32/1 B64 S256
# (128 items, one CTA of 4 warps per SM, where the slices had two), and 30-37% faster at B256.
# Each shape timed with the backend's choice of warps (default: 4 where items ≤ 2 · SMs, else 2)
# and with 8, 4 and 2 forced (PREFIXD_DECODE_WARPS), at groups of more than 8 heads and, for the
# rule's sake, at the compiled groups of 4 and 8 with few items (B16).
# Run 2: CARRY=.carry/s37a bash bench/kernel/sessions/s37-warps.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s37-warps
V=default,PREFIXD_DECODE_WARPS=8,PREFIXD_DECODE_WARPS=4,PREFIXD_DECODE_WARPS=2
run_variants wide $V --heads 32/2,24/2,32/1 -b 16,64 -p 8192 -s 32,256 -d 128 --dtype bf16
run_variants wide64 $V --heads 32/2,32/1 -b 16,64 -p 8192 -s 256 -d 64 --dtype bf16
run_variants compiled $V --heads 32/8,32/4,64/8 -b 16 -p 1024,8192,32768 -s 32,256 -d 128 --dtype fp16
SHOW_LINES=80 show_variants wide wide64 compiled
pack_logs
