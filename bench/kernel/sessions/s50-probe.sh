#!/usr/bin/env bash
# Session 50, run 1 (nvidia-h200): HEAD's binaries (session 49's last commits: the CUDA backend's
# merge settings from MergeParams(), the L2 probe's --l2-hit table, never run on a GPU).
#   1. the whole GPU suite (launch/gpu-check.sh) and compute-sanitizer on the merge tests;
#   2. the L2-hit read rate of SMs − k CTAs re-reading N MiB, alone and beside a 1 GiB DRAM stream
#      on k CTAs (session 49's guess: the concurrent step's prefix, whose 8 row-tile slots read
#      every K/V tile from L2 at ~4.5 TB/s, waits on L2 bandwidth once the decode's ~1.1 TB/s of
#      DRAM reads pass through it);
#   3. the headline step, default plan, for this run's ceilings.
#   (The suite stopped at its 250-s limit here, 852 passed; 300 s is what it needs.)
#   CARRY=.carry/s50a bash bench/kernel/sessions/s50-probe.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s50-probe
for k in 20 28 4; do
  timeout 60 /tmp/b/prefixd_l2_probe --l2-hit 4,8,16,32,64 --beside $k >"$OUT/l2hit-$k.txt" 2>&1
  echo "l2hit beside $k rc=$?"; grep -v '^# *$' "$OUT/l2hit-$k.txt" | tail -8
done
RUN_TIMEOUT=60 run_variants head default -d 128 --heads 32/8 -b 256 -p 32768 -s 256 --dtype fp16
show_parts head
OUT=$OUT/check PREFIXD_BIN_DIR=/tmp/b PREFIXD_SKIP_CPU_TESTS=1 PREFIXD_SKIP_BENCH=1 PREFIXD_SKIP_SANITIZER=1 \
  PREFIXD_TIMEOUT_TESTS=250 bash launch/gpu-check.sh 2>&1 | tail -5
grep -hE "^\[  FAILED  \]" "$OUT"/check/*.log | sort -u | head -10
run_sanitizers '*Merge*'
pack_logs
