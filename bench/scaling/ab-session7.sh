#!/usr/bin/env bash
# Session 7's A/B on nvidia-h200-x4 (one call per STAGE). Helpers: ab-lib.sh.
# Binaries: $BIN (carried). Logs: $OUT.
set -uo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-/tmp/b}
OUT=${OUT:-/tmp/ab-s7}
WORK=${WORK:-/tmp/ab-s7-work}
export AB_FORWARD="PREFIXD_CONCURRENT_DECODE_SMS"
source bench/scaling/ab-lib.sh
STAGE=${STAGE:-1}
# Run 1 (STAGE=1): the prefix kernel's persistent grid has 128 CTAs at these shapes (32 row tiles
# × 4 KV splits), so 4 of the 132 SMs idle for its whole ~220 µs at 4 GPUs (~880 µs at 1). The
# backend's concurrent mode (PREFIXD_CONCURRENT_DECODE_SMS=k: the decode on a second stream beside
# a prefix grid capped at SMs − k CTAs, every request finished by the merge kernel) would put the
# own rows' decode (32 µs after the prefix today, on 108 SMs beside the state exchange) on those
# idle SMs. Never measured in the distributed engine. Binaries of session 6 (commit 3975167).
if [ "$STAGE" = 1 ]; then
run s7_default1 "" $W
run s7_conc4_1 "PREFIXD_CONCURRENT_DECODE_SMS=4" $W
run s7_conc4_w2 "PREFIXD_CONCURRENT_DECODE_SMS=4 PREFIXD_DECODE_WARPS=2" $S --gpus 4
run s7_conc4_w8 "PREFIXD_CONCURRENT_DECODE_SMS=4 PREFIXD_DECODE_WARPS=8" $S --gpus 4
run s7_conc8 "PREFIXD_CONCURRENT_DECODE_SMS=8" $S --gpus 4
run s7_default2 "" $W
run s7_conc4_2 "PREFIXD_CONCURRENT_DECODE_SMS=4" $W
run s7_e_default "" $E
run s7_e_conc4 "PREFIXD_CONCURRENT_DECODE_SMS=4" $E
traced trace4_conc4 "PREFIXD_CONCURRENT_DECODE_SMS=4" $S --gpus 4
fi
# Run 2 (STAGE=2): the streaming decode kernel (kernels/cuda/decode_attention_mma_stream.cuh; the
# one-CTA-per-SM decode keeps every warp's copies in flight across items). Kernel grid with the
# plain cascade's decode as that kernel on every SM (PREFIXD_DECODE_PERSISTENT=1) against the
# default; the engine's decode beside the exchange with it (default) and without
# (PREFIXD_DECODE_STREAM=0); then its tests. (That build had streaming on by default and named the
# item-by-item preset "nostream"; the kernel bench's presets are now "persistent" and
# "persistent-items".)
if [ "$STAGE" = 2 ]; then
export AB_FORWARD="$AB_FORWARD PREFIXD_DECODE_STREAM PREFIXD_DECODE_PERSISTENT"
CUDA_VISIBLE_DEVICES=0 timeout 150 $BIN/prefixd_kernel_bench --heads 32/32,32/8 \
  --variants default,persistent,persistent+nostream,w4 --csv "$OUT/kernel_bench.csv" >"$OUT/kernel_bench.txt" 2>&1
echo "kernel bench: rc $?" | tee -a "$OUT/ab.log"; tail -14 "$OUT/kernel_bench.txt" | tee -a "$OUT/ab.log"
CUDA_VISIBLE_DEVICES=0 gpu_tests 'Variants/CudaDecodeVariantTest.*:CudaCascade.*:CudaBackend.*:*Decode*'
run s7_stream1 "" $W
run s7_nostream1 "PREFIXD_DECODE_STREAM=0" $W
run s7_e_stream "" $E
run s7_e_nostream "PREFIXD_DECODE_STREAM=0" $E
run s7_free16 "PREFIXD_DECODE_FREE_SMS=16" $S --gpus 4
run s7_e_free16 "PREFIXD_DECODE_FREE_SMS=16" $E
run s7_stream2 "" $W
mpi_tests_np4 '*cuda_a2a_sendfirst1*:*cuda_a2a_chunks1*'
traced trace4_stream "" $S --gpus 4
CUDA_VISIBLE_DEVICES=0 memcheck '*persistent*:CudaCascade.DecodePartOnAnotherStream*'
fi
# Run 3 (STAGE=3): in run 2's trace the state exchange (NCCL send/recv, ~528 KB per peer) took
# 39 µs beside the decode and was the step's critical path. NCCL's p2p settings: the LL protocol
# for messages up to 1 MiB (NCCL_P2P_LL_THRESHOLD, default 16 KiB) and smaller NVLink chunks
# (NCCL_P2P_NVL_CHUNKSIZE, default 512 KiB: our messages travel as one chunk, not pipelined).
# Then where the decode kernels stall (Nsight Compute) and racecheck of the streaming kernel.
if [ "$STAGE" = 3 ]; then
export AB_FORWARD="$AB_FORWARD PREFIXD_DECODE_STREAM NCCL_P2P_LL_THRESHOLD NCCL_P2P_NVL_CHUNKSIZE"
for v in "default|" "ll1m|NCCL_P2P_LL_THRESHOLD=1048576" "chunk128k|NCCL_P2P_NVL_CHUNKSIZE=131072" \
         "chunk64k|NCCL_P2P_NVL_CHUNKSIZE=65536" "ll1m_nostream|NCCL_P2P_LL_THRESHOLD=1048576 PREFIXD_DECODE_STREAM=0" \
         "default_b|"; do
  run "s7n_${v%%|*}" "${v#*|}" $S --gpus 4
  run "s7n_e_${v%%|*}" "${v#*|}" $E
done
run s7n_ll1m_W "NCCL_P2P_LL_THRESHOLD=1048576" $W
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for v in default persistent; do
  ( [ $v = persistent ] && export PREFIXD_DECODE_PERSISTENT=1
    CUDA_VISIBLE_DEVICES=0 timeout 120 $NCU --kernel-name regex:DecodeAttention --launch-skip 2 --launch-count 1 \
      --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats \
      --section Occupancy $BIN/prefixd_kernel_bench --heads 32/8 -b 256 -p 8192 -s 256 --no-baseline --no-graph \
      -n 3 -w 1 -c 0 ) >"$WORK/ncu_$v.txt" 2>&1
  echo "ncu $v: rc $?" | tee -a "$OUT/ab.log"
done
cat "$WORK"/ncu_*.txt >"$OUT/ncu.txt"
CUDA_VISIBLE_DEVICES=0 timeout 200 compute-sanitizer --tool racecheck $BIN/prefixd_gpu_tests \
  --gtest_filter='*warps8_pdl_persistent:CudaCascade.DecodePartOnAnotherStream*' >"$OUT/racecheck.log" 2>&1
echo "racecheck: rc $? $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$OUT/racecheck.log" | tr '\n' ' ')" | tee -a "$OUT/ab.log"
tar czf "$OUT/runs.tgz" -C "$WORK" .
fi
# Run 4 (STAGE=4, nvidia-h200): the tensor-core decode kernels' copies rewritten from their SASS
# (the 2-warp kernel's loop was ~460 instructions per 16-token tile, ~240 of them copy issue:
# per-copy shuffles of 64-bit offsets and address arithmetic; ~40 a runtime division by the page
# size): one page-table lookup per page-contiguous tile, a strided pointer, shared-memory offsets
# computed once, shifts for power-of-two page sizes (~300 per tile). Decode tests, memcheck, grid.
if [ "$STAGE" = 4 ]; then
CUDA_VISIBLE_DEVICES=0 timeout 150 $BIN/prefixd_kernel_bench --heads 32/32,32/8 \
  --variants default,persistent,w4 --csv "$OUT/kernel_bench.csv" >"$OUT/kernel_bench.txt" 2>&1
echo "kernel bench: rc $?" | tee -a "$OUT/ab.log"; tail -24 "$OUT/kernel_bench.txt" | tee -a "$OUT/ab.log"
CUDA_VISIBLE_DEVICES=0 gpu_tests 'Variants/CudaDecodeVariantTest.*:CudaCascade.*:CudaBackend.*:*Decode*:*Fused*'
CUDA_VISIBLE_DEVICES=0 memcheck '*persistent*:CudaCascade.DecodePartOnAnotherStream*:Variants/CudaDecodeVariantTest.*warps2_pdl'
fi
# Run 7 (STAGE=5, nvidia-h200; runs 5-6 were the final run): does the benchmark's L2 flush (a 256 MiB write, which leaves L2
# full of dirty lines) cost the short 32/8 decode its bandwidth? The grid's 32/8 shapes with the
# write flush, a clean flush (write, then a 256 MiB read) and none; then the DRAM bytes read and
# written during one decode kernel (Nsight Compute) after each flush, 32/8 and 32/32, B = 64.
if [ "$STAGE" = 5 ]; then
for f in write clean none; do
  CUDA_VISIBLE_DEVICES=0 timeout 100 $BIN/prefixd_kernel_bench --heads 32/8,32/32 --flush $f --no-baseline \
    --csv "$WORK/flush_$f.csv" >"$WORK/flush_$f.txt" 2>&1
  echo "== flush $f: rc $?" | tee -a "$OUT/ab.log"
  grep -E "^ +fp16" "$WORK/flush_$f.txt" | cut -c1-150 | tee -a "$OUT/ab.log"
done
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for f in write clean; do
  for h in 32/8 32/32; do
    CUDA_VISIBLE_DEVICES=0 timeout 100 $NCU --kernel-name regex:DecodeAttention --launch-skip 2 --launch-count 1 \
      --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum,lts__t_sector_hit_rate.pct \
      $BIN/prefixd_kernel_bench --heads $h -b 64 -p 8192 -s 256 --flush $f --no-baseline --no-graph -n 3 -w 1 -c 0 \
      >"$WORK/ncu_${f}_${h/\//_}.txt" 2>&1
    echo "== ncu flush $f heads $h: rc $?" | tee -a "$OUT/ab.log"
    grep -E "dram__bytes|gpu__time|lts__t_sector|DecodeAttention" "$WORK/ncu_${f}_${h/\//_}.txt" | tee -a "$OUT/ab.log"
  done
done
tar czf "$OUT/runs.tgz" -C "$WORK" .
fi
# Run 8 (STAGE=6, nvidia-h200): after the tidy commit (the streaming kernel's issue side keeps its
# item's step count and copy path; one shared-memory limits query per decode launch): the decode
# and cascade GPU tests and memcheck of the streaming kernel.
if [ "$STAGE" = 6 ]; then
CUDA_VISIBLE_DEVICES=0 gpu_tests 'Variants/CudaDecodeVariantTest.*:CudaCascade.*:CudaBackend.*:*Decode*:*Fused*'
CUDA_VISIBLE_DEVICES=0 memcheck '*persistent*:CudaCascade.DecodePartOnAnotherStream*'
fi
