#!/usr/bin/env bash
# calibrate.sh [N]: runs the real-vLLM scenarios N times (default 20) in one
# go test process (the vLLM containers are started once and shared, as
# benchtest.Main does) and prints each scenario's pass count and the
# spread of the metrics its SLOs bound, from the result JSON files.
#
# Needs the image `make vllm-image` builds. Results go to $OUT (default a
# fresh temporary directory). $RUN picks scenarios by a go test -run
# pattern under TestScenarios, such as 'vllm-multi-turn' (default all).
set -euo pipefail
n=${1:-20}
cd "$(dirname "$0")/../.."
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
echo "calibrate: $n runs, results in $out"
SERVEGATE_TARGET=vllm SERVEGATE_OUT=$out go test -count="$n" -v -timeout 3h -run "^TestScenarios\$/${RUN:+^scenario=$RUN}" ./scenarios/vllm/ > "$out/go-test.log" 2>&1 || true
grep -E '^\s+--- (PASS|FAIL|SKIP): TestScenarios/' "$out/go-test.log" |
	awk '{ split($3, a, "="); s[a[2]" "$2]++ } END { for (k in s) print k, s[k] }' | sort
grep -E 'SLO violated' "$out/go-test.log" | sort | uniq -c | sort -rn | head -20 || true
python3 - "$out" <<'PY'
import glob, json, os, statistics, sys
out = sys.argv[1]
keys = ["completed", "failed", "median_ttft_ms", "p99_ttft_ms", "mean_tpot_ms", "p99_tpot_ms", "goodput_ratio", "mean_schedule_lag_ms", "request_throughput",
        "sessions", "median_ttft_first_turn_ms", "median_ttft_later_turns_ms", "p99_ttft_later_turns_ms"]
by = {}
for f in glob.glob(os.path.join(out, "*.test.*.json")):
    name = os.path.basename(f).split(".test.")[0]
    d = json.load(open(f))
    for k in keys:
        if k in d and isinstance(d[k], (int, float)):
            by.setdefault(name, {}).setdefault(k, []).append(d[k])
for name in sorted(by):
    print(name)
    for k, v in by[name].items():
        print(f"  {k:22s} n={len(v):2d} min={min(v):9.2f} median={statistics.median(v):9.2f} max={max(v):9.2f}")
PY
