#!/usr/bin/env bash
# Writes the collsched(1) man page from the command line's own --help texts with help2man:
# the top-level help, then a COMMANDS section with every subcommand's --help.
# Usage: scripts/man.sh PATH/TO/collsched OUT.1   (CMake runs it as the `man` target.)
case "${1:-}" in -h | --help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;; esac
set -euo pipefail
if (($# != 2)); then
  echo "usage: scripts/man.sh PATH/TO/collsched OUT.1" >&2
  exit 2
fi
bin=$1
out=$2
include=$(mktemp)
trap 'rm -f "$include"' EXIT
{
  echo "[COMMANDS]"
  for cmd in $("$bin" --help | awk '/^Subcommands:/ {on = 1; next} on && /^  [a-z]/ {print $1}'); do
    echo ".SS \"collsched $cmd\""
    echo ".nf"
    "$bin" "$cmd" --help | sed -e 's/\\/\\e/g' -e 's/^\./\\\&./'
    echo ".fi"
  done
  echo "[SEE ALSO]"
  echo "The documentation in docs/ of the collsched sources: dsl.md, errors.md, formats.md, architecture.md."
} > "$include"
help2man --no-info --no-discard-stderr --name "compile, verify, simulate and synthesize collective communication schedules" \
  --include "$include" --output "$out" "$bin"
