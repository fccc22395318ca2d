#!/usr/bin/env bash
# history-publish.sh FILE...: file one run of main (its benchfmt and result
# JSON files) in the results store kept on a git branch, prune the store,
# write the dashboard beside it, and push the branch. The workflow template
# ci/workflows/servegate-history.yml runs it after benchmarking main.
#
# The branch (STORE_BRANCH, gh-pages by default, so that GitHub Pages serves
# the dashboard) holds:
#
#   store/                the results store (docs/history.md)
#   index.html            the dashboard's overview
#   scenario-*.html       one page per scenario
#   .nojekyll             serve the files as they are
#
# A push that loses a race with another job's is retried from the branch's
# new tip: each attempt fetches the branch, adds the run to a fresh checkout
# of it, writes the site and pushes. The store's adds never share a file, so
# two jobs' runs both land. An attempt that fails before the push changes
# nothing.
#
# Environment (defaults in brackets):
#   SERVEGATE     servegate command [servegate]
#   REMOTE        git remote [origin]
#   STORE_BRANCH  branch of the store and the site [gh-pages]
#   RUNNER_TYPE   the runner type the run is filed under [local]
#   COMMIT        the commit measured [git rev-parse HEAD]
#   KEEP_DAYS     prune: keep the commits of the last D days [365]
#   KEEP_COMMITS  prune: also keep each runner type's newest N commits [100]
#   COMMIT_URL    the dashboard's commit link template [GitHub's, when
#                 GITHUB_SERVER_URL and GITHUB_REPOSITORY are set]
#   ATTEMPTS      pushes tried [5]
#
# Exit status: 0 pushed; 2 bad input or no push after ATTEMPTS tries.
set -euo pipefail

die() { echo "history-publish: $*" >&2; exit 2; }

[ $# -ge 1 ] || die "usage: ci/history-publish.sh FILE..."
SERVEGATE=${SERVEGATE:-servegate}
REMOTE=${REMOTE:-origin}
STORE_BRANCH=${STORE_BRANCH:-gh-pages}
RUNNER_TYPE=${RUNNER_TYPE:-local}
KEEP_DAYS=${KEEP_DAYS:-365}
KEEP_COMMITS=${KEEP_COMMITS:-100}
ATTEMPTS=${ATTEMPTS:-5}
commit=${COMMIT:-$(git rev-parse HEAD)}
ctime=$(git show -s --format=%cI "$commit") || die "no commit $commit in this repository"

files=()
for f in "$@"; do
	[ -f "$f" ] || die "$f: no such file"
	files+=("$(cd "$(dirname "$f")" && pwd)/$(basename "$f")")
done

work=$(mktemp -d)
pages=$work/pages
cleanup() {
	git worktree remove --force "$pages" >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT

site_flags=()
if [ -n "${COMMIT_URL:-}" ]; then
	site_flags+=(--commit-url "$COMMIT_URL")
fi

for attempt in $(seq 1 "$ATTEMPTS"); do
	git worktree remove --force "$pages" >/dev/null 2>&1 || true
	rm -rf "$pages"
	if git fetch -q "$REMOTE" "$STORE_BRANCH" 2>/dev/null; then
		git worktree add -q --detach "$pages" FETCH_HEAD
	else
		# The first run: a branch with no history of its own.
		git worktree add -q --detach "$pages" HEAD
		git -C "$pages" checkout -q --orphan "servegate-history-$$"
		git -C "$pages" rm -rfq --ignore-unmatch .
	fi
	"$SERVEGATE" history add --store "$pages/store" --commit "$commit" --commit-time "$ctime" --runner "$RUNNER_TYPE" "${files[@]}"
	"$SERVEGATE" history prune --store "$pages/store" --keep-days "$KEEP_DAYS" --keep-commits "$KEEP_COMMITS"
	rm -f "$pages"/scenario-*.html
	"$SERVEGATE" history site --store "$pages/store" --out "$pages" "${site_flags[@]}"
	touch "$pages/.nojekyll"
	git -C "$pages" add -A
	git -C "$pages" -c user.name="servegate" -c user.email="servegate@users.noreply.github.com" \
		commit -qm "servegate history: $commit on $RUNNER_TYPE"
	if git -C "$pages" push -q "$REMOTE" "HEAD:refs/heads/$STORE_BRANCH"; then
		echo "history-publish: $commit on $RUNNER_TYPE pushed to $STORE_BRANCH (attempt $attempt)"
		exit 0
	fi
	echo "history-publish: push $attempt of $ATTEMPTS lost a race; retrying from the branch's new tip" >&2
	sleep $((attempt + RANDOM % 3))
done
die "no push after $ATTEMPTS attempts"
