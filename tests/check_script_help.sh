#!/usr/bin/env bash
# Every script a user may run (scripts/, schedules/found/, bench/, fuzz/) answers --help with its
# description on stdout and exit code 0, and the Python ones refuse a missing or malformed
# argument with a usage line and exit code 2 instead of a traceback. Run by ctest (script_help).
set -uo pipefail
cd "$(dirname "$0")/.."
fail=0
for s in scripts/*.sh scripts/*.py schedules/found/*.py bench/*.py bench/time_vs_nccl.sh fuzz/*.sh; do
  case "$s" in *.py) run=(python3 "$s") ;; *) run=(bash "$s") ;; esac
  out=$("${run[@]}" --help 2>&1)
  code=$?
  if [ "$code" != 0 ] || [ -z "$out" ] || grep -q Traceback <<<"$out"; then
    echo "FAIL $s --help: exit $code: $(head -3 <<<"$out")"
    fail=1
  fi
done
# bad arguments: exit 2 and a usage line, no traceback
bad=("schedules/found/capacity_profiles.py" "schedules/found/capacity_profiles.py x y none"
     "schedules/found/cbft_closed_form.py abc" "schedules/found/check_bft_alltoall.py"
     "schedules/found/check_bft_alltoall.py /nonexistent.json" "schedules/found/ebft_closed_form.py 64 x"
     "schedules/found/single_injection.py" "schedules/found/single_injection.py least x"
     "schedules/found/single_injection.py table 4 [1,2" "schedules/found/xor_certificates.py 0")
for b in "${bad[@]}"; do
  read -r -a words <<<"$b"
  out=$(python3 "${words[@]}" 2>&1)
  code=$?
  if [ "$code" != 2 ] || grep -q Traceback <<<"$out" || ! grep -q "${words[0]##*/}" <<<"$out"; then
    echo "FAIL $b: exit $code: $(head -3 <<<"$out")"
    fail=1
  fi
done
# scripts/machines.py without a binary: one line naming it, exit 2 (it was a Python traceback)
out=$(COLLSCHED=/nonexistent/collsched python3 scripts/machines.py --one rail 2 /tmp/machines_py_$$.json 2>&1)
code=$?
if [ "$code" != 2 ] || grep -q Traceback <<<"$out" || [ "$(wc -l <<<"$out")" != 1 ] || ! grep -q "no collsched binary at /nonexistent/collsched" <<<"$out"; then
  echo "FAIL machines.py without a binary: exit $code: $(head -3 <<<"$out")"
  fail=1
fi
exit $fail
