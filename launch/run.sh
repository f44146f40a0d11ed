#!/usr/bin/env bash
# The README's main command: set-up + build, then the document-QA job on this host: one MPI rank
# per GPU, or one rank on the CPU backend (small sizes) when there is no GPU. Extra arguments go
# to `prefixd` (see `build/launch/prefixd --help`).
set -euo pipefail
cd "$(dirname "$0")/.."
bash launch/setup.sh
build_dir=${PREFIXD_BUILD_DIR:-build}
gpus=0
if command -v nvidia-smi >/dev/null 2>&1; then
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
fi
ranks=${PREFIXD_RANKS:-$(( gpus > 0 ? gpus : 1 ))}
echo "# run: $ranks rank(s) on $(hostname), $gpus GPU(s) seen"
exec mpirun --allow-run-as-root --oversubscribe --bind-to none -np "$ranks" \
  -x NCCL_NVLS_ENABLE=0 "$build_dir/launch/prefixd" "$@"
