#!/usr/bin/env bash
# compare-baseline.sh --baseline-store STORE BASE_REF [HEAD_REF]: the
# stored baseline (docs/verdicts.md, "A baseline from history"): head's
# runs judged against main's runs in the results store STORE instead of
# base's. servegate compare has no mode for it yet; this script is what
# is left of the bash compare.sh. ci/compare.sh --baseline-store runs it.
#
# BASE_REF is checked out in a temporary git worktree. HEAD_REF defaults to
# the current working tree (uncommitted changes included); a ref is checked
# out in a second worktree. One run of a side is
#
#   go test -run '^$' -bench "$BENCH" -benchtime 1x -count 1 $PKGS
#
# in its checkout, told its place through SERVEGATE_COMPARE_SIDE (base|head)
# and SERVEGATE_COMPARE_RUN (1..COUNT), with its own SERVEGATE_OUT. The go
# test outputs go to $OUT/base.txt and $OUT/head.txt, the full-precision
# bench.benchfmt files to $OUT/base.benchfmt and $OUT/head.benchfmt.
#
# Environment (defaults in brackets):
#   COUNT      the cap on head runs [8], at most 8
#   WARMUP     runs per side before those, discarded [0]: first runs
#              that pay for image builds or cold caches
#   PKGS       packages to benchmark [./scenarios/...]
#   BENCH      -bench regexp [.]
#   OUT        output directory [out/compare]
#   GATE       gate command [built from this script's checkout: ci/cmd/gate]
#   GATE_FLAGS gate flags [-ignore image]
#
# Exit status: 0 no regression, 1 a regression, 2 no verdict; 2 also when
# a checkout or a benchmark run fails.
set -euo pipefail

die() { echo "compare: $*" >&2; exit 2; }

[ "${1:-}" = --baseline-store ] && [ $# -ge 2 ] || die "usage: ci/compare-baseline.sh --baseline-store STORE BASE_REF [HEAD_REF]"
baseline_store=$2
shift 2
[ $# -ge 1 ] && [ $# -le 2 ] || die "usage: ci/compare-baseline.sh --baseline-store STORE BASE_REF [HEAD_REF]"
base_ref=$1
head_ref=${2:-}
COUNT=${COUNT:-8}
WARMUP=${WARMUP:-0}
PKGS=${PKGS:-./scenarios/...}
BENCH=${BENCH:-.}
BENCHTIME=1x
OUT=${OUT:-out/compare}
GATE_FLAGS=${GATE_FLAGS--ignore image}
[[ $COUNT =~ ^[1-9][0-9]*$ ]] || die "COUNT=$COUNT: want a positive integer"
[[ $WARMUP =~ ^[0-9]+$ ]] || die "WARMUP=$WARMUP: want a non-negative integer"

here=$(cd "$(dirname "$0")/.." && pwd)          # the checkout holding this script
root=$(git rev-parse --show-toplevel) || die "not in a git repository"
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
for f in base.txt head.txt base.benchfmt head.benchfmt base.log head.log runs.log; do : >"$OUT/$f"; done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/servegate-compare.XXXXXX")
worktrees=()
gated=0
# cleanup removes the worktrees; any failure before the gate ran exits 2, so
# that 1 always means a regression.
cleanup() {
  local status=$?
  for wt in "${worktrees[@]}"; do
    git -C "$root" worktree remove --force "$wt" >/dev/null 2>&1 || true
  done
  rm -rf "$tmp"
  if [ "$gated" = 0 ] && [ "$status" -ne 0 ]; then status=2; fi
  exit "$status"
}
trap cleanup EXIT

# checkout REF DIR: a detached worktree of REF. It links with the tokenizer
# library of `make setup` through go env CGO_LDFLAGS, like any module.
checkout() {
  git -C "$root" worktree add --quiet --detach "$2" "$1" || die "cannot check out $1"
  worktrees+=("$2")
}

base_sha=$(git -C "$root" rev-parse --verify "$base_ref^{commit}") || die "unknown base ref $base_ref"
checkout "$base_sha" "$tmp/base"
if [ -n "$head_ref" ]; then
  head_sha=$(git -C "$root" rev-parse --verify "$head_ref^{commit}") || die "unknown head ref $head_ref"
  checkout "$head_sha" "$tmp/head"
  head_dir=$tmp/head
else
  head_sha="$(git -C "$root" rev-parse HEAD) (working tree)"
  head_dir=$root
fi
mode="head's runs against main's stored runs (stored baseline), at most $COUNT"
echo "compare: base $base_sha, head $head_sha, $mode of $PKGS" | tee -a "$OUT/runs.log"

if [ -z "${GATE:-}" ]; then
  (cd "$here" && go build -o "$tmp/gate" ./ci/cmd/gate) || die "cannot build the gate from $here"
  GATE=$tmp/gate
fi

# run SIDE DIR I [warmup]: one benchmark run of one side, appended to
# $OUT/SIDE.txt unless it is a warm-up.
run() {
  local side=$1 dir=$2 i=$3 warmup=${4:-} status=0 sgout=$tmp/out/$1-$3${4:-}
  echo "${warmup:-run} $i $side" >>"$OUT/runs.log"
  mkdir -p "$sgout"
  # shellcheck disable=SC2086 # PKGS is a word list
  (cd "$dir" && SERVEGATE_COMPARE_SIDE=$side SERVEGATE_COMPARE_RUN=$i SERVEGATE_OUT=$sgout \
    go test -run '^$' -bench "$BENCH" -benchtime "$BENCHTIME" -count 1 $PKGS) \
    >"$tmp/run.txt" 2>"$tmp/run.err" || status=$?
  cat "$tmp/run.txt" "$tmp/run.err" >>"$OUT/$side.log"
  if [ -z "$warmup" ]; then
    cat "$tmp/run.txt" >>"$OUT/$side.txt"
    # A benchfmt configuration key holds until a later line changes it, so
    # a run marked interrupted or invalid at the end of one file would mark
    # the next file's results too: clear the run markers (see
    # internal/report.Interrupted) before each file.
    if [ -s "$sgout/bench.benchfmt" ]; then
      { printf 'interrupted:\ninvalid:\n'; cat "$sgout/bench.benchfmt"; } >>"$OUT/$side.benchfmt"
    fi
  fi
  if [ "$status" -ne 0 ]; then
    tail -20 "$tmp/run.txt" "$tmp/run.err" >&2
    die "$side run $i failed (go test exit $status); full output in $OUT/$side.log"
  fi
}

# ---- stored baseline (--baseline-store DIR) -----------------------------
# Head's runs are judged against main's runs in the results store DIR
# (docs/verdicts.md, "A baseline from history") instead of base's. FRESH
# [2] fresh base runs are made beside head's first runs (base, head, base,
# head: single runs, as main's stored runs were made), then head runs
# alone, at most COUNT [8, the sequential test's cap]. After each head run
# every scenario not yet decided is judged by gate -sequential
# -baseline-store on its result JSON so far (<scenario>.bench.1.json of
# each run's SERVEGATE_OUT): the fresh base runs check the drift of the
# machine since main's runs, then the sequential test judges head run k
# against stored run k. $OUT/gate.txt says per scenario how many head runs
# it used and why it stopped.
#   RUNNER_TYPE       runner type of the stored runs [$SERVEGATE_RUNNER, else local]
#   BASE_COMMIT       main's stored commit to compare against [BASE_REF's commit]
#   BASELINE_MAX_AGE  days since main's runs were added, 1 to 365 [the gate's, 30]
#   FRESH             fresh base runs, 1 to COUNT [2]
#   BASELINE_FALLBACK 1: when a scenario's stored baseline cannot serve
#                     (missing, stale, another runner type or scenario
#                     version, invalid or too few runs) or the fresh runs
#                     show a drift, run the whole comparison again as
#                     servegate compare (base and head paired) in $OUT/fallback,
#                     whose exit status is the verdict; 0: exit 2 with the
#                     reason [1]
# Only median TTFT is gated in this mode. Exit 0 every scenario no regression,
# 1 a regression in any scenario, 2 otherwise undecided or bad input.
{
  FRESH=${FRESH:-2}
  BASELINE_FALLBACK=${BASELINE_FALLBACK:-1}
  [ "$COUNT" -le 8 ] || die "--baseline-store: COUNT=$COUNT: the sequential test's cap is 8 head runs"
  [[ $FRESH =~ ^[1-9][0-9]*$ ]] && [ "$FRESH" -le "$COUNT" ] || die "--baseline-store: FRESH=$FRESH: want 1 to COUNT ($COUNT) fresh base runs"
  [[ $BASELINE_FALLBACK =~ ^[01]$ ]] || die "--baseline-store: BASELINE_FALLBACK=$BASELINE_FALLBACK: want 1 or 0"
  [ -d "$baseline_store" ] || die "--baseline-store $baseline_store: no such directory"
  [ "$BENCHTIME" = 1x ] || die "--baseline-store: BENCHTIME=$BENCHTIME: one run is one go test run, BENCHTIME=1x"
  runner_type=${RUNNER_TYPE:-${SERVEGATE_RUNNER:-local}}
  base_commit=${BASE_COMMIT:-$base_sha}
  age=()
  if [ -n "${BASELINE_MAX_AGE:-}" ]; then age=(-baseline-max-age "$BASELINE_MAX_AGE"); fi
  echo "compare: stored baseline: head's runs against main's commit $base_commit in $baseline_store (runner type $runner_type), $FRESH fresh base run(s) for the drift check, at most $COUNT head runs" | tee -a "$OUT/runs.log"
  : >"$OUT/gate.txt"
  mkdir -p "$tmp/hb"
  fallback=0
  # baseline_step I: judge every scenario not yet decided after head run I;
  # returns 0 when all are decided.
  baseline_step() {
    local i=$1 f name code open=0 g
    for f in "$tmp/out/head-$i"/*.bench.1.json; do
      [ -e "$f" ] || die "head run $i wrote no <scenario>.bench.1.json in its output: --baseline-store needs servegate scenario benchmarks"
      name=$(basename "$f" .bench.1.json)
      echo "$f" >>"$tmp/hb/$name.heads"
      if [ "$i" -le "$FRESH" ]; then
        [ -s "$tmp/out/base-$i/$name.bench.1.json" ] || die "fresh base run $i: $name has head's result JSON but not base's"
        echo "$tmp/out/base-$i/$name.bench.1.json" >>"$tmp/hb/$name.fresh"
      fi
    done
    for f in "$tmp/hb"/*.heads; do
      name=$(basename "$f" .heads)
      [ -e "$tmp/hb/$name.done" ] && continue
      local heads=() fresh=()
      mapfile -t heads <"$f"
      while read -r g; do fresh+=(-fresh-base "$g"); done <"$tmp/hb/$name.fresh"
      code=0
      # shellcheck disable=SC2086 # GATE and GATE_FLAGS are word lists
      $GATE $GATE_FLAGS -sequential -baseline-store "$baseline_store" -runner "$runner_type" -base-commit "$base_commit" \
        "${age[@]}" "${fresh[@]}" "${heads[@]}" >"$tmp/hb/$name.out" 2>&1 || code=$?
      if [ "$code" = 2 ] && grep -q "not decided yet" "$tmp/hb/$name.out" && [ "$i" -lt "$COUNT" ]; then
        open=1
        continue
      fi
      echo "$code" >"$tmp/hb/$name.done"
      { echo "== $name: after head run $i (exit $code)"; cat "$tmp/hb/$name.out"; } >>"$OUT/gate.txt"
      if [ "$code" = 2 ] && grep -qE '^gate: (baseline: |-baseline-store: drift: )' "$tmp/hb/$name.out"; then fallback=1; fi
    done
    return "$open"
  }
  for i in $(seq 1 "$WARMUP"); do
    run base "$tmp/base" "$i" warmup
    run head "$head_dir" "$i" warmup
  done
  for i in $(seq 1 "$COUNT"); do
    if [ "$i" -le "$FRESH" ]; then run base "$tmp/base" "$i"; fi
    run head "$head_dir" "$i"
    echo "compare: head run $i of at most $COUNT done" >&2
    decided=0
    if baseline_step "$i"; then decided=1; fi
    if [ "$fallback" = 1 ] || [ "$decided" = 1 ]; then break; fi
  done
  gated=1
  cat "$OUT/gate.txt"
  # baseline_markdown TITLE FILE...: $OUT/gate.md for the job summary and
  # the pull request comment (this mode writes no gate JSON).
  baseline_markdown() {
    local title=$1
    shift
    { printf '### %s\n\nOnly median TTFT is gated in this mode (docs/verdicts.md, "A baseline from history").\n\n```\n' "$title"; cat "$@" 2>/dev/null || true; printf '```\n'; } >"$OUT/gate.md"
  }
  if [ "$fallback" = 1 ]; then
    if [ "$BASELINE_FALLBACK" = 0 ]; then
      echo "compare: stored baseline: a stored baseline cannot serve (the reason is above); exit 2 (BASELINE_FALLBACK=0)" | tee -a "$OUT/runs.log" >&2
      baseline_markdown "Stored baseline: cannot tell (exit 2)" "$OUT/gate.txt"
      exit 2
    fi
    echo "compare: stored baseline: a stored baseline cannot serve (the reason is above); falling back to servegate compare, base and head paired, in $OUT/fallback" | tee -a "$OUT/runs.log" >&2
    status=0
    # shellcheck disable=SC2086 # PKGS is a word list
    (cd "$root" && "$here/ci/compare.sh" -packages "$PKGS" -out "$OUT/fallback" "$base_ref" ${head_ref:+"$head_ref"}) || status=$?
    echo "compare: stored baseline fell back to servegate compare: exit $status" | tee -a "$OUT/runs.log" >&2
    baseline_markdown "Stored baseline not used; base and head paired (servegate compare): exit $status" "$OUT/gate.txt" "$OUT/fallback/gate.txt"
    exit "$status"
  fi
  status=0
  for f in "$tmp/hb"/*.done; do
    case $(cat "$f") in
      0) ;;
      1) status=1 ;;
      *) [ "$status" = 1 ] || status=2 ;;
    esac
  done
  echo "compare: stored baseline verdict: exit $status (only median TTFT is gated in this mode)" | tee -a "$OUT/runs.log" >&2
  baseline_markdown "Stored baseline: exit $status" "$OUT/gate.txt"
  exit "$status"
}
