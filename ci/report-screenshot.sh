#!/bin/sh
# Renders a servegate HTML report in headless Chromium and saves a PNG, to
# check by eye that the report draws as intended with no network.
#
#   ci/report-screenshot.sh                          run the demo scenario, save docs/report-screenshot.png
#   ci/report-screenshot.sh REPORT.html OUT.png [W,H] screenshot an existing report
#
# The demo runs cmd/servegate/testdata/report-demo.yaml against the
# in-process simulator (no Docker). Needs Debian's chromium
# (apt-get install -y chromium).
set -eu
cd "$(dirname "$0")/.."
size=1280,2650 # CSS pixels; the PNG is 0.8 times that (SCALE)
if [ $# -ge 2 ]; then
	report=$1
	out=$2
	size=${3:-$size}
else
	work=$(mktemp -d)
	trap 'rm -rf "$work"' EXIT
	go build -o "$work/servegate" ./cmd/servegate
	"$work/servegate" bench --scenario cmd/servegate/testdata/report-demo.yaml \
		--no-plot --disable-tqdm --report "$work/report.html" >"$work/bench.log" 2>&1 || {
		# The demo's SLOs may fail on a loaded machine; the report is written first.
		test -s "$work/report.html" || { cat "$work/bench.log"; exit 1; }
	}
	report=$work/report.html
	out=docs/report-screenshot.png
	mkdir -p docs
fi
browser=${CHROMIUM:-$(command -v chromium || command -v chromium-browser)}
profile=$(mktemp -d)
trap 'rm -rf "$profile" ${work:+"$work"}' EXIT
"$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
	--disable-background-networking --disable-component-update --disable-sync \
	--hide-scrollbars --force-device-scale-factor=${SCALE:-0.8} --user-data-dir="$profile" \
	--screenshot="$(realpath -m "$out")" --window-size="$size" \
	"file://$(realpath "$report")" >/dev/null 2>&1
test -s "$out"
echo "wrote $out ($(wc -c <"$out") bytes)"
