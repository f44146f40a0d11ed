#!/usr/bin/env bash
# Session 57, run 3 (nvidia-h200): the whole GPU suite on the session's final binaries (8 shards),
# then the main job on the GPU at shapes and workloads beyond its default, each checking its sampled
# outputs against the single-rank unshared computation (exit non-zero on a mismatch): head_dim 64
# with GQA 3 and page size 1, head_dim 256 with GQA 16 and page 64, GQA 5 with page 7 and staggered
# arrivals, a mixed workload (a 1-token document, short and long ones, token ids), the tree reduction
# with pipeline chunks and split own rows, and a 1M-token document on one GPU (4 layers).
#   CARRY=.carry/s57c bash bench/kernel/sessions/s57-check.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s57-check
OUT=$OUT/check PREFIXD_BIN_DIR=/tmp/b PREFIXD_SKIP_CPU_TESTS=1 PREFIXD_SKIP_BENCH=1 PREFIXD_SKIP_SANITIZER=1 \
  PREFIXD_TIMEOUT_TESTS=300 PREFIXD_TEST_SHARDS=8 bash launch/gpu-check.sh 2>&1 | tail -12
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
main() {
  local name=$1; shift
  timeout 150 mpirun --allow-run-as-root -np 1 /tmp/b/prefixd "$@" >"$OUT/main-$name.txt" 2>&1
  echo "main $name rc=$? $(grep -E '^# check: [0-9]+ of|^# done' "$OUT/main-$name.txt" | cut -c1-150 | tr '\n' ' ')"
}
main d64-gqa3-page1 --head-dim 64 --qo-heads 12 --kv-heads 4 --dtype fp16 --page-size 1 --doc-tokens 50000 \
  --questions 70 --question-tokens 3 --decode-steps 5 --layers 4
main d256-gqa16-page64 --head-dim 256 --qo-heads 16 --kv-heads 1 --page-size 64 --doc-tokens 70000 --questions 33 \
  --layers 4 --decode-steps 6
main gqa5-page7 --qo-heads 40 --kv-heads 8 --page-size 7 --doc-tokens 123457 --questions 100 --arrival-spread 10 \
  --layers 4 --decode-steps 8
main mixed --workload bench/kernel/sessions/s57-mixed.jsonl --layers 8
main tree-chunks-split --reduction tree --chunks 2 --split --layers 8 --doc-tokens 65536
main doc-1m --doc-tokens 1048576 --questions 128 --question-tokens 64 --layers 4 --decode-steps 4
pack_logs
