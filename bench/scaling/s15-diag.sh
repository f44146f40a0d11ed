#!/usr/bin/env bash
# Session 15's diagnosis of the 8-GPU step's exchanges (one nvidia-h200-x8 call; binaries carried
# as $CARRY/scal.tar.xz: prefixd_scaling_bench, prefixd_peer_probe, prefixd_comm_bench):
#  1. prefixd_peer_probe: push/pull/copy-engine ceilings between the 8 GPUs, flag round trips;
#  2. the strong P = 262144, 1-layer row on 1 and 8 GPUs with PREFIXD_PEER_STATS=1 (every rank
#     prints, per exchange size, where its exchange kernel's time goes);
#  3. the exchange kernel's SASS (cuobjdump), to check how its copy loop was scheduled.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/s15-diag}
NP=8
. bench/scaling/device-setup.sh
/tmp/s/prefixd_peer_probe --bytes 16384,131072,270336,1048576 --blocks 8,24,64,132 --iters 200 >"$OUT/probe.log" 2>&1
echo "probe rc=$?"
B="/tmp/s/prefixd_scaling_bench --batch 128 --suffix 512 --mode strong --prefix 262144 --layers 1 --reduction a2a"
timeout 120 $M -x PREFIXD_PEER_STATS=1 $B --gpus 1,8 --csv "$OUT/stats.csv" >"$OUT/stats.log" 2>&1
echo "stats rc=$?"; row "$OUT/stats.csv"
grep "PeerExchange rank" "$OUT/stats.log" | sort | head -40
F=$(cuobjdump -sass /tmp/s/prefixd_comm_bench 2>/dev/null | grep -o "Function : [^ ]*PeerExchangeKernel[^ ]*" | head -1 | cut -d' ' -f3)
cuobjdump -sass -fun "$F" /tmp/s/prefixd_comm_bench >"$OUT/peer-exchange-sass.txt" 2>&1
echo "sass $F: $(grep -c LDG "$OUT/peer-exchange-sass.txt") LDG, $(grep -c STG "$OUT/peer-exchange-sass.txt") STG"
