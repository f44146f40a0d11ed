#!/usr/bin/env bash
# Session 45, run 6 (nvidia-h200; measured slower, reverted: the patch is kernel/results/s45/q-ahead.patch,
# and these binaries are gone): queries issued ahead by the producer (QueryIssuer in
# kernels/cuda/sm90a/prefix_attention_sm90a.cuh, PREFIXD_SM90A_Q_AHEAD, on by default), which only
# CTAs running more than one row tile see: the balanced grid's chains of tails.
#   1. the prefix probe's timeline, 32/8 B256 P32768 D128 / D64 / D256 fp16 balanced over 132 CTAs,
#      queries ahead and behind, and ahead with a 1.5-tile item cost at D128 (longer tails);
#   2. the kernel benchmark, B256 P32768, head_dim 64 / 128 / 256, 32/8 and 32/32, S 32 / 256, fp16:
#      default (ahead; balanced at D64 only), behind, the balance at every head_dim (minimum gain 0)
#      ahead and behind, and with a 1.5-tile item cost;
#   3. the fp16 grid on the binaries before the change (OLD) and after, twice each, alternating;
#   4. the GPU tests of the prefix kernels and the cascades (the q_ahead cases among them).
#   CARRY=.carry/s45b OLD=.carry/s45a bash bench/kernel/sessions/s45-qahead.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s45-qahead
mkdir -p /tmp/old && tar -C /tmp/old -xJf "${OLD:?the binaries before the change}/bins.tar.xz"
P=/tmp/b/prefixd_prefix_probe
for run in "1 -" "0 -" "1 150"; do
  set -- $run
  extra=(); [ "$2" != - ] && extra=(--balance-overhead "${2:0:1}.${2:1}")
  PREFIXD_SM90A_Q_AHEAD=$1 timeout 100 $P --kernel wgmma --timeline --balance 132 "${extra[@]}" \
    --shape 32/8:256:32768:128 --shape 32/8:256:32768:64 --shape 32/8:256:32768:256 >"$OUT/probe-a$1-o$2.txt" 2>&1
  echo "== probe ahead=$1 overhead=$2 rc=$?"
  grep -E '^wgmma|^# balance|^# exits' "$OUT/probe-a$1-o$2.txt" | cut -c1-150
done
V=default,PREFIXD_SM90A_Q_AHEAD=0,PREFIXD_PREFIX_BALANCE_MIN_GAIN=0,PREFIXD_PREFIX_BALANCE_MIN_GAIN=0+PREFIXD_SM90A_Q_AHEAD=0
V=$V,PREFIXD_PREFIX_BALANCE_MIN_GAIN=0+PREFIXD_PREFIX_BALANCE_OVERHEAD=150
RUN_TIMEOUT=200 run_variants ab-dims "$V" -d 64,128,256 --heads 32/8,32/32 -b 256 -p 32768 -s 32,256 --dtype fp16
SHOW_LINES=40 show_variants ab-dims
for r in 1 2; do
  for bin in old new; do
    d=/tmp/b; [ $bin = old ] && d=/tmp/old
    timeout 150 $d/prefixd_kernel_bench --heads 32/32,32/8 -b 16,64,256 -p 1024,8192,32768 -s 32,256 --dtype fp16 \
      --no-baseline --no-graph -c 1 --csv "$OUT/grid-$bin-$r.csv" >"$OUT/grid-$bin-$r.txt" 2>&1
    echo "grid $bin $r rc=$? $(grep 'wrong results' "$OUT/grid-$bin-$r.txt") $(grep -o 'GEMM [0-9]* TFLOP/s' "$OUT/grid-$bin-$r.txt")"
  done
done
GPU_TESTS_TIMEOUT=280 run_gpu_tests '*PrefixAttentionKernelTest*:*CudaCascade*:*PrefixAttentionQueryMap*'
grep -E '^\[  FAILED' "$OUT/tests.log" | head -20
pack_logs
