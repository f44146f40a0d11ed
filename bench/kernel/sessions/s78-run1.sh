#!/usr/bin/env bash
# Session 78, run 1 (nvidia-h200): the decode epilogue rewritten (FinishDecodeItem: prefix states in
# registers instead of staged through shared memory, one rescale per pass instead of a branch per
# chunk, the own state unnormalised; PrefetchPrefixStates without a runtime division):
#   1. every decode, cascade and merge GPU test in 8 shards (no sanitizer);
#   2. A/B against the build before (prefixd_kernel_bench_old, HEAD fcbc31a), old new old new in
#      separate processes, the model's plan: the S32 rows of the grid at P1024 / P8192 (fp16, and the
#      GQA-1 near misses in bf16), the S256 P1024 rows, the headline shapes, and other configurations
#      whose register counts moved (head_dim 64 and 256, GQA 8 and 16);
#   3. Nsight Compute on the new decode at 32/8 B256 P1024 S32 fp16: instructions per item (s77: 3007).
#   CARRY=.carry/s78a bash bench/kernel/sessions/s78-run1.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s78-run1
run_test_shards '*Decode*:*Cascade*:*Merge*:*Fused*'
Q="--no-baseline --no-graph -c 1 --copy-gib 1 --gemm-n 2048 --settle-ms 200"
run_bench_ab "$OUT/ab-s32" -d 128 --heads 32/32,32/8 -b 16,64,256 -p 1024,8192 -s 32 --dtype fp16 $Q
run_bench_ab "$OUT/ab-bf16" -d 128 --heads 32/32 -b 16,64 -p 8192 -s 32 --dtype bf16 $Q
run_bench_ab "$OUT/ab-s256" -d 128 --heads 32/32,32/8 -b 64,256 -p 1024 -s 256 --dtype fp16 $Q
run_bench_ab "$OUT/ab-long" -d 128 --heads 32/32,32/8 -b 256 -p 32768 -s 32,256 --dtype fp16 $Q
run_bench_ab "$OUT/ab-d64" -d 64 --heads 32/2,32/8 -b 64,256 -p 1024 -s 32,256 --dtype fp16 $Q
run_bench_ab "$OUT/ab-g8" -d 128,256 --heads 64/8 -b 64,256 -p 1024 -s 32 --dtype fp16 $Q
run_ncu_stalls dec32 DecodeAttentionMma 1 $B -d 128 --heads 32/8 -b 256 -p 1024 -s 32 --dtype fp16 --no-baseline \
  --no-graph -c 0 -n 3 -w 1 --copy-gib 1 --gemm-n 2048 --settle-ms 0 | head -12
python3 - "$OUT/dec32-sass.csv" <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
h = rows[1]; i = h.index("Instructions Executed")
print("decode warp instructions per item (2048 items): %.0f" % (sum(int(r[i]) for r in rows[2:] if r[i].isdigit()) / 2048))
PY
pack_logs
