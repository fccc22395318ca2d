#!/usr/bin/env bash
# The capacity check: does the gate see a 10% capacity loss? Starts two
# simulators on loopback with the shipped capacity scenario's step costs,
# base and head (every step 10% slower, --slowdown 1.10), and runs the
# scenario's search COUNT times (default 6) on each, alternating base and
# head (base first in odd rounds, head first in even ones) so that a drift
# of the machine's load hits both sides alike. Then gates max-rate-req/s
# (5% tolerance). First measures each simulator's saturation with a long
# run (800 requests sent at once), the ground truth the search is compared
# with; CAPACITY_CHECK_TRUTH=0 skips it. About 11 minutes on two cores
# (9 without the long runs).
#
#   scenarios/capacity-check.sh [COUNT]
#
# Besides servegate's own benchfmt (base.benchfmt, head.benchfmt, which
# carry the interpolated SLO edge), it gates the highest passing rate of
# each search (base-last.benchfmt, head-last.benchfmt) for comparison.
# Exit status is the gate's on servegate's files: 1 means the loss was
# detected.
#
# Measured at count 6 (CAPACITY_CHECK_TRUTH=0 after the first): three
# batches on a quiet machine and one beside a noisy neighbour (the internal/gate
# accuracy test's, about one core; load 1.6-1.8) all caught the loss:
# base 26.57-26.60, head 24.12-24.15 req/s, -9.2%, p = 0.002 (the least a
# U test of 6 against 6 can give), with a spread under 0.2% on each side.
set -uo pipefail
cd "$(dirname "$0")/.."
count=${1:-6}
work=$(mktemp -d)
port=${SERVEGATE_CHECK_PORT:-18931}
go build -o "$work/servegate" ./cmd/servegate || exit 2
printf 'gates:\n  max-rate-req/s: 5%%\n' >"$work/policy.yaml"
declare -A url sim
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null' EXIT
for side in base head; do
  slowdown=1.0 p=$port
  [ "$side" = head ] && slowdown=1.10 p=$((port + 1))
  url[$side]=http://127.0.0.1:$p
  # The scenario's knobs (scenarios/capacity.yaml target.args).
  "$work/servegate" sim --host 127.0.0.1 --port "$p" --profile cpu-small --max-num-seqs 8 \
    --step-fixed-ms 20 --seq-us 0 --prefill-token-us 0 --context-token-ns 0 --jitter 0 \
    --slowdown "$slowdown" >"$work/sim-$side.log" 2>&1 &
  pids+=($!)
done
sleep 2
echo "capacity-check: load $(cut -d' ' -f1-3 /proc/loadavg) before"
if [ "${CAPACITY_CHECK_TRUTH:-1}" != 0 ]; then
  for side in base head; do
    cat >"$work/saturation-$side.yaml" <<YAML
name: saturation-truth
target: {kind: url, url: ${url[$side]}}
dataset: {name: random, num_prompts: 800, input_len: 64, output_len: 16, seed: 99}
load: {request_rate: inf, warmups: 2}
sampling: {ignore_eos: true}
slo: {bounds: ["failed == 0"]}
YAML
    "$work/servegate" bench --scenario "$work/saturation-$side.yaml" --no-plot >"$work/saturation-$side.txt" 2>&1
    echo "capacity-check: $side saturation: $(grep 'Request throughput' "$work/saturation-$side.txt")"
  done
fi
# search SIDE: one search against SIDE's simulator.
search() {
  local n
  n=$(cat "$work/$1.benchfmt" 2>/dev/null | wc -l)
  "$work/servegate" capacity --scenario scenarios/capacity.yaml --target url --base-url "${url[$1]}" \
    --benchfmt "$work/$1.benchfmt" >>"$work/capacity-$1.txt" 2>&1
  line=$(grep 'max goodput rate' "$work/capacity-$1.txt" | tail -1)
  echo "capacity-check: $1: $line"
  last=$(sed -n 's/.*max goodput rate: \([0-9.e+]*\) req\/s.*/\1/p' <<<"$line")
  # The lines this search appended, with the highest passing rate as the value.
  tail -n +$((n + 1)) "$work/$1.benchfmt" |
    sed "s/^\(Benchmark[^ ]* [0-9]*\) [^ ]* max-rate-req\/s/\1 ${last:-0} max-rate-req\/s/" >>"$work/$1-last.benchfmt"
}
for i in $(seq "$count"); do
  if [ $((i % 2)) = 1 ]; then search base; search head; else search head; search base; fi
done
echo "capacity-check: load $(cut -d' ' -f1-3 /proc/loadavg) after"
echo "capacity-check: the highest passing rates:"
"$work/servegate" gate --policy "$work/policy.yaml" "$work/base-last.benchfmt" "$work/head-last.benchfmt"
echo "capacity-check: servegate's max-rate-req/s:"
"$work/servegate" gate --policy "$work/policy.yaml" "$work/base.benchfmt" "$work/head.benchfmt"
code=$?
echo "capacity-check: files in $work"
exit $code
