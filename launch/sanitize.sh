#!/usr/bin/env bash
# The host code under AddressSanitizer and UndefinedBehaviorSanitizer: a build without CUDA
# (PREFIXD_WITH_CUDA=OFF, so this also checks that the CPU-only configuration still builds) in
# ${PREFIXD_SANITIZE_BUILD_DIR:-build-sanitize}, then the unit tests with leak checks, then every
# ctest test (the MPI jobs with leak checks off: OpenMPI's own allocations; the GPU tests skip).
# Any sanitizer report fails the run. Needs the packages launch/setup.sh installs; ~10 minutes on
# two cores. .ci/run runs it after the README's test command.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${PREFIXD_SANITIZE_BUILD_DIR:-build-sanitize}
flags="-fsanitize=address,undefined -fno-omit-frame-pointer"
generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
if [ ! -f "$build_dir/CMakeCache.txt" ]; then
  cmake -S . -B "$build_dir" "${generator[@]}" -DPREFIXD_WITH_CUDA=OFF -DCMAKE_BUILD_TYPE=Debug \
    -DCMAKE_CXX_FLAGS="$flags -O1" -DCMAKE_EXE_LINKER_FLAGS="$flags" -DCMAKE_SHARED_LINKER_FLAGS="$flags"
fi
echo "# sanitize: building in $build_dir (ASan + UBSan, no CUDA)"
cmake --build "$build_dir" -j "${PREFIXD_JOBS:-$(nproc)}"
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
echo "# sanitize: unit tests, leak checks on"
ASAN_OPTIONS=detect_leaks=1 "$build_dir/tests/prefixd_unit_tests" --gtest_brief=1
echo "# sanitize: every ctest test"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 ASAN_OPTIONS=detect_leaks=0
ctest --test-dir "$build_dir" --output-on-failure -j "${PREFIXD_TEST_JOBS:-2}" --timeout 1200 "$@"
