#!/usr/bin/env bash
# Session 49, run 1 (nvidia-h200): HEAD's binaries (session 48's last commits never ran whole on a
# GPU), then why the concurrent step's prefix runs ~15 µs slower beside the decode than alone
# (session 48's trace: 255 against 240 µs on 112 CTAs).
#   1. launch/gpu-check.sh: the whole GPU suite, memcheck, racecheck;
#   2. L2 policies (no rebuild: environment switches), 32/8 D128 B256 P32768 S256 fp16 and bf16,
#      each variant once per shape in turn: default (prefix K/V by the plan's hint, decode
#      evict-first), the prefix's K/V evict-last (PREFIXD_SM90A_KV_POLICY=last), evict-normal,
#      the decode's K/V evict-normal (PREFIXD_DECODE_EVICT_FIRST=0);
#   3. clocks: nvidia-smi sampled every 20 ms while the kernel benchmark times that shape 3000
#      times sequential (PREFIXD_CONCURRENT_DECODE_SMS=0), then concurrent (the planner's k), each
#      process's start and end stamped, so the SM clock and power of each phase can be read.
#   CARRY=.carry/s49a bash bench/kernel/sessions/s49-probe.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s49-probe
OUT=$OUT/check PREFIXD_BIN_DIR=/tmp/b PREFIXD_SKIP_CPU_TESTS=1 PREFIXD_SKIP_BENCH=1 PREFIXD_TIMEOUT_TESTS=300 \
  bash launch/gpu-check.sh 2>&1 | tail -7

V=default,PREFIXD_SM90A_KV_POLICY=last,PREFIXD_SM90A_KV_POLICY=normal,PREFIXD_DECODE_EVICT_FIRST=0
RUN_TIMEOUT=120 run_variants l2 "$V" -d 128 --heads 32/8 -b 256 -p 32768 -s 256 --dtype fp16,bf16
show_parts l2

# Clocks. The field of the throttle reasons was renamed (clocks_event_reasons); ask for the one
# this driver knows.
Q=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu
if nvidia-smi --query-gpu=clocks_event_reasons.active --format=csv,noheader >/dev/null 2>&1; then
  Q=$Q,clocks_event_reasons.active
else
  Q=$Q,clocks_throttle_reasons.active
fi
nvidia-smi --query-gpu=$Q --format=csv,noheader -lms 20 >"$OUT/clocks.csv" 2>&1 &
SMI=$!
sleep 1
for v in PREFIXD_CONCURRENT_DECODE_SMS=0 default; do
  echo "start $v $(date +%H:%M:%S.%N)" >>"$OUT/clock-phases.txt"
  env $([ $v = default ] || echo $v) timeout 120 $B -d 128 --heads 32/8 -b 256 -p 32768 -s 256 --dtype fp16 \
    --no-baseline --no-graph -c 0 -n 3000 -w 50 --csv "$OUT/clock-$v.csv" >"$OUT/clock-$v.txt" 2>&1
  echo "end $v rc=$? $(date +%H:%M:%S.%N)" >>"$OUT/clock-phases.txt"
  sleep 1
done
kill $SMI
cat "$OUT/clock-phases.txt"
for v in PREFIXD_CONCURRENT_DECODE_SMS=0 default; do
  awk -F, -v v=$v 'NR>1 {printf "%s prefix %.1f suffix %.1f merge %.1f total %.1f\n",v,$13,$14,$15,$16}' "$OUT/clock-$v.csv"
done
# The SM clock's distribution over the samples at > 300 W (the timed loops), per process.
python3 - "$OUT" <<'EOF'
import sys, datetime
out = sys.argv[1]
phases = {}
for line in open(f"{out}/clock-phases.txt"):
    w = line.split()
    t = datetime.datetime.strptime(w[-1][:15], "%H:%M:%S.%f").time()
    phases.setdefault(w[1], []).append(t)
rows = []
for line in open(f"{out}/clocks.csv"):
    f = [x.strip() for x in line.split(",")]
    try:
        t = datetime.datetime.strptime(f[0].split()[-1][:15], "%H:%M:%S.%f").time()
        rows.append((t, float(f[1].split()[0]), float(f[3].split()[0]), f[5] if len(f) > 5 else ""))
    except (ValueError, IndexError):
        continue
for name, (t0, t1) in phases.items():
    sel = [r for r in rows if t0 <= r[0] <= t1]
    busy = sorted(r[1] for r in sel if r[2] > 300)
    watts = sorted(r[2] for r in sel)
    if not sel:
        print(name, "no samples"); continue
    q = lambda a, p: a[min(len(a) - 1, int(p * len(a)))] if a else float("nan")
    print(f"{name}: {len(sel)} samples, {len(busy)} at > 300 W; SM MHz at > 300 W p10 {q(busy,.1)} median "
          f"{q(busy,.5)} min {busy[0] if busy else 'n/a'}; W median {q(watts,.5)} max {watts[-1]}; reasons "
          f"{sorted(set(r[3] for r in sel))}")
EOF
pack_logs
