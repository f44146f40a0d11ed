#!/usr/bin/env bash
# The README's main command: set-up + build, then the document-QA job on this host through
# launch/run-local.sh: one MPI rank per GPU, or one rank on the CPU backend (small sizes) when
# there is no GPU. Extra arguments go to `prefixd` (see `build/launch/prefixd --help`).
set -euo pipefail
cd "$(dirname "$0")/.."
bash launch/setup.sh
exec bash launch/run-local.sh "$@"
