#!/usr/bin/env bash
# helper-cascade's one-call GPU check of the fused-merge / small-batch decode work, from the
# repository root on the GPU machine, with binaries carried in .carry/cascade (built elsewhere):
#   1. the CUDA backend tests (cascade, fused merge, decode variants, graph, merges, errors);
#   2. prefixd_kernel_bench on the default grid (defaults: fused merge, 2-warp decode CTAs, PDL);
#   3. variants on the 32/8 shapes: decode warps 4 and 1, no fused merge, clean L2 flush, the old
#      prefix target (2·SMs), PDL off, the mma.sync prefix kernel;
#   4. compute-sanitizer memcheck (and racecheck on two fused cases);
#   5. the mma.sync prefix attention tests;
# each under its own timeout, skipped when the overall budget (CASCADE_BUDGET_S, default 170 s)
# would run out. Logs to $OUT; a short summary last.
set -uo pipefail
out=${OUT:-/tmp/cascade-gpu}
mkdir -p "$out"
bin=${CASCADE_BIN:-.carry/cascade}
budget=${CASCADE_BUDGET_S:-170}
summary="$out/summary.txt"
: >"$summary"
note() { printf '%-34s %s\n' "$1" "$2" | tee -a "$summary" >/dev/null; }
left() { echo $((budget - SECONDS)); }
# step label timeout_s min_left_s command...: runs when at least min_left_s remain.
step() {
  local label=$1 limit=$2 need=$3
  shift 3
  if [ "$(left)" -lt "$need" ]; then
    note "$label" "SKIPPED (budget: $(left) s left)"
    return 0
  fi
  local t0=$SECONDS
  timeout "$limit" "$@"
  local rc=$?
  note "$label" "rc $rc, $((SECONDS - t0)) s"
}
counts() { grep -E '^\[  (PASSED|FAILED|SKIPPED) +\] [0-9]+ test' "$1" | tr '\n' ' '; }

nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv,noheader >"$out/nvidia-smi.txt" 2>&1
note "gpu" "$(head -1 "$out/nvidia-smi.txt")"

# 1. backend tests.
step "backend tests" 70 60 "$bin/prefixd_gpu_tests" --gtest_brief=1 \
  --gtest_filter='Cuda*:Shapes/Cuda*:Variants/*' >"$out/tests.log" 2>&1
note "  counts" "$(counts "$out/tests.log")"
grep -E '^\[  FAILED  \] [A-Za-z]' "$out/tests.log" | head -20 >>"$summary"

# 2. benchmark, default grid and settings.
step "bench default grid" 60 45 "$bin/prefixd_kernel_bench" --csv "$out/bench.csv" >"$out/bench.log" 2>&1

# 3. variants on the 32/8 shapes (no baseline, no graph, one checked request).
variant() {  # label VAR=value... (environment) extra-bench-args...
  local label=$1
  shift
  local assignments=()
  while [ $# -gt 0 ] && [[ $1 == *=* ]]; do
    assignments+=("$1")
    shift
  done
  echo "### variant: $label" >>"$out/variants.log"
  step "variant $label" 25 35 env "${assignments[@]}" "$bin/prefixd_kernel_bench" --heads 32/8 --no-baseline -c 1 "$@" \
    >>"$out/variants.log" 2>&1
}
# Round 1 (bench/RESULTS.md) compared decode warps 4/1, PDL off, the old prefix target and the
# mma.sync prefix kernel; round 2 the L2 policy and prefetch of the decode kernel.
for v in ${CASCADE_VARIANTS:-repeat evict-off prefetch-off l2-both-off no-fuse}; do
  case $v in
    repeat) variant repeat CASCADE_VARIANT=1 ;;
    evict-off) variant evict-off PREFIXD_DECODE_EVICT_FIRST=0 ;;
    prefetch-off) variant prefetch-off PREFIXD_DECODE_PREFETCH=0 ;;
    l2-both-off) variant l2-both-off PREFIXD_DECODE_EVICT_FIRST=0 PREFIXD_DECODE_PREFETCH=0 ;;
    no-fuse) variant no-fuse CASCADE_VARIANT=1 --no-fuse ;;
    clean-flush) variant clean-flush CASCADE_VARIANT=1 --flush clean ;;
    warps1) variant warps1 PREFIXD_DECODE_WARPS=1 ;;
    warps4) variant warps4 PREFIXD_DECODE_WARPS=4 ;;
    pdl-off) variant pdl-off PREFIXD_DECODE_PDL=0 ;;
    pfx-target-264) variant pfx-target-264 PREFIXD_PREFIX_TARGET_ITEMS=264 ;;
    mma-prefix) variant mma-prefix PREFIXD_PREFIX_KERNEL=mma ;;
  esac
done
# The whole default grid again under the clean flush.
echo "### variant: grid-clean-flush" >>"$out/variants.log"
step "grid clean flush" 30 20 "$bin/prefixd_kernel_bench" --flush clean -c 1 --no-baseline >>"$out/variants.log" 2>&1

# 4. sanitizers on small subsets.
mc_filter='Shapes/CudaFusedMergeTest.*g4_d128_fp16_mixed*:Shapes/CudaFusedMergeTest.*g8_d256*:Shapes/CudaFusedMergeTest.*split_suffixes*:Variants/CudaDecodeVariantTest.*warps1_pdl:Variants/CudaDecodeVariantTest.*warps2_pdl*:CudaGraph.*:Shapes/CudaMergeStatesTest.*n40*'
step "memcheck" 50 40 compute-sanitizer --tool memcheck --error-exitcode 9 "$bin/prefixd_gpu_tests" --gtest_brief=1 \
  --gtest_filter="$mc_filter" >"$out/sanitizer.log" 2>&1
note "  memcheck" "$(grep -E 'ERROR SUMMARY' "$out/sanitizer.log" | tail -1) $(counts "$out/sanitizer.log")"
rc_filter='Shapes/CudaFusedMergeTest.*g8_d256*:Shapes/CudaFusedMergeTest.*g4_d128_fp16_mixed*'
echo "### racecheck" >>"$out/sanitizer.log"
step "racecheck" 40 30 compute-sanitizer --tool racecheck --error-exitcode 9 "$bin/prefixd_gpu_tests" --gtest_brief=1 \
  --gtest_filter="$rc_filter" >>"$out/sanitizer.log" 2>&1
note "  racecheck" "$(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$out/sanitizer.log" | tail -1)"

# 5. prefix attention tests (mma.sync path; the wgmma ones are helper-hopper's; slow: > 40 s).
[ -n "${CASCADE_PREFIX_TESTS:-}" ] && step "prefix tests (mma)" 40 20 "$bin/prefixd_gpu_tests" --gtest_brief=1 \
  --gtest_filter='PrefixAttention*:Shapes/PrefixAttentionTest.*:Kernels/PrefixAttentionKernelTest.*mma_*' >"$out/prefix_tests.log" 2>&1
[ -n "${CASCADE_PREFIX_TESTS:-}" ] && note "  counts" "$(counts "$out/prefix_tests.log")"

# Summary: bench rows (Hqo/Hkv B P prefix suffix merge total graph ratio check), then the steps.
echo "=== bench default grid (fp16 D128 S256): Hqo/Hkv B P | prefix suffix merge total graph | ratio | check"
grep -E '^#.*(ceilings|copy BW|GEMM|empty region|backend)' "$out/bench.log" | cut -c1-150
grep -E '^ +(fp16|bf16) ' "$out/bench.log" | awk -F'|' '{split($1,a," "); printf "%s B%s P%s |%s|%s|%s\n", a[3], a[5], a[6], $2, $4, $6}'
echo "=== variants (32/8): prefix suffix merge total graph | floors ratio | check"
awk '/^### variant/{v=$3} /^ +(fp16|bf16) /{split($0,f,"|"); split(f[1],a," "); printf "%-18s B%s P%s |%s|%s|%s\n", v, a[5], a[6], f[2], f[4], f[6]} /empty region/{print v, $0}' "$out/variants.log"
echo "=== steps"
cat "$summary"
