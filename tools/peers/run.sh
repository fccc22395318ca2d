#!/usr/bin/env bash
# tools/peers/run.sh: servegate, the Rust vllm-bench and Python's
# `vllm bench serve` against one `servegate sim`, same flags, interleaved,
# each run under /usr/bin/time; then summarize.py prints the comparison.
# A peer that cannot be found is skipped with a message. See README.md.
#
#   tools/peers/run.sh                                  # 3 rounds, 1000 x 512 tokens, 64 in flight
#   PEERS_WRAP="flock /work/quiet.lock" tools/peers/run.sh   # take a lock around each measured run
#
# Environment (defaults in brackets):
#   VLLM_BENCH    the Rust vllm-bench binary [vllm-bench on PATH]
#   VLLM_VENV     a venv with vllm 0.13 [the one `make vllm-image` leaves]
#   PEERS         which to run, in order [servegate rust python]
#   ROUNDS [3]  NUM_PROMPTS [1000]  OUTPUT_LEN [512]  INPUT_LEN [128]  CONCURRENCY [64]
#   PEERS_OUT     where runs, logs and the summary go [$TMPDIR/servegate-peers]
#   PEERS_PORT    the simulator's port [18930]
#   PEERS_WRAP    a command put before each measured run (e.g. a lock) []
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
here=$repo/tools/peers
out=${PEERS_OUT:-${TMPDIR:-/tmp}/servegate-peers}
port=${PEERS_PORT:-18930}
rounds=${ROUNDS:-3}
n=${NUM_PROMPTS:-1000}
outlen=${OUTPUT_LEN:-512}
inlen=${INPUT_LEN:-128}
conc=${CONCURRENCY:-64}
read -r -a wrap <<<"${PEERS_WRAP:-}"
mkdir -p "$out"
rm -f "$out"/run-*.json "$out"/run-*.time "$out"/run-*.log "$out"/summary.md

# Each peer as a command prefix; a peer not found is left out, said once.
declare -A cmd
cd "$repo"
go build -o "$out/servegate" ./cmd/servegate
cmd[servegate]="$out/servegate bench"
rust=${VLLM_BENCH:-$(command -v vllm-bench || true)}
if [ -n "$rust" ] && [ -x "$rust" ]; then
	cmd[rust]="$rust"
else
	echo "peers: skipping rust: no vllm-bench (set VLLM_BENCH=/path/to/vllm-bench; build it as README.md says)"
fi
venv=${VLLM_VENV:-$("$repo/containers/vllm/image/build.sh" --info 2>/dev/null | sed -n 's/^venv=//p')}
if [ -n "$venv" ] && [ -x "$venv/bin/vllm" ]; then
	cmd[python]="$venv/bin/vllm bench serve"
else
	echo "peers: skipping python: no vllm in venv '${venv}' (set VLLM_VENV, or run make vllm-image)"
fi
peers=()
for p in ${PEERS:-servegate rust python}; do
	[ -n "${cmd[$p]:-}" ] && peers+=("$p")
done

# The model directory every peer reads its tokenizer from.
"$repo/containers/vllm/e2e/make-model.sh" "$out/tiny-llama" >/dev/null

"$out/servegate" sim --profile instant --step-fixed-ms 2 --max-num-seqs 1024 --model tiny-llama \
	--tokenizer "$out/tiny-llama/tokenizer.json" --host 127.0.0.1 --port "$port" >"$out/sim.log" 2>&1 &
sim=$!
trap 'kill $sim 2>/dev/null; wait $sim 2>/dev/null || true' EXIT
for _ in $(seq 100); do
	curl -fsS "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break
	kill -0 $sim 2>/dev/null || { tail -20 "$out/sim.log"; exit 1; }
	sleep 0.1
done

{
	echo "date=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "commit=$(git -C "$repo" rev-parse --short HEAD)"
	echo "cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1) x $(nproc)"
	echo "kernel=$(uname -r)"
	echo "shape=$n prompts, $inlen input tokens, $outlen output tokens, $conc in flight, servegate sim instant profile (2 ms a step)"
	[ -n "$rust" ] && echo "rust=$rust"
	[ -n "${cmd[python]:-}" ] && echo "python=${cmd[python]}"
} >"$out/machine.txt"

# One run: the same flags for every peer; /usr/bin/time records user and
# system CPU (s), max RSS (KB) and wall time (s); the load average beside.
run() { # peer round outlen
	local name="run-$1-r$2-o$3"
	read -r -a c <<<"${cmd[$1]}"
	"${wrap[@]}" /usr/bin/time -f '%U %S %M %e' -o "$out/$name.time" \
		"${c[@]}" --backend vllm --base-url "http://127.0.0.1:$port" --model tiny-llama --tokenizer "$out/tiny-llama" \
		--dataset-name random --random-input-len "$inlen" --random-output-len "$3" --num-prompts "$n" \
		--max-concurrency "$conc" --ignore-eos --seed 0 --disable-tqdm \
		--save-result --result-dir "$out" --result-filename "$name.json" >"$out/$name.log" 2>&1 ||
		{ echo "peers: $name failed:"; tail -20 "$out/$name.log"; exit 1; }
	echo "$(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/$name.time"
	echo "peers: $name $(head -1 "$out/$name.time") (user s, sys s, max RSS KB, wall s), load $(tail -1 "$out/$name.time")"
}

# Interleaved: each round runs every peer, in an order that rotates.
for r in $(seq "$rounds"); do
	k=$(( (r - 1) % ${#peers[@]} ))
	order=("${peers[@]:$k}" "${peers[@]:0:$k}")
	for p in "${order[@]}"; do
		run "$p" "$r" "$outlen"
		run "$p" "$r" 1
	done
done

python3 "$here/summarize.py" "$out" | tee "$out/summary.md"
