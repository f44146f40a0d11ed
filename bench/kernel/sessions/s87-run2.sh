#!/usr/bin/env bash
# Session 87, run 2 (the same H200 as run 1): session 86's run 3 on this tree's build, as run:
# the main job and the engine's CUDA/NCCL MPI tests on one rank, then the head_dim-64 prefix plan
# settings as variants (s85-run1.sh). Carry: .carry/s86 (s86-run1.sh's header).
#   CARRY=.carry/s86 bash bench/kernel/sessions/s87-run2.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
BUILD=spec bash bench/kernel/sessions/s86-run3.sh
