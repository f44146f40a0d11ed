#!/usr/bin/env bash
# Session 87, run 5 (the same H200 as runs 1-4): the grid and head_dim rows again (issue4-grid.sh)
# on this tree's build, for the count's run-to-run spread. As run, an inline command of the same
# effect (unpack the carry, copy the spec bench, issue4-grid.sh, one tarball). Carry: .carry/s86.
#   CARRY=.carry/s86 bash bench/kernel/sessions/s87-run5.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s87-run5
cp /tmp/b/prefixd_kernel_bench_spec "$B"
OUT=$OUT/grid bash bench/kernel/issue4-grid.sh 2>&1 | grep -v '^NVIDIA'
pack_logs
