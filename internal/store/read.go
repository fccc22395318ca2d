package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
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
// time, then hash). It checks every run and reads every file through.
// Each of these is an error naming the run and the file:
//   - a manifest that does not parse or does not match its place;
//   - a file missing, or of another size than the manifest says (torn);
//   - a file of another SHA-256 (altered), whatever its kind;
//   - a file in the run's directory that the manifest does not list.
//
// Nothing is read past the first error. A commit directory without a
// complete run is left out with a note. It holds the store's lock
// shared, so a prune waits for it.
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
	data, err := readSmall(name, MaxManifestBytes)
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
	listed := map[string]bool{manifestFile: true}
	for _, f := range m.Files {
		if err := checkName(dir, f); err != nil {
			return nil, err
		}
		if listed[f.Name] {
			return nil, fmt.Errorf("%s: lists file %q twice", name, f.Name)
		}
		listed[f.Name] = true
	}
	if !verify {
		return r, nil
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	for _, e := range ents {
		if !listed[e.Name()] {
			return nil, fmt.Errorf("%s: not in its run's manifest: a file was added to the run after it was filed (move the run directory away to go on)", filepath.Join(dir, e.Name()))
		}
	}
	for _, f := range m.Files {
		if err := r.verify(f); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// checkName refuses a manifest entry that is not a plain file name of
// the run.
func checkName(dir string, f File) error {
	if f.Name == "" || f.Name != filepath.Base(f.Name) || strings.HasPrefix(f.Name, ".") || f.Name == manifestFile {
		return fmt.Errorf("%s: manifest names file %q, which is not a plain file name", dir, f.Name)
	}
	if f.Bytes < 0 || f.Bytes > MaxFileBytes {
		return fmt.Errorf("%s: manifest gives file %q %d bytes, outside 0 to %d", dir, f.Name, f.Bytes, int64(MaxFileBytes))
	}
	return nil
}

// verify reads one file of the run through and compares it with its
// manifest entry: its size and SHA-256.
func (r *Run) verify(f File) error {
	fh, err := r.Open(f.Name)
	if err != nil {
		return err
	}
	defer fh.Close()
	if _, err := io.Copy(io.Discard, fh); err != nil {
		return err
	}
	return nil
}

// Open opens one file of the run for reading. The reader checks what
// it reads against the run's manifest. A file longer than the manifest
// says fails at the first byte past it. A shorter one, or one of another
// SHA-256, fails at its end. A caller acts on what it read only after
// reading to io.EOF.
func (r *Run) Open(name string) (io.ReadCloser, error) {
	i := slices.IndexFunc(r.Manifest.Files, func(f File) bool { return f.Name == name })
	if i < 0 {
		return nil, fmt.Errorf("%s: not in its run's manifest", r.Path(name))
	}
	f := r.Manifest.Files[i]
	if err := checkName(r.Dir, f); err != nil {
		return nil, err
	}
	path := r.Path(f.Name)
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%s: listed in the manifest but unreadable: %w", path, err)
	}
	st, err := fh.Stat()
	if err != nil {
		fh.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if !st.Mode().IsRegular() {
		fh.Close()
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	if st.Size() != f.Bytes {
		fh.Close()
		return nil, fmt.Errorf("%s: torn: %d bytes, its manifest says %d (move the run directory away to go on)", path, st.Size(), f.Bytes)
	}
	return &checkedReader{f: fh, path: path, want: f, h: sha256.New()}, nil
}

// ReadFile reads one file of the run whole, checked against its
// manifest as Open checks it.
func (r *Run) ReadFile(name string) ([]byte, error) {
	rc, err := r.Open(name)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	c := rc.(*checkedReader)
	// Room for the whole file and ReadFrom's last read, which finds EOF
	// without growing the buffer.
	buf := bytes.NewBuffer(make([]byte, 0, c.want.Bytes+bytes.MinRead))
	if _, err := buf.ReadFrom(rc); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// A checkedReader hashes what it reads and compares it with the
// manifest at the end.
type checkedReader struct {
	f    *os.File
	path string
	want File
	h    hash.Hash
	n    int64
}

func (c *checkedReader) Read(p []byte) (int, error) {
	if int64(len(p)) > c.want.Bytes-c.n+1 {
		// Never read further than one byte past the manifest's size.
		p = p[:c.want.Bytes-c.n+1]
	}
	k, err := c.f.Read(p)
	c.h.Write(p[:k])
	c.n += int64(k)
	if c.n > c.want.Bytes {
		return k, fmt.Errorf("%s: torn: longer than the %d bytes its manifest says (move the run directory away to go on)", c.path, c.want.Bytes)
	}
	if err == io.EOF {
		if c.n != c.want.Bytes {
			return k, fmt.Errorf("%s: torn: %d bytes, its manifest says %d (move the run directory away to go on)", c.path, c.n, c.want.Bytes)
		}
		if got := hex.EncodeToString(c.h.Sum(nil)); got != c.want.SHA256 {
			return k, fmt.Errorf("%s: altered: SHA-256 %s, its manifest says %s (move the run directory away to go on)", c.path, short(got), short(c.want.SHA256))
		}
	}
	if err != nil && err != io.EOF {
		err = fmt.Errorf("%s: %w", c.path, err)
	}
	return k, err
}

func (c *checkedReader) Close() error { return c.f.Close() }
