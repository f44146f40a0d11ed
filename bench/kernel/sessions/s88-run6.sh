#!/usr/bin/env bash
# Session 88, run 6: the final binaries of the long-tile rule (538407e) on a GPU: the cascade,
# concurrent, fused, graph, planner and prefix-kernel GPU tests (8 shards side by side; among them
# CudaCascade.HeadDim128LongTilePlansMatchTheOracle, now the plan's 128-token tile and the forced
# 160 beside it), then the main job on its embedded default on one rank; on an H200 (the bar's card)
# also issue4-grid.sh.
# Carry .carry/s88d (ignored, local): prefixd_kernel_bench, prefixd_gpu_tests and prefixd of 538407e:
#   mkdir -p .carry/s88d && tar -C build -cf - --transform 's,.*/,./,' bench/prefixd_kernel_bench \
#     tests/prefixd_gpu_tests launch/prefixd | xz -6 -T2 > .carry/s88d/bins.tar.xz
#   CARRY=.carry/s88d bash bench/kernel/sessions/s88-run6.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s88-run6
run_test_shards 'CudaCascade*:*Concurrent*:*Fused*:*Graph*:*Planner*:*Measured*:*PrefixAttention*:*Sm90a*'
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
timeout 200 mpirun --allow-run-as-root --oversubscribe -np 1 /tmp/b/prefixd >"$OUT/main.log" 2>&1
echo "main job rc=$?"; grep -E "^# (done|plans|memory|check: [0-9])" "$OUT/main.log" | tail -6
run_bar_grid
pack_logs
