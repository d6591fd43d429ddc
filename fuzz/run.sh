#!/usr/bin/env bash
# Fuzzes one harness for a given time: fuzz/run.sh dsl|table|topology|cli|chakra|msccl SECONDS [libFuzzer flags...]
#
# Builds the harnesses if needed (fuzz/build.sh), then runs libFuzzer on a working corpus in
# fuzz-out/<harness>/corpus (git-ignored) seeded from the committed fuzz/corpus/<harness>, with
# the harness's dictionary. Findings (crash-*, leak-*, timeout-*, oom-*) land in fuzz-out/<harness>/;
# reproduce one with `build-fuzz/fuzz/fuzz_<harness> FILE`. Each run appends a line to
# fuzz-out/runs.log (harness, seconds, executions, result). Exit status: libFuzzer's (0 = no finding).
# The run is niced; set JOBS=N to fuzz with N parallel workers. See docs/fuzzing.md.
case "${1:-}" in -h | --help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;; esac
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
if (($# < 2)); then
  echo "usage: fuzz/run.sh dsl|table|topology|cli|chakra|msccl SECONDS [libFuzzer flags...]" >&2
  exit 2
fi
harness=$1 seconds=$2
shift 2
case "$harness" in
  dsl) max_len=16384 ;;
  table) max_len=16384 ;;
  topology) max_len=1024 ;;
  cli) max_len=4096 ;;
  chakra) max_len=65536 ;;
  msccl) max_len=16384 ;;
  *) echo "fuzz/run.sh: unknown harness '$harness' (expected dsl, table, topology, cli, chakra or msccl)" >&2; exit 2 ;;
esac
[[ "$seconds" =~ ^[0-9]+$ ]] || { echo "fuzz/run.sh: SECONDS must be a whole number, got '$seconds'" >&2; exit 2; }

build=${COLLSCHED_FUZZ_BUILD_DIR:-build-fuzz}
[ "${COLLSCHED_FUZZ_NO_BUILD:-}" = 1 ] || fuzz/build.sh >/dev/null
bin=$root/$build/fuzz/fuzz_$harness
out=$root/fuzz-out/$harness
mkdir -p "$out/corpus"

# Graph specs (graph:FILE.json) are read relative to the working directory: run in fuzz/data,
# where a few small graph files live.
cd "$root/fuzz/data"
jobs=()
[ -n "${JOBS:-}" ] && jobs=(-jobs="$JOBS" -workers="$JOBS")
start=$(date +%s)
set +e
nice -n 10 "$bin" "$out/corpus" "$root/fuzz/corpus/$harness" \
  -dict="$root/fuzz/$harness.dict" -max_total_time="$seconds" -max_len="$max_len" \
  -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=2048 -use_value_profile=1 \
  -artifact_prefix="$out/" -print_final_stats=1 "${jobs[@]}" "$@" 2>"$out/last.log"
status=$?
set -e
end=$(date +%s)
execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$out/last.log" | grep -o '[0-9]*$' | tail -1 || true)
echo "$(date -u +%FT%TZ) $harness seconds=$((end - start)) execs=${execs:-?} status=$status" >>"$root/fuzz-out/runs.log"
tail -n 15 "$out/last.log" >&2
exit $status
