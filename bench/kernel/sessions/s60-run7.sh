#!/usr/bin/env bash
# Session 60, run 7 (nvidia-h200): the merge skips the v loads of the states a stream plan leaves
# empty (CascadePlan::EmptyPrefixStates, PREFIXD_MERGE_SKIP_EMPTY): its GPU tests and every test
# that runs the merge kernel, both sanitizers on the new test, then an A/B in one process at the
# shapes whose steps run the concurrent mode's merge (32/8 B256 P8192 / P32768 S256, fp16 and bf16;
# head_dim 256), and the decode forced on 14 and 16 SMs at P32768 (4 and 3 prefix chunks per row).
#   CARRY=.carry/s60f bash bench/kernel/sessions/s60-run7.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s60-run7
GPU_TESTS_TIMEOUT=240 run_gpu_tests '*Merge*:CudaConcurrent*:CudaCascade.Balanced*:CudaGraph.*:*Fused*'
run_sanitizers 'CudaMergeStates.SkippedEmptyStatesGiveTheBitsOfLoadedOnes'
S=PREFIXD_MERGE_SKIP_EMPTY=0
K='PREFIXD_CONCURRENT_DECODE_TMA=force+PREFIXD_CONCURRENT_DECODE_SMS'
RUN_TIMEOUT=200 run_variants skip "default,$S,default,$S" -d 128 --heads 32/8 -b 256 -p 8192,32768 -s 256 --dtype fp16,bf16
RUN_TIMEOUT=120 run_variants skip-k "$K=14,$K=14+$S,$K=16,$K=16+$S" -d 128 --heads 32/8 -b 256 -p 32768 -s 256 --dtype fp16
RUN_TIMEOUT=120 run_variants skip-d256 "default,$S,default,$S" -d 256 --heads 32/8 -b 256 -p 32768 -s 256 --dtype fp16
show_parts skip skip-k skip-d256 | sort -k1,1 -k4,4 -k5,5
SHOW_LINES=8 show_variants skip skip-k skip-d256 | cut -c1-300
pack_logs
