#!/usr/bin/env bash
# Session 86, run 3 (nvidia-h200 asked): session 85's run 1 (the main job and the engine's CUDA/NCCL
# MPI tests on one rank; the head_dim-64 plan settings as variants) on the build that run 1 kept
# (BUILD=spec or early). Carry: .carry/s86 (s86-run1.sh's header).
#   BUILD=spec CARRY=.carry/s86 bash bench/kernel/sessions/s86-run3.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s86-run3
cp "/tmp/b/prefixd_kernel_bench_${BUILD:?spec or early}" /tmp/b/prefixd_kernel_bench
OUT=$OUT bash bench/kernel/sessions/s85-run1.sh
