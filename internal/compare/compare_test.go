package compare

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/internal/gate"
	"github.com/servegate/servegate/internal/pipeline"
	"github.com/servegate/servegate/internal/stats"
)

// fakeSource hands out records: check gives every scenario's, and a
// round a pair of each open scenario, with the problem or invalid run
// the test set for that round.
type fakeSource struct {
	check  []*Record
	rounds [][]Key
	// invalid and problem are set on the record of a scenario in a
	// round, by "round/name"; notReset on base's side.
	invalid, problem, notReset map[string]string
	// ahead runs a lone scenario's next pair in the same round, as
	// binaries does.
	ahead bool
}

func (f *fakeSource) Check(context.Context) ([]*Record, error) { return f.check, nil }

func (f *fakeSource) Round(_ context.Context, n int, open []Key) ([]*Record, error) {
	f.rounds = append(f.rounds, open)
	var recs []*Record
	type run struct {
		k Key
		n int
	}
	var runs []run
	for _, k := range open {
		runs = append(runs, run{k, n})
	}
	if f.ahead && len(open) == 1 {
		// Returned first: the verdict must read the pairs in order.
		runs = append([]run{{open[0], n + 1}}, runs...)
	}
	for _, x := range runs {
		k, n := x.k, x.n
		r := &Record{Key: k, PairRecord: pipeline.PairRecord{Scenario: k.Name, Pair: n,
			Base: pipeline.PairSide{Result: "b.json", Image: "img:1"}, Head: pipeline.PairSide{Result: "h.json", Image: "img:2"}}}
		id := strings.Join([]string{string(rune('0' + n)), k.Name}, "/")
		r.Head.Invalid = f.invalid[id]
		r.Base.NotReset = f.notReset[id]
		if p := f.problem[id]; p != "" {
			r.Problem = &pipeline.PairProblem{Kind: pipeline.ProblemStart, Side: "head", Message: p}
		}
		recs = append(recs, r)
	}
	return recs, nil
}

// fakeJudge decides a scenario after a given number of pairs.
type fakeJudge map[string]struct {
	after int
	state State
}

func (f fakeJudge) Judge(name string, pairs []*Record) (Verdict, error) {
	d := f[name]
	if d.state < 0 {
		return Verdict{}, errors.New("pair 1: not a pair")
	}
	if len(pairs) < d.after {
		return Verdict{State: Continue, Pairs: len(pairs), Reason: "not yet"}, nil
	}
	return Verdict{State: d.state, Pairs: len(pairs), Reason: "decided", Text: "figure line", Markdown: "| figure |\n"}, nil
}

func checked(names ...string) []*Record {
	var recs []*Record
	for _, n := range names {
		recs = append(recs, &Record{Key: Key{Pkg: ".", Name: n}, PairRecord: pipeline.PairRecord{Scenario: n}})
	}
	return recs
}

// TestRounds: each scenario runs pairs until its verdict ends, and the
// exit status is the worst verdict's.
func TestRounds(t *testing.T) {
	src := &fakeSource{check: checked("fast", "slow", "later")}
	src.check[2].Problem = &pipeline.PairProblem{Kind: pipeline.ProblemNew, Message: "scenario later is new in head"}
	judge := fakeJudge{"fast": {3, Pass}, "slow": {5, Regression}}
	res := &Result{}
	require.NoError(t, compare(context.Background(), Config{}, src, judge, res, t.TempDir(), &bytes.Buffer{}))
	require.Len(t, src.rounds, 5)
	assert.Len(t, src.rounds[2], 2, "both open in round 3")
	assert.Equal(t, []Key{{".", "slow"}}, src.rounds[3], "fast decided after 3")
	assert.Equal(t, 1, res.Exit())
	assert.Equal(t, "scenario later is new in head", res.Scenarios[2].NotJudged)
	assert.Equal(t, 5, res.Scenarios[1].Verdict.Pairs)

	var text bytes.Buffer
	require.NoError(t, res.WriteText(&text))
	assert.Contains(t, text.String(), "\ntarget differs in fast, slow:\n  image: img:2 (base: img:1)\n\n== fast:")
	assert.Contains(t, text.String(), "== slow: regression after 5 pair(s): decided\nfigure line\n")
	assert.Contains(t, text.String(), "== later: not judged: scenario later is new in head")
	assert.True(t, strings.HasSuffix(text.String(), "\nverdict: regression (exit 1)\n"), text.String())

	judge["slow"] = struct {
		after int
		state State
	}{2, Pass}
	res = &Result{}
	require.NoError(t, compare(context.Background(), Config{}, &fakeSource{check: checked("fast", "slow")}, judge, res, t.TempDir(), &bytes.Buffer{}))
	assert.Equal(t, 0, res.Exit())
}

// TestRoundsAhead: once one scenario is left, its next pair runs beside
// it; the verdict reads the pairs in order and stops where it ends, so
// a pair run ahead of it is not judged.
func TestRoundsAhead(t *testing.T) {
	src := &fakeSource{check: checked("fast", "slow"), ahead: true}
	res := &Result{}
	var log bytes.Buffer
	require.NoError(t, compare(context.Background(), Config{}, src, fakeJudge{"fast": {3, Pass}, "slow": {7, Regression}}, res, t.TempDir(), &log))
	assert.Len(t, src.rounds, 5, "pairs 1, 2, 3, then 4 and 5, 6 and 7")
	assert.Equal(t, 7, res.Scenarios[1].Verdict.Pairs)
	assert.NotContains(t, log.String(), "not needed")

	src = &fakeSource{check: checked("fast", "slow"), ahead: true}
	res = &Result{}
	log.Reset()
	require.NoError(t, compare(context.Background(), Config{}, src, fakeJudge{"fast": {3, Pass}, "slow": {4, Pass}}, res, t.TempDir(), &log))
	assert.Len(t, src.rounds, 4)
	assert.Equal(t, Verdict{State: Pass, Pairs: 4, Reason: "decided", Text: "figure line", Markdown: "| figure |\n"}, res.Scenarios[1].Verdict)
	assert.Contains(t, log.String(), "compare: slow: pair 5 ran ahead and was not needed\n")
	assert.Equal(t, 0, res.Exit())

	// An invalid pair run ahead still ends the verdict when it is read.
	src = &fakeSource{check: checked("a"), ahead: true, invalid: map[string]string{"2/a": "p99_lateness_ms = 80, want <= 50"}}
	res = &Result{}
	require.NoError(t, compare(context.Background(), Config{}, src, fakeJudge{"a": {3, Pass}}, res, t.TempDir(), &bytes.Buffer{}))
	assert.Equal(t, CannotJudge, res.Scenarios[0].Verdict.State)
	assert.Contains(t, res.Scenarios[0].Verdict.Reason, "pair 2: head: invalid run")
}

// TestAhead: binaries runs the open scenarios' next pair beside them
// only where two processes may run, the two processes of the round
// would be unequal, their pairs run together, and the cap is not
// reached.
func TestAhead(t *testing.T) {
	s := &binaries{pkgs: []*testPkg{{Rel: "."}}, parallel: 2, seconds: map[Key]float64{}}
	x := []Key{{".", "x"}}
	jobs := s.ahead(4, x, s.split(x))
	require.Len(t, jobs, 2)
	assert.Equal(t, job{pkg: s.pkgs[0], names: []string{"x"}}, jobs[0])
	assert.Equal(t, job{pkg: s.pkgs[0], names: []string{"x"}, pair: 5}, jobs[1])
	assert.Nil(t, s.ahead(maxRounds, x, s.split(x)), "past the cap")

	two := []Key{{".", "x"}, {".", "y"}}
	assert.Nil(t, s.ahead(4, two, s.split(two)), "two scenarios of unknown length fill both processes")
	s.seconds = map[Key]float64{{".", "x"}: 28, {".", "y"}: 12}
	jobs = s.ahead(4, two, s.split(two))
	require.Len(t, jobs, 2, "28 s and 12 s: one round of 40 s for two pairs, not two of 28 s")
	assert.ElementsMatch(t, []string{"x", "y"}, jobs[0].names)
	assert.ElementsMatch(t, []string{"x", "y"}, jobs[1].names)
	assert.Equal(t, []int{0, 5}, []int{jobs[0].pair, jobs[1].pair})
	s.seconds = map[Key]float64{{".", "x"}: 20, {".", "y"}: 12}
	assert.Nil(t, s.ahead(4, two, s.split(two)), "20 s and 12 s: 32 s is more than 1.5 times 20 s")
	three := []Key{{".", "x"}, {".", "y"}, {".", "z"}}
	s.seconds = map[Key]float64{{".", "x"}: 28, {".", "y"}: 12, {".", "z"}: 12}
	assert.Nil(t, s.ahead(4, three, s.split(three)), "28 s against 24 s: split well")

	s.seconds = map[Key]float64{}
	s.alone = map[Key]bool{{".", "x"}: true}
	assert.Nil(t, s.ahead(4, x, s.split(x)), "pairs in turn want the machine")
	s.alone = nil
	s.parallel = 1
	assert.Nil(t, s.ahead(4, x, s.split(x)), "-parallel 1")
}

// TestRoundsFailClosed: a pair left invalid by its reruns cannot be
// judged, a side that did not start ends the comparison, and so does a
// scenario whose workload differs.
func TestRoundsFailClosed(t *testing.T) {
	judge := fakeJudge{"a": {3, Pass}, "b": {3, Pass}}
	src := &fakeSource{check: checked("a", "b"), invalid: map[string]string{"2/a": "p99_lateness_ms = 80, want <= 50"}}
	res := &Result{}
	require.NoError(t, compare(context.Background(), Config{}, src, judge, res, t.TempDir(), &bytes.Buffer{}))
	assert.Equal(t, CannotJudge, res.Scenarios[0].Verdict.State)
	assert.Equal(t, "pair 2: head: invalid run: load generator fell behind: p99_lateness_ms = 80, want <= 50 (after its reruns)", res.Scenarios[0].Verdict.Reason)
	assert.Equal(t, 2, res.Exit())

	// A pair the judge cannot read ends its scenario only: a regression
	// elsewhere is still exit 1.
	res = &Result{}
	require.NoError(t, compare(context.Background(), Config{}, &fakeSource{check: checked("a", "b")},
		fakeJudge{"a": {1, -1}, "b": {2, Regression}}, res, t.TempDir(), &bytes.Buffer{}))
	assert.Equal(t, Verdict{State: CannotJudge, Pairs: 1, Reason: "pair 1: not a pair"}, res.Scenarios[0].Verdict)
	assert.Equal(t, Regression, res.Scenarios[1].Verdict.State)
	assert.Equal(t, 1, res.Exit())

	src = &fakeSource{check: checked("a", "b"), problem: map[string]string{"2/b": "start head's container target of scenario b: build failed\ncontainer log:\nno such file"}}
	err := compare(context.Background(), Config{}, src, judge, &Result{}, t.TempDir(), &bytes.Buffer{})
	var ie *InputError
	require.ErrorAs(t, err, &ie)
	assert.EqualError(t, err, "pair 2 of b: start head's container target of scenario b: build failed\ncontainer log:\nno such file")

	src = &fakeSource{check: checked("a", "b")}
	src.check[1].Problem = &pipeline.PairProblem{Kind: pipeline.ProblemIdentity, Message: "scenario b: its load differs between base (a.yaml:1) and head (a.yaml:1)"}
	err = compare(context.Background(), Config{}, src, judge, &Result{}, t.TempDir(), &bytes.Buffer{})
	require.ErrorAs(t, err, &ie)
	assert.Contains(t, err.Error(), "its load differs")
	assert.Empty(t, src.rounds, "no pair runs")

	src = &fakeSource{check: checked("a")}
	src.check[0].Problem = &pipeline.PairProblem{Kind: pipeline.ProblemNew, Message: "scenario a is new in head"}
	err = compare(context.Background(), Config{}, src, judge, &Result{}, t.TempDir(), &bytes.Buffer{})
	assert.EqualError(t, err, "no scenario to compare:\nscenario a is new in head")

	err = compare(context.Background(), Config{Run: "^x"}, &fakeSource{check: checked("a")}, judge, &Result{}, t.TempDir(), &bytes.Buffer{})
	assert.EqualError(t, err, `no scenario to compare: none that pairs matches -run "^x"`)
}

// TestSplit spreads a package's scenarios over the processes, the
// longest first, so that the processes end together.
func TestSplit(t *testing.T) {
	s := &binaries{pkgs: []*testPkg{{Rel: "."}, {Rel: "b"}}, parallel: 3, seconds: map[Key]float64{
		{".", "x"}: 65, {".", "y"}: 30, {".", "z"}: 30, {".", "w"}: 5,
	}}
	jobs := s.split([]Key{{".", "w"}, {".", "x"}, {".", "y"}, {".", "z"}, {"b", "q"}})
	require.Len(t, jobs, 3)
	assert.Equal(t, []string{"x"}, jobs[0].names)
	assert.Equal(t, []string{"y", "z", "w"}, jobs[1].names)
	assert.Equal(t, "b", jobs[2].pkg.Rel)

	// A scenario whose pairs alternate runs in a process of its own.
	s.alone = map[Key]bool{{".", "y"}: true}
	jobs = s.split([]Key{{".", "x"}, {".", "y"}, {".", "z"}})
	require.Len(t, jobs, 3)
	assert.Equal(t, job{pkg: s.pkgs[0], names: []string{"y"}, alone: true}, jobs[0])
	s.alone = nil

	s.parallel = 1
	jobs = s.split([]Key{{".", "x"}, {".", "y"}, {"b", "q"}})
	assert.Len(t, jobs, 2, "a process per package at least")
	assert.Equal(t, "/^scenario=(x|y)$", benchPattern(jobs[0].names))
	assert.Equal(t, "/^scenario=", benchPattern(nil))
	assert.Equal(t, `/^scenario=(a\.b)$`, benchPattern([]string{"a.b"}))
}

// TestCheckVersions: the servegate that runs compare must be head's;
// base's may differ, and the report says that head's judges.
func TestCheckVersions(t *testing.T) {
	v1, v2 := Version{Version: "v1.0.0"}, Version{Version: "v1.1.0"}
	note, err := checkVersions(v1, v1, v1, true)
	require.NoError(t, err)
	assert.Empty(t, note)
	note, err = checkVersions(v2, v2, v1, true)
	require.NoError(t, err)
	assert.Equal(t, "servegate's version differs: base's go.mod names v1.0.0, head's v1.1.0; head's version measures and judges both sides", note)
	_, err = checkVersions(v1, v2, v2, true)
	assert.EqualError(t, err, "this servegate is v1.0.0 but head's go.mod requires v1.1.0: run `go tool servegate compare` from head's module, which builds the version its go.mod names")
	repl := Version{Version: "v0.0.0", Replace: "../.."}
	_, err = checkVersions(Version{Version: "v0.0.0"}, repl, repl, true)
	require.Error(t, err, "a replacement is part of the version")
	_, err = checkVersions(Version{Self: true}, v1, v1, true)
	require.NoError(t, err, "servegate's own build runs anything")
	note, err = checkVersions(v1, v1, Version{}, false)
	require.NoError(t, err)
	assert.Equal(t, "base's go.mod does not require servegate", note)
}

// TestBuildVersion reads servegate's version from build information:
// a binary built in servegate's tree, or from a module that requires it.
func TestBuildVersion(t *testing.T) {
	v, ok := buildVersion(&debug.Module{Path: Module, Version: "(devel)"})
	assert.True(t, ok)
	assert.Equal(t, Version{Self: true}, v)
	v, _ = buildVersion(&debug.Module{Path: Module, Version: "v0.0.0", Replace: &debug.Module{Path: "/src/servegate", Version: "(devel)"}})
	assert.Equal(t, Version{Version: "v0.0.0", Replace: "/src/servegate"}, v)
	v, _ = buildVersion(&debug.Module{Path: Module, Version: "v1.2.0", Replace: &debug.Module{Path: "example.com/fork", Version: "v1.2.1"}})
	assert.Equal(t, Version{Version: "v1.2.0", Replace: "example.com/fork v1.2.1"}, v)
	_, ok = buildVersion(nil)
	assert.False(t, ok)
}

// scratchRepo makes a git repository with a module in dir and one
// commit, and returns dir.
func scratchRepo(t *testing.T, gomod string, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	files["go.mod"] = gomod
	for name, text := range files {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "."}, {"commit", "-qm", "base"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
	}
	return dir
}

// userGoMod is the go.mod of a user's module that requires servegate
// from this checkout.
func userGoMod(t *testing.T) string {
	t.Helper()
	checkout, err := filepath.Abs("../..")
	require.NoError(t, err)
	return "module example.com/user\n\ngo 1.26\n\nrequire " + Module + " v0.0.0\n\nreplace " + Module + " => " + checkout + "\n"
}

// TestBadInput: each is an *InputError with one message, and compare
// still writes its reports, which say why there is no verdict.
func TestBadInput(t *testing.T) {
	requires := userGoMod(t)
	plain := map[string]string{"lib/lib.go": "package lib\n", "lib/lib_test.go": "package lib\n\nimport \"testing\"\n\nfunc TestX(t *testing.T) {}\n"}
	for name, c := range map[string]struct {
		dir  string
		base string
		want string
	}{
		"not a module":      {t.TempDir(), "main", "is not in a Go module: run servegate compare from the root of a module that requires " + Module},
		"not a commit":      {scratchRepo(t, requires, map[string]string{}), "no-such-ref", "BASE no-such-ref is not a commit of "},
		"an option":         {scratchRepo(t, requires, map[string]string{}), "--output=x", `BASE "--output=x" is not a commit`},
		"no servegate":      {scratchRepo(t, "module example.com/user\n\ngo 1.26\n", map[string]string{}), "main", "does not require " + Module},
		"no scenario tests": {scratchRepo(t, requires, plain), "main", "no package of ./... runs servegate scenarios: none has a test that imports " + benchtestPkg},
	} {
		t.Run(name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			res, err := Run(context.Background(), Config{Dir: c.dir, Base: c.base, Out: out})
			var ie *InputError
			require.ErrorAs(t, err, &ie)
			assert.Contains(t, err.Error(), c.want)
			assert.Equal(t, 2, res.Exit())
			md, rerr := os.ReadFile(filepath.Join(out, "gate.md"))
			require.NoError(t, rerr)
			assert.Contains(t, string(md), "## ⚠️ servegate: cannot judge (exit 2)")
			assert.Contains(t, string(md), c.want)
		})
	}
}

// TestInterrupted: a comparison stopped by a signal (its context
// cancelled) says it was interrupted and where its pairs are, in the
// error and the job summary, rather than "context canceled"; exit 2.
func TestInterrupted(t *testing.T) {
	dir := scratchRepo(t, userGoMod(t), map[string]string{})
	out := filepath.Join(t.TempDir(), "out")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := Run(ctx, Config{Dir: dir, Base: "main", Out: out})
	require.Error(t, err)
	want := "interrupted before a verdict (context canceled): the pairs run so far are reported here and kept in " + out
	assert.Contains(t, err.Error(), want)
	require.NotNil(t, res)
	assert.Equal(t, 2, res.Exit())
	md, rerr := os.ReadFile(filepath.Join(out, "gate.md"))
	require.NoError(t, rerr)
	assert.Contains(t, string(md), want)
}

// toldJudge is a fakeJudge told how many scenarios are judged.
type toldJudge struct {
	fakeJudge
	told []int
}

func (c *toldJudge) judging(n int) string {
	c.told = append(c.told, n)
	return "judging " + string(rune('0'+n))
}

// TestSuiteAlpha: the comparison's alpha is split between the scenarios
// it judges, so that a no-change pull request fails at most 1% of the
// time however many scenarios the suite has. With the default policy's
// four sequential figures and six looks (3 to 8), one scenario fails a
// figure at a look past z = 3.34 (alpha 0.01/4/6); ten scenarios past
// z = 3.93 (0.001/4/6).
func TestSuiteAlpha(t *testing.T) {
	src := &fakeSource{check: checked("a", "b", "new")}
	src.check[2].Problem = &pipeline.PairProblem{Kind: pipeline.ProblemNew, Message: "scenario new is new in head"}
	judge := &toldJudge{fakeJudge: fakeJudge{"a": {3, Pass}, "b": {3, Pass}}}
	res := &Result{}
	require.NoError(t, compare(context.Background(), Config{}, src, judge, res, t.TempDir(), &bytes.Buffer{}))
	assert.Equal(t, []int{2}, judge.told, "told once, of the scenarios judged: not the new one")
	assert.Contains(t, res.Notes, "judging 2")

	f, err := newFastJudge("")
	require.NoError(t, err)
	assert.Empty(t, f.judging(1), "one scenario has the design's alpha: nothing to note")
	assert.Equal(t, 0.01, f.design().Alpha)
	assert.Equal(t, "a no-change pull request fails at most 0.01 of the time: the 10 scenarios judged share it, 0.001 each", f.judging(10))
	assert.InDelta(t, 0.001, f.design().Alpha, 1e-12)

	failZ := func(alpha float64) float64 {
		d := gate.DefaultSequential()
		s := stats.Sequential{Alpha: alpha / 4, Beta: d.Beta, MinLooks: d.MinPairs, MaxLooks: d.MaxPairs}
		l, err := s.Look(d.MinPairs, 0, 0.01, 0.05)
		require.NoError(t, err)
		return l.FailZ
	}
	assert.InDelta(t, 3.34, failZ(gate.DefaultSequential().Alpha), 0.01)
	assert.InDelta(t, 3.93, failZ(f.design().Alpha), 0.01)
}
