#!/usr/bin/env bash
# Session 85, run 3 (nvidia-h200 asked): three builds of the kernel benchmark in turn, twice
# (run_build_rounds): old = HEAD 5e5cbbe; spec = the speculative softmax as in run 2 (P·V's wait
# after the softmax, where the new code's branches leave it); early = the same with the wait for
# the previous tile's P·V written before the softmax (where ptxas had hoisted it in HEAD's build).
# Run 2 (an H100) had the speculative softmax 3-9% faster on the prefix parts of the B256 P32768
# head_dim-128 steps (items of 16384 tokens) and of the concurrent 32/8 B256 steps, but 2-4% slower
# at 32/32 B256 P8192 and 32/8 B64 (items of 1024-4096 tokens), ~1% faster at head_dim 64. Then
# issue4-grid.sh's grid and head_dim rows with early's benchmark, and early's RisingMax and peaky
# prefix GPU tests.
# Not run in session 85: no machine started for it (the device budget ran out on refused starts).
# Carry (flattened): early's prefixd_kernel_bench and prefixd_gpu_tests (this tree with
# bench/kernel/results/s85/early-pv-wait.patch applied), this tree's benchmark as
# prefixd_kernel_bench_spec and HEAD 5e5cbbe's as prefixd_kernel_bench_old, in one tarball (xz -9:
# ~11 MB, so that the working tree and the carry stay under the device's 64 MiB):
#   mkdir -p /tmp/c3 .carry/s85c && cp build/bench/prefixd_kernel_bench /tmp/c3/prefixd_kernel_bench_spec
#   (HEAD 5e5cbbe's build) cp .../bench/prefixd_kernel_bench /tmp/c3/prefixd_kernel_bench_old
#   git apply bench/kernel/results/s85/early-pv-wait.patch && ninja -C build bench/prefixd_kernel_bench \
#     tests/prefixd_gpu_tests && cp build/bench/prefixd_kernel_bench build/tests/prefixd_gpu_tests /tmp/c3/ \
#     && git apply -R bench/kernel/results/s85/early-pv-wait.patch
#   tar -C /tmp/c3 -cf - . | xz -9 -T2 > .carry/s85c/bins.tar.xz
#   CARRY=.carry/s85c bash bench/kernel/sessions/s85-run3.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s85-run3
for b in old spec; do mkdir -p /tmp/$b && cp /tmp/b/prefixd_kernel_bench_$b /tmp/$b/prefixd_kernel_bench; done
mkdir -p /tmp/early && cp /tmp/b/prefixd_kernel_bench /tmp/early/prefixd_kernel_bench

common=(--no-baseline --no-graph -c 1)
# One call per build and round (the device budget left was ~440 s): fp16, head_dim 64 and 128.
run_build_rounds ab "old early spec" --heads 32/32,32/8 -b 64,256 -p 8192,32768 -s 256 --head-dim 64,128 --dtype fp16 \
  "${common[@]}"
show_prefix_rounds ab "old early spec"

# issue4-grid.sh's two commands with early's benchmark.
timeout 200 $B --heads 32/32,32/8 -b 16,64,256 -p 1024,8192,32768 -s 32,256 --dtype fp16,bf16 \
  --no-baseline -c 1 --read-floor --measured-choice --csv "$OUT/grid.csv" >"$OUT/grid.txt" 2>&1
echo "grid rc=$?"
timeout 100 $B --heads 32/32,32/8 -b 256 -p 32768 -s 256 --head-dim 64,256 --dtype fp16,bf16 \
  --no-baseline -c 1 --read-floor --measured-choice --csv "$OUT/dims.csv" >"$OUT/dims.txt" 2>&1
echo "dims rc=$?"
for t in grid dims; do
  python3 bench/kernel/fused_floor_table.py "$OUT/$t.csv" --log "$OUT/$t.txt" >"$OUT/$t-fused-floor.md" 2>&1
  echo "$t: $(grep -E 'shapes within the bar|^ceilings' "$OUT/$t-fused-floor.md" | tr '\n' ' ')"
done
GPU_TESTS_TIMEOUT=60 run_gpu_tests '*RisingMax*:*wgmma_Peaky*:*wgmma_LongChunk*'
pack_logs
