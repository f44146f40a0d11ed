#!/usr/bin/env bash
# Session 99, run 2, on .carry/s99b (this session's kernels: the TMA decode's 16-bit states a template
# constant, so that its default kernels are cbe9ecb's again; the sm_90a prefix kernel's 16-bit
# states stored 8 bytes a lane after a pair shuffle; plus s97a's kernel benchmark as
# prefixd_kernel_bench_old). (1) The 16-bit, concurrent, merge and decode-variant GPU tests;
# memcheck on the 16-bit ones. (2) The default against the build before (old new old new) at run
# 1's 16 shapes (ab2 there showed the suffix part 0.3-1.6 us slower). (3) The setting's A/B,
# twice interleaved, at run 1's S256 shapes where the prefix part was 1-4 us slower with it.
#   mkdir -p /tmp/carry99b && cp build/bench/prefixd_kernel_bench build/tests/prefixd_gpu_tests \
#     build/launch/prefixd /tmp/carry99b/ && tar -C /tmp/carry99b -xJf .carry/s97a/bins.tar.xz \
#     --transform 's,prefixd_kernel_bench$,prefixd_kernel_bench_old,' ./prefixd_kernel_bench && \
#     mkdir -p .carry/s99b && tar -C /tmp/carry99b -cf - . | xz -6 -T2 > .carry/s99b/bins.tar.xz
#   CARRY=.carry/s99b bash bench/kernel/sessions/s99-run2.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s99-run2
GPU_TESTS_TIMEOUT=200 run_gpu_tests 'CudaConcurrentCascade.*:CudaMergeStates*:*SixteenBit*:*StatesIn16Bits*:*CudaDecodeVariantTest*'
MEMCHECK_TIMEOUT=90 run_memcheck '*StatesIn16Bits*:*SixteenBitValues*'
run_bench_ab "$OUT/ab" --heads 32/8 -d 64,128 -b 128,256 -p 8192,32768 -s 256 --dtype fp16,bf16 --no-baseline --no-graph -c 1
S16="default,PREFIXD_CONCURRENT_STATES16=1"
RUN_TIMEOUT=200 run_variants s16 "$S16,$S16" --heads 32/8 -b 96,128,192,256 -p 16384,32768 -s 256 --dtype fp16,bf16
SHOW_LINES=20 show_variants s16
show_parts s16 | head -40
echo "elapsed ${SECONDS} s"
pack_logs
