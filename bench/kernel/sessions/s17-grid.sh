#!/usr/bin/env bash
# Session 17, one device call (nvidia-h200): the performance issue's grid (fp16 and bf16, both head
# pairs, B 16/64/256, P 1024/8192/32768, S 32/256) with the variants $VARIANTS interleaved per shape,
# each variant against the issue's fused floor (fused_floor_table.py), the head_dim 64/256 rows,
# then the planner check (--planner-check, P 128-32768, fp16 and bf16) once per setting in
# $PLANNER_ENVS ("-" = the defaults; SKIP_PLANNER=1: none). Binaries carried as $CARRY/bins.tar.xz.
#   run 6 (a first, uncommitted form: every short prefix a fine-chunk candidate): CARRY=.carry/s17c
#          VARIANTS=default,PREFIXD_FINE_PREFIX_CHUNK=0 PLANNER_ENVS="- PREFIXD_FINE_PREFIX_CHUNK=0"
#   run 9 (final binaries, ceff9b7): CARRY=.carry/s17e VARIANTS=default PLANNER_ENVS=-
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s17-grid
VARIANTS=${VARIANTS:-default}
if [ -z "${SKIP_GRID:-}" ]; then
  timeout 300 $B --heads 32/32,32/8 -b 16,64,256 -p 1024,8192,32768 -s 32,256 --dtype fp16,bf16 --no-baseline -c 1 \
    --variants "$VARIANTS" --csv "$OUT/grid.csv" >"$OUT/grid.txt" 2>&1
  echo "grid rc=$?"; grep "wrong results" "$OUT/grid.txt"
  timeout 100 $B --heads 32/32,32/8 -b 256 -p 32768 -s 256 --head-dim 64,256 --dtype fp16,bf16 --no-baseline -c 1 \
    --csv "$OUT/dims.csv" >"$OUT/dims.txt" 2>&1
  echo "dims rc=$?"; grep "wrong results" "$OUT/dims.txt"
  for v in ${VARIANTS//,/ }; do
    f="$OUT/grid-$(echo "$v" | tr -c 'A-Za-z0-9._\n-' '_')-floor.md"  # names $OUT can hand back
    python3 bench/kernel/fused_floor_table.py "$OUT/grid.csv" --log "$OUT/grid.txt" --variant "$v" >"$f" 2>&1
    echo "== $v: $(tail -1 "$f")"
  done
  python3 bench/kernel/fused_floor_table.py "$OUT/dims.csv" --log "$OUT/dims.txt" >"$OUT/dims-floor.md" 2>&1
  echo "== dims: $(tail -1 "$OUT/dims-floor.md")"
fi
i=0
[ -n "${SKIP_PLANNER:-}" ] && exit 0
for e in ${PLANNER_ENVS:--}; do
  i=$((i + 1))
  if [ "$e" = "-" ]; then env_set=(); else env_set=("$e"); fi
  env "${env_set[@]}" timeout 240 $B --planner-check --dtype fp16,bf16 -c 1 >"$OUT/planner$i.txt" 2>&1
  echo "== planner check $i ($e) rc=$?"; grep -E "SLOW|WRONG|worst|over" "$OUT/planner$i.txt" | head -12
done
