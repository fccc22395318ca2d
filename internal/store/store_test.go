package store

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// benchfmtFile writes a benchfmt file of one scenario run into a new
// temporary directory and returns its path.
func benchfmtFile(tb testing.TB, sha string, ttft float64, extra string) string {
	tb.Helper()
	dir := tb.TempDir()
	body := fmt.Sprintf("target: inproc\nscenario-sha: %s\n%sBenchmarkScenarios/scenario=chat 1 %g ttft-p99-sec 20 goodput-req/s\n", sha, extra, ttft)
	name := filepath.Join(dir, "test.benchfmt")
	require.NoError(tb, os.WriteFile(name, []byte(body), 0o644))
	return name
}

// sparse makes a file of n zero bytes that takes no room on disk.
func sparse(tb testing.TB, dir, name string, n int64) string {
	tb.Helper()
	p := filepath.Join(dir, name)
	f, err := os.Create(p)
	require.NoError(tb, err)
	require.NoError(tb, f.Truncate(n))
	require.NoError(tb, f.Close())
	return p
}

// manyBenchmarks writes a benchfmt file of n benchmarks of long names.
func manyBenchmarks(tb testing.TB, dir string, n int) string {
	tb.Helper()
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "BenchmarkScenarios/scenario=a-long-name-for-scenario-%09d 1 2 ns/op\n", i)
	}
	p := filepath.Join(dir, "many.benchfmt")
	require.NoError(tb, os.WriteFile(p, []byte(b.String()), 0o644))
	return p
}

// addCommit adds one run of commit i (commit time t0 + i hours).
func addCommit(tb testing.TB, s *Store, runner string, i int, files ...string) *Run {
	tb.Helper()
	r, err := s.Add(context.Background(), AddRequest{Commit: fmt.Sprintf("c%03d", i), CommitTime: t0.Add(time.Duration(i) * time.Hour),
		Runner: runner, Version: "test", Files: files})
	require.NoError(tb, err)
	return r
}

func TestAddAndRead(t *testing.T) {
	s, err := Create(filepath.Join(t.TempDir(), "store"))
	require.NoError(t, err)
	_, err = s.Runners()
	require.ErrorContains(t, err, "holds no runs yet")

	gateJSON := filepath.Join(t.TempDir(), "gate.json")
	require.NoError(t, os.WriteFile(gateJSON, []byte(`{"verdict":"pass","comparisons":[]}`), 0o644))
	resultJSON := filepath.Join(t.TempDir(), "chat.test.1.json")
	require.NoError(t, os.WriteFile(resultJSON, []byte(`{"completed":10}`), 0o644))
	// Added out of order: the store orders by commit time.
	addCommit(t, s, "cpu4", 2, benchfmtFile(t, "aaa", 0.031, ""))
	r := addCommit(t, s, "cpu4", 1, benchfmtFile(t, "aaa", 0.030, ""), gateJSON, resultJSON)
	addCommit(t, s, "cpu4", 1, benchfmtFile(t, "aaa", 0.032, "interrupted: true\n"))

	assert.Equal(t, []File{
		{Name: "test.benchfmt", Kind: KindBenchfmt},
		{Name: "gate.json", Kind: KindGate},
		{Name: "chat.test.1.json", Kind: KindResult},
	}, clearSums(r.Manifest.Files))

	runners, err := s.Runners()
	require.NoError(t, err)
	assert.Equal(t, []string{"cpu4"}, runners)
	commits, notes, err := s.Commits("cpu4")
	require.NoError(t, err)
	assert.Empty(t, notes)
	require.Len(t, commits, 2)
	assert.Equal(t, "c001", commits[0].ID)
	assert.Len(t, commits[0].Runs, 2)
	assert.Len(t, commits[0].FilesOf(KindBenchfmt), 2)
	assert.Equal(t, map[string]Benchmark{"Scenarios/scenario=chat": {ScenarioSHA: "aaa", Valid: 1, Refused: 1}}, commits[0].Benchmarks())
	assert.Equal(t, "c002", commits[1].ID)

	_, _, err = s.Commits("gpu")
	assert.ErrorContains(t, err, `no runner "gpu"`)
}

func clearSums(fs []File) []File {
	for i := range fs {
		fs[i].SHA256, fs[i].Bytes = "", 0
	}
	return fs
}

// TestAddRefuses checks the inputs an add refuses, and that a refused
// add writes nothing.
func TestAddRefuses(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	s, err := Create(dir)
	require.NoError(t, err)
	addCommit(t, s, "cpu4", 1, benchfmtFile(t, "aaa", 0.030, ""))
	tmp := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(tmp, name)
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
		return p
	}
	for _, c := range []struct {
		name   string
		commit int
		files  []string
		want   string
	}{
		{"no files", 3, nil, "no files"},
		{"unknown kind", 3, []string{write("slo.md", "x")}, "unknown kind of file"},
		{"broken json", 3, []string{benchfmtFile(t, "aaa", 1, ""), write("r.json", "{")}, "not a JSON object"},
		{"no results", 3, []string{write("empty.benchfmt", "target: sim\n")}, "no benchmark result line"},
		{"syntax error", 3, []string{write("bad.benchfmt", "BenchmarkX 1 2\n")}, "bad.benchfmt:1"},
		{"two versions in a file", 3, []string{write("two.benchfmt", "scenario-sha: a\nBenchmarkX 1 2 ns/op\nscenario-sha: b\nBenchmarkX 1 2 ns/op\n")}, "two.benchfmt:4"},
		{"another version of the same commit", 1, []string{benchfmtFile(t, "bbb", 0.030, "")}, "one commit runs one version of a scenario"},
		{"same name twice", 3, []string{benchfmtFile(t, "aaa", 1, ""), benchfmtFile(t, "aaa", 1, "")}, "two files named test.benchfmt"},
		{"missing file", 3, []string{filepath.Join(tmp, "nope.benchfmt")}, "no such file"},
		{"data after the object", 3, []string{benchfmtFile(t, "aaa", 1, ""), write("after.json", "{\"a\": [1, {\"b\": 2}]} {}")}, "after.json: not a JSON object: data after the object"},
		{"a list", 3, []string{benchfmtFile(t, "aaa", 1, ""), write("list.json", "[1]")}, "list.json: not a JSON object"},
		{"file too big", 3, []string{benchfmtFile(t, "aaa", 1, ""), sparse(t, tmp, "big.json", MaxFileBytes+1)}, "big.json: larger than 268435456 bytes"},
		{"manifest too big", 3, []string{manyBenchmarks(t, tmp, 200_000)}, "the run's manifest would be"},
		{"run too big", 3, []string{benchfmtFile(t, "aaa", 1, ""), sparse(t, tmp, "1.json", MaxFileBytes), sparse(t, tmp, "2.json", MaxFileBytes), sparse(t, tmp, "3.json", MaxFileBytes), sparse(t, tmp, "4.json", MaxFileBytes)}, "over 1073741824, the most one run may hold"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := s.Add(context.Background(), AddRequest{Commit: fmt.Sprintf("c%03d", c.commit), CommitTime: t0.Add(time.Duration(c.commit) * time.Hour), Runner: "cpu4", Files: c.files})
			require.ErrorContains(t, err, c.want)
		})
	}
	_, err = s.Add(context.Background(), AddRequest{Commit: "../x", CommitTime: t0, Runner: "cpu4", Files: []string{benchfmtFile(t, "a", 1, "")}})
	assert.ErrorContains(t, err, "commit \"../x\"")
	_, err = s.Add(context.Background(), AddRequest{Commit: "c001", CommitTime: t0.Add(time.Minute), Runner: "cpu4", Files: []string{benchfmtFile(t, "aaa", 1, "")}})
	assert.ErrorContains(t, err, "commit time")
	commits, _, err := s.Commits("cpu4")
	require.NoError(t, err)
	require.Len(t, commits, 1, "a refused add wrote a commit")
	assert.Len(t, commits[0].Runs, 1)

	_, err = Create(t.TempDir() + "/..")
	assert.ErrorContains(t, err, "not empty")
	_, err = Open(t.TempDir())
	assert.ErrorContains(t, err, "not a servegate history store")
}

// TestConcurrentAdds has many writers add to one commit (and others) at
// once while readers read: every add lands whole, none is lost, and no
// reader sees a torn run.
func TestConcurrentAdds(t *testing.T) {
	s, err := Create(filepath.Join(t.TempDir(), "store"))
	require.NoError(t, err)
	addCommit(t, s, "cpu4", 0, benchfmtFile(t, "aaa", 0.03, ""))
	const writers = 16
	files := make([]string, writers)
	for i := range files {
		files[i] = benchfmtFile(t, "aaa", 0.03+float64(i)/1000, strings.Repeat("# padding line\n", 2000))
	}
	var wg sync.WaitGroup
	errs := make(chan error, 2*writers)
	stop := make(chan struct{})
	wg.Go(func() { // a reader that runs throughout
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, _, err := s.Commits("cpu4"); err != nil {
				errs <- fmt.Errorf("reader: %w", err)
				return
			}
		}
	})
	var adds sync.WaitGroup
	for i := range writers {
		adds.Go(func() {
			_, err := s.Add(context.Background(), AddRequest{Commit: fmt.Sprintf("c%03d", 1+i%2), CommitTime: t0.Add(time.Duration(1+i%2) * time.Hour), Runner: "cpu4", Files: []string{files[i]}})
			if err != nil {
				errs <- err
			}
		})
	}
	adds.Wait()
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	commits, _, err := s.Commits("cpu4")
	require.NoError(t, err)
	require.Len(t, commits, 3)
	assert.Len(t, commits[1].Runs, writers/2)
	assert.Len(t, commits[2].Runs, writers/2)
}

// TestTornAndForeign checks that a damaged store is an error naming the
// file, and that reading it changes nothing.
func TestTornAndForeign(t *testing.T) {
	for _, c := range []struct {
		name   string
		damage func(t *testing.T, r *Run)
		want   string
	}{
		{"torn benchfmt", func(t *testing.T, r *Run) {
			require.NoError(t, os.Truncate(r.Path("test.benchfmt"), 10))
		}, "test.benchfmt: torn: 10 bytes"},
		{"altered benchfmt", func(t *testing.T, r *Run) {
			data, err := os.ReadFile(r.Path("test.benchfmt"))
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(r.Path("test.benchfmt"), []byte(strings.Replace(string(data), "0.03", "0.09", 1)), 0o644))
		}, "test.benchfmt: altered"},
		{"altered result JSON of the same size", func(t *testing.T, r *Run) {
			sameSize(t, r.Path("chat.test.1.json"), `"ttfts":[0.05`, `"ttfts":[0.09`)
		}, "chat.test.1.json: altered: SHA-256"},
		{"altered gate JSON", func(t *testing.T, r *Run) {
			sameSize(t, r.Path("gate.json"), `"pass"`, `"fail"`)
		}, "gate.json: altered: SHA-256"},
		{"grown result JSON", func(t *testing.T, r *Run) {
			f, err := os.OpenFile(r.Path("chat.test.1.json"), os.O_APPEND|os.O_WRONLY, 0)
			require.NoError(t, err)
			_, err = f.WriteString(" ")
			require.NoError(t, err)
			require.NoError(t, f.Close())
		}, "chat.test.1.json: torn: 29 bytes, its manifest says 28"},
		{"a file the manifest does not list", func(t *testing.T, r *Run) {
			require.NoError(t, os.WriteFile(r.Path("chat.test.2.json"), []byte(`{}`), 0o644))
		}, "chat.test.2.json: not in its run's manifest"},
		{"a manifest that lists a path", func(t *testing.T, r *Run) {
			data, err := os.ReadFile(r.Path(manifestFile))
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(r.Path(manifestFile), []byte(strings.Replace(string(data), `"name": "gate.json"`, `"name": "../gate.json"`, 1)), 0o644))
		}, `manifest names file "../gate.json", which is not a plain file name`},
		{"a directory in place of a file", func(t *testing.T, r *Run) {
			require.NoError(t, os.Remove(r.Path("gate.json")))
			require.NoError(t, os.Mkdir(r.Path("gate.json"), 0o755))
		}, "gate.json: not a regular file"},
		{"a manifest too large to read", func(t *testing.T, r *Run) {
			// Read whole before, a 512 MiB manifest took 552 MB of memory.
			require.NoError(t, os.Truncate(r.Path(manifestFile), MaxManifestBytes+1))
		}, "manifest.json: over 16777216 bytes"},
		{"torn manifest", func(t *testing.T, r *Run) {
			require.NoError(t, os.Truncate(r.Path(manifestFile), 20))
		}, "manifest.json: torn or altered manifest"},
		{"missing file", func(t *testing.T, r *Run) {
			require.NoError(t, os.Remove(r.Path("test.benchfmt")))
		}, "listed in the manifest but unreadable"},
		{"misfiled run", func(t *testing.T, r *Run) {
			require.NoError(t, os.Rename(filepath.Dir(r.Dir), filepath.Join(filepath.Dir(filepath.Dir(r.Dir)), "c999")))
		}, `manifest says commit "c002"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := Create(filepath.Join(t.TempDir(), "store"))
			require.NoError(t, err)
			addCommit(t, s, "cpu4", 1, benchfmtFile(t, "aaa", 0.03, ""))
			dir := t.TempDir()
			gate, result := filepath.Join(dir, "gate.json"), filepath.Join(dir, "chat.test.1.json")
			require.NoError(t, os.WriteFile(gate, []byte(`{"verdict":"pass","comparisons":[]}`), 0o644))
			require.NoError(t, os.WriteFile(result, []byte(`{"ttfts":[0.05,0.06],"n":1}`+"\n"), 0o644))
			r := addCommit(t, s, "cpu4", 2, benchfmtFile(t, "aaa", 0.03, ""), gate, result)
			c.damage(t, r)
			_, _, err = s.Commits("cpu4")
			require.ErrorContains(t, err, c.want)
			_, err = s.Prune(Retention{KeepCommits: MinKeepCommits})
			require.ErrorContains(t, err, c.want, "a prune of a damaged store goes on")
			_, err = os.Stat(filepath.Join(s.Dir, "cpu4", "c001"))
			assert.NoError(t, err, "nothing is lost")
		})
	}
}

// sameSize replaces old with new in a file of the store, which keeps
// its size: only its hash can tell.
func sameSize(t *testing.T, path, old, new string) {
	t.Helper()
	require.Equal(t, len(old), len(new))
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Contains(t, string(data), old)
	require.NoError(t, os.WriteFile(path, []byte(strings.Replace(string(data), old, new, 1)), 0o644))
}

// TestRunOpenChecks: Open and ReadFile check what they read, so a file
// altered after Commits checked it is still refused.
func TestRunOpenChecks(t *testing.T) {
	s, err := Create(filepath.Join(t.TempDir(), "store"))
	require.NoError(t, err)
	result := filepath.Join(t.TempDir(), "chat.test.1.json")
	require.NoError(t, os.WriteFile(result, []byte(`{"ttfts":[0.05,0.06]}`), 0o644))
	addCommit(t, s, "cpu4", 1, benchfmtFile(t, "aaa", 0.03, ""), result)
	commits, _, err := s.Commits("cpu4")
	require.NoError(t, err)
	r := commits[0].Runs[0]
	data, err := r.ReadFile("chat.test.1.json")
	require.NoError(t, err)
	assert.Equal(t, `{"ttfts":[0.05,0.06]}`, string(data))
	sameSize(t, r.Path("chat.test.1.json"), "0.06", "0.60")
	_, err = r.ReadFile("chat.test.1.json")
	assert.ErrorContains(t, err, "chat.test.1.json: altered: SHA-256")
	_, err = r.ReadFile("other.json")
	assert.ErrorContains(t, err, "other.json: not in its run's manifest")
	sameSize(t, r.Path("chat.test.1.json"), "0.60", "0.06")
	rc, err := r.Open("chat.test.1.json")
	require.NoError(t, err)
	f, err := os.OpenFile(r.Path("chat.test.1.json"), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString("  ")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	_, err = io.ReadAll(rc)
	assert.ErrorContains(t, err, "chat.test.1.json: torn: longer than the 21 bytes its manifest says", "a file that grew after Open")
	require.NoError(t, rc.Close())
	require.NoError(t, os.WriteFile(r.Path("chat.test.1.json"), []byte(`{"ttfts":[0.05,0.06,0.07,0.08]}`), 0o644))
	_, err = r.ReadFile("chat.test.1.json")
	assert.ErrorContains(t, err, "chat.test.1.json: torn: 31 bytes, its manifest says 21")
}

// TestCommitWithoutRuns: a commit directory with only a crashed add is
// left out with a note, and a prune removes the stale temporary.
func TestCommitWithoutRuns(t *testing.T) {
	s, err := Create(filepath.Join(t.TempDir(), "store"))
	require.NoError(t, err)
	addCommit(t, s, "cpu4", 1, benchfmtFile(t, "aaa", 0.03, ""))
	crashed := filepath.Join(s.Dir, "cpu4", "c002", addPrefix+"123")
	require.NoError(t, os.MkdirAll(crashed, 0o755))
	commits, notes, err := s.Commits("cpu4")
	require.NoError(t, err)
	assert.Len(t, commits, 1)
	assert.Equal(t, []string{"commit c002 (cpu4): no complete run, left out"}, notes)

	old := time.Now().Add(-2 * staleAdd)
	require.NoError(t, os.Chtimes(crashed, old, old))
	rep, err := s.Prune(Retention{KeepCommits: MinKeepCommits})
	require.NoError(t, err)
	assert.Equal(t, []string{filepath.Join("cpu4", "c002", addPrefix+"123")}, rep.Leftovers)
	_, err = os.Stat(crashed)
	assert.True(t, os.IsNotExist(err))
}

func TestPrune(t *testing.T) {
	s, err := Create(filepath.Join(t.TempDir(), "store"))
	require.NoError(t, err)
	// 20 commits an hour apart. The newest valid run of scenario=chat at
	// its current version is c014: c015..c019 are interrupted runs, and
	// c020 is another scenario. A 6-commit window (c015..c020) still keeps
	// c014, the baseline.
	for i := 1; i <= 14; i++ {
		addCommit(t, s, "cpu4", i, benchfmtFile(t, "aaa", 0.03, ""))
	}
	for i := 15; i <= 19; i++ {
		addCommit(t, s, "cpu4", i, benchfmtFile(t, "aaa", 0.03, "interrupted: true\n"))
	}
	other := filepath.Join(t.TempDir(), "other.benchfmt")
	require.NoError(t, os.WriteFile(other, []byte("scenario-sha: zzz\nBenchmarkScenarios/scenario=other 1 2 ttft-p99-sec\n"), 0o644))
	addCommit(t, s, "cpu4", 20, other)
	addCommit(t, s, "gpu", 1, benchfmtFile(t, "aaa", 0.01, ""))

	_, err = s.Prune(Retention{KeepCommits: 3})
	assert.ErrorContains(t, err, "keep at least 6")
	_, err = s.Prune(Retention{})
	assert.ErrorContains(t, err, "give the commits to keep")

	base, err := s.Baselines("cpu4")
	require.NoError(t, err)
	require.Len(t, base, 2)
	assert.Equal(t, "c014", base["Scenarios/scenario=chat"].ID, "c015..c019 are interrupted")
	assert.Equal(t, "c020", base["Scenarios/scenario=other"].ID)

	dry, err := s.Prune(Retention{KeepCommits: 6, DryRun: true})
	require.NoError(t, err)
	assert.Len(t, dry.Removed, 13)
	commits, _, err := s.Commits("cpu4")
	require.NoError(t, err)
	assert.Len(t, commits, 20, "a dry run removed something")

	rep, err := s.Prune(Retention{KeepCommits: 6})
	require.NoError(t, err)
	assert.Equal(t, []string{"cpu4/c014 (Scenarios/scenario=chat)"}, rep.Baselines)
	assert.Equal(t, dry.Removed, rep.Removed)
	assert.Equal(t, 8, rep.Kept) // c014..c020 and gpu's c001
	commits, _, err = s.Commits("cpu4")
	require.NoError(t, err)
	var ids []string
	for _, c := range commits {
		ids = append(ids, c.ID)
	}
	assert.Equal(t, []string{"c014", "c015", "c016", "c017", "c018", "c019", "c020"}, ids)

	// By age: commit times are t0+i h; keep the last day from t0+20h+1d.
	rep, err = s.Prune(Retention{KeepDays: 1, Now: t0.Add(20*time.Hour + 24*time.Hour)})
	require.NoError(t, err)
	assert.Equal(t, []string{"cpu4/c015", "cpu4/c016", "cpu4/c017", "cpu4/c018", "cpu4/c019"}, rep.Removed)
	assert.Equal(t, []string{"cpu4/c014 (Scenarios/scenario=chat)", "gpu/c001 (Scenarios/scenario=chat)"}, rep.Baselines)
	commits, _, err = s.Commits("gpu")
	require.NoError(t, err)
	assert.Len(t, commits, 1, "gpu's only commit is its baseline")
}

// TestPruneWhileAdding prunes over and over while adds land: no add
// fails or tears, no reader sees half a commit, and the newest commits
// keep every run added to them.
func TestPruneWhileAdding(t *testing.T) {
	s, err := Create(filepath.Join(t.TempDir(), "store"))
	require.NoError(t, err)
	const commits, runs = 16, 3
	file := benchfmtFile(t, "aaa", 0.03, "")
	stop := make(chan struct{})
	errs := make(chan error, commits*runs+1)
	var pruner sync.WaitGroup
	pruner.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := s.Prune(Retention{KeepCommits: MinKeepCommits}); err != nil && !strings.Contains(err.Error(), "holds no runs yet") {
				errs <- fmt.Errorf("prune: %w", err)
				return
			}
		}
	})
	var adds sync.WaitGroup
	for i := range commits {
		for range runs {
			adds.Go(func() {
				if _, err := s.Add(context.Background(), AddRequest{Commit: fmt.Sprintf("c%03d", i), CommitTime: t0.Add(time.Duration(i) * time.Hour), Runner: "cpu4", Files: []string{file}}); err != nil {
					errs <- err
				}
			})
		}
	}
	adds.Wait()
	close(stop)
	pruner.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	_, err = s.Prune(Retention{KeepCommits: MinKeepCommits})
	require.NoError(t, err)
	cs, _, err := s.Commits("cpu4")
	require.NoError(t, err)
	require.Len(t, cs, MinKeepCommits)
	for j, c := range cs {
		assert.Equal(t, fmt.Sprintf("c%03d", commits-MinKeepCommits+j), c.ID)
		assert.Len(t, c.Runs, runs, c.ID)
	}
	left, err := filepath.Glob(filepath.Join(s.Dir, "cpu4", ".trash-*"))
	require.NoError(t, err)
	assert.Empty(t, left)
}

// TestAddRefusesUnreadableNames: an add must refuse a file whose base
// name a reader refuses (a dot file, the manifest's own name), instead of
// filing a run that makes every later read of its runner type fail.
func TestAddRefusesUnreadableNames(t *testing.T) {
	s, err := Create(filepath.Join(t.TempDir(), "store"))
	require.NoError(t, err)
	addCommit(t, s, "cpu4", 1, benchfmtFile(t, "aaa", 0.030, ""))
	for _, name := range []string{".hidden.json", ".x.benchfmt", manifestFile} {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), name)
			body := `{"completed":1}`
			if strings.HasSuffix(name, ".benchfmt") {
				body = "BenchmarkX 1 2 ns/op\n"
			}
			require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
			_, err := s.Add(context.Background(), AddRequest{Commit: "c002", CommitTime: t0.Add(2 * time.Hour), Runner: "cpu4",
				Files: []string{benchfmtFile(t, "aaa", 0.03, ""), p}})
			require.ErrorContains(t, err, name)
			commits, _, err := s.Commits("cpu4")
			require.NoError(t, err, "the store is still readable")
			assert.Len(t, commits, 1)
		})
	}
}

// TestConcurrentAddsDisagreeing: adds of one commit that disagree (commit
// time, scenario version) and run at once must not both land: the check
// against the commit's other runs and the run's rename are one step, or
// the store is left unreadable for the whole runner type.
func TestConcurrentAddsDisagreeing(t *testing.T) {
	s, err := Create(filepath.Join(t.TempDir(), "store"))
	require.NoError(t, err)
	const writers = 8
	files := make([]string, writers)
	for i := range files {
		files[i] = benchfmtFile(t, fmt.Sprintf("sha%d", i), 0.03, strings.Repeat("# padding line\n", 2000))
	}
	var adds sync.WaitGroup
	start := make(chan struct{})
	var landed sync.Map
	for i := range writers {
		adds.Go(func() {
			<-start
			_, err := s.Add(context.Background(), AddRequest{Commit: "c001", CommitTime: t0.Add(time.Duration(i) * time.Minute), Runner: "cpu4", Files: []string{files[i]}})
			if err == nil {
				landed.Store(i, true)
			}
		})
	}
	close(start)
	adds.Wait()
	n := 0
	landed.Range(func(any, any) bool { n++; return true })
	assert.Equal(t, 1, n, "adds of one commit with different commit times landed")
	_, _, err = s.Commits("cpu4")
	require.NoError(t, err, "the store is readable")
}

// TestReadWhilePruning: a reader (site, gate -history, export) that reads
// while a prune removes commits sees the store before or after the prune,
// never a run whose files vanished under it, which it would report as a
// torn store.
func TestReadWhilePruning(t *testing.T) {
	s, err := Create(filepath.Join(t.TempDir(), "store"))
	require.NoError(t, err)
	file := benchfmtFile(t, "aaa", 0.03, strings.Repeat("# padding line\n", 500))
	const n = 60
	for i := range n {
		for range 2 {
			addCommit(t, s, "cpu4", i, file)
		}
	}
	stop := make(chan struct{})
	errs := make(chan error, 1)
	var reader sync.WaitGroup
	reader.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			// As gate -history and export do: list, then read the files.
			err := func() error {
				defer s.ReadLock()()
				cs, _, err := s.Commits("cpu4")
				if err != nil {
					return err
				}
				for _, c := range cs {
					for _, f := range c.FilesOf(KindBenchfmt) {
						if _, err := os.ReadFile(f); err != nil {
							return err
						}
					}
				}
				return nil
			}()
			if err != nil {
				errs <- err
				return
			}
		}
	})
	for keep := n - 2; keep >= MinKeepCommits; keep -= 2 {
		_, err := s.Prune(Retention{KeepCommits: keep})
		require.NoError(t, err)
	}
	close(stop)
	reader.Wait()
	close(errs)
	for err := range errs {
		t.Error("reader:", err)
	}
}
