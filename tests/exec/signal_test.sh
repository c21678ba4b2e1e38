#!/usr/bin/env bash
# ctest driver: a signal to `ppsim execute` stops mpirun and every rank within a second.
#
#   tests/exec/signal_test.sh build/dev/ppsim TERM      # also INT, HUP; KILL (the parent dies)
#
# The ranks hang on purpose (--fault hang:1, watchdog 60 s), so only the signal can end them.
# Every process of the run carries a tag in its environment; after the signal none may be left:
# within 1 s for SIGTERM, SIGINT and SIGHUP, which ppsim handles; within 3 s for SIGKILL, which
# it cannot: then the kernel gives mpirun SIGTERM (PR_SET_PDEATHSIG) and mpirun stops the ranks.
set -uo pipefail

ppsim=$1 sig=$2
fail() { echo "signal_test: FAIL: $*" >&2; exit 1; }
[ -x "$ppsim" ] || fail "no ppsim executable at '$ppsim'"
tag="ppsim-signal-test-$$-$sig"
work=$(mktemp -d)
trap 'kill -KILL $(tagged) 2>/dev/null; rm -rf "$work"' EXIT
pids=""

# The pids whose environment holds the tag (the test's own shell does not).
tagged() {
  local f
  for f in /proc/[0-9]*/environ; do
    grep -qsF "PPSIM_SIGNAL_TEST_TAG=$tag" "$f" && { f=${f#/proc/}; echo "${f%/environ}"; }
  done
}
ranks() {
  local p n=0
  for p in $(tagged); do grep -qsF -- "--roster" "/proc/$p/cmdline" && n=$((n + 1)); done
  echo $n
}

# Job control: a background job of a script ignores SIGINT otherwise.
set -m
env PPSIM_SIGNAL_TEST_TAG="$tag" "$ppsim" execute -s 1f1b -p 2 -m 4 --dim 24 --tokens 8 \
  --blocks 2 --iterations 2 --costs F=1 --watchdog 60 --fault hang:1 \
  >"$work/out.txt" 2>"$work/err.txt" &
parent=$!
set +m
for _ in $(seq 1 300); do [ "$(ranks)" -ge 2 ] && break; sleep 0.1; done
[ "$(ranks)" -ge 2 ] || { cat "$work/err.txt" >&2; fail "the two ranks did not start"; }
sleep 0.5  # rank 1 is in its hang, rank 0 waits for it
pids=$(tagged)
before=$(echo $pids | wc -w)
# Alive: in /proc and not a zombie (the parent stays one until this shell waits for it).
alive() {
  local p n=0
  for p in $pids; do
    [ -r "/proc/$p/stat" ] && [ "$(cut -d' ' -f3 "/proc/$p/stat" 2>/dev/null)" != Z ] && n=$((n + 1))
  done
  echo $n
}

limit_ms=1000
[ "$sig" = KILL ] && limit_ms=3000
start=$(date +%s%N)
kill -s "$sig" "$parent"
while :; do
  left=$(alive)
  elapsed_ms=$((($(date +%s%N) - start) / 1000000))
  [ "$left" -eq 0 ] || [ $elapsed_ms -gt $limit_ms ] && break
  sleep 0.01
done
if [ "$left" -gt 0 ]; then
  for p in $pids; do ps -o pid=,ppid=,pgid=,stat=,args= -p "$p" >&2; done
  fail "SIG$sig: $left of $before processes still running after ${elapsed_ms} ms"
fi
wait "$parent"
rc=$?
case "$sig" in
KILL) want=137 ;;
*) want=$((128 + $(kill -l "$sig"))) ;;
esac
[ $rc -eq $want ] || { cat "$work/err.txt" >&2; fail "SIG$sig: exit $rc, expected $want"; }
if [ "$sig" != KILL ]; then
  grep -q "stopped by SIG$sig: mpirun and its ranks were stopped" "$work/err.txt" ||
    { cat "$work/err.txt" >&2; fail "SIG$sig: no message"; }
fi
echo "signal_test: SIG$sig: all $before processes (ppsim, mpirun, the ranks) gone within ${elapsed_ms} ms, exit $rc"
