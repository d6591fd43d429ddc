#!/usr/bin/env bash
# Installs what collsched needs from Debian's packages (only what is missing), then configures and
# builds it in ./build. Usage: scripts/setup.sh [--quick] [extra cmake args...]. Safe to run again.
# --quick: only what the `collsched` binary needs (no test suite, no browser, no picture tools):
# the quick start's set-up (scripts/quickstart.sh). scripts/test.sh runs it without --quick.
case "${1:-}" in -h | --help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;; esac
set -euo pipefail
cd "$(dirname "$0")/.."

quick=0
if [ "${1:-}" = "--quick" ]; then quick=1; shift; fi

# what the collsched binary needs to build
packages=(build-essential cmake ninja-build pkg-config libz3-dev libboost-dev doctest-dev libcadical-dev
          nlohmann-json3-dev libsimdjson-dev libcli11-dev libfmt-dev openmpi-bin libopenmpi-dev
          libprotobuf-dev protobuf-compiler libglpk-dev)
# and what the test suite, the documentation's pictures and the Python module need
if ((!quick)); then
  packages+=(librsvg2-bin graphviz help2man chromium python3-jsonschema python3-dev pybind11-dev python3-numpy
             python3-pytest)
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

build=${COLLSCHED_BUILD_DIR:-build}
# Ninja for a new build directory (an existing one keeps its generator): it compiles the files of a
# library while the libraries it depends on are still building, where Make waits for each library
# in turn, which left one of the two cores idle through most of the chain of libraries.
export CMAKE_GENERATOR=${CMAKE_GENERATOR:-Ninja}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
if ((quick)); then
  cmake --build "$build" -j "$(nproc)" --target collsched
else
  cmake --build "$build" -j "$(nproc)"
fi
