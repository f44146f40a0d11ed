#!/usr/bin/env bash
# Session 16: the peer exchange delivering in place (receivers post where each sender's bytes go;
# receive buffers from the peer path's arena take them without a copy out of a slot), one call on
# NP GPUs (default 4). Binaries: $CARRY/scal.tar.xz: prefixd_scaling_bench, prefixd_comm_bench,
# prefixd_mpi_tests (this commit) and prefixd_scaling_bench_old (commit 671f7df: slots only, done
# flags, two buffers).
#  1. NCCL/CUDA MPI tests at NP ranks: every comm backend (nccl_direct, nccl_direct_odd new), and
#     the engine's CUDA cases (TESTS overrides);
#  2. comm bench: a2a and gather through the slots (peer) and in place (direct), with phase stats;
#  3. the strong P = 262144 1-layer step on 1 and NP GPUs: old, new with PREFIXD_PEER_DIRECT=0
#     (slots), new (in place), REPEATS times; then one new run with PREFIXD_PEER_STATS=1.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/s16-direct}
NP=${NP:-4}
. bench/scaling/device-setup.sh
TESTS=${TESTS:-'*CommTest*nccl*:*cuda*'}
if [ "$TESTS" != none ]; then
  timeout ${MPI_TIMEOUT:-300} $M /tmp/s/prefixd_mpi_tests --gtest_filter="$TESTS" >"$OUT/mpi_np$NP.log" 2>&1
  echo "mpi np$NP rc=$?"; grep -E "test results|FAILED" "$OUT/mpi_np$NP.log" | tail -6; gzip -f "$OUT/mpi_np$NP.log"
fi
timeout 90 $M -x PREFIXD_PEER_STATS=1 /tmp/s/prefixd_comm_bench --ops a2a,gather --kinds plain,peer,direct \
  --bytes 16384,131072,270336,1048576 >"$OUT/comm.log" 2>&1
echo "== comm rc=$?"; grep -v "^#" "$OUT/comm.log" | grep -v "PeerExchange rank [1-9]"
step() {  # name, binary, env...
  local name=$1 bin=$2; shift 2
  timeout 120 $M "$@" /tmp/s/$bin --mode strong --prefix 262144 --batch 128 --suffix 512 --layers 1 \
    --gpus 1,$NP --reduction a2a --csv "$OUT/step-$name.csv" >"$OUT/step-$name.log" 2>&1
  echo "== $name rc=$?"; row "$OUT/step-$name.csv"
}
for i in $(seq 1 "${REPEATS:-2}"); do
  step old$i prefixd_scaling_bench_old
  step slots$i prefixd_scaling_bench -x PREFIXD_PEER_DIRECT=0
  step direct$i prefixd_scaling_bench -x PREFIXD_PEER_DIRECT=1
done
step direct-stats prefixd_scaling_bench -x PREFIXD_PEER_STATS=1
grep "PeerExchange rank" "$OUT/step-direct-stats.log"
tar -C "$OUT" -czf "$OUT/steps.tgz" $(cd "$OUT" && ls step-*) && rm -f "$OUT"/step-*.csv "$OUT"/step-*.log
