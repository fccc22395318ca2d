package gate

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/servegate/servegate/internal/store"
)

// Exit codes of Main.
const (
	ExitPass       = 0 // no gated unit regressed
	ExitRegression = 1 // a gated unit regressed beyond its tolerance, or head runs report no value of it
	ExitBadInput   = 2 // unreadable, non-finite, refused or mismatched inputs, bad flags or policy, too few runs
)

const usage = `usage: servegate gate [flags] BASE HEAD
       servegate gate -history DIR [flags]
       servegate gate -sequential [-steady-state F] [-markdown FILE] BASE1 HEAD1 [BASE2 HEAD2 ...]
       servegate gate -sequential -baseline-store DIR -runner R -fresh-base F1 [-fresh-base F2 ...] HEAD1 [HEAD2 ...]

Compares the benchmark results of BASE and HEAD the way benchstat does
(medians, Mann-Whitney U test, alpha 0.05) and fails when a gated unit
got significantly worse beyond its tolerance; with -paired, runs matched
by their pair: key and Wilcoxon's signed-rank test on the per-pair
head/base ratios instead. BASE and HEAD are benchfmt
files (go test -bench output or servegate result files) or directories
of *.txt, *.bench and *.benchfmt files.

Exit status: 0 pass, 1 regression (head runs that report no value of a
gated unit count as one), 2 bad input (unreadable or mismatched inputs, a
NaN, an infinity or a negative duration, a run marked interrupted or
invalid, fewer head runs than base, a policy unit no input reports, too
few runs to ever detect a change). See ci/README.md for the rule.

With -history DIR, reads a results store (servegate history add; with
-runner when it holds several runner types; commits in commit-time
order, see docs/history.md) or a directory of one result file per commit
of main (in file name order; the commit is a file's "commit:" key, else
its name) and reports every persistent shift of a gated unit with the commit where it
began (E-divisive means, as Apache Otava). Exit status: 0 no gated series
ends on a regression, 1 one does, 2 bad input or too short a history.

With -sequential -baseline-store DIR, head's runs of one scenario are
judged against main's runs in the results store (the stored baseline,
docs/verdicts.md) instead of base's: head run k against stored run k.
The fresh base runs (-fresh-base, made beside head's runs) check first
that the stored runs still describe this machine. Exit 2, with the
reason, when the baseline is missing, stale (-base-commit not stored;
added more than -baseline-max-age days ago), of another runner type or
scenario version, has invalid runs or fewer than the test needs, or
when the fresh base runs show a drift.

The default policy (print it with -print-policy):
` + DefaultPolicyYAML + `
flags:
`

// Main runs the gate as a command: it parses "[flags] BASE HEAD" from
// args, writes the report to stdout (and to the -markdown and -json
// files), problems to stderr, and returns the exit status: ExitPass,
// ExitRegression or ExitBadInput. It is what "servegate gate" runs.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("servegate gate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usage)
		fs.PrintDefaults()
	}
	policyFile := fs.String("policy", "", "policy `file` (YAML); default: the built-in policy")
	alpha := fs.Float64("alpha", 0.05, "significance level `α`, in (0, 1) (overrides the policy's alpha when given)")
	holm := fs.Bool("holm", false, "apply the Holm–Bonferroni correction across gated comparisons (or holm: true in the policy)")
	format := fs.String("format", "text", "stdout `format`: text, markdown or json")
	mdFile := fs.String("markdown", "", "also write the Markdown report to `file` (for $GITHUB_STEP_SUMMARY or a PR comment)")
	jsonFile := fs.String("json", "", "also write the JSON report to `file`")
	filter := fs.String("filter", "", "benchstat -filter `query`: gate only matching results")
	ignore := fs.String("ignore", "", "benchstat -ignore `keys`: configuration keys that may differ between base and head")
	paired := fs.Bool("paired", false, "compare gated rows pair by pair (pair: key, Wilcoxon signed-rank test on head/base ratios); servegate compare's base.benchfmt and head.benchfmt are such inputs")
	printPolicy := fs.Bool("print-policy", false, "print the default policy file and exit")
	merge := fs.Bool("merge", false, "merge the -json reports of a sharded suite's gate jobs (the arguments) into one verdict; see merge.go")
	shards := fs.Int("shards", 0, "with -merge: the number of shard reports expected (required)")
	history := fs.String("history", "", "change-point detection over a results store or the result files in `dir`, one per commit of main, in name order (alpha 0.01 unless -alpha is given)")
	sequential := fs.Bool("sequential", false, "fast paired verdict on median TTFT and TPOT, p99 TTFT, goodput and fail-ratio: the arguments are the detailed result files BASE1 HEAD1 BASE2 HEAD2 ... of one scenario's pairs, in pair order; block bootstrap at the request, a closed sequential design across pairs whose last look decides; exit 2 only for bad input or a run too noisy to judge (docs/verdicts.md)")
	steady := fs.Float64("steady-state", 0, "with -sequential: judge only the requests scheduled after the first and before the last `fraction` of the schedule (0 to 0.4; 0: every request)")
	runner := fs.String("runner", "", "with -history on a results store: the runner `type` whose commits are read (needed when it holds several); with -baseline-store: the runner type head ran on (required)")
	var sf storeFlags
	sf.register(fs)
	// Flags may come after BASE and HEAD too: parse, take one positional
	// argument, parse again. After "--" everything is positional.
	var files []string
	for rest := args; ; {
		if err := fs.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return ExitPass
			}
			return ExitBadInput
		}
		after := fs.Args()
		if len(after) == 0 {
			break
		}
		if n := len(rest) - len(after); n > 0 && rest[n-1] == "--" {
			files = append(files, after...)
			break
		}
		files, rest = append(files, after[0]), after[1:]
	}
	if *printPolicy {
		fmt.Fprint(stdout, DefaultPolicyYAML)
		return ExitPass
	}
	fail := func(err error) int {
		for _, line := range strings.Split(err.Error(), "\n") {
			fmt.Fprintf(stderr, "gate: %s\n", line)
		}
		return ExitBadInput
	}
	if *merge {
		return mainMerge(files, *shards, *format, *mdFile, *jsonFile, stdout, fail)
	}
	alphaSet := false
	fs.Visit(func(f *flag.Flag) { alphaSet = alphaSet || f.Name == "alpha" })
	// 0 is no "default" here: at alpha 0 no change could ever be
	// significant, so the gate would pass everything.
	if alphaSet && !(*alpha > 0 && *alpha < 1) {
		why := ""
		if *alpha == 0 {
			why = ": at alpha 0 no change is ever significant, so the gate would pass anything"
		}
		return fail(fmt.Errorf("-alpha %v: must be in (0, 1), such as 0.05%s", *alpha, why))
	}
	if *history != "" {
		if len(files) != 0 {
			return fail(fmt.Errorf("-history %s takes no BASE or HEAD, got %s", *history, strings.Join(files, " ")))
		}
		a := historyAlpha
		if alphaSet {
			a = *alpha
		}
		return mainHistory(*history, *runner, *policyFile, a, *format, *mdFile, *jsonFile, stdout, fail)
	}
	if *runner != "" && sf.store == "" {
		return fail(fmt.Errorf("-runner %s: only with -history on a results store, or -baseline-store", *runner))
	}
	if err := sf.check(fs, *sequential); err != nil {
		return fail(err)
	}
	if *sequential {
		pol, err := loadPolicy(*policyFile)
		if err != nil {
			return fail(err)
		}
		if sf.store != "" {
			if *steady != 0 {
				return fail(fmt.Errorf("-steady-state %v: not with -baseline-store (the stored runs are judged whole)", *steady))
			}
			in, err := sf.input(*runner, files)
			if err != nil {
				return fail(err)
			}
			return mainStoreSequential(in, pol, stdout, fail)
		}
		return mainSequential(files, pol, *steady, *mdFile, stdout, fail)
	}
	if *steady != 0 {
		return fail(fmt.Errorf("-steady-state %v: only with -sequential", *steady))
	}
	if len(files) != 2 {
		fs.Usage()
		return fail(fmt.Errorf("want BASE and HEAD, got %d arguments", len(files)))
	}
	write, err := formatter(*format)
	if err != nil {
		return fail(err)
	}
	pol, err := loadPolicy(*policyFile)
	if err != nil {
		return fail(err)
	}
	if alphaSet {
		pol.Alpha = *alpha
	}
	pol.Holm = pol.Holm || *holm

	cfg := Config{Base: files[:1], Head: files[1:], Policy: pol, Filter: *filter, Ignore: *ignore, Paired: *paired}
	rep, runErr := Run(ctx, cfg)
	if rep == nil {
		return fail(runErr)
	}
	if err := writeReports(rep, write, stdout, *mdFile, *jsonFile); err != nil {
		return fail(err)
	}
	if runErr != nil {
		fail(runErr)
	}
	return rep.ExitCode()
}

// A reporter is a report the gate writes: a comparison's, a merge's or
// a history's.
type reporter interface {
	WriteText(io.Writer) error
	WriteMarkdown(io.Writer) error
	WriteJSON(io.Writer) error
}

// formatter returns the writer of the -format name.
func formatter(name string) (func(reporter, io.Writer) error, error) {
	switch name {
	case "text":
		return reporter.WriteText, nil
	case "markdown", "md":
		return reporter.WriteMarkdown, nil
	case "json":
		return reporter.WriteJSON, nil
	}
	return nil, fmt.Errorf("-format %q: want text, markdown or json", name)
}

// loadPolicy reads the -policy file, or returns the default policy.
func loadPolicy(file string) (*Policy, error) {
	if file == "" {
		return DefaultPolicy(), nil
	}
	return LoadPolicy(file)
}

// writeReports writes rep to stdout with write, and to the -markdown and
// -json files when they are named.
func writeReports(rep reporter, write func(reporter, io.Writer) error, stdout io.Writer, mdFile, jsonFile string) error {
	if err := write(rep, stdout); err != nil {
		return err
	}
	for file, w := range map[string]func(reporter, io.Writer) error{mdFile: reporter.WriteMarkdown, jsonFile: reporter.WriteJSON} {
		if file == "" {
			continue
		}
		if err := writeFile(file, rep, w); err != nil {
			return err
		}
	}
	return nil
}

func writeFile(name string, rep reporter, write func(reporter, io.Writer) error) error {
	f, err := os.Create(name)
	if err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	if err := write(rep, f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}

// mainHistory runs change-point mode for Main.
func mainHistory(dir, runner, policyFile string, alpha float64, format, mdFile, jsonFile string, stdout io.Writer, fail func(error) int) int {
	write, err := formatter(format)
	if err != nil {
		return fail(err)
	}
	pol, err := loadPolicy(policyFile)
	if err != nil {
		return fail(err)
	}
	var rep *ChangePointReport
	switch {
	case store.IsStore(dir):
		st, oerr := store.Open(dir)
		if oerr != nil {
			return fail(oerr)
		}
		rep, err = RunChangePointsStore(st, ChangePointOptions{Runner: runner, Policy: pol, Alpha: alpha})
	case runner != "":
		return fail(fmt.Errorf("-runner %s: %s is no results store (servegate history add makes one)", runner, dir))
	default:
		rep, err = RunChangePoints(dir, pol, alpha)
	}
	if rep == nil {
		return fail(err)
	}
	if werr := writeReports(rep, write, stdout, mdFile, jsonFile); werr != nil {
		return fail(werr)
	}
	if err != nil {
		return fail(err)
	}
	return rep.ExitCode()
}
