#!/usr/bin/env bash
# The main job on a fresh machine: install what the binary needs, build only it, and run `collsched demo`
# (build the pipelined total exchange on ebft:16, verify it, simulate it, print a report).
case "${1:-}" in -h | --help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;; esac
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --quick
exec ./build/tools/collsched demo "$@"
