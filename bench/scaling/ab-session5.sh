#!/usr/bin/env bash
# Session 5's A/B on nvidia-h200-x4 (run 1, one call; the code it measured was reverted, commit
# "Revert own rows first"): own rows first (an early prefix pass over the own
# rows while the query exchange runs) and prefix waves, each against its switch:
#   PREFIXD_OWN_ROWS_FIRST=0|1        the early pass (worker.h, WorkerOptions::own_rows_first)
#   PREFIXD_EARLY_PASS_FREE_SMS=k     SMs the early pass leaves to the exchange's kernels (16)
#   PREFIXD_PREFIX_MAX_WAVES=w        prefix items cut into up to w waves (3; 1 = session 4)
# First the GPU tests of the cascade parts and the NCCL + CUDA MPI tests at 4 ranks, then the strong
# (P = 262144, 1 layer) and exposed-communication (P = 65536, 32 layers) runs. Binaries: $BIN
# (carried). Every log and CSV goes to $OUT as it is written.
set -uo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-/tmp/b}
OUT=${OUT:-/tmp/ab-s5}
WORK=${WORK:-/tmp/ab-s5-work}  # per-run CSV and logs; packed into $OUT/runs.tgz after each run
export AB_FORWARD="PREFIXD_OWN_ROWS_FIRST PREFIXD_EARLY_PASS_FREE_SMS PREFIXD_PREFIX_MAX_WAVES PREFIXD_APPEND_BEHIND_QUERIES
  PREFIXD_MERGE_INTO_SEND"
source bench/scaling/ab-lib.sh
# The NCCL + CUDA MPI tests of the schedules these changes touch, 4 ranks.
NP4_FILTER='*cuda_a2a_chunks1*:*cuda_a2a_sendfirst1*:*cuda_tree_chunks1*:*cuda_a2a_split1*:*cuda_a2a_heads2*'
STAGE=${STAGE:-1}
if [ "$STAGE" = 1 ]; then
gpu_tests 'CudaCascade.*:*Plan*'
mpi_tests_np4 "$NP4_FILTER"
run new1 "" $S --gpus 1,2,4
run off1 "PREFIXD_OWN_ROWS_FIRST=0" $S --gpus 1,2,4
run free0 "PREFIXD_EARLY_PASS_FREE_SMS=0" $S --gpus 2,4
run free32 "PREFIXD_EARLY_PASS_FREE_SMS=32" $S --gpus 2,4
run waves1 "PREFIXD_PREFIX_MAX_WAVES=1" $S --gpus 2,4
run off_waves1 "PREFIXD_OWN_ROWS_FIRST=0 PREFIXD_PREFIX_MAX_WAVES=1" $S --gpus 1,2,4
run new2 "" $S --gpus 1,2,4
run e_new "" $E
run e_off "PREFIXD_OWN_ROWS_FIRST=0" $E
run e_free0 "PREFIXD_EARLY_PASS_FREE_SMS=0" $E
fi
# Run 3 (STAGE=2): the K/V append behind the first layer's query exchange
# (PREFIXD_APPEND_BEHIND_QUERIES=0|1, on by default), alternating on and off.
if [ "$STAGE" = 2 ]; then
mpi_tests_np4 "$NP4_FILTER"
run s2_on1 "" $S --gpus 1,2,4
run s2_off1 "PREFIXD_APPEND_BEHIND_QUERIES=0" $S --gpus 1,2,4
run s2_on2 "" $S --gpus 1,2,4
run s2_off2 "PREFIXD_APPEND_BEHIND_QUERIES=0" $S --gpus 1,2,4
run s2_e_on "" $E
run s2_e_off "PREFIXD_APPEND_BEHIND_QUERIES=0" $E
fi
# Run 5 (STAGE=3): the merge writing the send buffer (PREFIXD_MERGE_INTO_SEND=0|1, on by default),
# after the GPU tests of the cascade parts (also under compute-sanitizer memcheck).
if [ "$STAGE" = 3 ]; then
gpu_tests 'CudaCascade.*'
memcheck 'CudaCascade.Parts*'
mpi_tests_np4 "$NP4_FILTER"
run s3_on1 "" $S --gpus 1,2,4
run s3_off1 "PREFIXD_MERGE_INTO_SEND=0" $S --gpus 1,2,4
run s3_on2 "" $S --gpus 1,2,4
run s3_off2 "PREFIXD_MERGE_INTO_SEND=0" $S --gpus 1,2,4
run s3_e_on "" $E
run s3_e_off "PREFIXD_MERGE_INTO_SEND=0" $E
fi
