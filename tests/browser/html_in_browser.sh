#!/usr/bin/env bash
# The HTML timeline in a real browser (issue 14): headless Chromium renders the page of the EBFT
# total exchange at n = 4 and the screenshot must show its cells: 32 full (dark blue) and 40 idle
# (light grey) cells of 21 x 15 pixels (and the legend's small swatches); then the machine view of
# multibox 2x8 must show its 16 GPU squares. Exit 77 (skipped) without
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
# The machine view (topo --format svg) of multibox 2x8: its 16 GPUs are 30 x 30 px squares of
# #2171b5 (14,400 px less their white numbers, plus the boxes' borders): 13,755 px measured.
"$bin" topo "graph:$src/schedules/machines/multibox2x8.json" --format svg > "$dir/m.svg"
timeout 120 "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --force-device-scale-factor=1 \
  --window-size=920,360 --screenshot="$dir/machine.png" "file://$dir/m.svg" >/dev/null 2>&1
python3 "$src/tests/browser/screenshot_check.py" "$dir/machine.png" --colour 2171b5 12000 16000
