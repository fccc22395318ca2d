#!/usr/bin/env bash
# The capacity check: does the gate see a 10% capacity loss? Runs the
# shipped capacity scenario's search COUNT times (default 6) against a
# simulator on loopback with the scenario's step costs (base), then again
# with every step 10% slower (head, --slowdown 1.10), and gates
# max-rate-req/s (5% tolerance). Also measures each simulator's
# saturation with a long run (800 requests sent at once), the ground truth
# the search is compared with. About 10 minutes on two cores.
#
#   scenarios/capacity-check.sh [COUNT]
#
# Exit status is the gate's: 1 means the loss was detected.
set -uo pipefail
cd "$(dirname "$0")/.."
count=${1:-6}
work=$(mktemp -d)
port=${SERVEGATE_CHECK_PORT:-18931}
go build -o "$work/servegate" ./cmd/servegate || exit 2
cat >"$work/saturation.yaml" <<YAML
name: saturation-truth
target: {kind: url, url: http://127.0.0.1:$port}
dataset: {name: random, num_prompts: 800, input_len: 64, output_len: 16, seed: 99}
load: {request_rate: inf, warmups: 2}
sampling: {ignore_eos: true}
slo: {bounds: ["failed == 0"]}
YAML
printf 'gates:\n  max-rate-req/s: 5%%\n' >"$work/policy.yaml"
for side in base head; do
  slowdown=1.0; [ "$side" = head ] && slowdown=1.10
  # The scenario's knobs (scenarios/capacity.yaml target.args).
  "$work/servegate" sim --host 127.0.0.1 --port "$port" --profile cpu-small --max-num-seqs 8 \
    --step-fixed-ms 20 --seq-us 0 --prefill-token-us 0 --context-token-ns 0 --jitter 0 \
    --slowdown "$slowdown" >"$work/sim-$side.log" 2>&1 &
  sim=$!
  sleep 2
  "$work/servegate" bench --scenario "$work/saturation.yaml" --no-plot >"$work/saturation-$side.txt" 2>&1
  echo "capacity-check: $side (slowdown $slowdown) saturation: $(grep 'Request throughput' "$work/saturation-$side.txt")"
  "$work/servegate" sweep --scenario scenarios/capacity.yaml --target url --base-url "http://127.0.0.1:$port" \
    --count "$count" --benchfmt "$work/$side.benchfmt" >"$work/sweep-$side.txt" 2>&1
  echo "capacity-check: $side searches:"; grep 'max goodput rate' "$work/sweep-$side.txt"
  kill "$sim"; wait "$sim" 2>/dev/null
done
"$work/servegate" gate --policy "$work/policy.yaml" "$work/base.benchfmt" "$work/head.benchfmt"
code=$?
echo "capacity-check: files in $work"
exit $code
