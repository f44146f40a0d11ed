# Sourced by the kernel-benchmark scripts that run on a lent GPU machine (s17-*.sh, issue4-grid.sh)
# from the repository root: unpacks the carried binaries $CARRY/bins.tar.xz into /tmp/b, makes
# $OUT (default: /tmp/$1) and sets B to the kernel benchmark.
CARRY=${CARRY:?set CARRY to the directory holding bins.tar.xz}
OUT=${OUT:-/tmp/$1}
mkdir -p /tmp/b "$OUT" && tar -C /tmp/b -xJf "$CARRY/bins.tar.xz"
B=/tmp/b/prefixd_kernel_bench
# run_gpu_tests FILTER: the carried GPU tests whose names match FILTER (brief log: $OUT/tests.log),
# then one summary line; nothing when the tarball holds no test binary.
run_gpu_tests() {
  [ -x /tmp/b/prefixd_gpu_tests ] || return 0
  timeout 200 /tmp/b/prefixd_gpu_tests --gtest_brief=1 --gtest_filter="$1" >"$OUT/tests.log" 2>&1
  echo "tests rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$OUT/tests.log" | tr '\n' ' ')"
}
