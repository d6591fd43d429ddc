#!/usr/bin/env bash
# The HTML timeline in a real browser (issue 14): headless Chromium renders the page of the EBFT
# total exchange at n = 4 and the screenshot must show its cells: 32 full (dark blue) and 40 idle
# (light grey) cells of 21 x 15 pixels (and the legend's small swatches). Exit 77 (skipped) without
# Chromium; scripts/setup.sh installs it.
set -euo pipefail
bin=$1
src=$2
browser=$(command -v chromium || command -v chromium-browser || true)
[ -n "$browser" ] || { echo "chromium not installed: skipped"; exit 77; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$bin" convert "$src/tests/data/ebft4_alltoall.json" --format html -o "$dir/t.html"
timeout 120 "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --force-device-scale-factor=1 \
  --window-size=800,500 --screenshot="$dir/shot.png" "file://$dir/t.html" >/dev/null 2>&1
python3 "$src/tests/browser/screenshot_check.py" "$dir/shot.png" 32 40 21 15
