#!/usr/bin/env bash
# Session 43, run 7 (nvidia-h200): run 6's 1-warp tensor-core decode (-1.3 µs on the suffix of
# 32/8 D64 B256 P32768 S32) across head_dim 64: GQA 4 and 8, B 16-256, S 32-256. Binaries
# ($CARRY/bins.tar.xz): run 4's.
#   CARRY=.carry/s43c bash bench/kernel/sessions/s43-warps64.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s43-warps64
run_variants d64 default,w1 -d 64 --heads 32/8,32/4 -b 16,64,256 -p 8192,32768 -s 32,64,256 --dtype fp16
show_variants d64
pack_logs
