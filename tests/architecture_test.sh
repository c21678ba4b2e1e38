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
for folder in "${!allowed[@]}"; do
  [ -d "$folder" ] || continue
  while IFS= read -r line; do
    file=${line%%:*}
    inc=$(sed -E 's/.*#include "([^/"]+)\/.*/\1/' <<<"$line")
    [ "$inc" = "$folder" ] && continue
    ok=0
    for a in ${allowed[$folder]}; do [ "$inc" = "$a" ] && ok=1; done
    if [ $ok -eq 0 ]; then
      echo "layering: $file includes $inc/ (allowed from $folder/: ${allowed[$folder]:-nothing})"
      status=1
    fi
  done < <(grep -rHE '^#include "[^/"]+/' "$folder" --include='*.cpp' --include='*.hpp' || true)
done
[ $status -eq 0 ] && echo "layering: every include points down"
exit $status
