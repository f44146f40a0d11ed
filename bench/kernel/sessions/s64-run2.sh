#!/usr/bin/env bash
# (Session 65: the CTA pairs were removed after run 2 measured them no faster; to re-run, apply
# bench/kernel/results/s64/cta-pairs.patch to commit 8ca71eb.)
# Session 64, run 2 (nvidia-h200): CTA pairs again after run 1's +40% prefix parts, with the peer's
# arrival at the default (CTA-scope release) semantics instead of .release.cluster and the own
# CTA's arrival local; paired launches only where the device holds every pair at once (printed in
# the rows' notes). The CtaPairs test and both sanitizers, then the default against the pairs
# interleaved per shape in one process (the 32/32 rows twice); also both on the 3-stage ring of 128-token tiles
# (more slack for the pair's shared stages).
#   CARRY=.carry/s64b bash bench/kernel/sessions/s64-run2.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s64-run2
GPU_TESTS_TIMEOUT=60 run_gpu_tests '*CtaPairs*'
run_sanitizers '*CtaPairs*'
P=PREFIXD_SM90A_CTA_PAIRS=1
D3=PREFIXD_SM90A_KV_TILE=128+PREFIXD_SM90A_STAGES=3
RUN_TIMEOUT=120 run_variants mha1 "default,$P,$D3,$D3+$P" -d 128 --heads 32/32 -b 256 -p 8192,32768 -s 32,256 --dtype fp16,bf16
RUN_TIMEOUT=150 run_variants gqa1 "default,$P,$D3,$D3+$P" -d 128 --heads 32/8 -b 64,256 -p 8192,32768 -s 32,256 --dtype fp16,bf16
RUN_TIMEOUT=120 run_variants mha2 "default,$P,$D3,$D3+$P" -d 128 --heads 32/32 -b 256 -p 8192,32768 -s 32,256 --dtype fp16,bf16
for n in mha1 gqa1; do grep -o "cta-pairs([0-9]* resident)" "$OUT/$n.txt" | sort | uniq -c; done
SHOW_LINES=40 show_variants mha1 mha2 gqa1 | grep -v "^#$" | cut -c1-150
pack_logs
