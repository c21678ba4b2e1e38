#!/usr/bin/env bash
# The layering of ARCHITECTURE.md, checked: each folder includes only itself and the folders
# below it, so every arrow points down. Usage: tests/architecture_test.sh [SOURCE_DIR]
set -euo pipefail
cd "${1:-$(dirname "$0")/..}"

# folder: the folders its files may include (besides itself)
declare -A allowed=(
  [sim]=""
  [io]="sim"
  [schedules]="sim"
  [model]="sim io"
  [run]="sim io schedules"
  [viz]="sim io schedules run"
  [exec]="sim io schedules model run viz"
  [cli]="sim io schedules model run viz exec"
  [python]="sim io schedules model run viz"
  [fuzz]="sim io"
)
status=0
# The library's folders live under ppsim/ and are included as "ppsim/FOLDER/..."; the programs'
# (model, exec, cli, python, fuzz) at the top, as "FOLDER/...".
dir_of() { case "$1" in sim | io | schedules | run | viz) echo "ppsim/$1" ;; *) echo "$1" ;; esac; }
for folder in "${!allowed[@]}"; do
  dir=$(dir_of "$folder")
  [ -d "$dir" ] || continue
  while IFS= read -r line; do
    file=${line%%:*}
    inc=$(sed -E 's/.*#include "(ppsim\/)?([^/"]+)\/.*/\2/' <<<"$line")
    [ "$inc" = "$folder" ] && continue
    ok=0
    for a in ${allowed[$folder]}; do [ "$inc" = "$a" ] && ok=1; done
    if [ $ok -eq 0 ]; then
      echo "layering: $file includes $inc/ (allowed from $folder/: ${allowed[$folder]:-nothing})"
      status=1
    fi
  done < <(grep -rHE '^#include "[^/"]+/' "$dir" --include='*.cpp' --include='*.hpp' || true)
done
# The library's headers name each other by their installed path, so that a consumer needs only
# the install prefix's include folder: no "sim/..." without "ppsim/".
if stray=$(grep -rnE '^#include "(sim|io|schedules|run|viz)/' ppsim model exec cli python fuzz bench tests \
  --include='*.cpp' --include='*.hpp'); then
  echo "layering: includes of the library without its ppsim/ prefix:"
  echo "$stray"
  status=1
fi
[ $status -eq 0 ] && echo "layering: every include points down"
exit $status
