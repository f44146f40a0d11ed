#!/usr/bin/env bash
# Session 38's device calls (nvidia-h200): the fp16 prefix softmax's exponentials two at a time
# (ex2.approx.f16x2; WgmmaPrefixConfig::HALF_EXP2, PREFIXD_SM90A_HALF_EXP2). Binaries carried as
# $CARRY/bins.tar.xz (prefixd_gpu_tests, prefixd_kernel_bench, prefixd_prefix_probe,
# prefixd_exp2_probe); logs in $OUT, also $OUT/all.tgz.
#   1. MUFU ex2 throughput per form (prefixd_exp2_probe) and the SASS instruction mix of the fp16
#      head_dim 64 / 128 prefix kernels both ways (cuobjdump);
#   2. the GPU tests of the new cases (*hexp*) and the prefix kernel selection tests;
#   3. the prefix kernel alone, fp32 / fp16 exponentials interleaved twice (prefixd_prefix_probe);
#   4. the kernel benchmark, variants fexp,hexp interleaved per shape: the issue's 36 fp16 grid
#      shapes and its head_dim 64 rows (each step checked against the CPU backend).
# Run 1 (the only one): CARRY=.carry/s38a bash bench/kernel/sessions/s38-half-exp2.sh, binaries built with
# the kernel change of results/s38/half-exp2.patch plus its switch PREFIXD_SM90A_HALF_EXP2 (the
# probe's kernels wgmma-h2 / wgmma-f32, the tests' *_hexp0/1_* cases); not kept, so this script
# needs them back to run again. Step 4 did not run: the carried kernel benchmark predated its
# fexp / hexp presets (rc 3, "unknown variant").
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s38-half-exp2
P=/tmp/b/prefixd_prefix_probe
if [ "${PART:-1}" = 1 ]; then
  /tmp/b/prefixd_exp2_probe | tee "$OUT/exp2.txt"
  cuobjdump -sass "$P" >/tmp/sass.txt 2>&1
  # The fp16 kernels of the FA3 schedule, fp32 exponentials (…ELb0EE) and fp16 pairs (…ELb1EE).
  python3 bench/kernel/sass_mix.py /tmp/sass.txt 'WgmmaPrefixConfigI6__halfLi64ELi2ELb1ELi2ELb' \
    'WgmmaPrefixConfigI6__halfLi128ELi2ELb1ELi2ELb' | tee "$OUT/sass-mix.txt"
  run_gpu_tests '*hexp*:*KernelSelection*'
  grep -E '^\[  FAILED' "$OUT/tests.log" | head -10
  timeout 150 "$P" --kernel wgmma-f32,wgmma-h2,wgmma-f32,wgmma-h2 --shape 32/8:256:32768:64 \
    --shape 32/32:256:32768:64 --shape 32/8:256:8192:64 --shape 32/8:256:32768:128 --shape 32/32:256:32768:128 \
    --shape 32/8:256:8192:128 --shape 32/8:64:32768:128 --shape 32/32:64:8192:128 --shape 32/32:16:8192:128 \
    --csv "$OUT/probe.csv" >"$OUT/probe.txt" 2>&1
  echo "probe rc=$?"; grep -vE '^#' "$OUT/probe.txt" | head -40
  RUN_TIMEOUT=260 run_variants grid fexp,hexp --heads 32/32,32/8 -b 16,64,256 -p 1024,8192,32768 -s 32,256 \
    --dtype fp16
  RUN_TIMEOUT=60 run_variants dims fexp,hexp --heads 32/32,32/8 -b 256 -p 32768 -s 256 --head-dim 64 --dtype fp16
  SHOW_LINES=50 show_variants grid dims
fi
pack_logs
