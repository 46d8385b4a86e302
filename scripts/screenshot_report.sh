#!/usr/bin/env bash
# Render a simulation report in headless Chromium and save a PNG screenshot of the WHOLE page.
#   scripts/screenshot_report.sh [REPORT.html] [OUT.png]
# Defaults: runs `make demo`'s simulation into demo-out/ when the report is missing, and writes
# demo-out/report.png.  Needs Debian's `chromium` (`make chromium` installs it).
# Chromium's --screenshot captures the window only, so the page is measured first: a copy of the report
# that writes its own scroll height into the DOM once loaded is rendered with --dump-dom, then the
# screenshot is taken with a window exactly that tall.  Each run uses a fresh profile, removed at exit.
set -euo pipefail
cd "$(dirname "$0")/.."
REPORT="${1:-demo-out/report.html}"
OUT="${2:-${REPORT%.html}.png}"
PY="${PY:-.venv/bin/python}"
WIDTH="${WIDTH:-1280}"
if [ ! -f "$REPORT" ]; then
    "$PY" -m bundlewise.demo > /dev/null
fi
CHROME="$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)"
if [ -z "$CHROME" ]; then
    echo "error: chromium not found (make chromium, or apt-get install chromium)" >&2
    exit 2
fi
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
FLAGS=(--headless --no-sandbox --disable-gpu --disable-background-networking --disable-component-update
       --disable-sync --no-first-run --hide-scrollbars)
MEASURE='<script>addEventListener("load",()=>document.body.setAttribute("data-page-height",Math.ceil(document.documentElement.scrollHeight)))</script></body>'
sed "s#</body>#${MEASURE}#" "$REPORT" > "$WORK/measure.html"
HEIGHT="$("$CHROME" "${FLAGS[@]}" --user-data-dir="$WORK/measure-profile" --window-size="$WIDTH,1000" \
    --virtual-time-budget=10000 --dump-dom "file://$WORK/measure.html" 2> /dev/null \
    | grep -o 'data-page-height="[0-9]*"' | grep -o '[0-9][0-9]*' || true)"
if [ -z "$HEIGHT" ]; then
    echo "error: could not measure the height of $REPORT in Chromium" >&2
    exit 1
fi
"$CHROME" "${FLAGS[@]}" --user-data-dir="$WORK/shot-profile" --window-size="$WIDTH,$HEIGHT" \
    --virtual-time-budget=10000 --screenshot="$(realpath -m "$OUT")" "file://$(realpath "$REPORT")" > /dev/null 2>&1
test -s "$OUT"
echo "$OUT (${WIDTH}x${HEIGHT})"
