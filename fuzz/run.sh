#!/usr/bin/env bash
# Runs ppsim's libFuzzer targets for a while each and prints one line per target: executions,
# coverage, and whether it found anything. Exit 1 when any target crashed, leaked, hung or broke
# an invariant (its input is kept as BUILD/crashes/TARGET-*; rerun it with BUILD/fuzz_TARGET FILE).
#
#   fuzz/run.sh build/fuzz 20 2 schedule_csv cost_file     # 20 s each, 2 at a time
set -uo pipefail

build=$1 seconds=$2 parallel=$3
shift 3
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$build/crashes" "$build/logs"

dict_of() {
  case "$1" in
  schedule_csv) echo csv ;;
  cli_text) echo cli_text ;;
  layout) echo layout ;;
  *) echo json ;;
  esac
}

run_one() {
  local t=$1
  local corpus="$build/corpus/$t" log="$build/logs/$t.log"
  mkdir -p "$corpus"
  # New inputs go to the build tree; the committed seeds are read only.
  "$build/fuzz_$t" "$corpus" "$here/corpus/$t" -dict="$here/dict/$(dict_of "$t").dict" \
    -max_total_time="$seconds" -max_len=16384 -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$build/crashes/$t-" -print_final_stats=1 >"$log" 2>&1
  local rc=$?
  local runs cov
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
  if [ $rc -eq 0 ]; then
    echo "fuzz: $t: ${runs:-?} executions in ${seconds} s, ${cov:-cov: ?}, no findings"
  else
    echo "fuzz: $t: FAILED (exit $rc) after ${runs:-?} executions; see $log and $build/crashes/"
    grep -m 3 -E 'ERROR|broken invariant|unexpected exception|runtime error' "$log" | sed 's/^/  /'
  fi
  return $rc
}
export -f run_one dict_of
export build seconds here

printf '%s\n' "$@" | xargs -P "$parallel" -I{} bash -c 'run_one {}'
