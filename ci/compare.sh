#!/usr/bin/env bash
# compare.sh [--baseline-store DIR] [--sequential|--paired|--interleaved] BASE_REF [HEAD_REF]: benchmark
# two revisions of the repository in the current directory, then run the
# regression gate. The default, --sequential, is the fast paired verdict
# (docs/verdicts.md): base and head at the same time, pair after pair,
# until every scenario is decided; --paired and --interleaved are the
# older, fixed-count modes.
#
# BASE_REF is checked out in a temporary git worktree. HEAD_REF defaults to
# the current working tree (uncommitted changes included); a ref is checked
# out in a second worktree.
#
# --interleaved: both sides run
#
#   go test -run '^$' -bench "$BENCH" -benchtime "$BENCHTIME" -count 1 $PKGS
#
# COUNT times each, alternating base, head, base, head, ... so that drift of
# the machine (thermal, noisy neighbours) hits both sides alike. The go test
# outputs go to $OUT/base.txt and $OUT/head.txt. Each run also gets its own
# SERVEGATE_OUT directory; the full-precision bench.benchfmt servegate's
# benchmarks write there is collected into $OUT/base.benchfmt and
# $OUT/head.benchfmt. The gate compares the .benchfmt pair when both sides
# wrote one (go test's output rounds to 4 digits), else the .txt pair.
#
# Environment (defaults in brackets):
#   COUNT      --sequential: the cap on pairs [8], 3 to 8; --paired: pairs
#              [10], >= 6; --interleaved: runs per side [10], >= 4 (6 for a
#              confidence interval)
#   WARMUP     runs (pairs) per side before those, discarded [0]: first runs
#              that pay for image builds or cold caches
#   STEADY_STATE --sequential: the steady-state window of gate -sequential
#              -steady-state, a fraction in [0, 0.4] of the schedule dropped
#              at each end [0: every request]
#   PKGS       packages to benchmark [./scenarios/...]
#   BENCH      -bench regexp [.]
#   BENCHTIME  -benchtime [1x]: one iteration is one full scenario run
#   OUT        output directory [out/compare]
#   GATE       gate command [built from this script's checkout: ci/cmd/gate]
#   GATE_FLAGS gate flags [-ignore image], e.g. "-policy ci/policy.yaml -holm";
#              the image key is ignored by default because the simulator
#              image's tag is a hash of its sources, which a pull request
#              may change; set GATE_FLAGS="" to require equal images
#
# Each run is told its place through SERVEGATE_COMPARE_SIDE (base|head) and
# SERVEGATE_COMPARE_RUN (1..COUNT).
#
# --paired: base and head targets run at the same time, COUNT pairs. Each
# pair is one go test run in the HEAD checkout (head's harness code drives
# both sides) with SERVEGATE_PAIRED_BASE (the base checkout),
# SERVEGATE_PAIRED_HEAD (the head checkout) and SERVEGATE_PAIR=i: every
# scenario starts head's target and base's (from base's scenario file and
# sources: sim and container targets only) and runs them together with the
# same plan and arrival schedule, base started first in odd pairs, head in
# even ones (benchtest/paired.go). Head's results go to head.benchfmt,
# base's to base.benchfmt, both labelled pair: i, and the gate runs with
# -paired (Wilcoxon signed-rank test on per-pair ratios). BENCHTIME must be
# 1x; the gate needs COUNT >= 6.
#
# --sequential (the default): pairs as --paired, run one at a time up to
# COUNT (default 8, the sequential test's cap); after each pair every
# scenario not yet decided is judged by gate -sequential on its pairs'
# result JSON so far (<scenario>.bench-base.1.json and
# <scenario>.bench.1.json in the pair's SERVEGATE_OUT): median TTFT and
# TPOT, p99 TTFT and goodput by a sequential test on the pairs' block-bootstrapped
# estimates, fail-ratio by a sign test on the requests that failed on one
# side only. The pairs stop when every scenario is decided. $OUT/gate.txt
# and $OUT/gate.md (the job summary, the pull request comment) say per
# scenario how many pairs it took and why it stopped ("regression of
# ttft-p50-sec after 3 pairs", "cannot judge: ... Remedies: ... exit 2").
# Exit 0 every scenario no regression, 1 a regression in any scenario
# (even when another could not be judged), 2 a scenario too noisy to
# judge at the cap, an invalid run or a bad input.
#
# --baseline-store DIR (or BASELINE_STORE=DIR; first argument): the
# stored baseline, see the block "stored baseline" below.
#
# Exit status: the gate's (0 pass, 1 regression, 2 bad input); 2 also when
# a checkout or a benchmark run fails.
set -euo pipefail

die() { echo "compare: $*" >&2; exit 2; }

# ---- stored baseline: arguments (docs/verdicts.md; block below) --------
baseline_store=${BASELINE_STORE:-}
if [ "${1:-}" = --baseline-store ]; then
  [ $# -ge 2 ] || die "--baseline-store: want the results store's directory"
  baseline_store=$2
  shift 2
fi
if [ -n "$baseline_store" ]; then
  case "${1:-}" in --*) die "--baseline-store: not with $1: it picks its own mode, and falls back to --sequential by itself" ;; esac
  COUNT=${COUNT:-8}
fi
# ---- end of the stored baseline's arguments ----------------------------

paired=1
sequential=1
case "${1:-}" in
  --sequential) shift ;;
  --paired) sequential=0; shift ;;
  --interleaved) paired=0; sequential=0; shift ;;
  --*) die "unknown mode ${1}: want --sequential (the default), --paired or --interleaved" ;;
esac
[ $# -ge 1 ] && [ $# -le 2 ] || die "usage: ci/compare.sh [--baseline-store DIR] [--sequential|--paired|--interleaved] BASE_REF [HEAD_REF]"
base_ref=$1
head_ref=${2:-}
if [ "$sequential" = 1 ]; then COUNT=${COUNT:-8}; else COUNT=${COUNT:-10}; fi
WARMUP=${WARMUP:-0}
PKGS=${PKGS:-./scenarios/...}
BENCH=${BENCH:-.}
BENCHTIME=${BENCHTIME:-1x}
OUT=${OUT:-out/compare}
GATE_FLAGS=${GATE_FLAGS--ignore image}
[[ $COUNT =~ ^[1-9][0-9]*$ ]] || die "COUNT=$COUNT: want a positive integer"
[[ $WARMUP =~ ^[0-9]+$ ]] || die "WARMUP=$WARMUP: want a non-negative integer"
STEADY_STATE=${STEADY_STATE:-0}
if [ "$sequential" = 1 ]; then
  [ "$COUNT" -ge 3 ] && [ "$COUNT" -le 8 ] || die "--sequential: COUNT=$COUNT: the cap on pairs must be 3 to 8 (decisions from 3 pairs; gate -sequential stops at 8)"
  [[ $STEADY_STATE =~ ^(0|0?\.[0-9]+)$ ]] || die "STEADY_STATE=$STEADY_STATE: want a fraction in [0, 0.4]"
  GATE_FLAGS="$GATE_FLAGS -steady-state $STEADY_STATE"
elif [ "$STEADY_STATE" != 0 ]; then
  die "STEADY_STATE=$STEADY_STATE: only with --sequential"
fi
if [ "$paired" = 1 ] && [ "$BENCHTIME" != 1x ]; then die "--paired: BENCHTIME=$BENCHTIME: paired mode runs one pair per go test run, BENCHTIME=1x"; fi

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
mode="$COUNT interleaved runs"
if [ "$paired" = 1 ]; then mode="$COUNT pairs (base and head at the same time, head's harness)"; fi
if [ "$sequential" = 1 ]; then mode="at most $COUNT pairs, stopping when every scenario is decided (base and head at the same time, head's harness)"; fi
if [ -n "$baseline_store" ]; then mode="head's runs against main's stored runs (stored baseline), at most $COUNT"; fi
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

# run_pair I [warmup]: pair I, both sides at once from head's harness;
# head's results are appended to $OUT/head.*, base's to $OUT/base.benchfmt.
run_pair() {
  local i=$1 warmup=${2:-} status=0 sgout=$tmp/out/pair-$1${2:-}
  echo "${warmup:-pair} $i base+head" >>"$OUT/runs.log"
  mkdir -p "$sgout"
  # shellcheck disable=SC2086 # PKGS is a word list
  (cd "$head_dir" && SERVEGATE_PAIRED_BASE=$tmp/base SERVEGATE_PAIRED_HEAD=$head_dir SERVEGATE_PAIR=$i \
    SERVEGATE_COMPARE_SIDE=pair SERVEGATE_COMPARE_RUN=$i SERVEGATE_OUT=$sgout \
    go test -run '^$' -bench "$BENCH" -benchtime 1x -count 1 $PKGS) \
    >"$tmp/run.txt" 2>"$tmp/run.err" || status=$?
  cat "$tmp/run.txt" "$tmp/run.err" >>"$OUT/head.log"
  if [ "$status" -ne 0 ]; then
    tail -20 "$tmp/run.txt" "$tmp/run.err" >&2
    die "pair $i failed (go test exit $status); full output in $OUT/head.log"
  fi
  [ -n "$warmup" ] && return
  cat "$tmp/run.txt" >>"$OUT/head.txt"
  for side in base head; do
    local f=$sgout/bench.benchfmt
    [ "$side" = base ] && f=$sgout/bench-base.benchfmt
    [ -s "$f" ] || die "pair $i wrote no $f: are these servegate scenario benchmarks?"
    { printf 'interrupted:\ninvalid:\n'; cat "$f"; } >>"$OUT/$side.benchfmt"
  done
}

# sequential_step I: add pair I's result JSON to each scenario's list and
# judge every scenario not yet decided; returns 0 when all are decided.
sequential_step() {
  local i=$1 sgout=$tmp/out/pair-$1 f name code why open=0
  mkdir -p "$tmp/seq"
  for f in "$sgout"/*.bench-base.1.json; do
    [ -e "$f" ] || die "pair $i wrote no <scenario>.bench-base.1.json in its output: --sequential needs servegate scenario benchmarks"
    name=$(basename "$f" .bench-base.1.json)
    [ -s "$sgout/$name.bench.1.json" ] || die "pair $i: $name has base's result JSON but not head's"
    printf '%s\n%s\n' "$f" "$sgout/$name.bench.1.json" >>"$tmp/seq/$name.files"
  done
  for f in "$tmp/seq"/*.files; do
    name=$(basename "$f" .files)
    [ -e "$tmp/seq/$name.done" ] && continue
    code=0
    rm -f "$tmp/seq/$name.md"
    mapfile -t files <"$f"
    # shellcheck disable=SC2086 # GATE and GATE_FLAGS are word lists
    $GATE $GATE_FLAGS -markdown "$tmp/seq/$name.md" -sequential "${files[@]}" >"$tmp/seq/$name.out" 2>&1 || code=$?
    if [ "$code" = 2 ] && grep -q "not decided yet" "$tmp/seq/$name.out" && [ "$i" -lt "$COUNT" ]; then
      open=1
      continue
    fi
    echo "$code" >"$tmp/seq/$name.done"
    why=$(sed -n 's/^verdict: //p' "$tmp/seq/$name.out" | tail -1)
    [ -n "$why" ] || why=$(tail -1 "$tmp/seq/$name.out")
    { echo "== $name: after pair $i (exit $code): $why"; cat "$tmp/seq/$name.out"; } >>"$OUT/gate.txt"
    {
      echo "### \`$name\`: exit $code after $i pair(s)"
      echo
      if [ -s "$tmp/seq/$name.md" ]; then cat "$tmp/seq/$name.md"; else echo '```'; tail -5 "$tmp/seq/$name.out"; echo '```'; fi
      echo
    } >>"$tmp/seq.md"
    echo "| \`$name\` | $code | $i | ${why//|/\\|} |" >>"$tmp/seq-table.md"
  done
  return "$open"
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
#                     --sequential (base and head paired) in $OUT/fallback,
#                     whose exit status is the verdict; 0: exit 2 with the
#                     reason [1]
# Only median TTFT is gated in this mode. Exit 0 every scenario no regression,
# 1 a regression in any scenario, 2 otherwise undecided or bad input.
if [ -n "$baseline_store" ]; then
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
    echo "compare: stored baseline: a stored baseline cannot serve (the reason is above); falling back to --sequential, base and head paired, in $OUT/fallback" | tee -a "$OUT/runs.log" >&2
    status=0
    BASELINE_STORE="" OUT="$OUT/fallback" "$here/ci/compare.sh" --sequential "$base_ref" ${head_ref:+"$head_ref"} || status=$?
    echo "compare: stored baseline fell back to --sequential: exit $status" | tee -a "$OUT/runs.log" >&2
    baseline_markdown "Stored baseline not used; base and head paired (--sequential): exit $status" "$OUT/gate.txt" "$OUT/fallback/gate.txt"
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
fi
# ---- end of the stored baseline -----------------------------------------

if [ "$sequential" = 1 ]; then
  : >"$OUT/gate.txt"
  for i in $(seq 1 "$WARMUP"); do run_pair "$i" warmup; done
  for i in $(seq 1 "$COUNT"); do
    run_pair "$i"
    echo "compare: pair $i of at most $COUNT done" >&2
    if sequential_step "$i"; then break; fi
  done
  gated=1
  status=0
  for f in "$tmp/seq"/*.done; do
    case $(cat "$f") in
      0) ;;
      1) status=1 ;;
      *) [ "$status" = 1 ] || status=2 ;;
    esac
  done
  # Scenarios paired mode skips (capacity searches) are not gated: say so.
  skipped=$(grep -o 'paired mode: scenario [^ ]* is a capacity search' "$OUT/head.log" | sort -u | sed 's/^paired mode: scenario \([^ ]*\) .*/\1: a capacity search, which does not pair/' || true)
  if [ -n "$skipped" ]; then
    echo "$skipped" | sed 's/^/== not gated by the paired verdict (ci\/compare.sh --interleaved gates it): /' >>"$OUT/gate.txt"
  fi
  cat "$OUT/gate.txt"
  verdict=$(case $status in 0) echo "no regression" ;; 1) echo "regression" ;; *) echo "cannot judge: a scenario too noisy, an invalid run or a bad input" ;; esac)
  {
    echo "## servegate: $verdict (exit $status)"
    echo
    echo "Fast paired verdict (docs/verdicts.md): base and head at the same time, one schedule; median TTFT and TPOT, p99 TTFT and goodput by a closed sequential test over the pairs, fail-ratio by a sign test; at most $COUNT pairs, the last of which always decides."
    echo
    echo "| scenario | exit | pairs | why it stopped |"
    echo "| --- | --- | --- | --- |"
    cat "$tmp/seq-table.md" 2>/dev/null || true
    echo
    if [ -n "$skipped" ]; then
      echo "**Not gated by the paired verdict** (run \`ci/compare.sh --interleaved\` for them):"
      echo
      echo "$skipped" | sed 's/^/- /'
      echo
    fi
    cat "$tmp/seq.md" 2>/dev/null || true
  } >"$OUT/gate.md"
  echo "compare: sequential verdict: exit $status ($verdict)" | tee -a "$OUT/runs.log" >&2
  exit "$status"
fi

if [ "$paired" = 1 ]; then
  for i in $(seq 1 "$WARMUP"); do run_pair "$i" warmup; done
  for i in $(seq 1 "$COUNT"); do
    run_pair "$i"
    echo "compare: pair $i of $COUNT done" >&2
  done
  GATE_FLAGS="$GATE_FLAGS -paired"
else
  for i in $(seq 1 "$WARMUP"); do
    run base "$tmp/base" "$i" warmup
    run head "$head_dir" "$i" warmup
  done
  for i in $(seq 1 "$COUNT"); do
    run base "$tmp/base" "$i"
    run head "$head_dir" "$i"
    echo "compare: run $i of $COUNT done" >&2
  done
fi

ext=txt
if [ -s "$OUT/base.benchfmt" ] && [ -s "$OUT/head.benchfmt" ]; then ext=benchfmt; fi
echo "compare: gating $OUT/base.$ext against $OUT/head.$ext" | tee -a "$OUT/runs.log" >&2
status=0
# shellcheck disable=SC2086 # GATE and GATE_FLAGS are word lists
$GATE $GATE_FLAGS -markdown "$OUT/gate.md" -json "$OUT/gate.json" "$OUT/base.$ext" "$OUT/head.$ext" \
  | tee "$OUT/gate.txt" || status=${PIPESTATUS[0]}
gated=1
exit "$status"
