#!/usr/bin/env bash
# Session 8's A/B runs (one device call per STAGE). Helpers: ab-lib.sh.
# Binaries: $BIN (carried). Logs: $OUT.
set -uo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-/tmp/b}
OUT=${OUT:-/tmp/ab-s8}
WORK=${WORK:-/tmp/ab-s8-work}
export AB_FORWARD="PREFIXD_DECODE_BESIDE_PREFIX PREFIXD_DECODE_STREAM"
source bench/scaling/ab-lib.sh
STAGE=${STAGE:-1}
# Run 1 (STAGE=1, nvidia-h200-x4): the own rows' decode beside the prefix
# (WorkerOptions::decode_beside_prefix, worker/include/prefixd/worker/decode_beside_prefix.h): one
# decode CTA on each of the 4 SMs the prefix grid leaves idle (128 items on 132 SMs), launched
# before the prefix; the state exchange then runs alone (~20 µs instead of 34-39 beside the
# decode). "always" forces it where it applies (every rank that sends states); the 1-GPU row has
# no exchange and is unchanged. Also the 32-layer shape (forced: its per-layer prefix, ~55 µs, is
# far shorter than the decode on 4 SMs) and the trace that gives the decode's time on 4 SMs.
if [ "$STAGE" = 1 ]; then
run s8_default1 "" $W
run s8_beside1 "PREFIXD_DECODE_BESIDE_PREFIX=always" $W
run s8_beside_stream "PREFIXD_DECODE_BESIDE_PREFIX=always PREFIXD_DECODE_STREAM=1" $S --gpus 4,2
run s8_default2 "" $W
run s8_beside2 "PREFIXD_DECODE_BESIDE_PREFIX=always" $W
run s8_e_default "" $E
run s8_e_beside "PREFIXD_DECODE_BESIDE_PREFIX=always" $E
traced trace4_beside "PREFIXD_DECODE_BESIDE_PREFIX=always" $S --gpus 4
traced trace4_beside_stream "PREFIXD_DECODE_BESIDE_PREFIX=always PREFIXD_DECODE_STREAM=1" $S --gpus 4
mpi_tests_np4 '*cuda_a2a_beside1*:*cuda_a2a_sendfirst1*'
fi
