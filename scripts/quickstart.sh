#!/usr/bin/env bash
# The main job on a fresh machine: install what is missing, build, and run `collsched demo`
# (build the pipelined total exchange on ebft:16, verify it, simulate it, print a report).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec ./build/tools/collsched demo "$@"
