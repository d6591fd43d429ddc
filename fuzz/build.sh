#!/usr/bin/env bash
# Builds the libFuzzer harnesses (fuzz_dsl, fuzz_table, fuzz_topology, fuzz_cli, fuzz_chakra, fuzz_msccl) with clang, AddressSanitizer
# and UndefinedBehaviorSanitizer in their own build directory (default build-fuzz; set
# COLLSCHED_FUZZ_BUILD_DIR to change it). Usage: fuzz/build.sh. See docs/fuzzing.md.
case "${1:-}" in -h | --help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;; esac
set -euo pipefail
cd "$(dirname "$0")/.."
build=${COLLSCHED_FUZZ_BUILD_DIR:-build-fuzz}
command -v clang++ >/dev/null || { echo "fuzz/build.sh: clang++ is not installed (apt-get install clang)" >&2; exit 2; }
cmake -S . -B "$build" -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DCOLLSCHED_FUZZ=ON -DCOLLSCHED_BUILD_TESTS=OFF -DCOLLSCHED_MPI=OFF >/dev/null
cmake --build "$build" -j "${JOBS:-2}" --target fuzz_dsl fuzz_table fuzz_topology fuzz_cli fuzz_chakra fuzz_msccl
