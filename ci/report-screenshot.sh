#!/bin/sh
# Renders a servegate HTML report in headless Chromium and saves a PNG, to
# check by eye that the report draws as intended with no network.
#
#   ci/report-screenshot.sh REPORT.html OUT.png [WIDTHxHEIGHT]
#
# Needs Debian's chromium (apt-get install -y chromium).
set -eu
report=$1
out=$2
size=${3:-1280,2000}
browser=${CHROMIUM:-$(command -v chromium || command -v chromium-browser)}
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
"$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
	--disable-background-networking --disable-component-update --disable-sync \
	--hide-scrollbars --user-data-dir="$profile" \
	--screenshot="$(realpath -m "$out")" --window-size="$size" \
	"file://$(realpath "$report")" >/dev/null 2>&1
test -s "$out"
echo "wrote $out"
