#!/usr/bin/env bash
# Session 75, run 3 (nvidia-h200): this session's two kernel changes against HEAD's binaries
# ($CARRY_OLD): the merge of long runs of few rows one block per row (MergeLongRunsKernel) and the
# 2-head CUDA-core decode at head_dim 256 bounded for 4 CTAs per SM (115 registers, no spill; 6 per SM
# spilled at 80). The latter was timed on 16/2 shapes, which are groups of 8, not 2: both builds ran
# the same decode there (run 7 found the mix-up); it was reverted unmeasured.
#   1. the GPU tests of the merge, the decodes, head_dim 256 and the cascade (8 shards), memcheck and
#      racecheck on the merge tests;
#   2. the parts timed alone (`--calibrate`: every part of the cascade, plain decode and the narrow
#      and half cascades) by each build in turn, twice: plain decode's long merges (one and three
#      requests over 12344-65536 tokens) and the 16/2 (g = 8) decode at head_dim 256 (B3-256, S300-1024).
#   CARRY=.carry/s75b CARRY_OLD=.carry/s75a bash bench/kernel/s75-run3.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
source bench/kernel/device-setup.sh s75-run3
mkdir -p /tmp/old && tar -C /tmp/old -xJf "${CARRY_OLD:?}/bins.tar.xz"
run_test_shards '*Merge*:*CudaCoresDecodeTest*:*DecodePipelineTest*:*CudaDecodeVariantTest*:*d256*:*CudaCascadeTest*:*CudaPlanner*'
run_sanitizers '*CudaMergeStates*'
parts() {  # parts NAME ARGS...: both builds in turn, twice; the part samples of each
  local name=$1; shift
  for i in 1 2; do for b in old new; do
    local exe=/tmp/b/prefixd_kernel_bench; [ $b = old ] && exe=/tmp/old/prefixd_kernel_bench
    timeout 100 $exe --calibrate /dev/null "$@" >"$OUT/$name-$b$i.txt" 2>&1
    echo "$name $b$i rc=$?"
  done; done
  echo "== $name: measured us per sample, old1 new1 old2 new2"
  paste <(grep '^#   [fb][pf]16 ' "$OUT/$name-old1.txt" | awk '{printf "%-52s %7.1f\n", $2" "$3" "$4" "$5" "$6" "$7" "$8" "$9, $(NF-2)}') \
        <(grep '^#   [fb][pf]16 ' "$OUT/$name-new1.txt" | awk '{printf "%7.1f\n", $(NF-2)}') \
        <(grep '^#   [fb][pf]16 ' "$OUT/$name-old2.txt" | awk '{printf "%7.1f\n", $(NF-2)}') \
        <(grep '^#   [fb][pf]16 ' "$OUT/$name-new2.txt" | awk '{printf "%7.1f\n", $(NF-2)}') | grep -v " prefix "
}
parts merge-fp16 --dtype fp16 --heads 32/8 -b 1 -p 65536 -s 1,1000
parts merge-bf16 --dtype bf16 --heads 16/2 -d 64,256 -b 3 -p 12344 -s 7 --page-size 8
parts gqa2-d256 --dtype bf16 --heads 16/2 -d 256 -b 3,100,256 -p 1000 -s 300,1024 --page-size 8
pack_logs
