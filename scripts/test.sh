#!/usr/bin/env bash
# The whole default test suite on a fresh machine: install what is missing, build, run ctest.
# Tests labelled `slow` (long solver runs) are excluded; run them with `ctest --test-dir build -L slow`.
case "${1:-}" in -h | --help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;; esac
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
ctest --test-dir "${COLLSCHED_BUILD_DIR:-build}" --output-on-failure -LE slow -j "$(nproc)"
