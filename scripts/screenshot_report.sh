#!/usr/bin/env bash
# Render a simulation report in headless Chromium and save a PNG screenshot.
#   scripts/screenshot_report.sh [REPORT.html] [OUT.png]
# Defaults: runs `make demo`'s simulation into demo-out/ when the report is missing, and writes
# demo-out/report.png.  Needs Debian's `chromium` (apt-get install chromium).
set -euo pipefail
cd "$(dirname "$0")/.."
REPORT="${1:-demo-out/report.html}"
OUT="${2:-${REPORT%.html}.png}"
PY="${PY:-.venv/bin/python}"
if [ ! -f "$REPORT" ]; then
    "$PY" -m bundlewise.demo > /dev/null
fi
CHROME="$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)"
if [ -z "$CHROME" ]; then
    echo "error: chromium not found (apt-get install chromium)" >&2
    exit 2
fi
PROFILE="$(mktemp -d)"
trap 'rm -rf "$PROFILE"' EXIT
"$CHROME" --headless --no-sandbox --disable-gpu --disable-background-networking --no-first-run \
    --user-data-dir="$PROFILE" --hide-scrollbars --window-size=1280,2600 \
    --screenshot="$(realpath -m "$OUT")" "file://$(realpath "$REPORT")" > /dev/null 2>&1
test -s "$OUT"
echo "$OUT"
