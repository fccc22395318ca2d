#!/usr/bin/env bash
# compare.sh [flags] BASE [HEAD]: servegate compare built from this
# checkout, as go tool would (go run turns exit 1 and 2 into 1). Its
# flags, -mode interleaved and -mode stored among them: servegate
# compare -h. It reads none of the environment the bash compare.sh did.
set -euo pipefail
die() { echo "compare: $*" >&2; exit 2; }
here=$(cd "$(dirname "$0")/.." && pwd)
case "${1:-}" in
  --sequential | --paired | --interleaved | --baseline-store) die "$1 is gone: servegate compare's -mode paired (the default), interleaved or stored (docs/verdicts.md, \"Other modes\")" ;;
esac
bin=$(mktemp -d "${TMPDIR:-/tmp}/servegate-compare.XXXXXX")
trap 'rm -rf "$bin"' EXIT
(cd "$here" && go build -o "$bin/servegate" ./cmd/servegate) || die "cannot build servegate from $here"
status=0
"$bin/servegate" compare "$@" || status=$?
exit "$status"
