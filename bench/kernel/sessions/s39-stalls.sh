#!/usr/bin/env bash
# Session 39, run 1 (nvidia-h200): where the compute-bound sm_90a prefix kernel's warps stall.
# Nsight Compute's PC sampling on one launch of the prefix probe (32/8 B256 P32768, head_dim 128
# and 64, fp16), clocks not locked: the stall-reason totals (WarpStateStats) and the per-SASS
# instruction samples (source page, CSV), so that the tensor pipe's ~33% idle time (session 27:
# 66.8% busy, 0.60 eligible warps per scheduler) is put on instructions, not guessed.
#   CARRY=.carry/s39a bash bench/kernel/sessions/s39-stalls.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s39-stalls
ncu --version | tail -1
P=/tmp/b/prefixd_prefix_probe
for shape in 32/8:256:32768 32/8:256:32768:64; do
  tag=$(echo "$shape" | tr '/:' '__')
  timeout 240 ncu --kernel-name regex:PrefixAttentionWgmma --launch-skip 2 --launch-count 1 --clock-control none \
    --section SpeedOfLight --section WarpStateStats --section SourceCounters --section SchedulerStats \
    --metrics sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active \
    -f -o "$OUT/prof-$tag" $P --kernel wgmma --iters 3 --warmup 1 --shape "$shape" >"$OUT/ncu-$tag.txt" 2>&1
  echo "ncu $shape rc=$?"
  ncu -i "$OUT/prof-$tag.ncu-rep" --page details --print-details all >"$OUT/details-$tag.txt" 2>&1
  grep -E "Duration|gmma|pipe_xu|Eligible|Issued Warp|Warp Cycles Per Issued|Stall|stall" "$OUT/details-$tag.txt" | head -40
  ncu -i "$OUT/prof-$tag.ncu-rep" --page source --csv --print-source sass >"$OUT/sass-$tag.csv" 2>&1
  echo "sass rows $(wc -l <"$OUT/sass-$tag.csv")"; head -3 "$OUT/sass-$tag.csv" | cut -c1-400
  ncu -i "$OUT/prof-$tag.ncu-rep" --page raw --csv >"$OUT/raw-$tag.csv" 2>&1
  rm -f "$OUT/prof-$tag.ncu-rep"
done
pack_logs
