#!/usr/bin/env bash
# Browser test of the HTML report with the plain Chromium command line (no automation): renders
# `ppsim compare --html` headless, checks the DOM its script built (a timeline per schedule that
# drew every task, every schedule named) and that a screenshot is not blank.
#
#   tests/browser/report_test.sh build/dev/ppsim
#
# A missing browser is a failure, never a skip: CI must not pass without having looked.
set -euo pipefail

ppsim=${1:-build/dev/ppsim}
chromium=${CHROMIUM:-chromium}
schedules="1f1b,zb-h1,zb-v,dualpipe-v"

fail() { echo "report_test: FAIL: $*" >&2; exit 1; }

[ -x "$ppsim" ] || fail "no ppsim executable at '$ppsim' (build first)"
command -v "$chromium" >/dev/null 2>&1 ||
  fail "'$chromium' not found: install it (apt-get install -y chromium, or \`make test\` does)"
command -v python3 >/dev/null 2>&1 || fail "python3 not found"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$ppsim" compare -s "$schedules" -p 4 -m 8 --costs F=2,B=2,W=2 --html "$work/report.html" \
  >/dev/null || fail "ppsim compare --html failed"
"$ppsim" compare -s "$schedules" -p 4 -m 8 --costs F=2,B=2,W=2 --json >"$work/metrics.json" ||
  fail "ppsim compare --json failed"

flags=(--headless --no-sandbox --disable-gpu --disable-background-networking
       --disable-component-update --disable-sync --no-first-run)
# The script draws one timeline per animation frame: give it virtual time to finish.
flags+=(--virtual-time-budget=10000)
# NOTE: the virtual time budget does not always cover every animation frame of the drawing
# (the same page draws 3 or 4 of its timelines in one budget, at random): the DOM is dumped again,
# up to five times, until the script says it is done; the Playwright tests wait for it for real.
for attempt in 1 2 3 4 5; do
  timeout 180 "$chromium" "${flags[@]}" --user-data-dir="$(mktemp -d -p "$work")" \
    --dump-dom "file://$work/report.html" >"$work/dom.html" 2>>"$work/chromium.log" ||
    { cat "$work/chromium.log" >&2; fail "chromium --dump-dom failed"; }
  grep -q 'id="ppsim-root"[^>]*data-ready="true"' "$work/dom.html" && break
done
timeout 180 "$chromium" "${flags[@]}" --user-data-dir="$(mktemp -d -p "$work")" \
  --screenshot="$work/shot.png" --window-size=1200,900 "file://$work/report.html" \
  >>"$work/chromium.log" 2>&1 ||
  { cat "$work/chromium.log" >&2; fail "chromium --screenshot failed"; }
[ -s "$work/shot.png" ] || { cat "$work/chromium.log" >&2; fail "no screenshot written"; }

python3 - "$work" "$schedules" <<'PY'
import html.parser, json, struct, sys, zlib

work, schedules = sys.argv[1], sys.argv[2].split(",")

def fail(msg):
    print("report_test: FAIL: " + msg, file=sys.stderr)
    sys.exit(1)

# --- the DOM, as the browser's run of the script built it ---
class Dom(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.timelines = []  # (schedule, tasks, drawn)
        self.names = []
        self.ready = False
        self._in_name = False
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        classes = (a.get("class") or "").split()
        if tag == "div" and "timeline-box" in classes:
            self.timelines.append((a.get("data-schedule"), int(a.get("data-tasks", -1)),
                                   int(a.get("data-drawn", -1))))
        if tag == "div" and a.get("id") == "ppsim-root" and a.get("data-ready") == "true":
            self.ready = True
        if tag == "h3" and "schedule-name" in classes:
            self._in_name = True
            self.names.append("")
    def handle_endtag(self, tag):
        if tag == "h3":
            self._in_name = False
    def handle_data(self, data):
        if self._in_name:
            self.names[-1] += data

dom = Dom()
dom.feed(open(f"{work}/dom.html", encoding="utf-8").read())
metrics = json.load(open(f"{work}/metrics.json"))
if not dom.ready:
    fail("the report's script did not finish drawing (no #ppsim-root[data-ready])")
tasks = sum(m["tasks"] for m in metrics)
drawn = sum(t[2] for t in dom.timelines)
if [t[0] for t in dom.timelines] != [m["schedule"] for m in metrics]:
    fail(f"timelines {[t[0] for t in dom.timelines]}, schedules {[m['schedule'] for m in metrics]}")
for (name, n, d), m in zip(dom.timelines, metrics):
    if n != m["tasks"] or d != m["tasks"]:
        fail(f"{name}: {m['tasks']} tasks, the page has {n} and drew {d}")
for s in schedules:
    if s not in dom.names:
        fail(f"schedule '{s}' is not named in the page (names: {dom.names})")

# --- the screenshot: decode the PNG (standard library only) and count colours ---
data = open(f"{work}/shot.png", "rb").read()
if data[:8] != b"\x89PNG\r\n\x1a\n":
    fail("the screenshot is not a PNG")
pos, idat, width = 8, b"", 0
while pos < len(data):
    n, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if kind == b"IHDR":
        width, height, depth, ctype = struct.unpack(">IIBB", body[:10])
    elif kind == b"IDAT":
        idat += body
    pos += 12 + n
if depth != 8 or ctype not in (2, 6):
    fail(f"unexpected PNG format (bit depth {depth}, colour type {ctype})")
bpp = 3 if ctype == 2 else 4
raw = zlib.decompress(idat)
stride = width * bpp
prev = bytearray(stride)
colours, non_white = set(), 0
for y in range(height):
    f = raw[y * (stride + 1)]
    line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    for i in range(stride):
        a = line[i - bpp] if i >= bpp else 0
        b = prev[i]
        c = prev[i - bpp] if i >= bpp else 0
        if f == 1: line[i] = (line[i] + a) & 255
        elif f == 2: line[i] = (line[i] + b) & 255
        elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
            line[i] = (line[i] + pred) & 255
    for x in range(0, stride, bpp * 2):  # every other pixel is plenty
        px = bytes(line[x:x + 3])
        colours.add(px)
        if px != b"\xff\xff\xff":
            non_white += 1
    prev = line
share = non_white / (height * width / 2)
if len(colours) < 16 or share < 0.02:
    fail(f"the screenshot looks blank: {len(colours)} colours, {share:.1%} non-white pixels")
print(f"report_test: ok: {drawn} tasks drawn = {tasks} tasks, schedules "
      f"{', '.join(schedules)} named, screenshot {width}x{height} with {len(colours)} colours "
      f"({share:.1%} non-white)")
PY
