#!/usr/bin/env bash
# Installs a build into a scratch prefix, then checks what a user of the package gets: the
# executable, the man page, the bash completion, the Python module, the pkg-config file, and a
# consumer program built with pkg-config's flags and with find_package(ppsim CONFIG).
# Usage: tests/package/install_test.sh BUILD_DIR SOURCE_DIR [PYTHON]
set -euo pipefail
build=$1
src=$2
python=${3:-python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null

fail() { echo "install test: $*" >&2; exit 1; }
[ -x "$prefix/bin/ppsim" ] || fail "no bin/ppsim"
"$prefix/bin/ppsim" list >/dev/null || fail "bin/ppsim list failed"
[ -x "$prefix/libexec/ppsim/ppsim-full" ] || fail "no libexec/ppsim/ppsim-full"
"$prefix/bin/ppsim" execute --help >/dev/null || fail "bin/ppsim does not hand execute to ppsim-full"
[ -s "$prefix/share/man/man1/ppsim.1" ] || fail "no man page"
grep -q '^.SH COMMANDS' "$prefix/share/man/man1/ppsim.1" || fail "man page without commands"
[ -s "$prefix/share/bash-completion/completions/ppsim" ] || fail "no bash completion"
bash -n "$prefix/share/bash-completion/completions/ppsim" || fail "bash completion does not parse"
[ -f "$prefix/lib/libppsim_core.a" ] || fail "no lib/libppsim_core.a"
[ -f "$prefix/include/ppsim/ppsim.hpp" ] || fail "no umbrella header include/ppsim/ppsim.hpp"
[ -f "$prefix/include/ppsim/sim/simulator.hpp" ] || fail "no public headers"
[ "$(ls "$prefix/include")" = ppsim ] || fail "include/ holds more than ppsim/: $(ls "$prefix/include")"
private=$(find "$prefix/include" -path '*/detail*' -o -name '*.cpp' -o -name '*.js' -o -name '*.css')
[ -z "$private" ] || fail "private files installed: $private"
[ -f "$prefix/lib/cmake/ppsim/ppsimConfig.cmake" ] || fail "no CMake package config"
[ -f "$prefix/lib/pkgconfig/ppsim.pc" ] || fail "no pkg-config file"
PKG_CONFIG_PATH=$prefix/lib/pkgconfig pkg-config --cflags --libs ppsim | grep -q -- '-lppsim_core' ||
  fail "pkg-config does not name the library"
# A consumer built with pkg-config's flags alone: nothing of the source tree on the include path.
flags=$(PKG_CONFIG_PATH=$prefix/lib/pkgconfig pkg-config --cflags --libs ppsim)
case "$flags" in *"$prefix"*) ;; *) fail "pkg-config's flags do not name the prefix: $flags" ;; esac
# shellcheck disable=SC2086
c++ -o "$work/pc-consumer" "$src/tests/package/consumer/main.cpp" $flags ||
  fail "a consumer does not build with pkg-config's flags: $flags"
[ "$("$work/pc-consumer")" = 54 ] || fail "the pkg-config consumer does not print 54"
# The README's consumer (its Installing section's C++ block) builds and prints what it says.
awk '/^## Installing/ { s = 1 } s && /^```cpp$/ { c = 1; next } c && /^```$/ { exit } c' \
  "$src/README.md" >"$work/readme.cpp"
grep -q 'ppsim/ppsim.hpp' "$work/readme.cpp" || fail "no C++ consumer in the README's Installing section"
# shellcheck disable=SC2086
c++ -o "$work/readme-consumer" "$work/readme.cpp" $flags || fail "the README's consumer does not build"
[ "$("$work/readme-consumer")" = 54 ] || fail "the README's consumer does not print 54"
# Every installed header stands on its own with the prefix's include folder alone (so none
# reaches a private header or the source tree), two compilers at a time.
find "$prefix/include" -name '*.hpp' | sort >"$work/headers"
# shellcheck disable=SC2016
xargs -P 2 -I{} sh -c 'printf "#include <%s>\n" "${1#*/include/}" | c++ -std=c++20 -fsyntax-only -x c++ -I"$2/include" - ||
  { echo "install test: $1 does not compile on its own" >&2; exit 255; }' _ {} "$prefix" <"$work/headers" ||
  fail "an installed header needs what is not installed"
module=$(find "$prefix" -name 'ppsim*.so' -path '*python*' | head -n1)
if [ -n "$module" ]; then
  PYTHONPATH=$(dirname "$module") "$python" -c 'import ppsim; assert ppsim.simulate("zb-h1", p=4, m=8, costs={"F": 2, "B": 2, "W": 2})["cost_ms"] == 54' ||
    fail "the installed Python module does not work"
fi

cmake -S "$src/tests/package/consumer" -B "$work/consumer" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_BUILD_TYPE=Release >/dev/null || fail "consumer: configure failed"
cmake --build "$work/consumer" -j2 >/dev/null || fail "consumer: build failed"
got=$("$work/consumer/consumer")
[ "$got" = 54 ] || fail "consumer printed '$got', expected 54"
echo "install test: bin, man page, completion, $(wc -l <"$work/headers") headers each on its own, CMake package, pkg-config, Python module and a consumer of <ppsim/ppsim.hpp> (ZB-H1 cost $got) all work"
