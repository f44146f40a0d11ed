#!/usr/bin/env bash
# Several hosts from a hostfile, one MPI rank per GPU:
#   launch/run-cluster.sh HOSTFILE GPUS_PER_HOST [prefixd options]
# HOSTFILE lists one host per line ("node1 slots=4"); every host needs the same build at the same
# path. OpenMPI runs over UCX on the cluster fabric (InfiniBand / RoCE): this is the only recipe
# that asks for it, since `--mca pml ucx` fails on a single host without a fabric.
#   PREFIXD_BIN=... to run another binary (e.g. build/bench/prefixd_scaling_bench).
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { echo "usage: $0 HOSTFILE GPUS_PER_HOST [prefixd options]" >&2; exit 2; }
hostfile=$1
per_host=$2
shift 2
[ -r "$hostfile" ] || { echo "run-cluster: cannot read hostfile $hostfile" >&2; exit 2; }
hosts=$(grep -cv '^\s*\(#\|$\)' "$hostfile")
ranks=$(( hosts * per_host ))
build_dir=${PREFIXD_BUILD_DIR:-build}
bin=${PREFIXD_BIN:-$PWD/$build_dir/launch/prefixd}
echo "# run-cluster: $ranks rank(s) on $hosts host(s) x $per_host GPU(s)" >&2
exec mpirun --allow-run-as-root --hostfile "$hostfile" -np "$ranks" --map-by "ppr:${per_host}:node" \
  --bind-to none --mca pml ucx -x UCX_TLS="${UCX_TLS:-rc,sm,cuda_copy,cuda_ipc}" \
  -x NCCL_NVLS_ENABLE=0 -x NCCL_DEBUG="${NCCL_DEBUG:-WARN}" -x LD_LIBRARY_PATH \
  "$bin" "$@"
