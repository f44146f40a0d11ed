# Sourced by the kernel-benchmark scripts that run on a lent GPU machine (sessions/s*.sh,
# issue4-grid.sh) from the repository root: unpacks the carried binaries $CARRY/bins.tar.xz into
# /tmp/b, makes $OUT (default: /tmp/$1), prints the GPU and sets B to the kernel benchmark; then
# defines the helpers below (smi_start, smi_stop, mark, on_h200, pack_logs, run_gpu_tests,
# run_test_shards, run_whole_suite, run_sanitizers, run_variants, show_parts, run_headline_ab,
# run_headline_trace, run_memcheck, run_head_dim_rows, show_variants, run_cascade_shards,
# run_new_cases_checks, run_main_job_heads, run_main_job, run_main_job_one_rank, run_bench_ab,
# run_build_rounds, show_prefix_rounds, run_part_rounds, run_probe_rounds, run_planner_check,
# run_offgrid_planner_checks, run_ncu_stalls, run_planner_set, run_bar_grid, run_headline_kscan,
# run_h200_bar_checks).
CARRY=${CARRY:?set CARRY to the directory holding bins.tar.xz}
OUT=${OUT:-/tmp/$1}
# Only files written after this stamp go into pack_logs's tarball: a lent machine's $OUT has held
# files of an earlier run (session 101 run 1).
SETUP_STAMP=$(mktemp "/tmp/$1-start.XXXXXX")
mkdir -p /tmp/b "$OUT" && tar -C /tmp/b -xJf "$CARRY/bins.tar.xz"
B=/tmp/b/prefixd_kernel_bench
SETUP_TAG=$1
# The device the numbers come from, first in every log (name, top SM clock, memory).
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader
# smi_start / smi_stop: nvidia-smi's samples of power, SM clock and throttle reasons every 20 ms into
# $OUT/smi.csv, in the background between the two; mark NAME: a line "NAME time" in $OUT/marks.txt.
# bench/kernel/smi_phases.py reads both (a phase is the samples between two marks).
smi_start() {
  nvidia-smi --query-gpu=timestamp,power.draw,clocks.sm,clocks_throttle_reasons.active \
    --format=csv,noheader -lms 20 >"$OUT/smi.csv" 2>&1 &
  SMI_PID=$!
  sleep 1
}
smi_stop() { sleep 1; kill "$SMI_PID" 2>/dev/null; wait "$SMI_PID" 2>/dev/null; }
mark() { echo "$1 $(date '+%Y/%m/%d %H:%M:%S.%3N')" >>"$OUT/marks.txt"; }
# on_h200: true on an H200, the issue-4 bar's card (the scripts' H200-only branches).
on_h200() { nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; }
# pack_logs: every file this run wrote under $OUT (a nested script's own all.tgz too) as one
# tarball, $OUT/all.tgz, and nothing else left there: the device hands back a limited number of
# files, counted in name order, so loose logs could crowd the tarball out (session 86 run 1 lost its
# grid logs that way).
pack_logs() {
  (cd "$OUT" && find . -type f -newer "$SETUP_STAMP" ! -path ./all.tgz -print0 |
    tar -czf "/tmp/$SETUP_TAG-all.tgz" --null -T -) &&
    find "$OUT" -mindepth 1 -maxdepth 1 ! -name all.tgz -exec rm -rf {} + && mv "/tmp/$SETUP_TAG-all.tgz" "$OUT/all.tgz"
}
# run_whole_suite: launch/gpu-check.sh on the carried binaries, GPU tests only (PREFIXD_TEST_SHARDS
# shards, 8, of at most PREFIXD_TIMEOUT_TESTS s, 300) with its default sanitizer lists (none with
# PREFIXD_SKIP_SANITIZER=1), logs in $OUT/check; its summary's last 8 lines.
run_whole_suite() {
  OUT=$OUT/check PREFIXD_BIN_DIR=/tmp/b PREFIXD_SKIP_CPU_TESTS=1 PREFIXD_SKIP_BENCH=1 \
    PREFIXD_TIMEOUT_TESTS=${PREFIXD_TIMEOUT_TESTS:-300} PREFIXD_TEST_SHARDS=${PREFIXD_TEST_SHARDS:-8} \
    bash launch/gpu-check.sh 2>&1 | tail -8
}
# run_gpu_tests FILTER: the carried GPU tests whose names match FILTER (brief log: $OUT/tests.log),
# then one summary line and the failed tests (at most 20); nothing when the tarball holds no test
# binary. Time limit: $GPU_TESTS_TIMEOUT s (200).
run_gpu_tests() {
  [ -x /tmp/b/prefixd_gpu_tests ] || return 0
  timeout "${GPU_TESTS_TIMEOUT:-200}" /tmp/b/prefixd_gpu_tests --gtest_brief=1 --gtest_filter="$1" >"$OUT/tests.log" 2>&1
  echo "tests rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$OUT/tests.log" | tr '\n' ' ')"
  grep -E '^\[  FAILED  \] [A-Za-z]' "$OUT/tests.log" | sed 's/ (.*//' | sort -u | head -20
}
# run_memcheck FILTER: compute-sanitizer memcheck on the carried GPU tests whose names match FILTER
# (at most $MEMCHECK_TIMEOUT s, 100; log: $OUT/memcheck.log), one summary line.
run_memcheck() {
  timeout "${MEMCHECK_TIMEOUT:-100}" compute-sanitizer --tool memcheck --error-exitcode 9 /tmp/b/prefixd_gpu_tests \
    --gtest_brief=1 --gtest_filter="$1" >"$OUT/memcheck.log" 2>&1
  echo "memcheck rc=$? $(grep -E 'ERROR SUMMARY|^\[  PASSED' "$OUT/memcheck.log" | tr '\n' ' ')"
}
# run_head_dim_rows LIMIT BENCH_ARGS...: on an H200 only, the bar's B256 P32768 S256 rows by the
# issue's method (as bench/kernel/issue4-grid.sh's second call: the measured choice, the plain-read
# floor) for the heads and head dims BENCH_ARGS name, at most LIMIT s; the table against the fused
# floor in $OUT/dims-fused-floor.md, its rows and ceilings printed.
run_head_dim_rows() {
  local limit=$1; shift
  if ! on_h200; then
    echo "not an H200: no head_dim rows"
    return 0
  fi
  timeout "$limit" $B "$@" -b 256 -p 32768 -s 256 --dtype fp16,bf16 --no-baseline -c 1 --read-floor --measured-choice \
    --csv "$OUT/dims.csv" >"$OUT/dims.txt" 2>&1
  echo "dims rc=$?"
  python3 bench/kernel/fused_floor_table.py "$OUT/dims.csv" --log "$OUT/dims.txt" >"$OUT/dims-fused-floor.md" 2>&1
  grep -E '^\| (fp16|bf16)|within the bar|ceilings' "$OUT/dims-fused-floor.md" | cut -c1-100
}
# run_test_shards FILTER: the carried GPU tests whose names match FILTER in 8 gtest shards side by
# side (at most $SHARD_TIMEOUT s each, 240; logs $OUT/tests-N.log), then each shard's exit status,
# the summary lines counted, and the failed tests (at most 20).
run_test_shards() {
  local pids=() i
  for i in 0 1 2 3 4 5 6 7; do
    GTEST_TOTAL_SHARDS=8 GTEST_SHARD_INDEX=$i timeout "${SHARD_TIMEOUT:-240}" /tmp/b/prefixd_gpu_tests \
      --gtest_brief=1 --gtest_filter="$1" >"$OUT/tests-$i.log" 2>&1 &
    pids+=($!)
  done
  for i in 0 1 2 3 4 5 6 7; do wait ${pids[$i]}; echo -n "shard $i rc=$? "; done; echo
  grep -hE '^\[  (PASSED|FAILED|SKIPPED) ' "$OUT"/tests-*.log | sort | uniq -c
  grep -hE '^\[  FAILED  \] [A-Za-z]' "$OUT"/tests-*.log | sed 's/ (.*//' | sort -u | head -20
}
# run_variants NAME VARIANTS BENCH_ARGS...: one kernel-benchmark call timing each shape once per
# variant (--variants; no baseline, no graph replay, one request checked), its table in
# $OUT/NAME.txt and $OUT/NAME.csv, then one status line. Time limit: $RUN_TIMEOUT s (200).
run_variants() {
  local name=$1 v=$2; shift 2
  timeout "${RUN_TIMEOUT:-200}" $B "$@" --no-baseline --no-graph -c 1 --variants "$v" --csv "$OUT/$name.csv" \
    >"$OUT/$name.txt" 2>&1
  echo "$name rc=$? $(grep 'wrong results' "$OUT/$name.txt")"
}
# show_parts NAME...: one line per row of those run_variants calls (dtype, heads, D, B, P, S, variant;
# prefix / suffix / merge parts timed alone and the whole step, µs; column 31 of the CSV), then the
# plans' concurrent modes and the run's GEMM ceiling.
show_parts() {
  echo "== prefix / suffix / merge / total us (parts timed alone), wrong, variant"
  for n in "$@"; do
    awk -F, 'NR>1 {printf "%s %s/%s D%s B%s P%s S%s %-48s %7.1f %7.1f %6.1f %7.1f %s\n",$1,$3,$4,$5,$6,$7,$8,$NF,$13,$14,$15,$16,$31}' "$OUT/$n.csv"
    grep -o "concurrent(k=[0-9]*[^)]*)" "$OUT/$n.txt" | sort | uniq -c
    grep -h "ceilings measured now" -A1 "$OUT/$n.txt" | tail -1
  done
}
# run_headline_ab SETTING: the headline row (32/8 B256 P32768 S256, fp16 and bf16) with the
# environment setting SETTING (NAME=VALUE) against the default in one process, in both orders (the
# order a variant is timed in can move its reading), each call at most $RUN_TIMEOUT s (60); logs
# $OUT/head-ab.* and $OUT/head-ba.*; then their tables and parts.
run_headline_ab() {
  local shape=(--heads 32/8 -b 256 -p 32768 -s 256 --dtype fp16,bf16)
  RUN_TIMEOUT=${RUN_TIMEOUT:-60} run_variants head-ab "$1,default" "${shape[@]}"
  RUN_TIMEOUT=${RUN_TIMEOUT:-60} run_variants head-ba "default,$1" "${shape[@]}"
  SHOW_LINES=12 show_variants head-ab head-ba
  show_parts head-ab head-ba
}
# run_headline_trace SETTING: the headline row (32/8 B256 P32768 S256 fp16, the model's plan, one
# process) under the CUPTI trace (bench/trace/cupti_trace.cc; the carry must hold
# libprefixd_cupti_trace.so and libcupti.so.13) with the environment setting SETTING (NAME=VALUE),
# its logs in $OUT/trace (trace.PID.csv: every kernel's start and end), then its table row.
run_headline_trace() {
  local d="$OUT/trace"; mkdir -p "$d"
  env "$1" LD_LIBRARY_PATH=/tmp/b CUDA_INJECTION64_PATH=/tmp/b/libprefixd_cupti_trace.so \
    PREFIXD_TRACE_DIR="$d" timeout "${RUN_TIMEOUT:-100}" $B --heads 32/8 -b 256 -p 32768 -s 256 --dtype fp16 \
    --no-baseline -c 1 --no-graph --csv "$d/bench.csv" >"$d/out.txt" 2>&1
  echo "trace rc=$?"; grep -E '^ +fp16 ' "$d/out.txt" | cut -c1-120
}
# show_variants NAME...: the shape × variant tables of those calls ($SHOW_LINES lines each, 60).
show_variants() {
  for n in "$@"; do sed -n '/^# variants/,$p' "$OUT/$n.txt" | grep -v '^#   ' | head -"${SHOW_LINES:-60}"; done
}
# run_sanitizers FILTER: compute-sanitizer memcheck, then racecheck, on the carried GPU tests whose
# names match FILTER (logs: $OUT/memcheck.log, $OUT/racecheck.log), one summary line each.
run_sanitizers() {
  for tool in memcheck racecheck; do
    timeout 150 compute-sanitizer --tool $tool --error-exitcode 9 /tmp/b/prefixd_gpu_tests --gtest_brief=1 \
      --gtest_filter="$1" >"$OUT/$tool.log" 2>&1
    echo "$tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|^\[  PASSED' "$OUT/$tool.log" | tr '\n' ' ')"
  done
}
# run_cascade_shards: every cascade, decode and fused GPU test, in three shards of at most 150 s
# (logs: $OUT/tests-cascade-N.log), one summary line each; nothing without a test binary.
run_cascade_shards() {
  [ -x /tmp/b/prefixd_gpu_tests ] || return 0
  for shard in 0 1 2; do
    GTEST_TOTAL_SHARDS=3 GTEST_SHARD_INDEX=$shard timeout 150 /tmp/b/prefixd_gpu_tests --gtest_brief=1 \
      --gtest_filter='*Cascade*:*Decode*:*Fused*' >"$OUT/tests-cascade-$shard.log" 2>&1
    echo "cascade shard $shard rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$OUT/tests-cascade-$shard.log" | tr '\n' ' ')"
  done
}
# run_new_cases_checks NEW SANITIZE: a change's new test cases (filter NEW; log $OUT/tests-new.log),
# every cascade, decode and fused GPU test (run_cascade_shards), the failed ones listed, then
# compute-sanitizer on the cases matching SANITIZE (run_sanitizers).
run_new_cases_checks() {
  run_gpu_tests "$1"; [ -f "$OUT/tests.log" ] && cp "$OUT/tests.log" "$OUT/tests-new.log"
  run_cascade_shards
  grep -hsE '^\[  FAILED' "$OUT"/tests-new.log "$OUT"/tests-cascade-*.log | head -20
  run_sanitizers "$2"
}
# run_main_job_heads HEADS...: the main job on one GPU at each H_qo/H_kv (32768-token document, 4
# layers, 8 decode steps; log $OUT/main-Q-K.txt), one line each with its own sampled check.
run_main_job_heads() {
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  for h in "$@"; do
    timeout 120 mpirun --allow-run-as-root -np 1 /tmp/b/prefixd --qo-heads ${h%/*} --kv-heads ${h#*/} --doc-tokens 32768 \
      --layers 4 --decode-steps 8 >"$OUT/main-${h/\//-}.txt" 2>&1
    echo "main $h rc=$? $(grep -E '^# check: [0-9]+ of|^# done' "$OUT/main-${h/\//-}.txt" | tr '\n' ' ')"
  done
}
# run_main_job [SECONDS]: the carried main job (prefixd, its embedded default) on one rank (log:
# $OUT/main.log; at most SECONDS s, 240), then its status and summary lines.
run_main_job() {
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  timeout "${1:-240}" mpirun --allow-run-as-root --oversubscribe -np 1 /tmp/b/prefixd >"$OUT/main.log" 2>&1
  echo "main job rc=$?"; grep -E "^# (done|plans|memory|check: [0-9])" "$OUT/main.log" | tail -6
}
# run_main_job_one_rank FILTER [MAIN_S MPI_S]: the main job on its embedded default (the README's
# first command's job) on one rank (log $OUT/main.log; at most MAIN_S s, 240), then the carried MPI
# tests whose names match FILTER on one rank (log $OUT/mpi.log; at most MPI_S s, 150): each exit
# status, the job's summary lines and the tests' counts by outcome (those a time limit cut off
# show as run minus finished).
run_main_job_one_rank() {
  run_main_job "${2:-240}"
  timeout "${3:-150}" mpirun --allow-run-as-root --oversubscribe -np 1 /tmp/b/prefixd_mpi_tests --gtest_color=no \
    --gtest_filter="$1" >"$OUT/mpi.log" 2>&1
  echo "mpi tests '$1' (np 1) rc=$? run $(grep -c '^\[ RUN' "$OUT/mpi.log"):" \
    "$(grep -E '^\[ +(OK|FAILED|SKIPPED) +\] .* \([0-9]+ ms\)$' "$OUT/mpi.log" | awk '{print $2}' | sort | uniq -c | tr '\n' ' ')"
  grep -E '^\[ +FAILED +\] [A-Za-z]' "$OUT/mpi.log" | sed 's/ (.*//' | sort -u | head -20
}
# run_bench_ab DIR BENCH_ARGS...: the kernel benchmark of this build ($B) and of the build before
# (/tmp/b/prefixd_kernel_bench_old), alternated twice in separate processes (old new old new), CSVs
# and logs DIR/{old,new}{1,2}.{csv,txt}, one status line each, then the A/B table
# (ab_builds.py) printed and in DIR/ab.txt.
run_bench_ab() {
  local dir=$1 exe; shift; mkdir -p "$dir"
  for i in 1 2; do for b in old new; do
    exe=$B; [ $b = old ] && exe=/tmp/b/prefixd_kernel_bench_old
    timeout 100 $exe "$@" --csv "$dir/$b$i.csv" >"$dir/$b$i.txt" 2>&1
    echo "$(basename "$dir") $b $i rc=$? $(grep 'wrong results' "$dir/$b$i.txt")"
  done; done
  python3 bench/kernel/ab_builds.py "$dir" | tee "$dir/ab.txt"
}
# show_prefix_rounds NAME BUILDS: after run_build_rounds NAME BUILDS, one line per shape with the
# prefix part timed alone (the CSV's column 13, µs) of each build in turn, round 1 then round 2.
show_prefix_rounds() {
  local name=$1 b i cols=() first
  for i in 1 2; do for b in $2; do
    awk -F, 'NR>1{print $13}' "$OUT/$name-$b$i.csv" >"$OUT/$name-$b$i.pfx"
    cols+=("$OUT/$name-$b$i.pfx")
  done; done
  first=$(set -- $2; echo "$1")
  echo "== $name: prefix part us per shape, round 1 then 2, builds in turn: $2"
  paste <(awk -F, 'NR>1{printf "%s D%s %s/%s B%s P%s\n",$1,$5,$3,$4,$6,$7}' "$OUT/$name-${first}1.csv") "${cols[@]}"
}
# run_build_rounds NAME "BUILDS" BENCH_ARGS...: the kernel benchmark of each build named (X:
# /tmp/X/prefixd_kernel_bench; b is this build, $B), the builds in turn, twice; logs and CSVs
# $OUT/NAME-BUILDN.{txt,csv}, one status line each, then per shape the total and (the suffix part
# alone) of every run in that order, µs.
run_build_rounds() {
  local name=$1 builds=$2 exe files=(); shift 2
  for i in 1 2; do for b in $builds; do
    exe=/tmp/$b/prefixd_kernel_bench
    timeout 60 $exe "$@" --csv "$OUT/$name-$b$i.csv" >"$OUT/$name-$b$i.txt" 2>&1
    echo "$name $b round $i rc=$? $(grep 'wrong results' "$OUT/$name-$b$i.txt")"
    files+=("$OUT/$name-$b$i.csv")
  done; done
  echo "== $name: total (suffix part alone) us, round 1 then 2, builds in turn: $builds"
  python3 bench/kernel/rounds_table.py "${files[@]}"
}
# run_part_rounds NAME HIDE ARGS...: the kernel benchmark's parts timed alone (`--calibrate`: every
# part of the cascade, plain decode and the narrow and half cascades) by this build (/tmp/b) and by
# /tmp/old in turn, twice (logs $OUT/NAME-{old,new}{1,2}.txt); then one line per sample with the
# four times, old1 new1 old2 new2, leaving out the samples whose label matches the regex HIDE
# (e.g. " prefix "). Time limit per call: 100 s.
run_part_rounds() {
  local name=$1 hide=$2 exe; shift 2
  for i in 1 2; do for b in old new; do
    exe=/tmp/b/prefixd_kernel_bench; [ $b = old ] && exe=/tmp/old/prefixd_kernel_bench
    timeout 100 $exe --calibrate /dev/null "$@" >"$OUT/$name-$b$i.txt" 2>&1
    echo "$name $b$i rc=$?"
  done; done
  echo "== $name: measured us per sample, old1 new1 old2 new2"
  paste <(grep '^#   [fb][pf]16 ' "$OUT/$name-old1.txt" | awk '{printf "%-52s %7.1f\n", $2" "$3" "$4" "$5" "$6" "$7" "$8" "$9, $(NF-2)}') \
        <(grep '^#   [fb][pf]16 ' "$OUT/$name-new1.txt" | awk '{printf "%7.1f\n", $(NF-2)}') \
        <(grep '^#   [fb][pf]16 ' "$OUT/$name-old2.txt" | awk '{printf "%7.1f\n", $(NF-2)}') \
        <(grep '^#   [fb][pf]16 ' "$OUT/$name-new2.txt" | awk '{printf "%7.1f\n", $(NF-2)}') | grep -v "$hide"
}
# run_probe_rounds "BUILDS" PROBE_ARGS...: the prefix probe of each build named (new: this build's
# /tmp/b/prefixd_prefix_probe, X: /tmp/b/prefixd_prefix_probe_X), the builds in turn, twice; logs
# $OUT/probe-BUILDN.txt, one line each with its rows' times (µs).
run_probe_rounds() {
  local builds=$1 probe; shift
  for i in 1 2; do for b in $builds; do
    probe=/tmp/b/prefixd_prefix_probe; [ $b != new ] && probe=/tmp/b/prefixd_prefix_probe_$b
    timeout 120 $probe "$@" >"$OUT/probe-$b$i.txt" 2>&1
    echo "probe $b $i rc=$? $(grep -E '^wgmma' "$OUT/probe-$b$i.txt" | awk '{printf "%s ", $12}')"
  done; done
}
# run_planner_check DTYPES...: the kernel benchmark's planner check (its default grid) per dtype, each
# log in $OUT/planner-DTYPE.txt; its exit status, shape count and summary lines.
run_planner_check() {
  for dt in "$@"; do
    timeout 220 $B --planner-check --dtype $dt >"$OUT/planner-$dt.txt" 2>&1
    echo "planner $dt rc=$? $(grep -cE '^ +(fp16|bf16) ' "$OUT/planner-$dt.txt") shapes"
    tail -6 "$OUT/planner-$dt.txt"
  done
}
# run_offgrid_planner_checks: session 75's planner checks — 81 fp16 shapes off the issue's grid
# (32/8, 40/8, 64/8 × B 1/37/200 × P 304/5000/65536 × S 1/100/1000), 32 bf16 (16/2, 24/8 × head_dim
# 64/256 × B 3/100 × P 1000/12344 × S 7/300, page 8) and the default grid in fp16 and bf16 — each's
# log in $OUT/{odd-fp16,odd-bf16,grid-fp16,grid-bf16}.txt, then its summary lines (the measured
# choice's too, where the binary has it) and its rows over 5% or wrong (at most 20).
run_offgrid_planner_checks() {
  check() { local name=$1; shift; timeout 200 $B --planner-check "$@" >"$OUT/$name.txt" 2>&1; local rc=$?
    echo "== planner $name rc=$rc, $(grep -cE '^ +(fp16|bf16) ' "$OUT/$name.txt") shapes"
    grep -E "planner check:|measured choice" "$OUT/$name.txt" | grep -v "must be"
    grep -E "SLOW|WRONG" "$OUT/$name.txt" | grep -E '^ +(fp16|bf16) ' | head -20; }
  check odd-fp16 --dtype fp16 --heads 32/8,40/8,64/8 -b 1,37,200 -p 304,5000,65536 -s 1,100,1000
  check odd-bf16 --dtype bf16 --heads 16/2,24/8 -d 64,256 -b 3,100 -p 1000,12344 -s 7,300 --page-size 8
  check grid-fp16 --dtype fp16
  check grid-bf16 --dtype bf16
}
# run_ncu_stalls NAME KERNEL_REGEX PER COMMAND...: Nsight Compute's PC sampling (clocks not locked)
# on one launch of the kernels matching KERNEL_REGEX (the fourth) that COMMAND makes; the details
# page and the source page (SASS, CSV) in $OUT/NAME-details.txt and $OUT/NAME-sass.csv, then the
# launch's time and issue rates and bench/kernel/ncu_stalls.py's stall table (instructions per PER
# units, e.g. the kernel's tiles; 0: none).
run_ncu_stalls() {
  local name=$1 kernel=$2 per=$3; shift 3
  timeout 150 ncu --kernel-name "regex:$kernel" --launch-skip 3 --launch-count 1 --clock-control none \
    --section SpeedOfLight --section WarpStateStats --section SourceCounters --section SchedulerStats \
    --section MemoryWorkloadAnalysis -f -o "$OUT/$name" "$@" >"$OUT/$name-ncu.txt" 2>&1
  echo "ncu $name rc=$?"
  ncu -i "$OUT/$name.ncu-rep" --page details --print-details all >"$OUT/$name-details.txt" 2>&1
  grep -E "Duration|Issued Warp|No Eligible|Eligible Warps|DRAM Throughput" "$OUT/$name-details.txt" | head -8
  ncu -i "$OUT/$name.ncu-rep" --page source --csv --print-source sass >"$OUT/$name-sass.csv" 2>&1
  rm -f "$OUT/$name.ncu-rep"
  python3 bench/kernel/ncu_stalls.py "$OUT/$name-sass.csv" --top 24 --per "$per"
}
# run_planner_set NAME BIN "DTYPE ARGS...": the planner check (--planner-order plain-last) of BIN
# over the shapes ARGS in DTYPE, its log in $OUT/NAME.txt; then one line per shape (its timed
# layouts and the measured choice) and the two summary lines. Time limit 150 s.
run_planner_set() {
  local name=$1 bin=$2 dt rest
  read -r dt rest <<<"$3"
  timeout 150 $bin --planner-check $rest --dtype $dt --planner-order plain-last >"$OUT/$name.txt" 2>&1
  echo "== $name ($3): rc=$?"
  grep -E "^ +$dt " "$OUT/$name.txt" | sed -E 's/^ +//' | awk -F'|' '{printf "%-34s|%s|%s\n", $1, $2, $NF}'
  grep -E "min\(cascade, plain\) \(the issue|measured choice \(near" "$OUT/$name.txt"
}
# run_bar_grid: on an H200 (the issue-4 bar's card) issue4-grid.sh's grid and head_dim rows with $B
# (logs $OUT/grid) and the headline shape's lines (32/8 B256 P32768 S256); on any other card only a
# line saying so (its grid would be no bar figure).
run_bar_grid() {
  if ! on_h200; then echo "not an H200: no grid"; return 0; fi
  OUT=$OUT/grid bash bench/kernel/issue4-grid.sh 2>&1 | grep -v '^NVIDIA'
  grep -E '^ +(fp16|bf16) +16 +32/8 +128 +256 +32768 +256 ' "$OUT/grid/grid.txt" | cut -c1-110
}
# run_headline_kscan: the headline row (32/8 B256 P32768 S256, fp16 and bf16) with the chained
# step's k forced to 14, 16, 18 against the default, one process, interleaved (logs $OUT/kscan.*),
# then its tables.
run_headline_kscan() {
  local v=default k
  for k in 14 16 18; do v=$v,PREFIXD_CONCURRENT_DECODE_SMS=$k+PREFIXD_CONCURRENT_DECODE_TMA=force; done
  RUN_TIMEOUT=90 run_variants kscan "$v" --heads 32/8 -b 256 -p 32768 -s 256 --dtype fp16,bf16
  SHOW_LINES=14 show_variants kscan
}
# run_h200_bar_checks: on an H200, run_bar_grid, then session 94's unrun k scan at the headline row
# (32/8 B256 P32768 S256: the chained step's k forced to 14, 16, 18 against the default) and, while
# $SECONDS is below PLANNER_BEFORE_S (400), the planner checks on the grid's shapes (fp16, bf16).
run_h200_bar_checks() {
  run_bar_grid
  run_headline_kscan
  local dt
  for dt in fp16 bf16; do
    [ "$SECONDS" -lt "${PLANNER_BEFORE_S:-400}" ] || break
    run_planner_check $dt
  done
}
