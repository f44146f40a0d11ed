#!/usr/bin/env bash
# Session 88, run 2: the short-item loss of the speculative softmax (s85; +4% at 32/8 D128 B64
# P8192, items of 1024-4096 tokens) — NOTES-prefix s87's test. Nsight Compute (clocks not locked)
# on one launch of the prefix kernel at 32/8 D128 B64 P8192 S256 fp16, s84's exact softmax (old)
# and this tree's speculative one (spec), then the same at 32/32 B256 P8192 (also slower on spec,
# +0.7-2.4%): stall reasons (a rise in no_instruction would name instruction fetch), warp
# instructions per launch, the hottest lines. Then the prefix parts of both builds timed in turn,
# twice, for the same card. Carry .carry/s86 (old = HEAD 5e5cbbe's bench, spec = s85's tree; the
# prefix kernel unchanged since, see git log kernels/cuda/sm90a).
#   CARRY=.carry/s86 bash bench/kernel/sessions/s88-run2.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s88-run2
for b in old spec; do mkdir -p /tmp/$b && cp /tmp/b/prefixd_kernel_bench_$b /tmp/$b/prefixd_kernel_bench; done
for b in old spec; do
  for shape in "32/8 64" "32/32 256"; do
    read -r heads batch <<<"$shape"
    tag=$b-$(echo "$heads" | tr / x)-b$batch
    echo "== $tag"
    B=/tmp/$b/prefixd_kernel_bench run_ncu_stalls "$tag" PrefixAttentionWgmmaKernel 1 /tmp/$b/prefixd_kernel_bench \
      -d 128 --heads "$heads" -b "$batch" -p 8192 -s 256 --dtype fp16 --no-baseline --no-graph -c 0 -n 3 -w 1 \
      --copy-gib 1 --gemm-n 2048 --settle-ms 0 | head -30
  done
done
run_build_rounds ab "old spec" --heads 32/32,32/8 -b 16,64,256 -p 8192 -s 256 --dtype fp16 --no-baseline --no-graph -c 1
show_prefix_rounds ab "old spec"
pack_logs
