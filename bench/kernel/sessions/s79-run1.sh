#!/usr/bin/env bash
# Session 79, run 1 (nvidia-h200; not lent in session 79, for a next session): the decode items'
# first pages passed with them (PREFIXD_DECODE_ITEM_PAGES, off by default: lookup takes the page-
# table load out of each item's dependent start; next-wave also pulls the next-wave item's first 32
# K/V rows into L2 right after the CTA's own first copies):
#   1. the new paths' GPU tests first (the direct launch with decoy pages, the backend's modes, and
#      the neighbouring decode tests), one process;
#   2. the three modes in one process per shape (variants interleaved): the grid's S32 rows (fp16,
#      32/32 and 32/8, B16-256, P1024 / P8192), the S256 P1024 rows, head_dim 64 at GQA 4 and 8,
#      and the grid's nearest GQA-1 misses (bf16 32/32 B16 / B64 P8192 S32, 32/32 B256 P32768 S32);
#   3. A/B of the default path against session 78's final build (HEAD 91689bc, as
#      prefixd_kernel_bench_old), old new old new: this tree's default kernels differ from it in
#      their registers (the first lookup's restructure, ptxas: the capped GQA-4 2-warp CTA's spill
#      32 → 12 bytes) and in the 2-warp shallow CTA's cap at head_dim 64 for every group (GQA 8:
#      136 → 128 registers, 7 → 8 CTAs per SM, no spill: s78's regression there, its run 4 item 4);
#   4. Nsight Compute's stall reasons of the GQA-4 S32 decode with next-wave (s78 run 1: long-
#      scoreboard 46% of the samples, the K/V copies 21%, the page-table entry 6%).
# Carry (64 MiB with the tracked tree): prefixd_kernel_bench, prefixd_gpu_tests, prefixd_mpi_tests
# of this tree, and prefixd_kernel_bench_old built from 91689bc (git worktree add /tmp/base 91689bc;
# cmake -S /tmp/base -B /tmp/base/build -G Ninja -DCMAKE_BUILD_TYPE=Release; ninja -C
# /tmp/base/build bench/prefixd_kernel_bench), packed as bins.tar.xz (see s78-run4.sh):
#   CARRY=.carry/s79a bash bench/kernel/sessions/s79-run1.sh
# If a mode wins across the rows: its index as `decode_item_pages_`'s initializer (cuda_backend.h),
# its name as the default in docs/SETTINGS.md, rebuild and repack, then s79-run2.sh and s79-run3.sh
# on those binaries (the tests name every mode explicitly, so none depends on the default).
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s79-run1
GPU_TESTS_TIMEOUT=150 run_gpu_tests 'DecodeItemPages*:DecodeNextWave*:DecodePipeline*:CudaEarlyDecode*'
Q="--copy-gib 1 --gemm-n 2048 --settle-ms 200"
V="default,PREFIXD_DECODE_ITEM_PAGES=lookup,PREFIXD_DECODE_ITEM_PAGES=next-wave"
RUN_TIMEOUT=150 run_variants pages-s32 "$V" -d 128 --heads 32/32,32/8 -b 16,64,256 -p 1024,8192 -s 32 --dtype fp16 $Q
RUN_TIMEOUT=100 run_variants pages-s256 "$V" -d 128 --heads 32/32,32/8 -b 64,256 -p 1024 -s 256 --dtype fp16 $Q
RUN_TIMEOUT=100 run_variants pages-d64 "$V" -d 64 --heads 32/8,64/8 -b 64,256 -p 1024 -s 32 --dtype fp16 $Q
# The grid's nearest GQA-1 misses (s77 run 6): bf16 32/32 B16 / B64 P8192 S32, 32/32 B256 P32768 S32.
RUN_TIMEOUT=100 run_variants pages-near "$V" -d 128 --heads 32/32 -b 16,64 -p 8192 -s 32 --dtype bf16 $Q
RUN_TIMEOUT=100 run_variants pages-long "$V" -d 128 --heads 32/32 -b 256 -p 32768 -s 32 --dtype fp16,bf16 $Q
SHOW_LINES=40 show_variants pages-s32 pages-s256 pages-d64 pages-near pages-long
if [ -x /tmp/b/prefixd_kernel_bench_old ]; then
  A="--no-baseline --no-graph -c 1 $Q"
  run_bench_ab "$OUT/ab-s32" -d 128 --heads 32/32,32/8 -b 64,256 -p 1024,8192 -s 32 --dtype fp16 $A
  run_bench_ab "$OUT/ab-d64" -d 64 --heads 32/8,64/8 -b 64,256 -p 1024 -s 16,32 --dtype fp16 $A
fi
PREFIXD_DECODE_ITEM_PAGES=next-wave run_ncu_stalls nw32 DecodeAttentionMma 1 $B -d 128 --heads 32/8 -b 256 -p 1024 \
  -s 32 --dtype fp16 --no-baseline --no-graph -c 0 -n 3 -w 1 --copy-gib 1 --gemm-n 2048 --settle-ms 0 | head -12
pack_logs
