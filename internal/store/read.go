package store

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// A Commit is one commit of one runner type with its runs.
type Commit struct {
	ID   string
	Time time.Time
	// Runs are in the order they were added.
	Runs []*Run
}

// FilesOf returns the paths of every run's files of a kind.
func (c *Commit) FilesOf(kind string) []string {
	var out []string
	for _, r := range c.Runs {
		out = append(out, r.FilesOf(kind)...)
	}
	return out
}

// Benchmarks merges the runs' benchmarks: valid and refused lines
// summed, the scenario hash of the newest run.
func (c *Commit) Benchmarks() map[string]Benchmark {
	out := map[string]Benchmark{}
	for _, r := range c.Runs {
		for name, b := range r.Manifest.Benchmarks {
			o := out[name]
			o.ScenarioSHA = b.ScenarioSHA
			o.Valid += b.Valid
			o.Refused += b.Refused
			out[name] = o
		}
	}
	return out
}

// Runners lists the store's runner types, sorted. An empty store is an
// error that says how to fill it.
func (s *Store) Runners() ([]string, error) {
	ents, err := os.ReadDir(s.Dir)
	if err != nil {
		return nil, fmt.Errorf("read store: %w", err)
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			out = append(out, e.Name())
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("read store: %s holds no runs yet: add one with servegate history add", s.Dir)
	}
	return out, nil
}

// Commits reads one runner type's commits, oldest first (by commit
// time, then hash). It checks every run: a manifest that does not parse
// or does not match its place, a file missing, of another size than
// the manifest says (torn), or, for benchfmt files, of another SHA-256
// (altered) is an error naming the file, and nothing is read past it.
// A commit directory without a complete run is left out with a note.
// It holds the store's lock shared, so a prune waits for it.
func (s *Store) Commits(runner string) ([]*Commit, []string, error) {
	defer s.ReadLock()()
	return s.commits(runner)
}

// commits is Commits for a caller that holds the store's lock.
func (s *Store) commits(runner string) ([]*Commit, []string, error) {
	if err := CheckRunner(runner); err != nil {
		return nil, nil, fmt.Errorf("read store: %w", err)
	}
	dir := filepath.Join(s.Dir, runner)
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		runners, rerr := s.Runners()
		if rerr != nil {
			return nil, nil, rerr
		}
		return nil, nil, fmt.Errorf("read store: no runner %q in %s; it holds %s", runner, s.Dir, strings.Join(runners, ", "))
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read store: %w", err)
	}
	var commits []*Commit
	var notes []string
	for _, e := range ents {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		runs, err := readCommit(filepath.Join(dir, e.Name()), runner, e.Name(), true)
		if err != nil {
			return nil, nil, fmt.Errorf("read store: %w", err)
		}
		if len(runs) == 0 {
			notes = append(notes, fmt.Sprintf("commit %s (%s): no complete run, left out", e.Name(), runner))
			continue
		}
		c := &Commit{ID: e.Name(), Time: runs[0].Manifest.CommitTime, Runs: runs}
		for _, r := range runs[1:] {
			if !r.Manifest.CommitTime.Equal(c.Time) {
				return nil, nil, fmt.Errorf("read store: commit %s: its runs disagree on the commit time (%s in %s, %s in %s)",
					c.ID, c.Time.Format(time.RFC3339), runs[0].Dir, r.Manifest.CommitTime.Format(time.RFC3339), r.Dir)
			}
		}
		commits = append(commits, c)
	}
	slices.SortFunc(commits, func(a, b *Commit) int {
		if c := a.Time.Compare(b.Time); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return commits, notes, nil
}

// readCommit reads the runs of one commit directory, in name (added)
// order; verify checks their files too.
func readCommit(dir, runner, commit string, verify bool) ([]*Run, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var runs []*Run
	for _, e := range ents {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		r, err := readRun(filepath.Join(dir, e.Name()), runner, commit, verify)
		if err != nil {
			return nil, err
		}
		runs = append(runs, r)
	}
	return runs, nil
}

// readRun reads and checks one run directory.
func readRun(dir, runner, commit string, verify bool) (*Run, error) {
	name := filepath.Join(dir, manifestFile)
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("%s: unreadable manifest: %w (move the run directory away to go on)", name, err)
	}
	r := &Run{Dir: dir}
	if err := json.Unmarshal(data, &r.Manifest); err != nil {
		return nil, fmt.Errorf("%s: torn or altered manifest: %w (move the run directory away to go on)", name, err)
	}
	m := &r.Manifest
	switch {
	case m.Layout != Layout:
		return nil, fmt.Errorf("%s: layout %d, this servegate reads layout %d", name, m.Layout, Layout)
	case m.Commit != commit || m.Runner != runner:
		return nil, fmt.Errorf("%s: manifest says commit %q on runner %q, but it is filed under %s/%s", name, m.Commit, m.Runner, runner, commit)
	case m.CommitTime.IsZero():
		return nil, fmt.Errorf("%s: no commit_time", name)
	case len(m.Files) == 0:
		return nil, fmt.Errorf("%s: lists no files", name)
	}
	if !verify {
		return r, nil
	}
	for _, f := range m.Files {
		if err := checkFile(r.Path(f.Name), f); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// checkFile compares a file with its manifest entry: its size always,
// its SHA-256 when it is a benchfmt file (the ones readers parse).
func checkFile(path string, f File) error {
	if f.Name != filepath.Base(f.Name) || strings.HasPrefix(f.Name, ".") || f.Name == manifestFile {
		return fmt.Errorf("%s: manifest names file %q, which is not a plain file name", filepath.Dir(path), f.Name)
	}
	st, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("%s: listed in the manifest but unreadable: %w", path, err)
	}
	if st.Size() != f.Bytes {
		return fmt.Errorf("%s: torn: %d bytes, its manifest says %d (move the run directory away to go on)", path, st.Size(), f.Bytes)
	}
	if f.Kind != KindBenchfmt {
		return nil
	}
	fh, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	defer fh.Close()
	h := sha256.New()
	if _, err := io.Copy(h, fh); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != f.SHA256 {
		return fmt.Errorf("%s: altered: SHA-256 %s, its manifest says %s (move the run directory away to go on)", path, short(got), short(f.SHA256))
	}
	return nil
}
