#!/usr/bin/env bash
# Session 75, run 8 (nvidia-h200): groups of 5-8 heads at head_dim 256 on the tensor-core decode
# kernel's 4-row group in two slices ($CARRY, SlicedOnTensorCores) against HEAD's CUDA-core kernel
# ($CARRY_OLD), which run 7 measured at 1.36 TB/s for 16/2 (g = 8) D256 B256 S1024 against 3.96
# for 24/8 (g = 3, tensor cores). The GPU tests of head_dim 256 and the decodes first (8 shards),
# memcheck on the g = 8 head_dim-256 tests; then the parts alone by both builds in turn, twice.
#   CARRY=.carry/s75e CARRY_OLD=.carry/s75b bash bench/kernel/sessions/s75-run8.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s75-run8
mkdir -p /tmp/old && tar -C /tmp/old -xJf "${CARRY_OLD:?}/bins.tar.xz"
run_test_shards '*d256*:*CudaCoresDecodeTest*:*DecodePipelineTest*:*CudaDecodeVariantTest*:*CudaFusedMergeTest*'
timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 /tmp/b/prefixd_gpu_tests --gtest_brief=1 \
  --gtest_filter='*h8kv1_d256*:*h16kv2_d256*' >"$OUT/memcheck.log" 2>&1
echo "memcheck rc=$? $(grep -E 'ERROR SUMMARY|^\[  PASSED' "$OUT/memcheck.log" | tr '\n' ' ')"
A="--no-baseline --no-graph -c 2 --dtype bf16,fp16 -d 256"
for i in 1 2; do for b in old new; do
  exe=/tmp/b/prefixd_kernel_bench; [ $b = old ] && exe=/tmp/old/prefixd_kernel_bench
  timeout 100 $exe --heads 16/2,64/8 -b 16,256 -p 1000,32768 -s 32,1024 $A --csv "$OUT/g8-$b$i.csv" >"$OUT/g8-$b$i.txt" 2>&1
  echo "g8 $b$i rc=$? $(grep 'wrong results' "$OUT/g8-$b$i.txt")"
done; done
echo "== suffix part alone / step total us: old1 new1 old2 new2"
paste -d, "$OUT"/g8-old1.csv "$OUT"/g8-new1.csv "$OUT"/g8-old2.csv "$OUT"/g8-new2.csv | awk -F, -v n=37 'NR>1 {
  printf "%s %s/%s B%s P%s S%s", $1, $3, $4, $6, $7, $8; for (i = 0; i < 4; ++i) printf " | %6.1f %6.1f", $(i*n+14), $(i*n+16); printf "\n"}'
pack_logs
