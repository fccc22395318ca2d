#!/usr/bin/env bash
# compare.sh [flags] BASE [HEAD]: servegate compare built from this
# checkout, as go tool would (go run turns exit 1 and 2 into 1). Its
# flags, -mode interleaved and -mode stored among them: servegate
# compare -h. The old variables (COUNT, PKGS, ...) are refused, not read.
set -euo pipefail
die() { echo "compare: $*" >&2; exit 2; }
here=$(cd "$(dirname "$0")/.." && pwd)
case "${1:-}" in
  --sequential | --paired | --interleaved | --baseline-store) die "$1 is gone: servegate compare's -mode paired (the default), interleaved or stored (docs/verdicts.md, \"Other modes\")" ;;
esac
for v in COUNT PKGS OUT GATE_FLAGS FRESH WARMUP BASELINE_FALLBACK; do
  [[ -z "${!v:-}" ]] || die "$v is set, but the environment is no longer read: pass the flag instead (servegate compare -h: -count, -packages, -out, -policy, -fresh, -no-fallback)"
done
bin=$(mktemp -d "${TMPDIR:-/tmp}/servegate-compare.XXXXXX")
trap 'rm -rf "$bin"' EXIT
(cd "$here" && go build -o "$bin/servegate" ./cmd/servegate) || die "cannot build servegate from $here"
status=0
"$bin/servegate" compare "$@" || status=$?
exit "$status"
