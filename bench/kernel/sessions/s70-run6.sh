#!/usr/bin/env bash
# Session 70, run 6 (nvidia-h200): early items in chunks (PREFIXD_EARLY_DECODE_CHUNK, bench/ISSUE4.md
# lever 6) where the 64-CTA prefix grid of P1024 B16-64 leaves 68 SMs idle. Its tests first (the
# early decode's cases with chunks of 16 and 32 tokens, both kernels), then shares of 50-100% with
# chunks of 32 and 64 tokens against the default, S256, fp16.
#   CARRY=.carry/s70c bash bench/kernel/sessions/s70-run6.sh  (binaries built with results/s70/early-chunks.patch, since removed)
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s70-run6
GPU_TESTS_TIMEOUT=200 run_gpu_tests '*CudaEarlyDecode*:*EarlyDecodeStep*'
E=PREFIXD_EARLY_DECODE_PERCENT C=PREFIXD_EARLY_DECODE_CHUNK
V="default,$E=50+$C=32,$E=50+$C=64,$E=80+$C=32,$E=100+$C=32,$E=100+$C=64"
RUN_TIMEOUT=150 run_variants chunk8 "$V" --heads 32/8 -b 16,64 -p 1024 -s 256 --dtype fp16
RUN_TIMEOUT=150 run_variants chunk32 "$V" --heads 32/32 -b 16,64 -p 1024 -s 256 --dtype fp16
SHOW_LINES=30 show_variants chunk8 chunk32
pack_logs
