#!/usr/bin/env bash
# twin-check.sh: the twin check (docs/twin.md). Calibrates a twin of real
# vLLM (the tiny model on CPU) and checks that it predicts runs it was not
# calibrated on:
#
#   1. runs the calibration set (twin/cal.yaml, 3 runs) and the held-out
#      set (twin/held.yaml: 5 runs and a capacity search) on real vLLM, one
#      container for all (SERVEGATE_TARGET=vllm go test -run TestTwin);
#   2. fits a profile from the calibration runs' detailed results
#      (servegate sim calibrate);
#   3. predicts each held-out run in virtual time (servegate sim predict)
#      and the capacity search (servegate capacity --virtual);
#   4. prints the table figure x scenario (predicted, measured, error) and
#      the verdict: the goal is a median |error| <= 10% for each figure
#      (median and p90 TTFT, median TPOT, output throughput) across the
#      held-out set, and the capacity within 10%.
#
# Exit status: 0 goal met, 1 goal missed, 2 the check could not be made
# (a run, the fit or a prediction failed; a file or a figure missing).
#
# Environment:
#   OUT      directory for everything (default: a fresh temporary one):
#            measured/ (the results), profile.yaml, predicted/, table.md
#   FROM     directories of measured results from earlier checks (their
#            measured/), separated by spaces: skip the vLLM runs; calibrate
#            from the first, and compare each figure with the median of
#            the directories' measurements. With 3 or more, also print the
#            floor (twintable -repeat): each session against the median of
#            the others, the error no twin can beat on this machine
#   PROFILE  predict with this profile (a shipped name such as
#            cpu-vllm-tiny, or a YAML file) instead of the one fitted in
#            step 2 (the fit still runs and is reported)
#   TOL      the goal, a fraction (default 0.10)
#   CAL      names of the measured runs to calibrate from (default: the
#            scenarios of twin/cal.yaml), separated by spaces: with FROM, a
#            calibration set other than the shipped one can be tried on
#            runs already made, such as a held-out run moved into it
#   HELD     names of the held-out runs to compare (default: those of
#            twin/held.yaml, less any in CAL); a run in both is exit 2
#   CROSS    with 3 or more FROM sessions, set to 1 to also calibrate a twin
#            from each session's calibration runs and compare its
#            predictions with the median of the other sessions
#            (twintable -cross): the error to expect of a twin calibrated
#            once and used on later runs (about a minute per session)
#
# Needs the image `make vllm-image` builds (unless FROM is set). Takes
# about 10 minutes with vLLM's start.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-$(mktemp -d)}
read -r -a measdirs <<< "${FROM:-$out/measured}"
meas=${measdirs[0]}
tol=${TOL:-0.10}
mkdir -p "$out/predicted" "$meas"
echo "twin-check: results in $out (measured: ${measdirs[*]})"
echo "twin-check: $(date -u +%FT%TZ) $(uptime)"

if [ -z "${FROM:-}" ]; then
	echo "twin-check: running the calibration and held-out sets on real vLLM (log: $out/go-test.log)"
	if ! SERVEGATE_TARGET=vllm SERVEGATE_TWIN=1 SERVEGATE_OUT=$meas go test -count=1 -v -timeout 60m -run '^TestTwin$' ./scenarios/vllm/ > "$out/go-test.log" 2>&1; then
		# A run's SLO (failed == 0) or a capacity search that found no
		# rate: the comparison below says whether a result is missing.
		echo "twin-check: go test failed; see $out/go-test.log"
		grep -E -- '--- FAIL|Error:' "$out/go-test.log" | head -20
	fi
	grep -E 'load average|scenario twin-' "$out/go-test.log" | sed 's/^ */  /'
	echo "twin-check: $(date -u +%FT%TZ) $(uptime)"
fi

if ! go build -o "$out/servegate" ./cmd/servegate; then
	echo "twin-check: cannot build servegate"
	exit 2
fi
sg=$out/servegate

# The newest result of scenario $2 in directory $1.
latest() { ls -1 "$1/$2".test.*.json 2>/dev/null | sort -t. -k3,3n | tail -1; }

# calibrate DIR PROFILE: fit a profile from the calibration runs in DIR
# (the newest result of each), its report on stdout; non-zero when a run
# is missing or the fit wrote no profile.
calibrate() {
	local cal=() name f
	for name in $calnames; do
		f=$(latest "$1" "$name")
		if [ -z "$f" ]; then
			echo "twin-check: no measured result of $name in $1"
			return 2
		fi
		cal+=("$f")
	done
	echo "twin-check: calibrating from ${cal[*]}"
	# What vLLM 0.13 on CPU states at start for the tiny model (its log
	# and its CPU defaults, scenarios/vllm/README.md): chunked prefill
	# with max_num_batched_tokens 2048, max_num_seqs 128 (128 x world
	# size), blocks of 128 tokens, a KV cache of 1,048,576 tokens (8,192
	# blocks), max_model_len 8192. Given, not fitted. --force: a fit that
	# misses its own goal on the calibration runs still writes its profile
	# (its header says so), so that the held-out comparison below shows
	# how far off it is.
	"$sg" sim calibrate --output "$2" --force \
		--max-model-len 8192 --max-num-seqs 128 --max-num-batched-tokens 2048 --block-size 128 --num-kv-blocks 8192 \
		"${cal[@]}" 2>&1
	if [ "${PIPESTATUS[0]}" != 0 ] || [ ! -s "$2" ]; then
		echo "twin-check: the fit failed (no profile)"
		return 2
	fi
}

# The held-out scenarios (the capacity search apart).
calnames=${CAL:-$(grep -oE '^- name: twin-cal-[A-Za-z0-9_.-]+' scenarios/vllm/twin/cal.yaml | cut -d' ' -f3)}
held=()
capacity=""
for name in ${HELD:-$(grep -oE '^- name: twin-ho-[A-Za-z0-9_.-]+' scenarios/vllm/twin/held.yaml | cut -d' ' -f3)}; do
	if [[ " $(echo $calnames) " == *" $name "* ]]; then
		if [ -n "${HELD:-}" ]; then
			echo "twin-check: $name is in both CAL and HELD: a run cannot be calibrated on and held out"
			exit 2
		fi
		echo "twin-check: $name is calibrated on (CAL), so it is not held out"
		continue
	fi
	if [ "$name" = twin-ho-capacity ]; then # the one capacity search
		capacity=$name
	else
		held+=("$name")
	fi
done

# predict PROFILE DIR: predict every held-out run and the capacity search
# with PROFILE in virtual time, into DIR/<name>.json; non-zero when one
# fails.
predict() {
	local name
	for name in "${held[@]}"; do
		if ! "$sg" sim predict --profile "$1" --scenario "scenarios/vllm/twin/held.yaml" --name "$name" --result-filename "$2/$name.json" > "$2/$name.txt" 2>&1; then
			echo "twin-check: the prediction of $name failed:"
			tail -5 "$2/$name.txt"
			return 2
		fi
	done
	if [ -n "$capacity" ] && ! "$sg" capacity --virtual --profile "$1" --scenario "scenarios/vllm/twin/held.yaml" --name "$capacity" --result "$2/$capacity.json" > "$2/$capacity.txt" 2>&1; then
		echo "twin-check: the virtual capacity search of $capacity failed:"
		tail -5 "$2/$capacity.txt"
		return 2
	fi
}

calibrate "$meas" "$out/profile.yaml" | tee "$out/calibrate.txt"
[ "${PIPESTATUS[0]}" = 0 ] || exit 2
profile=${PROFILE:-$out/profile.yaml}
echo "twin-check: predicting with $profile"
predict "$profile" "$out/predicted" || exit 2

mflags=()
for d in "${measdirs[@]}"; do mflags+=(-measured "$d"); done
go run ./internal/twin/twintable "${mflags[@]}" -predicted "$out/predicted" -capacity "$capacity" -tolerance "$tol" "${held[@]}" | tee "$out/table.md"
code=${PIPESTATUS[0]}
if [ "${#measdirs[@]}" -ge 3 ]; then
	# The floor: how far one session of the real server is from the
	# median of the others. No twin predicts a session better.
	echo
	go run ./internal/twin/twintable -repeat "${mflags[@]}" -capacity "$capacity" "${held[@]}" | tee "$out/repeat.md"
	if [ "${CROSS:-}" = 1 ]; then
		# Each session's own twin against the other sessions.
		cflags=()
		for i in "${!measdirs[@]}"; do
			d=$out/cross/$i
			mkdir -p "$d"
			echo "twin-check: session $i (${measdirs[$i]}): calibrating and predicting (log: $d/calibrate.txt)"
			calibrate "${measdirs[$i]}" "$d/profile.yaml" > "$d/calibrate.txt" || { tail -3 "$d/calibrate.txt"; exit 2; }
			predict "$d/profile.yaml" "$d" || exit 2
			cflags+=(-measured "${measdirs[$i]}" -predicted "$d")
		done
		echo
		go run ./internal/twin/twintable -cross "${cflags[@]}" -capacity "$capacity" "${held[@]}" | tee "$out/cross.md"
	fi
elif [ "${CROSS:-}" = 1 ]; then
	echo "twin-check: CROSS=1 needs 3 or more FROM sessions"
	exit 2
fi
echo "twin-check: $(date -u +%FT%TZ) $(uptime)"
exit "$code"
