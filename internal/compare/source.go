package compare

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/servegate/servegate/internal/pipeline"
	"github.com/servegate/servegate/internal/stats"
)

// A Key names one scenario of a comparison: its package and its name.
type Key struct {
	// Pkg is the package's directory relative to the module root.
	Pkg  string
	Name string
}

// String is the scenario's name, with its package when not the root's.
func (k Key) String() string {
	if k.Pkg == "." || k.Pkg == "" {
		return k.Name
	}
	return filepath.ToSlash(k.Pkg) + ": " + k.Name
}

// A Record is one scenario's record of a round: the test's PairRecord
// and the directory its files are in.
type Record struct {
	Key Key
	Dir string
	pipeline.PairRecord
}

// BasePath and HeadPath are the result files the record names.
func (r *Record) BasePath() string { return filepath.Join(r.Dir, r.Base.Result) }

// HeadPath is head's result file.
func (r *Record) HeadPath() string { return filepath.Join(r.Dir, r.Head.Result) }

// A Source produces pairs: how base's and head's runs come to be is
// its business, the verdict judges what it returns.
type Source interface {
	// Check sets every scenario's pair up without starting a target,
	// and returns each scenario's record.
	Check(ctx context.Context) ([]*Record, error)
	// Round runs one more pair of each scenario of open, labelled n,
	// and returns their records. It may run a scenario's next pairs
	// too, labelled n+1 and on, each with a record of its own: the
	// verdict reads them in order and stops where it ends.
	Round(ctx context.Context, n int, open []Key) ([]*Record, error)
}

// binaries is the Source of head's test binaries: each pair is one
// scenario of one binary run in paired mode, base's target and head's
// at once. The scenarios of a round are split over up to parallel
// processes at once, each with its own targets; each package gets at
// least one process.
type binaries struct {
	pkgs []*testPkg
	// env is the paired mode's environment for every process.
	env []string
	// runs is the directory of the rounds' outputs.
	runs string
	// parallel is the most processes at once; auto says to halve it
	// when a round's runs leave the load generator little headroom
	// (adapt).
	parallel int
	auto     bool
	log      io.Writer

	mu      sync.Mutex
	seconds map[Key]float64
	// alone are the scenarios whose pairs run in a mode other than
	// together: each runs in a process with nothing beside it.
	alone map[Key]bool
}

var _ Source = (*binaries)(nil)

// headroomLimit is the share of a harness limit past which a round
// counts as short of CPU: an auto -parallel halves when the typical
// run of a round is past it (adapt).
const headroomLimit = 0.5

func (s *binaries) Check(ctx context.Context) ([]*Record, error) {
	var jobs []job
	for _, p := range s.pkgs {
		jobs = append(jobs, job{pkg: p})
	}
	recs, err := s.run(ctx, filepath.Join(s.runs, "check"), jobs, append(s.env, pipeline.EnvPairCheck+"=1", pipeline.EnvPair+"=1"))
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range recs {
		if r.Mode != "" && r.Mode != pipeline.PairTogether {
			s.alone[r.Key] = true
		}
	}
	return recs, nil
}

func (s *binaries) Round(ctx context.Context, n int, open []Key) ([]*Record, error) {
	jobs := s.split(open)
	if ahead := s.ahead(n, open, jobs); ahead != nil {
		jobs = ahead
		what := open[0].String()
		if len(open) > 1 {
			what = fmt.Sprintf("%d scenarios", len(open))
		}
		fmt.Fprintf(s.log, "compare: pairs %d and %d of %s at once, in 2 processes\n", n, n+1, what)
	} else {
		fmt.Fprintf(s.log, "compare: pair %d: %d scenario(s) in %d process(es)\n", n, len(open), len(jobs))
	}
	recs, err := s.run(ctx, filepath.Join(s.runs, fmt.Sprintf("pair-%d", n)), jobs, append(s.env, fmt.Sprintf("%s=%d", pipeline.EnvPair, n)))
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var used []float64
	for _, r := range recs {
		s.seconds[r.Key] = r.Seconds
		used = append(used, r.Base.Headroom, r.Head.Headroom)
	}
	s.adapt(used, len(jobs))
	return recs, nil
}

// aheadRatio bounds the round that ahead runs: the open scenarios'
// time over both pairs at once, as a multiple of the longest process of
// the round it replaces.
const aheadRatio = 1.5

// ahead is the round that runs the open scenarios' pair n+1 beside
// their pair n, two processes of them all, or nil. Near a suite's end
// the scenarios left are few and of unequal length, and two processes
// split them badly: in an A/A of stop 51, `completions-bursty` (30 s
// a pair) and `chat-poisson` (15 s) took two rounds of 31 s for two
// pairs, with one process idle half of each. Run ahead, both pairs
// take one round of about 45 s. It runs when that round is at most aheadRatio
// times the one it replaces, so that the pair it adds costs at most
// half a round even when the verdicts end at pair n. A lone scenario is
// the plainest case. Two processes of these scenarios load the machine
// as two processes of any do in every earlier round, so the A/A spread
// is the one measured at -parallel 2. Not when a scenario's pairs
// alternate (each wants the machine to itself), nor past the last
// round.
func (s *binaries) ahead(n int, open []Key, jobs []job) []job {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.parallel < 2 || n >= maxRounds || len(jobs) > 2 {
		return nil
	}
	sum, longest := 0.0, 0.0
	for _, j := range jobs {
		if j.alone || j.pair != 0 || j.pkg == nil || j.pkg != jobs[0].pkg {
			return nil
		}
		t := 0.0
		for _, name := range j.names {
			t += max(s.seconds[Key{j.pkg.Rel, name}], 1)
		}
		sum += t
		longest = max(longest, t)
	}
	if sum > aheadRatio*longest {
		return nil
	}
	names := make([]string, 0, len(open))
	for _, j := range jobs {
		names = append(names, j.names...)
	}
	return []job{{pkg: jobs[0].pkg, names: names}, {pkg: jobs[0].pkg, names: names, pair: n + 1}}
}

// adapt halves an auto -parallel after a round of procs processes in
// which the typical run was short of CPU: the median of used, each
// run's largest share of a harness limit, above headroomLimit. One run
// is not enough. On a 2-core VM one or two of a round's 20 runs went
// past half a limit now and then, quiet or beside a burner, while the
// round's median stayed between 4% and 18%; the rule that halved on
// any one such run (or on two rounds with one each) left A/As of the
// shipped suite in one process, with rounds of 167 to 170 s instead of
// 93 s (docs/logs/2026-12-07-suite.md, r-aa1 and e-aa3).
// It does not grow it again: running more scenarios side by side than
// DefaultParallel raised the A/A spread of every gated figure on a
// 2-core machine while the load generator's health still showed CPU to
// spare (docs/logs/2026-12-06-suite.md). Callers hold s.mu.
func (s *binaries) adapt(used []float64, procs int) {
	if !s.auto || procs <= 1 || len(used) == 0 {
		return
	}
	med := stats.Median(used)
	if med <= headroomLimit {
		return
	}
	s.parallel = max(1, procs/2)
	fmt.Fprintf(s.log, "compare: half the runs of a round used %.0f%% of a harness limit or more: at most %d process(es) from now on\n", 100*med, s.parallel)
}

// A job is one process: a package's binary and the scenarios it runs
// (all of them when names is nil). A job alone runs with no other. A
// job with a pair runs that pair, not the round's, in its directory.
type job struct {
	pkg   *testPkg
	names []string
	alone bool
	pair  int
}

// split groups the open scenarios by package and spreads each group
// over processes, the longest scenarios first, so that the processes of
// a round end at about the same time.
func (s *binaries) split(open []Key) []job {
	s.mu.Lock()
	defer s.mu.Unlock()
	byPkg := map[string][]Key{}
	var order []string
	var jobs []job
	for _, k := range open {
		if s.alone[k] {
			jobs = append(jobs, job{pkg: s.pkg(k.Pkg), names: []string{k.Name}, alone: true})
			continue
		}
		if _, ok := byPkg[k.Pkg]; !ok {
			order = append(order, k.Pkg)
		}
		byPkg[k.Pkg] = append(byPkg[k.Pkg], k)
	}
	procs := max(s.parallel, len(order))
	// More packages than processes: one process each, run in turn.
	for i, rel := range order {
		keys := byPkg[rel]
		// This package's share of the processes.
		n := max(1, min(len(keys), procs/len(order)+boolInt(i < procs%len(order))))
		slices.SortStableFunc(keys, func(a, b Key) int { return cmpSeconds(s.seconds[b], s.seconds[a]) })
		load := make([]float64, n)
		names := make([][]string, n)
		for _, k := range keys {
			j := slices.Index(load, slices.Min(load))
			load[j] += max(s.seconds[k], 1)
			names[j] = append(names[j], k.Name)
		}
		for _, ns := range names {
			jobs = append(jobs, job{pkg: s.pkg(rel), names: ns})
		}
	}
	return jobs
}

func (s *binaries) pkg(rel string) *testPkg {
	for _, p := range s.pkgs {
		if p.Rel == rel {
			return p
		}
	}
	return nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func cmpSeconds(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// run runs jobs at once, each in its own directory under dir, and
// collects their records.
func (s *binaries) run(ctx context.Context, dir string, jobs []job, env []string) ([]*Record, error) {
	recs := make([][]*Record, len(jobs))
	errs := make([]error, len(jobs))
	s.mu.Lock()
	slots := make(chan struct{}, max(1, s.parallel))
	s.mu.Unlock()
	var wg sync.WaitGroup
	for i, j := range jobs {
		if j.alone {
			continue
		}
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			out, env := filepath.Join(dir, fmt.Sprintf("p%d", i+1)), env
			if j.pair != 0 {
				out = filepath.Join(s.runs, fmt.Sprintf("pair-%d", j.pair), "p1")
				env = append(slices.Clone(env), fmt.Sprintf("%s=%d", pipeline.EnvPair, j.pair))
			}
			recs[i], errs[i] = s.runJob(ctx, out, j, env)
		})
	}
	wg.Wait()
	for i, j := range jobs {
		if j.alone {
			recs[i], errs[i] = s.runJob(ctx, filepath.Join(dir, fmt.Sprintf("p%d", i+1)), j, env)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return slices.Concat(recs...), nil
}

// benchPattern selects the scenario sub-benchmarks of names, or all.
func benchPattern(names []string) string {
	if names == nil {
		return "/^scenario="
	}
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = regexp.QuoteMeta(n)
	}
	return "/^scenario=(" + strings.Join(q, "|") + ")$"
}

// runJob runs one process of head's test binary in the package's
// directory, its outputs in out, and reads its records.
func (s *binaries) runJob(ctx context.Context, out string, j job, env []string) ([]*Record, error) {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, err
	}
	logPath := out + ".log"
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	tail := &tailWriter{max: 64 << 10}
	cmd := exec.CommandContext(ctx, j.pkg.Binary, "-test.run=^$", "-test.bench="+benchPattern(j.names),
		"-test.benchtime=1x", "-test.count=1", "-test.v")
	cmd.Dir = j.pkg.Dir
	cmd.Env = append(slices.Clone(env), "SERVEGATE_OUT="+out)
	cmd.Stdout = io.MultiWriter(logf, tail)
	cmd.Stderr = cmd.Stdout
	cmd.WaitDelay = 30 * time.Second
	runErr := cmd.Run()
	recs, err := readRecords(out, j.pkg.Rel)
	if err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	var missing []string
	for _, n := range j.names {
		if !slices.ContainsFunc(recs, func(r *Record) bool { return r.Scenario == n }) {
			missing = append(missing, n)
		}
	}
	failed := runErr != nil && !slices.ContainsFunc(recs, func(r *Record) bool { return r.Problem != nil })
	if len(missing) > 0 || failed {
		why := fmt.Sprintf("%v", runErr)
		if len(missing) > 0 {
			why = "no record of " + strings.Join(missing, ", ")
		}
		return nil, inputErrorf("the tests of %s in %s: %s; the end of its output (all of it in %s):\n%s",
			j.pkg.ImportPath, filepath.Base(filepath.Dir(out)), why, logPath, tail.String())
	}
	return recs, nil
}

// readRecords reads every pair record of a process's output directory.
func readRecords(dir, pkg string) ([]*Record, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.pair.json"))
	if err != nil {
		return nil, err
	}
	var recs []*Record
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		r := &Record{Dir: dir}
		if err := json.Unmarshal(data, &r.PairRecord); err != nil {
			return nil, fmt.Errorf("pair record %s: %w", f, err)
		}
		if r.Version != pipeline.PairRecordVersion {
			return nil, inputErrorf("pair record %s is of version %d, this servegate reads %d: the test binary was built with another servegate", f, r.Version, pipeline.PairRecordVersion)
		}
		r.Key = Key{Pkg: pkg, Name: r.Scenario}
		recs = append(recs, r)
	}
	return recs, nil
}

// tailWriter keeps the last max bytes written to it.
type tailWriter struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tailWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = t.buf[len(t.buf)-t.max:]
	}
	return len(p), nil
}

// String returns the last 40 lines kept.
func (t *tailWriter) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := bytes.Split(bytes.TrimRight(t.buf, "\n"), []byte("\n"))
	if len(lines) > 40 {
		lines = lines[len(lines)-40:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}
