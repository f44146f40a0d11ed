#!/usr/bin/env bash
# Session 27, device calls on nvidia-h200: the wgmma prefix kernel at head_dim 256 (64-token K/V
# tiles, m64n256 P·V), where the mma.sync kernel ran at ~36% of the GEMM rate and the issue's
# head_dim rows missed their bar. Binaries carried as $CARRY/bins.tar.xz.
# Runs are the session's device calls (logs: bench/kernel/results/s27/runN-*):
#   run 1: CARRY=.carry/s27a PART=1   (the prefix-kernel GPU tests, memcheck and racecheck on the
#                                      head_dim 256 wgmma cases, then the head_dim 256 rows against
#                                      the mma.sync kernel and the plain schedule)
#   run 3: CARRY=.carry/s27b PART=2   (experiment: longer K/V tiles, 176 tokens at head_dim 128 as
#                                      FlashAttention-3 has them and 192 at head_dim 64, in a second
#                                      build with -DPREFIXD_SM90A_BLOCK_N_D128=176 (the *_bn176
#                                      binaries): the foundation grid at S 32/256 and the head_dim 64
#                                      rows with both builds, the planner check at head_dim 256,
#                                      then the experiment's wgmma GPU cases at head_dim 64/128)
#   run 4: CARRY=.carry/s27c PART=3   (Nsight Compute on the prefix probe's wgmma kernel, 32/8 B256
#                                      P32768 at head_dim 128 and 64: tensor and MUFU pipes, stalls;
#                                      the planner check at head_dim 256 again, its log not fetched)
#   run 5: CARRY=.carry/s27c, inline: `. bench/kernel/device-setup.sh s27; run_variants b16
#          "default,default+PREFIXD_PREFIX_TARGET_ITEMS=66,mma-prefix,nopdl" -d 256,128 --heads 32/8
#          -b 16 -p 8192,32768 -s 256 --dtype fp16` (why the planner check's half-target layout won)
#   run 6: CARRY=.carry/s27c, inline: `RUN_TIMEOUT=400 run_variants d256pdl "default,nopdl,notrigger"
#          -d 256 --heads 32/8,32/32 -b 16,64,256 -p 1024,8192,32768 -s 32,256 --dtype fp16`
#   runs 7-8 (final binaries): `CARRY=.carry/s27c OUT=$OUT/check bash bench/kernel/device-check.sh`,
#          then `CARRY=.carry/s27c OUT=$OUT/grid VARIANTS=default PLANNER_ENVS=- bash bench/kernel/sessions/s17-grid.sh`
#          (final-check.sh's two halves, one call each: the GPU suite grew by the head_dim 256 cases)
#   run 9 (after the review mends): CARRY=.carry/s27e, inline (command line in bench/RESULTS.md)
#   runs 10-11: CARRY=.carry/s27f, s27g PART=4 (the tensor-core decode at head_dim 256, g = 4: its GPU tests,
#                                      memcheck and racecheck on two of them, then the head_dim-256
#                                      rows with it and with the CUDA-core kernel, PREFIXD_DECODE_KERNEL=simt;
#                                      run 11 with the rule: only items over 32 tokens)
#   run 12: `CARRY=.carry/s27h OUT=$OUT/check bash bench/kernel/device-check.sh`, then in /tmp/b the
#           dims command of s17-grid.sh (--csv $OUT/dims.csv) and fused_floor_table.py on it
#   run 13 (after the decode dispatch's review mend): CARRY=.carry/s27i PART=4
#   run 14: CARRY=.carry/s27i, inline: the planner check at head_dim 256 (command in bench/RESULTS.md)
#   run 15: CARRY=.carry/s27j, inline: decode GPU tests after the last review mend (bench/RESULTS.md)
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s27-d256
if [ "${PART:-1}" = 1 ]; then
  run_gpu_tests '*PrefixAttention*'
  grep -E "FAILED|Failure" "$OUT/tests.log" | head -20
  for tool in memcheck racecheck; do
    timeout 150 compute-sanitizer --tool $tool --error-exitcode 9 /tmp/b/prefixd_gpu_tests --gtest_brief=1 \
      --gtest_filter='*wgmma_ManyItems_d256_fp16*:*wgmma_PoisonShortPrefix_d256_bf16*:*wgmma_plain_PoisonGroups_page7_d256_fp16*' \
      >"$OUT/$tool.log" 2>&1
    echo "$tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|^\[  PASSED' "$OUT/$tool.log" | tr '\n' ' ')"
  done
  run_variants d256 "default,plain,mma-prefix" -d 256 --heads 32/32,32/8 -b 64,256 -p 8192,32768 -s 256 --dtype fp16,bf16
  run_variants d128 "default" --heads 32/8 -b 256 -p 32768 -s 256 --dtype fp16
  show_variants d256 d128
  grep -E "^ +(fp16|bf16)" "$OUT/d256.txt" | head -40
  exit 0
fi
if [ "${PART:-1}" = 2 ]; then
  B0=$B
  for build in default bn176; do
    [ $build = bn176 ] && B=/tmp/b/prefixd_kernel_bench_bn176 || B=$B0
    run_variants grid-$build default --heads 32/8,32/32 -b 64,256 -p 8192,32768 -s 32,256 --dtype fp16
    run_variants d64-$build default -d 64 --heads 32/8,32/32 -b 64,256 -p 8192,32768 -s 256 --dtype fp16
  done
  for n in grid d64; do for build in default bn176; do
    echo "== $n $build"; grep -A40 "prefix part us" "$OUT/$n-$build.txt" | sed -n 3,18p
  done; done
  B=$B0
  timeout 100 $B --planner-check -d 256 --heads 32/32,32/8 -b 16,64,256 -p 1024,8192,32768 -s 256 >"$OUT/planner-d256.txt" 2>&1
  echo "planner d256 rc=$?"; tail -4 "$OUT/planner-d256.txt"
  timeout 330 /tmp/b/prefixd_gpu_tests_bn176 --gtest_brief=1 \
    --gtest_filter='*PrefixAttentionKernelTest*wgmma*:*PrefixAttentionTest*-*d256*' >"$OUT/tests-bn176.log" 2>&1
  echo "bn176 tests rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$OUT/tests-bn176.log" | tr '\n' ' ')"
  grep -E "FAILED|Failure" "$OUT/tests-bn176.log" | head -10
  exit 0
fi
if [ "${PART:-1}" = 3 ]; then
  P=/tmp/b/prefixd_prefix_probe
  for shape in 32/8:256:32768:128 32/8:256:32768:64; do
    tag=$(echo $shape | tr '/:' '__')
    timeout 200 ncu --kernel-name regex:PrefixAttentionWgmma --launch-skip 2 --launch-count 1 \
      --section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats --section SchedulerStats \
      --section InstructionStats --metrics sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active \
      $P --kernel wgmma --iters 3 --warmup 1 --shape $shape >"$OUT/ncu-$tag.txt" 2>&1
    echo "ncu $shape rc=$?"
    grep -E "gmma|pipe_xu|pipe_fma|pipe_alu|Compute \(SM\) Throughput|Duration|Issue Slots Busy|No Eligible|Warp Cycles Per Issued|Stall" "$OUT/ncu-$tag.txt" | head -24
  done
  timeout 100 /tmp/b/prefixd_kernel_bench --planner-check -d 256 --heads 32/32,32/8 -b 16,64,256 -p 1024,8192,32768 -s 256 >"$OUT/planner-d256.txt" 2>&1
  echo "planner d256 rc=$?"; tail -5 "$OUT/planner-d256.txt"
  exit 0
fi
if [ "${PART:-1}" = 4 ]; then
  F='*CudaDecodeVariantTest*:*DecodePipelineTest*d256*:*CudaCascadeTest*d256*:*CudaFusedCascadeTest*d256*:*CudaBaselineTest*:*DecodeNextWave*:*CudaCoresDecodeTest*'
  timeout 300 /tmp/b/prefixd_gpu_tests --gtest_brief=1 --gtest_filter="$F" >"$OUT/tests.log" 2>&1
  echo "tests rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$OUT/tests.log" | tr '\n' ' ')"
  grep -E "FAILED|Failure" "$OUT/tests.log" | head -10
  for tool in memcheck racecheck; do
    timeout 120 compute-sanitizer --tool $tool --error-exitcode 9 /tmp/b/prefixd_gpu_tests --gtest_brief=1 \
      --gtest_filter='*DecodePipelineTest*h8kv2_fp16_d256_p5*:*CudaCascadeTest*peaky_fp16_h8kv2_d256*' >"$OUT/$tool.log" 2>&1
    echo "$tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|^\[  PASSED' "$OUT/$tool.log" | tr '\n' ' ')"
  done
  RUN_TIMEOUT=300 run_variants d256 "default,default+PREFIXD_DECODE_KERNEL=simt" -d 256 --heads 32/8 -b 16,64,256 \
    -p 1024,8192,32768 -s 32,256 --dtype fp16,bf16
  run_variants d128 "default" --heads 32/8 -b 256 -p 32768 -s 256 --dtype fp16
  SHOW_LINES=40 show_variants d256 | sed -n '/suffix part/,$p' | head -40
  show_variants d256 | head -42
  exit 0
fi
