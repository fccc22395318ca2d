#!/usr/bin/env bash
# compare.sh [flags] BASE [HEAD]: servegate compare built from this
# checkout, as go tool would (go run turns exit 1 and 2 into 1). Its
# flags, -mode interleaved among them: servegate compare -h. It reads
# none of the environment the bash compare.sh did (COUNT, PKGS, OUT).
# --baseline-store STORE BASE [HEAD] runs ci/compare-baseline.sh.
set -euo pipefail
die() { echo "compare: $*" >&2; exit 2; }
here=$(cd "$(dirname "$0")/.." && pwd)
case "${1:-}" in
  --baseline-store) exec "$here/ci/compare-baseline.sh" "$@" ;;
  --sequential | --paired | --interleaved) die "$1 is gone: servegate compare's -mode paired (the default) or -mode interleaved (docs/verdicts.md, \"Other modes\")" ;;
esac
bin=$(mktemp -d "${TMPDIR:-/tmp}/servegate-compare.XXXXXX")
trap 'rm -rf "$bin"' EXIT
(cd "$here" && go build -o "$bin/servegate" ./cmd/servegate) || die "cannot build servegate from $here"
status=0
"$bin/servegate" compare "$@" || status=$?
exit "$status"
