#!/usr/bin/env bash
# Session 59, run 1 (nvidia-h200): why the merge kernel takes ~12.5 µs for the 8192 rows of a B256
# x 32-head step (bench/RESULTS.md, sessions 48-49: in the concurrent step and as a part alone, L2
# hits or not), when its ~17 MB of states would take ~5 µs at the copy bandwidth. The merge part
# under each L2 flush mode (write: the issue's method; clean; none) on the concurrent 32/8 B256
# P32768 S256 step and the sequential --no-fuse 32/32 B256 P8192 S256 step (runs of 2 states), then
# Nsight Compute on one merge launch of each (launch stats, occupancy, memory, stalls).
# Also the GPU test session 58 added and could not run (the planner settings read once).
#   CARRY=.carry/s59a bash bench/kernel/sessions/s59-merge.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s59-merge
run_gpu_tests 'CudaCascade.PlannerSettingsAreReadOnceAtConstruction:CudaCascade.HeadDim128LongTile*'
for f in write clean none; do
  run_variants conc-$f default -d 128 --heads 32/8 -b 256 -p 32768 -s 256 --dtype fp16 --flush $f
  run_variants nofuse-$f default -d 128 --heads 32/32 -b 256 -p 8192 -s 256 --dtype fp16 --flush $f --no-fuse
done
show_parts conc-write conc-clean conc-none nofuse-write nofuse-clean nofuse-none
ncu_merge() {
  local name=$1; shift
  timeout 150 ncu --kernel-name "regex:Merge" --launch-skip 3 --launch-count 1 --clock-control none \
    --section SpeedOfLight --section LaunchStats --section Occupancy --section MemoryWorkloadAnalysis \
    --section WarpStateStats --section SchedulerStats --section SourceCounters -f -o "$OUT/$name" \
    $B "$@" --no-baseline --no-graph -c 1 -n 3 -w 1 >"$OUT/$name-ncu.txt" 2>&1
  echo "ncu $name rc=$?"
  ncu -i "$OUT/$name.ncu-rep" --page details --print-details all >"$OUT/$name-details.txt" 2>&1
  grep -E "^  [A-Za-z].*Kernel|Duration|Grid Size|Registers|Achieved Occupancy|Theoretical Occupancy|Waves Per SM|DRAM Throughput|Memory Throughput|L2 Hit|L1/TEX Hit|Issued Warp|No Eligible|Active Warps Per" \
    "$OUT/$name-details.txt" | head -24
  ncu -i "$OUT/$name.ncu-rep" --page source --csv --print-source sass >"$OUT/$name-sass.csv" 2>&1
  rm -f "$OUT/$name.ncu-rep"
  python3 bench/kernel/ncu_stalls.py "$OUT/$name-sass.csv" --top 16 --per 0
}
ncu_merge ncu-conc -d 128 --heads 32/8 -b 256 -p 32768 -s 256 --dtype fp16
ncu_merge ncu-nofuse -d 128 --heads 32/32 -b 256 -p 8192 -s 256 --dtype fp16 --no-fuse
pack_logs
