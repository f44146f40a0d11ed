#!/usr/bin/env bash
# Session 15: the peer exchange's wire format (12 payload bytes + epoch per 16-byte store, no
# flags) against the flag protocol of session 14, one call on NP GPUs (default 4). Binaries:
# $CARRY/scal.tar.xz: prefixd_scaling_bench, prefixd_comm_bench, prefixd_mpi_tests (this commit)
# and prefixd_scaling_bench_old, prefixd_comm_bench_old (the flag protocol of commit 9b4d930, with
# its first phase stats: wait-done, push+flag, wait-arrive, copy-out+done).
#  1. NCCL/CUDA MPI tests (comm tests on every NCCL backend, engine cases) at NP ranks;
#  2. comm bench: a2a and gather, NCCL vs peer path, new and old, with PREFIXD_PEER_STATS=1;
#  3. the strong P = 262144 1-layer step on 1 and NP GPUs, old / new alternating, twice.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/s15-ll}
NP=${NP:-4}
. bench/scaling/device-setup.sh
TESTS='*CommTest*nccl*:*cuda_a2a_chunks1:*cuda_a2a_sendfirst1:*cuda_tree_chunks1:*cuda_a2a_layout1:*cuda_a2a_behind1'
timeout 240 $M /tmp/s/prefixd_mpi_tests --gtest_filter="$TESTS" >"$OUT/mpi_np$NP.log" 2>&1
echo "mpi np$NP rc=$?"; grep -E "test results|FAILED" "$OUT/mpi_np$NP.log" | tail -4; gzip -f "$OUT/mpi_np$NP.log"
for v in "" _old; do
  timeout 60 $M -x PREFIXD_PEER_STATS=1 /tmp/s/prefixd_comm_bench$v --ops a2a,gather --kinds plain,peer \
    --bytes 16384,131072,270336,1048576 >"$OUT/comm$v.log" 2>&1
  echo "== comm$v rc=$?"; grep -v "^#" "$OUT/comm$v.log" | grep -v "PeerExchange rank [1-9]"
done
for i in 1 2; do for v in _old ""; do
  timeout 120 $M -x PREFIXD_PEER_STATS=1 /tmp/s/prefixd_scaling_bench$v --mode strong --prefix 262144 --batch 128 \
    --suffix 512 --layers 1 --gpus 1,$NP --reduction a2a --csv "$OUT/step$v-$i.csv" >"$OUT/step$v-$i.log" 2>&1
  echo "== step${v:-_new} ($i) rc=$?"; row "$OUT/step$v-$i.csv"; grep "PeerExchange rank 0" "$OUT/step$v-$i.log"
done; done
tar -C "$OUT" -czf "$OUT/steps.tgz" $(cd "$OUT" && ls step*) && rm -f "$OUT"/step*.csv "$OUT"/step*.log
