#!/usr/bin/env bash
# Render a nightly report page with headless Chromium and write a PNG of it, to look at the
# page as a person would.
#
#   bash scripts/screenshot-report.sh REPORT.html OUT.png [WIDTH] [HEIGHT]
#
# Needs Debian's chromium (apt-get install -y chromium). WIDTH x HEIGHT is the browser window
# (default 1400 x 4000); the PNG shows the page's top HEIGHT pixels. --no-sandbox: CI
# containers run as root, where Chromium's sandbox refuses to start.
set -euo pipefail
if [ $# -lt 2 ]; then
    echo "usage: $0 REPORT.html OUT.png [WIDTH] [HEIGHT]" >&2
    exit 2
fi
page=$(realpath "$1")
out=$(realpath -m "$2")
width=${3:-1400}
height=${4:-4000}
browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
    echo "no chromium on PATH: apt-get install -y chromium" >&2
    exit 3
fi
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
"$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$profile" \
    --window-size="$width,$height" --screenshot="$out" "file://$page" >/dev/null 2>&1
test -s "$out"
echo "$out"
