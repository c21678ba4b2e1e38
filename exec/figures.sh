#!/usr/bin/env bash
# Measured vs predicted cost and bubble rate of `ppsim execute` (default p = 2, one core per
# rank), as the Markdown rows of the README's "Measured vs predicted" tables. Run it on an
# otherwise idle machine. NP sets the ranks (m = 8 either way), COMM_MODE async|blocking the
# sends (the prediction simulates that mode over the link the prelude measured).
#
#   exec/figures.sh build/dev/ppsim "256 256 2" "512 512 2"
#   NP=4 COMM_MODE=blocking SCHEDULES="1f1b zb-h1 zb-h2" exec/figures.sh build/dev/ppsim "256 256 2"
set -euo pipefail

ppsim=${1:-build/dev/ppsim}
shift || true
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=("256 256 2" "512 512 2")
schedules=${SCHEDULES:-1f1b zb-h1 zb-h2 zb-v}
np=${NP:-2}
mode=${COMM_MODE:-async}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "| p | sends | dim × tokens × blocks | schedule | measured cost (ms) | predicted | error | measured bubble rate | predicted | gradients |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for size in "${sizes[@]}"; do
  read -r dim tokens blocks <<<"$size"
  for s in $schedules; do
    "$ppsim" execute -s "$s" -p "$np" -m 8 --dim "$dim" --tokens "$tokens" --blocks "$blocks" \
      --iterations 5 --comm-mode "$mode" --json >"$work/run.json"
    python3 - "$work/run.json" "$dim × $tokens × $blocks" "$s" "$np" "$mode" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
m, p, e = j["measured"], j["predicted"], j["error"]
print(f"| {sys.argv[4]} | {sys.argv[5]} | {sys.argv[2]} | {sys.argv[3]} | {m['cost_ms']:.1f} | {p['cost_ms']:.1f} | "
      f"{100 * e['cost']:+.1f}% | {m['bubble_rate']:.3f} | {p['bubble_rate']:.3f} | "
      f"{'equal' if j['gradient_check']['passed'] else 'DIFFER'} "
      f"({j['gradient_check']['max_rel_diff']:.1g}) |")
PY
  done
done
