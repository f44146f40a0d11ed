#!/usr/bin/env bash
# Session 99, run 3, on .carry/s99c (this session's kernels with the 16-bit states a template
# constant of the sm_90a prefix kernel too, built at head_dim 64 and 128: every fp32-state kernel's
# ptxas -v is cbe9ecb's again; plus s97a's kernel benchmark as prefixd_kernel_bench_old). (1) The
# 16-bit, concurrent, merge, kernel-selection and decode-variant GPU tests; memcheck on the 16-bit
# ones. (2) The default against the build before (old new old new) at run 2's 16 shapes (there
# +0.0 to +2.6 us, the headline's prefix part +2). (3) The setting's A/B, twice interleaved, at run
# 2's S256 shapes and head_dim 64. (4) On an H200 only, while under 250 s: the bar grid and head_dim
# rows (run_bar_grid) with PREFIXD_CONCURRENT_STATES16=1 in the environment.
#   mkdir -p /tmp/carry99c && cp build/bench/prefixd_kernel_bench build/tests/prefixd_gpu_tests \
#     build/launch/prefixd /tmp/carry99c/ && tar -C /tmp/carry99c -xJf .carry/s97a/bins.tar.xz \
#     --transform 's,prefixd_kernel_bench$,prefixd_kernel_bench_old,' ./prefixd_kernel_bench && \
#     mkdir -p .carry/s99c && tar -C /tmp/carry99c -cf - . | xz -6 -T2 > .carry/s99c/bins.tar.xz
#   CARRY=.carry/s99c bash bench/kernel/sessions/s99-run3.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s99-run3
GPU_TESTS_TIMEOUT=200 run_gpu_tests \
  'CudaConcurrentCascade.*:CudaMergeStates*:*SixteenBit*:*StatesIn16Bits*:*CudaDecodeVariantTest*:PrefixAttentionKernelSelection.*'
MEMCHECK_TIMEOUT=90 run_memcheck '*StatesIn16Bits*:*SixteenBitValues*'
run_bench_ab "$OUT/ab" --heads 32/8 -d 64,128 -b 128,256 -p 8192,32768 -s 256 --dtype fp16,bf16 --no-baseline --no-graph -c 1
S16="default,PREFIXD_CONCURRENT_STATES16=1"
RUN_TIMEOUT=200 run_variants s16 "$S16,$S16" --heads 32/8 -d 64,128 -b 96,128,192,256 -p 16384,32768 -s 256 \
  --dtype fp16,bf16
SHOW_LINES=36 show_variants s16
[ "$SECONDS" -lt 250 ] && PREFIXD_CONCURRENT_STATES16=1 OUT=$OUT/s16 run_bar_grid
echo "elapsed ${SECONDS} s"
pack_logs
