#!/usr/bin/env bash
# Session 86, run 1 (nvidia-h200 asked; an H100 gives ratios, not bar figures): session 85's run 3
# (never run: no machine) with the final trees. Three builds of the kernel benchmark in turn,
# twice (run_build_rounds): old = HEAD 5e5cbbe (before the speculative softmax); spec = this tree
# (P·V's wait after the softmax); early = this tree with bench/kernel/results/s85/early-pv-wait.patch
# (the wait written before the softmax, where ptxas had hoisted it in 5e5cbbe's build). Then
# issue4-grid.sh's grid and head_dim rows with spec and with early (so that whichever is kept has
# its grid from this call), then early's RisingMax, peaky and long-chunk prefix GPU tests.
# Carry (flattened, one tarball; xz -9: ~21 MB):
#   mkdir -p /tmp/c4; cp build/bench/prefixd_kernel_bench /tmp/c4/prefixd_kernel_bench_spec
#   cp build/tests/prefixd_gpu_tests /tmp/c4/prefixd_gpu_tests_spec; cp build/launch/prefixd \
#     build/tests/prefixd_mpi_tests /tmp/c4/; (HEAD 5e5cbbe's bench) -> /tmp/c4/prefixd_kernel_bench_old
#   git apply bench/kernel/results/s85/early-pv-wait.patch && ninja -C build bench/prefixd_kernel_bench \
#     tests/prefixd_gpu_tests; cp them to /tmp/c4/*_early; git apply -R (the same patch)
#   tar -C /tmp/c4 -cf - . | xz -9 -T2 > .carry/s86/bins.tar.xz
#   CARRY=.carry/s86 bash bench/kernel/sessions/s86-run1.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s86-run1
for b in old spec early; do mkdir -p /tmp/$b && cp /tmp/b/prefixd_kernel_bench_$b /tmp/$b/prefixd_kernel_bench; done

run_build_rounds ab "old early spec" --heads 32/32,32/8 -b 64,256 -p 8192,32768 -s 256 --head-dim 64,128 --dtype fp16 \
  --no-baseline --no-graph -c 1
show_prefix_rounds ab "old early spec"

# issue4-grid.sh's two commands, per build (GRID_BUILDS, "spec early": a call short of device time
# gives "spec", this tree's).
for b in ${GRID_BUILDS:-spec early}; do
  mkdir -p "$OUT/$b"
  timeout 150 /tmp/$b/prefixd_kernel_bench --heads 32/32,32/8 -b 16,64,256 -p 1024,8192,32768 -s 32,256 \
    --dtype fp16,bf16 --no-baseline -c 1 --read-floor --measured-choice --csv "$OUT/$b/grid.csv" >"$OUT/$b/grid.txt" 2>&1
  echo "$b grid rc=$?"
  timeout 80 /tmp/$b/prefixd_kernel_bench --heads 32/32,32/8 -b 256 -p 32768 -s 256 --head-dim 64,256 \
    --dtype fp16,bf16 --no-baseline -c 1 --read-floor --measured-choice --csv "$OUT/$b/dims.csv" >"$OUT/$b/dims.txt" 2>&1
  echo "$b dims rc=$?"
  for t in grid dims; do
    python3 bench/kernel/fused_floor_table.py "$OUT/$b/$t.csv" --log "$OUT/$b/$t.txt" >"$OUT/$b/$t-fused-floor.md" 2>&1
    echo "$b $t: $(grep -E 'shapes within the bar|^ceilings' "$OUT/$b/$t-fused-floor.md" | tr '\n' ' ')"
  done
done
cp /tmp/b/prefixd_gpu_tests_early /tmp/b/prefixd_gpu_tests
GPU_TESTS_TIMEOUT=90 run_gpu_tests '*RisingMax*:*wgmma_Peaky*:*wgmma_LongChunk*'
pack_logs
