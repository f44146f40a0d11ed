#!/usr/bin/env bash
# One host: one MPI rank per GPU (or one rank on the CPU backend when there is no GPU).
#   launch/run-local.sh [prefixd options]            e.g. --reduction tree --layers 8
#   PREFIXD_RANKS=4 launch/run-local.sh ...           force the rank count
#   PREFIXD_BIN=build/bench/prefixd_scaling_bench launch/run-local.sh --mode strong ...
# Expects a build (launch/setup.sh makes one in ${PREFIXD_BUILD_DIR:-build}).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${PREFIXD_BUILD_DIR:-build}
bin=${PREFIXD_BIN:-$build_dir/launch/prefixd}
[ -x "$bin" ] || { echo "run-local: $bin not found; build first (bash launch/setup.sh)" >&2; exit 1; }
gpus=0
if command -v nvidia-smi >/dev/null 2>&1; then
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
fi
ranks=${PREFIXD_RANKS:-$(( gpus > 0 ? gpus : 1 ))}
echo "# run-local: $ranks rank(s) on $(hostname), $gpus GPU(s)" >&2
# --allow-run-as-root: containers run as root. --oversubscribe: more ranks than cores is fine for
# the CPU backend. --bind-to none: ranks pick their GPU by node-local rank, not by core binding.
# NCCL_NVLS_ENABLE=0: NVLink multicast stays off on these machines (shared/DEVICE.md).
exec mpirun --allow-run-as-root --oversubscribe --bind-to none -np "$ranks" \
  -x NCCL_NVLS_ENABLE=0 -x NCCL_DEBUG="${NCCL_DEBUG:-WARN}" "$bin" "$@"
