package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/servegate/servegate/internal/export"
	"github.com/servegate/servegate/internal/gate"
	"github.com/servegate/servegate/internal/site"
	"github.com/servegate/servegate/internal/store"
)

const historyUsage = `usage: servegate history <command> [flags]

Keeps benchmark results per runner type and commit in a results store (a
plain directory; layout in docs/history.md), draws them, and exports them.

commands:
  add     file a run's outputs (benchfmt, result JSON, gate JSON) under its commit
  prune   keep the last N commits or D days (never a scenario's newest baseline)
  site    write the static dashboard of a store
  export  write a commit's figures as Bencher Metric Format JSON, or a
          runner's history as CSV for Apache Otava

Run 'servegate history <command> --help' for the flags of a command.
`

// runHistory dispatches the history subcommands.
func runHistory(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, historyUsage)
		return 2
	}
	switch args[0] {
	case "-h", "--help", "help":
		fmt.Fprint(stdout, historyUsage)
		return 0
	case "add":
		return runHistoryAdd(ctx, args[1:], stdout, stderr)
	case "prune":
		return runHistoryPrune(args[1:], stdout, stderr)
	case "site":
		return runHistorySite(ctx, args[1:], stdout, stderr)
	case "export":
		return runHistoryExport(args[1:], stdout, stderr)
	}
	fmt.Fprintf(stderr, "servegate history: unknown command %q\n\n%s", args[0], historyUsage)
	return 2
}

const historyAddSummary = `File one run's outputs in a results store, under its runner type and
commit: benchfmt files (*.benchfmt, *.txt, *.bench), result JSON and gate
JSON reports (*.json). The store is created when missing. The add is whole
or absent, and two adds at once (even of one commit) both land.

Exit status: 0 added, 2 refused (nothing written): a file unreadable, of an
unknown kind or torn; no benchmark result line; another scenario version
or commit time than a run of the same commit recorded.`

type historyAddArgs struct {
	Store, Commit, CommitTime, Runner string
	Files                             []string
}

func runHistoryAdd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	const prog = "servegate history add"
	a := &historyAddArgs{}
	p := newArgParser(prog)
	g := "options"
	p.stringVar(&a.Store, "store", "", g, "The results store directory.")
	p.required = append(p.required, "store")
	p.stringVar(&a.Commit, "commit", "", g, "The commit the run measured; default: git rev-parse HEAD.")
	p.stringVar(&a.CommitTime, "commit-time", "", g, "The commit's time, RFC 3339 or Unix seconds; default: its committer date from git.")
	p.stringVar(&a.Runner, "runner", "", g, "The runner type (machine class) the run ran on; default: $SERVEGATE_RUNNER, else local.")
	p.positionals = &a.Files
	p.usageArgs = "FILE..."
	if wantsHelp(args) {
		p.writeHelp(stdout, historyAddSummary)
		return 0
	}
	if err := parseRequired(p, args); err != nil {
		return exitCode(prog, err, stderr)
	}
	if err := a.add(ctx, stdout); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", prog, err)
		return 2
	}
	return 0
}

func (a *historyAddArgs) add(ctx context.Context, stdout io.Writer) error {
	commit := a.Commit
	if strings.HasPrefix(commit, "-") {
		return fmt.Errorf("--commit %q: a commit does not start with '-'", commit)
	}
	switch {
	case commit == "":
		out, err := git(ctx, "rev-parse", "HEAD")
		if err != nil {
			return fmt.Errorf("no --commit, and %w", err)
		}
		commit = out
	case a.CommitTime == "":
		// Asked of git anyway for its time: file it under the full
		// hash, so that HEAD or a short hash is not a commit name.
		out, err := git(ctx, "rev-parse", "--verify", "--end-of-options", commit+"^{commit}")
		if err != nil {
			return fmt.Errorf("--commit %q without --commit-time: %w", commit, err)
		}
		commit = out
	}
	when, err := commitTime(ctx, a.CommitTime, commit)
	if err != nil {
		return err
	}
	runner := a.Runner
	if runner == "" {
		runner = os.Getenv("SERVEGATE_RUNNER")
	}
	if runner == "" {
		runner = "local"
	}
	st, err := store.Create(a.Store)
	if err != nil {
		return err
	}
	r, err := st.Add(ctx, store.AddRequest{Commit: commit, CommitTime: when, Runner: runner, Version: version(), Files: a.Files})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "added %d file(s) of commit %s (%s) on %s: %s\n", len(r.Manifest.Files), commit, when.Format(time.RFC3339), runner, r.Dir)
	return nil
}

// commitTime parses --commit-time, or asks git for the commit's
// committer date.
func commitTime(ctx context.Context, flag, commit string) (time.Time, error) {
	if flag == "" {
		out, err := git(ctx, "show", "-s", "--format=%cI", "--end-of-options", commit)
		if err != nil {
			return time.Time{}, fmt.Errorf("no --commit-time, and %w", err)
		}
		flag = out
	}
	if secs, err := strconv.ParseInt(flag, 10, 64); err == nil {
		return time.Unix(secs, 0).UTC(), nil
	}
	t, err := time.Parse(time.RFC3339, flag)
	if err != nil {
		return time.Time{}, fmt.Errorf("--commit-time %q: want RFC 3339 (2026-01-02T15:04:05Z) or Unix seconds", flag)
	}
	return t, nil
}

// git runs git in the current directory and returns its trimmed output.
func git(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}

// version is servegate's module version as the build recorded it.
func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "unknown"
}

const historyPruneSummary = `Remove old commits from a results store: keep each runner type's newest
--keep-commits commits, or those of the last --keep-days days (both: what
either keeps). A prune never removes a baseline: for each runner type and
benchmark, the newest commit with a valid result (not interrupted, not
invalid) at the benchmark's newest scenario version. It also removes
leftovers of crashed adds (older than an hour). A damaged store is an
error and nothing is removed.

Exit status: 0 pruned, 2 refused.`

func runHistoryPrune(args []string, stdout, stderr io.Writer) int {
	const prog = "servegate history prune"
	var dir string
	var ret store.Retention
	p := newArgParser(prog)
	g := "options"
	p.stringVar(&dir, "store", "", g, "The results store directory.")
	p.required = append(p.required, "store")
	p.intVar(&ret.KeepCommits, "keep-commits", 0, g, fmt.Sprintf("Keep each runner type's newest N commits (N >= %d).", store.MinKeepCommits))
	p.intVar(&ret.KeepDays, "keep-days", 0, g, fmt.Sprintf("Keep the commits of the last D days (1 to %d), by commit time.", store.MaxKeepDays))
	p.boolVar(&ret.DryRun, "dry-run", g, "Say what would be removed; remove nothing.")
	if wantsHelp(args) {
		p.writeHelp(stdout, historyPruneSummary)
		return 0
	}
	if err := parseRequired(p, args); err != nil {
		return exitCode(prog, err, stderr)
	}
	st, err := store.Open(dir)
	if err == nil {
		var rep *store.PruneReport
		rep, err = st.Prune(ret)
		if rep != nil {
			verb := "removed"
			if ret.DryRun {
				verb = "would remove"
			}
			for _, c := range rep.Removed {
				fmt.Fprintf(stdout, "%s %s\n", verb, c)
			}
			for _, b := range rep.Baselines {
				fmt.Fprintf(stdout, "kept %s: the newest baseline of a benchmark\n", b)
			}
			for _, l := range rep.Leftovers {
				fmt.Fprintf(stdout, "%s leftover %s\n", verb, l)
			}
			fmt.Fprintf(stdout, "%d commit(s) kept, %d %s\n", rep.Kept, len(rep.Removed), verb)
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", prog, err)
		return 2
	}
	return 0
}

const historySiteSummary = `Write the static dashboard of a results store: index.html (every
scenario's latest verdict and largest open shift) and one page per
scenario with one chart per gated unit and runner type (per-commit median,
min-max band, change points by E-divisive means, each point a link to its
commit). Inline SVG, no script: it fetches nothing and opens from disk or
GitHub Pages.

Exit status: 0 written, 2 refused (an empty or damaged store).`

func runHistorySite(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	const prog = "servegate history site"
	var dir, out, policy, commitURL, title string
	var window int
	var alpha float64
	p := newArgParser(prog)
	g := "options"
	p.stringVar(&dir, "store", "", g, "The results store directory.")
	p.stringVar(&out, "out", "", g, "The directory the site is written to.")
	p.required = append(p.required, "store", "out")
	p.stringVar(&policy, "policy", "", g, "The gate policy file whose units are charted; default: the built-in policy.")
	p.floatVar(&alpha, "alpha", 0.01, g, "The change points' significance level, in (0, 1).")
	p.intVar(&window, "window", site.DefaultWindow, g, "Search change points in each runner type's newest N commits (1 to 500); older ones are drawn.")
	p.stringVar(&commitURL, "commit-url", "", g, "Link each point to this URL, {commit} replaced by the commit (https://github.com/OWNER/REPO/commit/{commit}); default: $GITHUB_SERVER_URL/$GITHUB_REPOSITORY/commit/{commit} when both are set.")
	p.stringVar(&title, "title", "", g, "The pages' title; default: servegate history.")
	if wantsHelp(args) {
		p.writeHelp(stdout, historySiteSummary)
		return 0
	}
	if err := parseRequired(p, args); err != nil {
		return exitCode(prog, err, stderr)
	}
	if !(alpha > 0 && alpha < 1) {
		return exitCode(prog, usagef("--alpha %v: must be in (0, 1)", alpha), stderr)
	}
	if window < 1 || window > 500 {
		return exitCode(prog, usagef("--window %d: must be 1 to 500", window), stderr)
	}
	if commitURL == "" && os.Getenv("GITHUB_SERVER_URL") != "" && os.Getenv("GITHUB_REPOSITORY") != "" {
		commitURL = os.Getenv("GITHUB_SERVER_URL") + "/" + os.Getenv("GITHUB_REPOSITORY") + "/commit/{commit}"
	}
	err := func() error {
		st, err := store.Open(dir)
		if err != nil {
			return err
		}
		cfg := site.Config{Store: st, Out: out, Alpha: alpha, Window: window, CommitURL: commitURL, Title: title}
		if policy != "" {
			if cfg.Policy, err = gate.LoadPolicy(policy); err != nil {
				return err
			}
		}
		sum, err := site.Write(ctx, cfg)
		if err != nil {
			return err
		}
		for _, n := range sum.Notes {
			fmt.Fprintf(stderr, "%s: note: %s\n", prog, n)
		}
		fmt.Fprintf(stdout, "wrote %d pages (%d charts, %d points, %d bytes) to %s\n", len(sum.Pages), sum.Charts, sum.Points, sum.Bytes, out)
		return nil
	}()
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", prog, err)
		return 2
	}
	return 0
}

// parseRequired parses args and checks the required options.
func parseRequired(p *argParser, args []string) error {
	if err := p.parse(args); err != nil {
		return err
	}
	return p.checkRequired()
}

const historyExportSummary = `Write a results store's figures for other tools, to stdout or --output:

  --format bmf  one commit's (default: the newest) as Bencher Metric Format
                JSON (benchmark -> measure = benchfmt unit -> value = median
                of the runs, lower_value/upper_value = smallest/largest run),
                for: bencher run --adapter json --file FILE
  --format csv  one runner type's history as the CSV Apache Otava's csv data
                source reads: time,commit,<scenario>.<unit>... one row per
                commit (medians); --benchmark keeps one benchmark's columns

Interrupted and invalid runs are left out. Exit status: 0 written, 2 refused.`

func runHistoryExport(args []string, stdout, stderr io.Writer) int {
	const prog = "servegate history export"
	var dir, format, runner, commit, benchmark, output string
	p := newArgParser(prog)
	g := "options"
	p.stringVar(&dir, "store", "", g, "The results store directory.")
	p.stringVar(&format, "format", "", g, "bmf or csv.").choices = []string{"bmf", "csv"}
	p.required = append(p.required, "store", "format")
	p.stringVar(&runner, "runner", "", g, "The runner type; needed when the store holds several.")
	p.stringVar(&commit, "commit", "", g, "With --format bmf: the commit; default: the newest.")
	p.stringVar(&benchmark, "benchmark", "", g, "With --format csv: only this benchmark's columns (its full name, Scenarios/scenario=NAME).")
	p.stringVar(&output, "output", "", g, "Write to this file instead of stdout.")
	if wantsHelp(args) {
		p.writeHelp(stdout, historyExportSummary)
		return 0
	}
	if err := parseRequired(p, args); err != nil {
		return exitCode(prog, err, stderr)
	}
	err := func() error {
		st, err := store.Open(dir)
		if err != nil {
			return err
		}
		pts, notes, err := export.Load(st, runner)
		if err != nil {
			return err
		}
		var b strings.Builder
		switch format {
		case "bmf":
			pt := pts[len(pts)-1]
			if commit != "" {
				i := slices.IndexFunc(pts, func(p export.Point) bool { return p.Commit == commit })
				if i < 0 {
					return fmt.Errorf("no commit %s with a valid result in %s", commit, dir)
				}
				pt = pts[i]
			}
			if err := export.WriteBMF(&b, pt); err != nil {
				return err
			}
		default:
			_, more, err := export.WriteCSV(&b, pts, benchmark)
			if err != nil {
				return err
			}
			notes = append(notes, more...)
		}
		for _, n := range notes {
			fmt.Fprintf(stderr, "%s: note: %s\n", prog, n)
		}
		if output == "" {
			_, err := io.WriteString(stdout, b.String())
			return err
		}
		return os.WriteFile(output, []byte(b.String()), 0o644)
	}()
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", prog, err)
		return 2
	}
	return 0
}
