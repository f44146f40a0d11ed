#!/usr/bin/env bash
# Installs what prefixd needs to build and test, and only what is missing (dpkg -s first): the GPU
# machines already have every package and no registry, CI and fresh project machines have the
# registry. Then configures and builds into ${PREFIXD_BUILD_DIR:-build}.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(cmake g++ make libopenmpi-dev openmpi-bin libucx-dev libcxxopts-dev libgtest-dev ccache)
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "# setup: installing missing packages: ${missing[*]}"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# nvcc is optional (the CPU backend is always built); the CUDA toolkit usually lives here.
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH=/usr/local/cuda/bin:$PATH
fi

build_dir=${PREFIXD_BUILD_DIR:-build}
jobs=${PREFIXD_JOBS:-$(nproc)}
generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
if [ ! -f "$build_dir/CMakeCache.txt" ]; then
  cmake -S . -B "$build_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release ${PREFIXD_CMAKE_ARGS:-}
elif [ ! -f "$build_dir/build.ninja" ] && [ ! -f "$build_dir/Makefile" ]; then
  # A cache without build files is a configure that failed (e.g. run before the packages were
  # installed): configure again, keeping the generator the cache names.
  cmake -S . -B "$build_dir" ${PREFIXD_CMAKE_ARGS:-}
fi
echo "# setup: building in $build_dir with $jobs jobs"
cmake --build "$build_dir" -j "$jobs"
