#!/usr/bin/env bash
# The sanitizer job (run by .ci/run after the test suite): builds collsched with AddressSanitizer
# and UndefinedBehaviorSanitizer (-DCOLLSCHED_SANITIZE=ON) in build-asan (RelWithDebInfo at -O1 with
# line tables only, -g1: enough for the reports' file:line, and a 448 MB binary with full debug
# information linked slowly; without the MPI rank program and the Python module, whose ASan build
# python could load only with LD_PRELOAD) and runs the unit tests there, except the slow solver runs,
# the MPI runs (OpenMPI's own allocations make ASan noisy) and the long sweeps and limit tests listed
# in scripts/sanitize_skip.txt (the Release suite runs those). Any sanitizer report fails the job: UBSan
# does not recover, ASan stops at the first error, leaks are errors, and a sanitized `collsched`
# started by the command-line tests exits with code 86, which no test expects.
# Expects the packages of scripts/setup.sh. Usage: scripts/sanitize.sh. See docs/fuzzing.md.
case "${1:-}" in -h | --help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;; esac
set -euo pipefail
cd "$(dirname "$0")/.."
build=${COLLSCHED_ASAN_BUILD_DIR:-build-asan}
start=$(date +%s)
export CMAKE_GENERATOR=${CMAKE_GENERATOR:-Ninja}  # as scripts/setup.sh
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" \
      -DCOLLSCHED_SANITIZE=ON -DCOLLSCHED_MPI=OFF -DCOLLSCHED_PYTHON=OFF >/dev/null
cmake --build "$build" -j "$(nproc)"
built=$(date +%s)
export ASAN_OPTIONS=halt_on_error=1:detect_leaks=1:exitcode=86:check_initialization_order=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:exitcode=86
export LSAN_OPTIONS=exitcode=86
skip=$(grep -v '^#' scripts/sanitize_skip.txt | grep . | paste -sd '|')
ctest --test-dir "$build" --output-on-failure -LE '^(slow|mpi)$' -E "$skip" -j "$(nproc)"
echo "sanitize: build $((built - start)) s, tests $(($(date +%s) - built)) s" >&2
