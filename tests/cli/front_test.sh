#!/usr/bin/env bash
# The `ppsim` front and ppsim-full as executables: the front loads neither Open MPI nor oneDNN nor
# the HTTP server's libraries, runs its own commands, hands the others to ppsim-full (found beside
# it, or in ../libexec/ppsim), and says so clearly when ppsim-full is missing.
# Usage: tests/cli/front_test.sh BUILD_DIR
set -euo pipefail
build=$1
front=$build/ppsim
fail() { echo "FAIL: $*"; exit 1; }

# The shared objects each one asks for (none: the front is static, except under the sanitizers).
libs=$(readelf -d "$front" | grep NEEDED || true)
for lib in libmpi libdnnl libcpp-httplib libgomp libssl; do
  if grep -q "$lib" <<<"$libs"; then fail "the front loads $lib"; fi
done
readelf -d "$build/ppsim-full" | grep NEEDED | grep -q libmpi || fail "ppsim-full does not link Open MPI"

[ "$("$front" --version)" = "ppsim 0.1.0" ] || fail "--version"
"$front" simulate -s zb-h1 -p 4 -m 8 | grep -q '^cost  *27 ms' || fail "simulate in the front"
# Handed on: the same output as ppsim-full's own, and its exit code.
[ "$("$front" calibrate --help)" = "$("$build/ppsim-full" calibrate --help)" ] || fail "calibrate --help"
[ "$("$front" --help)" = "$("$build/ppsim-full" --help)" ] || fail "--help"
"$front" --help | grep -q '^  execute ' || fail "--help lists execute"
set +e
"$front" serve --port not-a-port >/dev/null 2>&1; code=$?
set -e
[ "$code" = 2 ] || fail "serve with a bad port: exit $code, want 2 (ppsim-full's)"

# An install's layout: bin/ppsim, libexec/ppsim/ppsim-full; and a front alone.
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/install/bin" "$tmp/install/libexec/ppsim" "$tmp/alone/bin"
cp "$front" "$tmp/install/bin/ppsim"; cp "$build/ppsim-full" "$tmp/install/libexec/ppsim/ppsim-full"
"$tmp/install/bin/ppsim" execute --help | grep -q 'mpirun\|ranks' || fail "the installed front finds libexec/ppsim/ppsim-full"
cp "$front" "$tmp/alone/bin/ppsim"
set +e
msg=$("$tmp/alone/bin/ppsim" calibrate --help 2>&1); code=$?
set -e
[ "$code" = 70 ] || fail "without ppsim-full: exit $code, want 70"
grep -q 'needs ppsim-full' <<<"$msg" || fail "without ppsim-full: $msg"
"$tmp/alone/bin/ppsim" simulate -s 1f1b -p 4 -m 8 >/dev/null || fail "the front alone still simulates"
echo "front test: ok"
