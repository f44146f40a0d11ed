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
export AB_FORWARD="PREFIXD_NCCL_REGISTER PREFIXD_QUERIES_IN_PLACE PREFIXD_QUERY_STREAM PREFIXD_MERGE_PDL"
# The session's three switches on in every run, unless the run turns one off.
AB_BASE_ENV="PREFIXD_NCCL_REGISTER=1 PREFIXD_QUERIES_IN_PLACE=1 PREFIXD_QUERY_STREAM=compute PREFIXD_MERGE_PDL=1"
source bench/scaling/ab-lib.sh
STAGE=${STAGE:-1}
if [ "$STAGE" = 1 ]; then
mpi_tests_np4 '*cuda_a2a_chunks1*:*cuda_a2a_sendfirst1*:*cuda_a2a_split1*:*cuda_tree_chunks1*:*cuda_a2a_heads2*:*cuda_a2a_chunks3*'
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
mpi_tests_np4 '*cuda_a2a_chunks1*:*cuda_a2a_sendfirst1*:*cuda_a2a_split1*:*cuda_a2a_split2*:*cuda_tree_chunks1*:*cuda_a2a_heads2*'
run s2_new1 "" $S --gpus 1,2,4
run s2_nomergepdl "PREFIXD_MERGE_PDL=0" $S --gpus 1,2,4
run s2_new2 "" $S --gpus 1,2,4
run s2_e_new "" $E
run s2_e_split "" $E --split
fi
