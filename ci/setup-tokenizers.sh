#!/usr/bin/env bash
# Puts libtokenizers.a (github.com/daulet/tokenizers' Rust library) in .lib/
# so that `go test ./...` links with no exported variable.
#
#   ci/setup-tokenizers.sh                 build from the module's Rust source (cached by version)
#   LIBTOKENIZERS=/path/libtokenizers.a ci/setup-tokenizers.sh   use a prebuilt library
#
# The build is cached in ${SERVEGATE_CACHE:-~/.cache/servegate}/libtokenizers/<version>/,
# so a second run (or a second checkout) takes no time.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

module=github.com/daulet/tokenizers
version=$(go list -m -f '{{.Version}}' "$module")
symbol="tokenizers_version_${version#v}"
symbol=${symbol//./_}
cache=${SERVEGATE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/servegate}/libtokenizers/$version
lib=$cache/libtokenizers.a

has_symbol() { nm "$1" 2>/dev/null | grep " T $symbol\$" >/dev/null; }

if [ -n "${LIBTOKENIZERS:-}" ]; then
  [ -f "$LIBTOKENIZERS" ] || { echo "setup: LIBTOKENIZERS=$LIBTOKENIZERS: no such file" >&2; exit 1; }
  has_symbol "$LIBTOKENIZERS" || { echo "setup: $LIBTOKENIZERS is not libtokenizers $version (no symbol $symbol); get the $version release" >&2; exit 1; }
  mkdir -p "$cache" && cp "$LIBTOKENIZERS" "$lib"
elif [ -f "$lib" ] && has_symbol "$lib"; then
  echo "setup: libtokenizers $version cached at $lib"
else
  command -v cargo >/dev/null || { echo "setup: cargo not found: install Rust (rustup) or give a prebuilt library with LIBTOKENIZERS=path (see README)" >&2; exit 1; }
  go mod download "$module"
  src=$(go list -m -f '{{.Dir}}' "$module")
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  cp -r "$src/." "$work/"
  chmod -R u+w "$work"
  echo "setup: building libtokenizers $version with cargo (a few minutes, once)"
  (cd "$work" && cargo build --release --locked)
  mkdir -p "$cache"
  cp "$work/target/release/libtokenizers.a" "$lib.tmp" && mv "$lib.tmp" "$lib"
fi

mkdir -p .lib
cp "$lib" .lib/libtokenizers.a
go mod download
echo "setup: .lib/libtokenizers.a ready ($version)"
