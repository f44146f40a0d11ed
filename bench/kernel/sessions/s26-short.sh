#!/usr/bin/env bash
# Session 26, device calls on nvidia-h200: short suffixes (S = 32), where the decode part is bound
# by each item's serial start and end (item → page table → K/V → ⊕), not by bytes in flight.
# Question of run 1: does a decode that keeps every warp's next item in flight (the streaming
# kernels, one CTA per SM: PREFIXD_DECODE_PERSISTENT + STREAM, with TMA or cp.async) beat the
# default one-CTA-per-item kernel there? Of runs 3-7: does one grid for the whole step (prefix and
# decode items side by side, the ⊕ by each request's last arrival) beat the two kernels on the
# small steps? Binaries carried as $CARRY/bins.tar.xz.
# Runs 3-7 need the one-launch cascade of results/s26/one-launch.patch (measured slower, reverted:
# `git apply bench/kernel/results/s26/one-launch.patch` on commit d6a0c4f, then build).
# Runs are the session's device calls (logs: bench/kernel/results/s26/runN-*):
#   run 1: CARRY=.carry/s26a PART=1   (S = 32: streaming decode kernels against the default)
#   run 2: CARRY=.carry/s26a PART=2   (stream-bound prefixes: the mma.sync prefix kernel, item targets)
#   run 3: CARRY=.carry/s26b PART=3   (the one-launch cascade, PREFIXD_ONE_LAUNCH: its GPU tests, then
#                                      against the default on the short and small grid shapes)
#   run 4: CARRY=.carry/s26c PART=4   (fixed launch at 48 KiB; tests; Nsight Compute on one small step:
#                                      fails, the benchmark's stream hold times out under its replays)
#   run 5: CARRY=.carry/s26c PART=5   (a CUPTI kernel trace of the same, bench/trace/cupti_trace.cc;
#                                      the tarball also holds libprefixd_cupti_trace.so, libcupti.so.13)
#   run 6: CARRY=.carry/s26c PART=6   (one launch: where do its ~45 µs come from; P 128/256 plans are
#                                      plain decode, no prefix items)
#   run 7: CARRY=.carry/s26d PART=7   (one launch without its merges, PREFIXD_ONE_LAUNCH_DIAG=1: WRONG
#                                      results on purpose; is the last arrival's ⊕ the ~30 µs?)
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s26-short
if [ "${PART:-1}" = 7 ]; then
  run_variants g7 "default,onelaunch,onelaunch+PREFIXD_ONE_LAUNCH_DIAG=1" --heads 32/8,32/32 -b 16,64 -p 1024 -s 32 --dtype fp16
  run_variants g7b "default,onelaunch,onelaunch+PREFIXD_ONE_LAUNCH_DIAG=1" --heads 32/8 -b 256 -p 1024 -s 256 --dtype fp16
  show_variants g7 g7b
  exit 0
fi
if [ "${PART:-1}" = 6 ]; then
  run_variants d8 "default,onelaunch" --heads 32/8,32/32 -b 16 -p 128,256,1024 -s 32 --dtype fp16
  run_variants d8n "default,onelaunch,onelaunch+PREFIXD_CHOOSE_LAYOUT=0" --heads 32/8 -b 16 -p 2048 -s 32 --dtype fp16 --no-fuse
  show_variants d8 d8n
  exit 0
fi
if [ "${PART:-1}" = 5 ]; then
  for v in default onelaunch; do
    mkdir -p "$OUT/trace-$v"
    LD_LIBRARY_PATH=/tmp/b CUDA_INJECTION64_PATH=/tmp/b/libprefixd_cupti_trace.so PREFIXD_TRACE_DIR="$OUT/trace-$v" \
      timeout 200 $B --heads 32/8 -b 16,64 -p 1024 -s 32 --variants $v -n 10 -w 2 --no-baseline --no-graph -c 0 \
      >"$OUT/trace-$v.txt" 2>&1
    echo "trace $v rc=$?"
    python3 - "$OUT"/trace-$v/trace.*.csv <<'PY'
import csv, sys, statistics, collections
d = collections.defaultdict(list)
for row in csv.DictReader(open(sys.argv[1])):
    if row['kind'] != 'kernel': continue
    name = row['name'].split('(')[0].split('<')[0][-40:] + ' ' + row['grid']
    d[name].append((int(row['end']) - int(row['start'])) / 1000)
for k, v in sorted(d.items(), key=lambda kv: -statistics.median(kv[1]) * len(kv[1]))[:14]:
    print(f"{k:60s} n={len(v):4d} median {statistics.median(v):8.2f} us  min {min(v):8.2f}")
PY
  done
  exit 0
fi
if [ "${PART:-1}" = 4 ]; then
  run_gpu_tests '*OneLaunch*'; grep -E "FAILED|Failure" "$OUT/tests.log" | head -20
  NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
  echo "ncu: $NCU"
  timeout 200 $NCU -k regex:'OneLaunch|PrefixAttention|DecodeAttention' -c 6 --section LaunchStats --section Occupancy \
    --section SpeedOfLight $B --heads 32/8 -b 16 -p 1024 -s 32 --variants onelaunch,default -n 1 -w 1 \
    --no-baseline --no-graph -c 0 >"$OUT/ncu.txt" 2>&1; echo "ncu rc=$?"
  grep -E "OneLaunch|PrefixAttention|DecodeAttention|Duration|Registers Per|Achieved Occupancy|Theoretical Occupancy|Block Limit|Dynamic Shared|Grid Size|==PROF==|ERR" "$OUT/ncu.txt" | head -80
  exit 0
fi
if [ "${PART:-1}" = 3 ]; then
  run_gpu_tests '*OneLaunch*'; grep -E "FAILED|Failure" "$OUT/tests.log" | head -20
  run_variants ol8 "default,onelaunch" --heads 32/8 -b 16,64,256 -p 1024,8192 -s 32,256 --dtype fp16
  run_variants ol32 "default,onelaunch" --heads 32/32 -b 16,64,256 -p 1024,8192 -s 32,256 --dtype fp16
  show_variants ol8 ol32
  exit 0
fi
if [ "${PART:-1}" = 2 ]; then
  T=PREFIXD_PREFIX_TARGET_ITEMS
  run_variants mp8 "default,mma-prefix,mma-prefix+$T=264,mma-prefix+$T=528,$T=264" --heads 32/8 -b 16 -p 1024,8192,32768 -s 32,256 --dtype fp16
  run_variants mp32 "default,mma-prefix,mma-prefix+$T=264,mma-prefix+$T=528,$T=264" --heads 32/32 -b 16,64 -p 1024,8192 -s 32,256 --dtype fp16
  show_variants mp8 mp32
  exit 0
fi
if [ "${PART:-1}" = 1 ]; then
  run_variants g4 "default,tma,persistent,w1,w4" --heads 32/8 -b 16,64,256 -p 1024,8192 -s 32 --dtype fp16
  run_variants g1 "default,persistent-items,persistent" --heads 32/32 -b 16,64,256 -p 1024,8192 -s 32 --dtype fp16
  show_variants g4 g1
  exit 0
fi
