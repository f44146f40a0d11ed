#!/usr/bin/env bash
# Session 6's A/B on nvidia-h200-x4 (one call): the two changes the device timeline of session 6
# pointed at (bench/trace/), each against its switch:
#   PREFIXD_DECODE_ON_SIDE_STREAM=0|1  the own rows' decode on a side stream, the state exchange on
#                                      the compute stream (WorkerOptions::decode_on_side_stream)
#   PREFIXD_UPLOAD_BATCH=0|1           the step's uploads as one kernel (Backend::BeginUploadBatch)
# First the GPU tests of the touched backend paths and the NCCL + CUDA MPI tests at 4 ranks, then
# strong (P = 262144, 1 layer) and exposed-communication (P = 65536, 32 layers) runs, alternating,
# then one traced 4-GPU step. Binaries: $BIN (carried). Logs: $OUT. STAGE=1..6 are runs 2-7 of
# bench/scaling/README.md "Session 6" (after the runs, their repeated lines became the helpers
# below, with the same commands).
set -uo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-/tmp/b}
OUT=${OUT:-/tmp/ab-s6}
WORK=${WORK:-/tmp/ab-s6-work}
source bench/scaling/ab-lib.sh
STAGE=${STAGE:-1}
if [ "$STAGE" = 1 ]; then
gpu_tests 'CudaCascade.*:CudaBackend.*:CudaGraph.*:CudaBackendErrors.*'
mpi_tests_np4 '*cuda_a2a_chunks1*:*cuda_a2a_sendfirst1*:*cuda_tree_chunks1*:*cuda_a2a_split1*:*cuda_a2a_heads2*'
run new1 "" $S --gpus 1,2,4
run side0_1 "PREFIXD_DECODE_ON_SIDE_STREAM=0" $S --gpus 1,2,4
run upload0_1 "PREFIXD_UPLOAD_BATCH=0" $S --gpus 1,2,4
run both0_1 "PREFIXD_DECODE_ON_SIDE_STREAM=0 PREFIXD_UPLOAD_BATCH=0" $S --gpus 1,2,4
run new2 "" $S --gpus 1,2,4
run e_new "" $E
run e_side0 "PREFIXD_DECODE_ON_SIDE_STREAM=0" $E
run e_upload0 "PREFIXD_UPLOAD_BATCH=0" $E
run e_new2 "" $E
# One traced 4-GPU step of the new default (bench/trace/).
traced trace4 "" $S --gpus 4
fi
# Run 3 (STAGE=2): the state exchange's kernel still started after the decode's CTAs had filled
# the SMs (trace of run 2). Can fewer NCCL threads per block (NCCL_NTHREADS) let its blocks fit
# beside them? And is the 1-GPU time (0.897-0.945 ms in run 2) steadier when every GPU has just
# run (--gpus 4,1,2,4: a 4-GPU pass first)?
if [ "$STAGE" = 2 ]; then
run warm_1 "" $W
run nt256 "NCCL_NTHREADS=256" $S --gpus 4
run nt128 "NCCL_NTHREADS=128" $S --gpus 4
run nt512 "NCCL_NTHREADS=512" $S --gpus 4
run side0_nt256 "PREFIXD_DECODE_ON_SIDE_STREAM=0 NCCL_NTHREADS=256" $S --gpus 4
run warm_2 "" $W
run warm_nt256 "NCCL_NTHREADS=256" $W
run e_nt256 "NCCL_NTHREADS=256" $E
run e_nt128 "NCCL_NTHREADS=128" $E
run e_side0_nt256 "PREFIXD_DECODE_ON_SIDE_STREAM=0 NCCL_NTHREADS=256" $E
run e_default "" $E
traced trace4b "NCCL_NTHREADS=256" $S --gpus 4
fi
# Run 4 (STAGE=3): run 3's trace shows the exchange's kernel still waiting for the decode's CTAs
# (with 128-512 NCCL threads alike): 4-warp decode CTAs (96 KiB of shared memory, two on nearly
# every SM) leave no room for its blocks. 2-warp CTAs (48 KiB; PREFIXD_DECODE_WARPS=2) would.
if [ "$STAGE" = 3 ]; then
run s3_default1 "" $W
run s3_warps2_1 "PREFIXD_DECODE_WARPS=2" $W
run s3_warps2_side0_1 "PREFIXD_DECODE_WARPS=2 PREFIXD_DECODE_ON_SIDE_STREAM=0" $W
run s3_default2 "" $W
run s3_warps2_2 "PREFIXD_DECODE_WARPS=2" $W
run s3_e_default "" $E
run s3_e_warps2 "PREFIXD_DECODE_WARPS=2" $E
run s3_e_warps2_side0 "PREFIXD_DECODE_WARPS=2 PREFIXD_DECODE_ON_SIDE_STREAM=0" $E
run s3_e_warps2_b "PREFIXD_DECODE_WARPS=2" $E
traced trace4c "PREFIXD_DECODE_WARPS=2" $S --gpus 4
fi
# Run 5 (STAGE=4): with 2-warp CTAs too the exchange's kernel waited for the decode (run 4): its
# 640-thread blocks need registers no SM holding a decode CTA has. New binaries: the side-stream
# decode leaves SMs free (PREFIXD_DECODE_FREE_SMS, default 24: one decode CTA per SM on the rest).
if [ "$STAGE" = 4 ]; then
gpu_tests 'CudaCascade.*:CudaBackend.*:CudaGraph.*:CudaBackendErrors.*:*Decode*'
memcheck 'CudaCascade.DecodePartOnAnotherStream*:CudaBackend.UploadBatch*'
mpi_tests_np4 '*cuda_a2a_chunks1*:*cuda_a2a_sendfirst1*:*cuda_tree_chunks1*:*cuda_a2a_split1*:*cuda_a2a_heads2*'
run s4_default1 "" $W
run s4_free0_1 "PREFIXD_DECODE_FREE_SMS=0" $W
run s4_free32_1 "PREFIXD_DECODE_FREE_SMS=32" $W
run s4_side0_1 "PREFIXD_DECODE_ON_SIDE_STREAM=0" $W
run s4_default2 "" $W
run s4_free0_2 "PREFIXD_DECODE_FREE_SMS=0" $W
run s4_e_default "" $E
run s4_e_free0 "PREFIXD_DECODE_FREE_SMS=0" $E
run s4_e_free32 "PREFIXD_DECODE_FREE_SMS=32" $E
run s4_e_side0 "PREFIXD_DECODE_ON_SIDE_STREAM=0" $E
run s4_e_default2 "" $E
traced trace4d "" $S --gpus 4
fi
# Run 6 (STAGE=5): run 5 overlapped the exchange with the decode (32 layers: 15.9% exposed against
# 26.6%) but the decode on 108 one-per-SM CTAs of 4 warps took 35 µs instead of 22: the step did
# not get faster. New binaries: those CTAs have 8 warps (twice the bytes in flight per SM).
if [ "$STAGE" = 5 ]; then
gpu_tests 'CudaCascade.*:CudaBackend.*:*Decode*'
memcheck 'CudaCascade.DecodePartOnAnotherStream*'
mpi_tests_np4 '*cuda_a2a_sendfirst1*:*cuda_a2a_chunks1*'
run s5_default1 "" $W
run s5_free0_1 "PREFIXD_DECODE_FREE_SMS=0" $W
run s5_w4_1 "PREFIXD_DECODE_WARPS=4" $W
run s5_default2 "" $W
run s5_free0_2 "PREFIXD_DECODE_FREE_SMS=0" $W
run s5_e_default "" $E
run s5_e_free0 "PREFIXD_DECODE_FREE_SMS=0" $E
run s5_e_w4 "PREFIXD_DECODE_WARPS=4" $E
run s5_e_default2 "" $E
traced trace4e "" $S --gpus 4
fi
# Run 7 (STAGE=6): in run 6 the decode on 108 SMs took 32 µs (256 items: 3 on some CTAs) and the
# overlapped exchange 34 µs. Fewer NCCL CTAs (NCCL_MAX_CTAS, NCCL_MAX_P2P_NCHANNELS) would let the
# decode keep more SMs (PREFIXD_DECODE_FREE_SMS to match). New gpu_tests binary: the one-CTA-per-SM
# decode compared with the float64 oracle (8 warps sum in another order than the whole run's 4).
if [ "$STAGE" = 6 ]; then
gpu_tests 'CudaCascade.*:CudaBackend.*:*Decode*'
memcheck 'CudaCascade.DecodePartOnAnotherStream*'
W="$S --gpus 4"
for v in "default|" "cta8|NCCL_MAX_CTAS=8 PREFIXD_DECODE_FREE_SMS=8" "cta4|NCCL_MAX_CTAS=4 PREFIXD_DECODE_FREE_SMS=4" \
         "p2p8|NCCL_MAX_P2P_NCHANNELS=8 PREFIXD_DECODE_FREE_SMS=8" "cta8_free0|NCCL_MAX_CTAS=8 PREFIXD_DECODE_FREE_SMS=0" \
         "cta12|NCCL_MAX_CTAS=12 PREFIXD_DECODE_FREE_SMS=12" "default_b|"; do
  run "s6_${v%%|*}" "${v#*|}" $W
  run "s6_e_${v%%|*}" "${v#*|}" $E
done
traced trace4f "NCCL_MAX_CTAS=8 PREFIXD_DECODE_FREE_SMS=8" $S --gpus 4
fi
