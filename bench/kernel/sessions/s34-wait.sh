#!/usr/bin/env bash
# Session 34's device calls (nvidia-h200), one per PART. Binaries carried as $CARRY/bins.tar.xz;
# logs in $OUT, also packed as $OUT/all.tgz.
#   PART=1: the bound on a finer prefix → decode dependency. Today every decode CTA of a cascade
#           step waits (griddepcontrol.wait) for the whole prefix grid to complete before its
#           epilogue; PREFIXD_DECODE_WAIT_DIAG=1 lets only the grid's last CTA wait (results may
#           be wrong): the most that "each item waits only for its own prefix chunks" could gain.
#           Variants interleaved per shape: =0 first (it takes the first-variant slow mode, session
#           33), then =1, then default; the issue's fp16 grid and unseen bf16 shapes.
#           Run 1: CARRY=.carry/s34a (HEAD 25fd641 with kernel/results/s34/wait-diag.patch applied;
#           the diagnostic was removed after the run).
# Run 2 (no PART; the probe alone, HEAD's prefixd_param_probe as .carry/s34b/probe.tar.xz):
#   for r in 1 2; do prefixd_param_probe --iters 50; done
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s34-wait
GRID="--heads 32/32,32/8 -b 16,64,256 -p 1024,8192,32768 -s 32,256 --dtype fp16"

case "${PART:-1}" in
1)
  v="PREFIXD_DECODE_WAIT_DIAG=0,PREFIXD_DECODE_WAIT_DIAG=1,default"
  RUN_TIMEOUT=300 run_variants grid "$v" $GRID
  run_variants unseen "$v" --heads 16/16,32/32,32/4 -b 24,96 -p 3072,12288 -s 64,384 --dtype bf16
  python3 bench/kernel/variant_diff.py "$OUT/grid.csv" "$OUT/unseen.csv" --against PREFIXD_DECODE_WAIT_DIAG=1
  ;;
esac
pack_logs
