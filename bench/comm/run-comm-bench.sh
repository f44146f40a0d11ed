#!/usr/bin/env bash
# One call on a lent multi-GPU machine: prefixd_comm_bench (carried as $CARRY/comm.tar.xz) on all
# its GPUs, once with NCCL's defaults. Output in $OUT/comm.log.
#   session 13 (bench/comm/results/s13/): CARRY=.carry/s13 kind nvidia-h200-x4
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/comm-bench}
CARRY=${CARRY:?set CARRY to the directory holding comm.tar.xz}
mkdir -p /tmp/c "$OUT" && tar -C /tmp/c -xJf "$CARRY/comm.tar.xz"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
NP=${NP:-$(nvidia-smi -L | wc -l)}
M="mpirun --allow-run-as-root --oversubscribe --bind-to none -x NCCL_NVLS_ENABLE=0 -np $NP"
nvidia-smi -L
timeout 240 $M /tmp/c/prefixd_comm_bench ${COMM_ARGS:-} 2>&1 | tee "$OUT/comm.log"
echo "comm bench rc=${PIPESTATUS[0]}"
