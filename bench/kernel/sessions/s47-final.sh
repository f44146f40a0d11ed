#!/usr/bin/env bash
# Session 47, run 2 (nvidia-h200): the session's final binaries (the ⊕ by the last arrival reverted;
# the fused kernel limited to GQA groups dividing 64).
#   1. A/B of the default step, this build (new) against run 1's build with the arrival code (old):
#      whether the prefix kernel's extra spills (32 → 56 bytes of stores at head_dim 128) cost the
#      ~7 µs run 1 showed against session 45;
#   2. the whole GPU suite (launch/gpu-check.sh, no benchmarks);
#   3. last (it may hang until killed): the new fused case gqa3_b30 on HEAD's test binary (before
#      the limit) and on this build's.
#   CARRY=.carry/s47b bash bench/kernel/sessions/s47-final.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s47-final
tar -C /tmp/b -xJf "$CARRY/extra.tar.xz"  # prefixd_kernel_bench_old, prefixd_gpu_tests_head
run_bench_ab "$OUT/ab" -d 128 --heads 32/32,32/8 -b 256 -p 32768 -s 32,256 --dtype fp16 --no-baseline --no-graph -c 1
OUT=$OUT/check PREFIXD_BIN_DIR=/tmp/b PREFIXD_SKIP_CPU_TESTS=1 PREFIXD_SKIP_BENCH=1 PREFIXD_TIMEOUT_TESTS=300 \
  bash launch/gpu-check.sh 2>&1 | tail -15
F='*CudaFusedCascadeTest*gqa3_b30*'
timeout 60 /tmp/b/prefixd_gpu_tests --gtest_filter="$F" >"$OUT/gqa3-new.log" 2>&1
echo "gqa3 new rc=$? $(grep -E '^\[  (PASSED|FAILED)' "$OUT/gqa3-new.log" | tr '\n' ' ')"
timeout -s KILL 45 /tmp/b/prefixd_gpu_tests_head --gtest_filter="$F" >"$OUT/gqa3-head.log" 2>&1
echo "gqa3 HEAD rc=$? (137: killed after 45 s) $(grep -E '^\[  (PASSED|FAILED)' "$OUT/gqa3-head.log" | tr '\n' ' ')"
pack_logs
