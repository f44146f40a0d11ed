#!/usr/bin/env bash
# Session 72, run 1 (nvidia-h200): the prefix kernel's K and V tiles issued by two producer threads
# (ProducerLoop<KvStream::kK / kV>, kernels/cuda/sm90a/prefix_attention_sm90a.cuh), so that tile
# t + STAGES's K no longer waits for tile t's V stage (its P·V) to empty.
#  1. the whole GPU suite on this build (12 shards, no sanitizers);
#  2. this build against the build before (session 71's final kernel benchmark, 97e6448) in separate
#     processes, old new old new: the memory-bound GQA-1/4 rows (B16-64, P8192-32768, S32) and the
#     compute-bound B256 rows (P8192-32768, S32 and S256), fp16 and bf16.
#   CARRY=.carry/s72a bash bench/kernel/sessions/s72-run1.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s72-run1
PREFIXD_TEST_SHARDS=12 PREFIXD_SKIP_SANITIZER=1 run_whole_suite
run_bench_ab "$OUT/ab-mem" --heads 32/32,32/8 -b 16,64 -p 8192,32768 -s 32 --dtype fp16,bf16 --no-baseline --no-graph -c 1
run_bench_ab "$OUT/ab-b256" --heads 32/32,32/8 -b 256 -p 8192,32768 -s 32,256 --dtype fp16,bf16 --no-baseline --no-graph -c 1
pack_logs
