#!/usr/bin/env bash
# The README's test command: set-up + build, then every test (labels cpu, mpi, gpu). GPU tests
# report themselves as skipped, with the reason, on machines without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
bash launch/setup.sh
build_dir=${PREFIXD_BUILD_DIR:-build}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
ctest --test-dir "$build_dir" --output-on-failure -j "${PREFIXD_TEST_JOBS:-2}" "$@"
