#!/usr/bin/env bash
# Session 42, run 7 (nvidia-h200): S two tiles ahead on the deep ring. Runs 4-5 timed it with the
# 2-stage ring only: prefixd_prefix_probe unsets PREFIXD_SM90A_STAGES unless --kernel wgmma-s3, so
# their "stages=3" rows were the default ring too; and run 6's profile puts 26% of the samples on
# the wait for K tile t + 2's full barrier (the producer, K and V in turn, issues K of t + 3 only
# once V of t is released: too late with two stages). Same binaries as run 5 (.carry/s42e).
#   1. the prefix probe, kernels wgmma and wgmma-s3, old new c, twice, head_dim 64.
#   CARRY=.carry/s42e bash bench/kernel/sessions/s42-deep-ring.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s42-deep-ring
SHAPES=(--shape 32/8:256:32768 --shape 32/8:256:32768:64 --shape 32/32:256:32768:64 --shape 32/8:256:8192:64
  --shape 32/8:256:32768:64:bf16)
run_probe_rounds "old new c" --kernel wgmma,wgmma-s3 --iters 20 "${SHAPES[@]}"
pack_logs
