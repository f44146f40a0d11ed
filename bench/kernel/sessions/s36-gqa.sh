#!/usr/bin/env bash
# Session 36's device call (nvidia-h200): every GQA group size on the GPU (DecodeSlicing,
# prefixd/kernels/decode_kernel_choice.h). Binaries carried as $CARRY/bins.tar.xz (the GPU tests,
# the kernel benchmark, prefixd); logs in $OUT, also packed as $OUT/all.tgz.
#   1. the new cascade cases (g = 3, 5, 6, 7, 9, 12, 16, 32, 64) in every cascade suite (default,
#      decode beside the prefix, fused), then every cascade and decode GPU test;
#   2. compute-sanitizer memcheck and racecheck on the new cases of the default cascade;
#   3. the kernel benchmark at g = 3, 5, 7, 16, 32 beside the compiled sizes 4 and 8 (bf16, D 128),
#      each step checked against the CPU backend;
#   4. the main job on the GPU at 40/8 and 28/4 heads (its own sampled check).
# PART=2 runs 1 and 2 only.
# Run 1: CARRY=.carry/s36a bash bench/kernel/sessions/s36-gqa.sh (its g = 80 case exceeded the tests' workspace
#   of 64 query heads, so that case and the two tests that walk every case failed with that error;
#   the case became g = 64). Run 2: CARRY=.carry/s36b PART=2 bash bench/kernel/sessions/s36-gqa.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s36-gqa
run_new_cases_checks '*gqa3_*:*gqa5_*:*gqa6_*:*gqa7_*:*gqa9_*:*gqa12_*:*gqa16_*:*mqa*' \
  "*CudaCascadeTest.*gqa5_*:*CudaCascadeTest.*gqa12_*:*CudaCascadeTest.*mqa*:*CudaCascadeTest.*gqa3_peaky*"
[ "${PART:-1}" = 2 ] && { pack_logs; exit 0; }
timeout 240 $B --heads 32/8,24/8,40/8,64/8,28/4,32/2,32/1 -b 64,256 -p 8192,32768 -s 256 --dtype bf16 -c 2 \
  --no-baseline --csv "$OUT/bench.csv" >"$OUT/bench.txt" 2>&1
echo "bench rc=$? $(grep 'wrong results' "$OUT/bench.txt")"
awk -F, 'NR==1{for(i=1;i<=NF;i++)c[$i]=i; next} {printf "%s/%s B%s P%s S%s prefix %s suffix %s total %s graph %s ratio %s wrong %s\n",
  $c["h_qo"],$c["h_kv"],$c["batch"],$c["prefix"],$c["suffix"],$c["prefix_us"],$c["suffix_us"],$c["total_us"],$c["graph_us"],$c["ratio"],$c["wrong"]}' "$OUT/bench.csv"
run_main_job_heads 40/8 28/4
pack_logs
