#!/usr/bin/env bash
# The module half of set-up (make setup runs it after ci/cmd/setup):
# every module a test reads from the module cache is fetched here, so that
# nothing downloads at test time, on a fresh machine as on a warm one.
set -euo pipefail
cd "$(dirname "$0")/.."

go mod download

# TestQuickstart runs `go mod tidy -diff` with GOPROXY=off in a copy of
# examples/quickstart. Tidy loads the tests of the dependencies too
# (gopkg.in/yaml.v3's import gopkg.in/check.v1), which `go mod download`
# does not fetch, and on a partly filled cache `tidy -diff` even reports a
# go.sum diff that is not there. So run the same tidy, with downloads
# allowed, in a scratch copy pointed at this checkout.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -R examples/quickstart/. "$tmp/"
sed -i.orig "s#=> \.\./\.\.#=> $PWD#" "$tmp/go.mod"
grep -q "=> $PWD" "$tmp/go.mod" || { echo "ci/modules.sh: examples/quickstart/go.mod has no 'replace ... => ../..' line" >&2; exit 1; }
(cd "$tmp" && GOWORK=off GOFLAGS=-mod=mod go mod tidy)
