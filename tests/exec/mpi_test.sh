#!/usr/bin/env bash
# ctest driver of `ppsim execute` on real Open MPI ranks (registered by tests/exec/mpi_tests.cmake).
#
#   tests/exec/mpi_test.sh build/dev/ppsim run zb-v 4          # runs, gradients, one event per task
#   tests/exec/mpi_test.sh build/dev/ppsim fault die           # a rank dies: exit 6, reported
#   tests/exec/mpi_test.sh build/dev/ppsim invalid FILE        # rejected before launch: exit 4
#   tests/exec/mpi_test.sh build/dev/ppsim sweep 3             # mpirun -np 3 ppsim sweep = one process
#   tests/exec/mpi_test.sh build/dev/ppsim plan 2              # mpirun -np 2 ppsim plan = one process
set -uo pipefail

ppsim=$1
mode=$2
shift 2
fail() { echo "mpi_test: FAIL: $*" >&2; exit 1; }
[ -x "$ppsim" ] || fail "no ppsim executable at '$ppsim'"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
small=(--dim 24 --tokens 8 --iterations 2)

case "$mode" in
run)
  schedule=$1 np=$2
  shift 2
  m=$((2 * np))
  # Unit costs for the prediction keep the test fast (no calibration); one case calibrates.
  costs=(--costs F=1,B=1,W=1)
  [ "${1:-}" = "--calibrate-on-ranks" ] && costs=() && shift
  "$ppsim" execute -s "$schedule" -p "$np" -m "$m" --blocks 4 "${small[@]}" "${costs[@]}" \
    --watchdog 30 --trace "$work/measured.json" --json "$@" >"$work/out.json" 2>"$work/err.txt"
  rc=$?
  [ $rc -eq 0 ] || { cat "$work/err.txt" >&2; fail "$schedule -np $np: exit $rc, expected 0"; }
  grep -q '"schema": "ppsim.execute/1"' "$work/out.json" || fail "no ppsim.execute/1 document"
  grep -q '"passed": true' "$work/out.json" || fail "gradient check did not pass"
  # The prediction runs under the executed comm mode and the measured link.
  mode=async
  [ "${1:-}" = "--comm-mode" ] && mode=$2
  grep -q "\"comm_mode\": \"$mode\"" "$work/out.json" || fail "comm_mode is not $mode"
  grep -q '"latency_ms"' "$work/out.json" || fail "no measured link"
  # The measured trace holds one task event per task, as the simulator's trace of the schedule.
  "$ppsim" simulate -s "$schedule" -p "$np" -m "$m" --trace "$work/simulated.json" >/dev/null ||
    fail "ppsim simulate failed"
  # Task slices only (the compute track, tid 0; messages are slices on tid 1).
  tasks='"ph":"X","ts":[0-9.]*,"dur":[0-9.]*,"pid":[0-9]*,"tid":0'
  want=$(grep -o "$tasks" "$work/simulated.json" | wc -l)
  got=$(grep -o "$tasks" "$work/measured.json" | wc -l)
  pred=$(grep -o "$tasks" "$work/measured-predicted.json" | wc -l)
  [ "$want" -gt 0 ] && [ "$got" -eq "$want" ] && [ "$pred" -eq "$want" ] ||
    fail "$schedule -np $np: $got measured and $pred predicted task events, expected $want"
  # The measured trace imports back to the measured run, and diff replays it.
  "$ppsim" import --json "$work/measured.json" >"$work/import.json" 2>"$work/err.txt" ||
    { cat "$work/err.txt" >&2; fail "$schedule -np $np: ppsim import of the measured trace failed"; }
  "$ppsim" diff --json "$work/measured.json" >"$work/diff.json" 2>"$work/err.txt" ||
    { cat "$work/err.txt" >&2; fail "$schedule -np $np: ppsim diff of the measured trace failed"; }
  python3 - "$work" <<'PY' || fail "$schedule -np $np: import/diff disagree with execute"
import json, sys
w = sys.argv[1]
ex = json.load(open(f"{w}/out.json"))
im = json.load(open(f"{w}/import.json"))
df = json.load(open(f"{w}/diff.json"))
assert im["measured"]["cost_ms"] == ex["measured"]["cost_ms"], (im["measured"]["cost_ms"], ex["measured"]["cost_ms"])
assert im["measured"]["devices"] == ex["devices"]
assert ex["replayed"]["schema"] == "ppsim.metrics/1" and "replay_cost" in ex["error"]
assert df["measured"]["cost_ms"] == ex["measured"]["cost_ms"]
assert abs(sum(c["share"] for c in df["idle"]["causes"].values()) - 1) < 1e-9 or df["idle"]["total_ms"] == 0
PY
  echo "mpi_test: $schedule -np $np: $got task events, gradients equal the reference, the trace imports back"
  ;;
fault)
  kind=$1
  "$ppsim" execute -s 1f1b -p 2 -m 4 --blocks 2 "${small[@]}" --costs F=1 --watchdog 2 \
    --fault "$kind:1" >"$work/out.txt" 2>"$work/err.txt"
  rc=$?
  cat "$work/err.txt"
  [ $rc -eq 6 ] || fail "--fault $kind:1: exit $rc, expected 6"
  case "$kind" in
  die) grep -q "rank failed" "$work/err.txt" || fail "the dead rank is not reported" ;;
  hang) grep -q "rank 0: waited .* for 1B.* from rank 1" "$work/err.txt" ||
    fail "the watchdog did not name the awaited result" ;;
  seed-bug) grep -q "differ from the single-process reference" "$work/err.txt" ||
    fail "wrong gradients were not reported" ;;
  esac
  echo "mpi_test: --fault $kind:1 reported, exit 6"
  ;;
invalid)
  file=$1 want=${2:-4}
  "$ppsim" execute -s "$file" --blocks 2 "${small[@]}" >"$work/out.txt" 2>"$work/err.txt"
  rc=$?
  cat "$work/err.txt"
  [ $rc -eq "$want" ] || fail "$file: exit $rc, expected $want"
  grep -q "mpirun" "$work/err.txt" && fail "$file: mpirun was started"
  echo "mpi_test: $file rejected before launch"
  ;;
sweep)
  np=$1
  # Points that end every way (run, infeasible, rejected), shared among np ranks.
  grid=(sweep -s 1f1b,zb-h2,zb-auto,interleaved-1f1b -p 2,4 -m 2,4,8,9 --mem-limit 0.5p,3p)
  root=()
  [ "$(id -u)" -eq 0 ] && root=(--allow-run-as-root)
  mpi=(timeout 90 mpirun -np "$np" "${root[@]}" --oversubscribe --mca btl self,vader)
  for format in --csv --json; do
    "$ppsim" "${grid[@]}" "$format" --threads 1 >"$work/one.txt" 2>"$work/err.txt" ||
      { cat "$work/err.txt" >&2; fail "sweep $format in one process failed"; }
    "${mpi[@]}" "$ppsim" "${grid[@]}" "$format" >"$work/ranks.txt" 2>"$work/err.txt" ||
      { cat "$work/err.txt" >&2; fail "mpirun -np $np ppsim sweep $format failed"; }
    cmp -s "$work/one.txt" "$work/ranks.txt" ||
      { diff "$work/one.txt" "$work/ranks.txt" | head >&2; fail "-np $np $format differs from one process"; }
  done
  lines=$(wc -l <"$work/ranks.txt")
  # The HTML page is written once, by rank 0, and equals one process's.
  "$ppsim" "${grid[@]}" --html "$work/one.html" >/dev/null 2>&1 || fail "sweep --html failed"
  "${mpi[@]}" "$ppsim" "${grid[@]}" --html "$work/ranks.html" >/dev/null 2>"$work/err.txt" ||
    { cat "$work/err.txt" >&2; fail "mpirun -np $np ppsim sweep --html failed"; }
  cmp -s "$work/one.html" "$work/ranks.html" || fail "-np $np --html differs from one process"
  # Bad input is told once (by rank 0) with its exit code, and no rank waits for another.
  "${mpi[@]}" "$ppsim" sweep -s 1f1b,nope -p 2 -m 4 >"$work/out.txt" 2>"$work/err.txt"
  rc=$?
  cat "$work/err.txt"
  [ $rc -eq 3 ] || fail "an unknown schedule under mpirun: exit $rc, expected 3"
  told=$(grep -c "unknown schedule 'nope'" "$work/err.txt")
  [ "$told" -eq 1 ] || fail "the unknown schedule was told $told times, expected once"
  echo "mpi_test: mpirun -np $np ppsim sweep: $lines lines of JSON; CSV, JSON and HTML byte-identical to one process"
  ;;
plan)
  np=$1
  # Candidates that fit as they are, with recomputation and with offload (llama3-8b on gh200s).
  args=(plan --model llama3-8b --device gh200 -p 2 --global-batch 16)
  root=()
  [ "$(id -u)" -eq 0 ] && root=(--allow-run-as-root)
  mpi=(timeout 110 mpirun -np "$np" "${root[@]}" --oversubscribe --mca btl self,vader)
  "$ppsim" "${args[@]}" --json --threads 1 >"$work/one.json" 2>"$work/err.txt" ||
    { cat "$work/err.txt" >&2; fail "plan in one process failed"; }
  "${mpi[@]}" "$ppsim" "${args[@]}" --json >"$work/ranks.json" 2>"$work/err.txt" ||
    { cat "$work/err.txt" >&2; fail "mpirun -np $np ppsim plan failed"; }
  cmp -s "$work/one.json" "$work/ranks.json" ||
    { diff "$work/one.json" "$work/ranks.json" | head >&2; fail "-np $np plan differs from one process"; }
  "${mpi[@]}" "$ppsim" "${args[@]}" -p 0 >"$work/out.txt" 2>"$work/err.txt"
  rc=$?
  [ $rc -ne 0 ] || fail "plan -p 0 under mpirun succeeded"
  told=$(grep -c "^ppsim: error" "$work/err.txt")
  [ "$told" -eq 1 ] || { cat "$work/err.txt"; fail "the error was told $told times, expected once"; }
  echo "mpi_test: mpirun -np $np ppsim plan: its ppsim.plan/1 document byte-identical to one process"
  ;;
*) fail "unknown mode '$mode'" ;;
esac
