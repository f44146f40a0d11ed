# Sourced by the kernel-benchmark scripts that run on a lent GPU machine (s17-*.sh, issue4-grid.sh)
# from the repository root: unpacks the carried binaries $CARRY/bins.tar.xz into /tmp/b, makes
# $OUT (default: /tmp/$1) and sets B to the kernel benchmark.
CARRY=${CARRY:?set CARRY to the directory holding bins.tar.xz}
OUT=${OUT:-/tmp/$1}
mkdir -p /tmp/b "$OUT" && tar -C /tmp/b -xJf "$CARRY/bins.tar.xz"
B=/tmp/b/prefixd_kernel_bench
