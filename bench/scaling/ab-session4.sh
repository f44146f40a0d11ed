#!/usr/bin/env bash
# Session 4's A/B on nvidia-h200-x4 (one call): the NCCL + CUDA MPI tests at 4 ranks for the
# schedules the changes touch, then the strong (P = 262144, 1 layer) and exposed-communication
# (P = 65536, 32 layers) runs with the three switches of this session on and off:
#   PREFIXD_NCCL_REGISTER=0|1         exchange buffers from ncclMemAlloc, registered (zero-copy p2p)
#   PREFIXD_QUERIES_IN_PLACE=0|1      queries made in the local-row buffer, no pack/unpack kernels
#   PREFIXD_QUERY_STREAM=comm|compute the query all-to-all on the compute stream (1 chunk, no split)
# (the fused unpack + merge of the exchanged states has no switch). Binaries: $BIN (carried).
# Every log and CSV goes to $OUT as it is written.
set -uo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-/tmp/b}
OUT=${OUT:-/tmp/ab-s4}
WORK=${WORK:-/tmp/ab-s4-work}  # per-run CSV and logs; packed into $OUT/runs.tgz after each run
mkdir -p "$OUT" "$WORK"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
mpi() { mpirun --allow-run-as-root --oversubscribe --bind-to none -np 4 -x NCCL_NVLS_ENABLE=0 \
  -x PREFIXD_NCCL_REGISTER -x PREFIXD_QUERIES_IN_PLACE -x PREFIXD_QUERY_STREAM -x PREFIXD_MERGE_PDL "$@"; }
S="--mode strong --prefix 262144 --batch 128 --suffix 512 --layers 1 -n 20"
E="--mode strong --prefix 65536 --batch 128 --suffix 512 --layers 32 --gpus 4 -n 10"
run() {  # name, env assignments (space-separated, may be empty), bench args
  local name=$1 envs=$2; shift 2
  echo "== $name: $envs $*" | tee -a "$OUT/ab.log"
  ( export PREFIXD_NCCL_REGISTER=1 PREFIXD_QUERIES_IN_PLACE=1 PREFIXD_QUERY_STREAM=compute PREFIXD_MERGE_PDL=1
    for e in $envs; do export "$e"; done
    timeout 150 bash -c "$(declare -f mpi); mpi $BIN/prefixd_scaling_bench $* --csv $WORK/$name.csv" ) >"$WORK/$name.txt" 2>&1
  echo "   rc $?" | tee -a "$OUT/ab.log"
  grep -E "^(strong|weak) " "$WORK/$name.txt" | tee -a "$OUT/ab.log"
  tar czf "$OUT/runs.tgz" -C "$WORK" .
}
STAGE=${STAGE:-1}
if [ "$STAGE" = 1 ]; then
timeout 200 bash -c "$(declare -f mpi); export PREFIXD_NCCL_REGISTER=1 PREFIXD_QUERIES_IN_PLACE=1 PREFIXD_QUERY_STREAM=compute; \
  mpi $BIN/prefixd_mpi_tests --gtest_filter='*cuda_a2a_chunks1*:*cuda_a2a_sendfirst1*:*cuda_a2a_split1*:*cuda_tree_chunks1*:*cuda_a2a_heads2*:*cuda_a2a_chunks3*'" \
  >"$OUT/mpi_np4.log" 2>&1
echo "mpi tests np4: rc $? $(tail -1 "$OUT/mpi_np4.log")" | tee -a "$OUT/ab.log"
run new1 "" $S --gpus 1,2,4
run old1 "PREFIXD_NCCL_REGISTER=0 PREFIXD_QUERIES_IN_PLACE=0 PREFIXD_QUERY_STREAM=comm" $S --gpus 1,2,4
run noreg "PREFIXD_NCCL_REGISTER=0" $S --gpus 2,4
run noinplace "PREFIXD_QUERIES_IN_PLACE=0" $S --gpus 2,4
run qcomm "PREFIXD_QUERY_STREAM=comm" $S --gpus 2,4
run new2 "" $S --gpus 1,2,4
run e_split_new "" $E --split
run e_split_old "PREFIXD_NCCL_REGISTER=0 PREFIXD_QUERIES_IN_PLACE=0 PREFIXD_QUERY_STREAM=comm" $E --split
run e_new "" $E
fi
# Run 2 (STAGE=2): after the merge behind the prefix kernel became a programmatic dependent launch
# (PREFIXD_MERGE_PDL) and split X reads its queries where they arrived.
if [ "$STAGE" = 2 ]; then
timeout 200 bash -c "$(declare -f mpi); mpi $BIN/prefixd_mpi_tests --gtest_filter='*cuda_a2a_chunks1*:*cuda_a2a_sendfirst1*:*cuda_a2a_split1*:*cuda_a2a_split2*:*cuda_tree_chunks1*:*cuda_a2a_heads2*'" \
  >"$OUT/mpi_np4.log" 2>&1
echo "mpi tests np4: rc $? $(tail -1 "$OUT/mpi_np4.log")" | tee -a "$OUT/ab.log"
run s2_new1 "" $S --gpus 1,2,4
run s2_nomergepdl "PREFIXD_MERGE_PDL=0" $S --gpus 1,2,4
run s2_new2 "" $S --gpus 1,2,4
run s2_e_new "" $E
run s2_e_split "" $E --split
fi
