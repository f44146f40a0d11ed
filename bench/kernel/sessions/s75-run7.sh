#!/usr/bin/env bash
# Session 75, run 7 (nvidia-h200): why the 16/2 decode at head_dim 256 streams at 0.9-1.4 TB/s
# (runs 2-4; 16/2 is a group of 8, which runs 2-4 had taken for 2): the suffix part alone by HEAD's
# build ($CARRY_OLD) and by a build that runs g = 2 at head_dim 256 on the tensor-core kernel's
# 4-row group ($CARRY, PairOnTensorCores: no effect on g = 8, as this run shows), each with the
# decode kernel as chosen, forced to CUDA cores (simt) and to tensor cores (mma), at page 8 and 16;
# 16/2 D256 B256 P1000 S1024 bf16, with 24/8 (g = 3, tensor cores) and 16/2 D128 beside it.
#   CARRY=.carry/s75d CARRY_OLD=.carry/s75b bash bench/kernel/sessions/s75-run7.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s75-run7
mkdir -p /tmp/old && tar -C /tmp/old -xJf "${CARRY_OLD:?}/bins.tar.xz"
V=default,PREFIXD_DECODE_KERNEL=simt,PREFIXD_DECODE_KERNEL=mma
for page in 8 16; do
  RUN_TIMEOUT=100 run_variants pair-p$page "$V" --heads 16/2,24/8 -d 256 -b 256 -p 1000 -s 1024 --dtype bf16 --page-size $page
  B0=$B; B=/tmp/old/prefixd_kernel_bench
  RUN_TIMEOUT=100 run_variants head-p$page "$V" --heads 16/2,24/8 -d 256 -b 256 -p 1000 -s 1024 --dtype bf16 --page-size $page
  B=$B0
done
RUN_TIMEOUT=60 run_variants d128 "$V" --heads 16/2 -d 128 -b 256 -p 1000 -s 1024 --dtype bf16
show_parts head-p8 pair-p8 head-p16 pair-p16 d128
pack_logs
