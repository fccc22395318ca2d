#!/usr/bin/env bash
# The module half of set-up (make setup runs it after ci/cmd/setup):
# every module a test reads from the module cache is fetched here, so that
# nothing downloads at test time, on a fresh machine as on a warm one.
set -euo pipefail
cd "$(dirname "$0")/.."

go mod download

# TestQuickstart and the compare tests (examples/compare*_test.go) run
# `go mod tidy -diff`, `go test` and `go tool servegate` with GOPROXY=off
# in copies of examples/quickstart and examples/gated. Tidy loads the
# tests of the dependencies too (gopkg.in/yaml.v3's import gopkg.in/check.v1),
# and gated's `tool` line loads cmd/servegate's; `go mod download` fetches
# neither, and on a partly filled cache `tidy -diff` even reports a go.sum
# diff that is not there. So run the same tidy, with downloads allowed, in a
# scratch copy of each, pointed at this checkout.
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
for example in examples/quickstart examples/gated; do
  tmp="$scratch/$(basename "$example")"
  mkdir "$tmp"
  cp -R "$example/." "$tmp/"
  sed -i.orig "s#=> \.\./\.\.#=> $PWD#" "$tmp/go.mod"
  grep -q "=> $PWD" "$tmp/go.mod" || { echo "ci/modules.sh: $example/go.mod has no 'replace ... => ../..' line" >&2; exit 1; }
  (cd "$tmp" && GOWORK=off GOFLAGS=-mod=mod go mod tidy)
done
