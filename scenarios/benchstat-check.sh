#!/usr/bin/env bash
# The benchstat check: run the scenario benchmarks twice, three samples each,
# then benchstat the two `go test -bench` outputs and the two benchfmt files
# servegate wrote. Fails when a run fails, when benchstat fails, or when
# benchstat reports anything it could not parse.
#
#   scenarios/benchstat-check.sh [extra go test flags, e.g. -bench 'Scenarios/scenario=chat']
#
# SERVEGATE_TARGET etc. apply as usual (inproc runs with no Docker).
set -euo pipefail
cd "$(dirname "$0")/.."

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
bench=(-run '^$' -bench . -benchtime=1x -count=3)

for side in a b; do
  echo "benchstat-check: run $side"
  SERVEGATE_OUT="$work/$side" go test "${bench[@]}" "$@" ./scenarios/... >"$work/$side.txt"
  grep -q '^BenchmarkScenarios/scenario=' "$work/$side.txt" || { echo "no benchmark lines in run $side"; cat "$work/$side.txt"; exit 1; }
  test -s "$work/$side/bench.benchfmt" || { echo "run $side wrote no $work/$side/bench.benchfmt"; exit 1; }
done

check() {
  local name=$1; shift
  echo "benchstat-check: benchstat $name"
  go tool benchstat "$@" >"$work/$name.out" 2>"$work/$name.err"
  cat "$work/$name.out"
  if [ -s "$work/$name.err" ]; then
    echo "benchstat $name wrote to stderr:"; cat "$work/$name.err"; exit 1
  fi
  if grep -qiE 'parse|syntax|unexpected|malformed' "$work/$name.out"; then
    echo "benchstat $name reported a parse problem"; exit 1
  fi
  grep -q 'ttft-p99-sec' "$work/$name.out" || { echo "benchstat $name has no ttft-p99-sec table"; exit 1; }
}
check go-test-output "$work/a.txt" "$work/b.txt"
check benchfmt-files "$work/a/bench.benchfmt" "$work/b/bench.benchfmt"
echo "benchstat-check: ok"
