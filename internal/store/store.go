package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"golang.org/x/perf/benchfmt"
)

// Names in the store.
const (
	layoutFile   = "servegate-history.json"
	lockFile     = ".lock"
	manifestFile = "manifest.json"
	addPrefix    = ".add-"
	trashPrefix  = ".trash-"
	// Layout is the version of the layout this package writes and reads.
	Layout = 1
)

// Limits of an add. An add streams its files: it holds none of them in
// memory, whatever their size.
const (
	// MaxFiles is the most files one add takes.
	MaxFiles = 64
	// MaxFileBytes is the largest file an add takes (256 MiB).
	MaxFileBytes = 256 << 20
	// MaxRunBytes is the most bytes one add takes in all its files
	// (1 GiB): four files at the largest.
	MaxRunBytes = 1 << 30
	// MaxManifestBytes is the largest manifest an add writes and a reader
	// reads (16 MiB, some 100000 benchmarks). A reader holds a manifest
	// whole, so a larger one is refused, not read.
	MaxManifestBytes = 16 << 20
)

// Kinds of file in a run.
const (
	KindBenchfmt = "benchfmt" // benchstat format results (*.benchfmt, *.txt, *.bench)
	KindResult   = "result"   // vLLM's result JSON (*.json)
	KindGate     = "gate"     // a gate's JSON report (*.json with "verdict" and "comparisons")
)

// A Store is a results store in the directory Dir (see the package
// documentation for its layout).
type Store struct {
	Dir string
}

// A Manifest describes one run: one add of one commit on one runner type.
type Manifest struct {
	Layout     int       `json:"layout"`
	Commit     string    `json:"commit"`
	CommitTime time.Time `json:"commit_time"`
	Runner     string    `json:"runner"`
	// Version is the servegate version that added the run.
	Version string `json:"servegate_version"`
	// Added is when the run was added.
	Added time.Time `json:"added"`
	// Benchmarks are the benchmarks the run's benchfmt files report, by
	// full name.
	Benchmarks map[string]Benchmark `json:"benchmarks"`
	Files      []File               `json:"files"`
}

// A Benchmark is what a run holds of one benchmark (one scenario).
type Benchmark struct {
	// ScenarioSHA is the result lines' scenario-sha: the hash of the
	// scenario file's content that its results depend on ("" when the
	// lines carry none, as go test -bench output of other benchmarks).
	ScenarioSHA string `json:"scenario_sha"`
	// Valid counts the result lines a gate can use; Refused those marked
	// interrupted or invalid.
	Valid   int `json:"valid"`
	Refused int `json:"refused,omitempty"`
}

// A File is one file of a run.
type File struct {
	Name   string `json:"name"`
	Kind   string `json:"kind"`
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
}

// IsStore reports whether dir holds a store (its layout file).
func IsStore(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, layoutFile))
	return err == nil
}

// Open opens the store in dir, which must exist and be one.
func Open(dir string) (*Store, error) {
	data, err := readSmall(filepath.Join(dir, layoutFile), 64<<10)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("open store: %s is not a servegate history store (no %s; servegate history add creates one)", dir, layoutFile)
	}
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	var l struct {
		Layout int `json:"layout"`
	}
	if err := json.Unmarshal(data, &l); err != nil {
		return nil, fmt.Errorf("open store: %s: %w", filepath.Join(dir, layoutFile), err)
	}
	if l.Layout != Layout {
		return nil, fmt.Errorf("open store: %s: layout %d, this servegate reads layout %d", filepath.Join(dir, layoutFile), l.Layout, Layout)
	}
	return &Store{Dir: dir}, nil
}

// Create opens the store in dir, making the directory and its layout
// file when missing. A non-empty directory that is no store is refused.
func Create(dir string) (*Store, error) {
	if IsStore(dir) {
		return Open(dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create store: %w", err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("create store: %w", err)
	}
	for _, e := range ents {
		if e.Name() != lockFile && !strings.HasPrefix(e.Name(), layoutFile) {
			// Another add may have made the store since IsStore looked:
			// it writes the layout file before anything else.
			if IsStore(dir) {
				return Open(dir)
			}
			return nil, fmt.Errorf("create store: %s is not empty and holds no %s: refusing to make it a store", dir, layoutFile)
		}
	}
	if err := writeAtomic(filepath.Join(dir, layoutFile), []byte(fmt.Sprintf("{\"layout\": %d}\n", Layout))); err != nil {
		return nil, fmt.Errorf("create store: %w", err)
	}
	return Open(dir)
}

// readSmall reads a file of at most limit bytes whole. A longer one is
// an error, read no further than limit+1 bytes.
func readSmall(name string, limit int64) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s: over %d bytes, the most this file may hold", name, limit)
	}
	return data, nil
}

// writeAtomic writes data to name through a temporary file in the same
// directory and a rename.
func writeAtomic(name string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(name), filepath.Base(name)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), name)
}

var (
	runnerRE = regexp.MustCompile(`^[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}$`)
	commitRE = regexp.MustCompile(`^[A-Za-z0-9_-][A-Za-z0-9._-]{0,79}$`)
)

// CheckRunner checks a runner type's name against the store's limits.
func CheckRunner(name string) error {
	if !runnerRE.MatchString(name) {
		return fmt.Errorf("runner %q: want 1 to 64 characters of A-Z a-z 0-9 . _ -, not starting with a dot", name)
	}
	return nil
}

// CheckCommit checks a commit's name against the store's limits.
func CheckCommit(name string) error {
	if !commitRE.MatchString(name) {
		return fmt.Errorf("commit %q: want 1 to 80 characters of A-Z a-z 0-9 . _ -, not starting with a dot", name)
	}
	return nil
}

// An AddRequest is one run to file: its files and where they belong.
type AddRequest struct {
	Commit     string
	CommitTime time.Time
	Runner     string
	// Version is the servegate version that ran (recorded as is).
	Version string
	// Files are paths of benchfmt files (*.benchfmt, *.txt, *.bench),
	// result JSON files and gate JSON reports (*.json). At least one
	// benchfmt file with a result line is required.
	Files []string
	// Now stamps the run; zero means time.Now.
	Now time.Time
}

// A Run is one run in the store.
type Run struct {
	// Dir is the run's directory.
	Dir      string
	Manifest Manifest
}

// Path returns the path of the run's file name.
func (r *Run) Path(name string) string { return filepath.Join(r.Dir, name) }

// FilesOf returns the paths of the run's files of a kind, in manifest
// order.
func (r *Run) FilesOf(kind string) []string {
	var out []string
	for _, f := range r.Manifest.Files {
		if f.Kind == kind {
			out = append(out, r.Path(f.Name))
		}
	}
	return out
}

// Add files a run under its runner type and commit. It reads and checks
// every file first (a benchfmt syntax error, a JSON file that does not
// parse, a file of an unknown kind, a run with no result line, or a
// scenario hash that differs from the one another run of the same commit
// recorded is an error, and nothing is written), then writes the run
// whole or not at all.
func (s *Store) Add(ctx context.Context, req AddRequest) (*Run, error) {
	if err := CheckRunner(req.Runner); err != nil {
		return nil, fmt.Errorf("add: %w", err)
	}
	if err := CheckCommit(req.Commit); err != nil {
		return nil, fmt.Errorf("add: %w", err)
	}
	if req.CommitTime.IsZero() {
		return nil, fmt.Errorf("add: commit %s: no commit time", req.Commit)
	}
	if len(req.Files) == 0 {
		return nil, errors.New("add: no files: give the run's benchfmt file (and its result and gate JSON)")
	}
	if len(req.Files) > MaxFiles {
		return nil, fmt.Errorf("add: %d files; one run takes at most %d", len(req.Files), MaxFiles)
	}
	now := req.Now
	if now.IsZero() {
		now = time.Now()
	}
	m := Manifest{Layout: Layout, Commit: req.Commit, CommitTime: req.CommitTime.UTC(), Runner: req.Runner,
		Version: req.Version, Added: now.UTC(), Benchmarks: map[string]Benchmark{}}
	// Sizes first, so that an add too big is refused before any is read.
	var total int64
	for _, path := range req.Files {
		if st, err := os.Stat(path); err == nil {
			total += st.Size()
		}
	}
	if total > MaxRunBytes {
		return nil, fmt.Errorf("add: %s: %d bytes in all, over %d, the most one run may hold", strings.Join(req.Files, ", "), total, int64(MaxRunBytes))
	}
	total = 0
	for _, path := range req.Files {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("add: %w", err)
		}
		f, err := checkRunFile(path, m.Benchmarks)
		if err != nil {
			return nil, fmt.Errorf("add: %w", err)
		}
		if slices.ContainsFunc(m.Files, func(g File) bool { return g.Name == f.Name }) {
			return nil, fmt.Errorf("add: two files named %s: a run keeps files under their base names", f.Name)
		}
		if total += f.Bytes; total > MaxRunBytes {
			return nil, fmt.Errorf("add: %s: the run's files hold over %d bytes, the most one run may hold", path, int64(MaxRunBytes))
		}
		m.Files = append(m.Files, f)
	}
	if len(m.Benchmarks) == 0 {
		return nil, fmt.Errorf("add: %s: no benchmark result line in any benchfmt file, so the run holds nothing to chart or gate", strings.Join(req.Files, ", "))
	}
	unlock, err := s.lock(false)
	if err != nil {
		return nil, fmt.Errorf("add: %w", err)
	}
	defer unlock()
	commitDir := filepath.Join(s.Dir, req.Runner, req.Commit)
	if err := os.MkdirAll(commitDir, 0o755); err != nil {
		return nil, fmt.Errorf("add: %w", err)
	}
	// Adds share the store's lock, so the check against the commit's
	// other runs and this run's rename hold the commit's own lock alone:
	// otherwise two adds that disagree both pass the check and both land.
	unlockCommit, err := lockDir(commitDir, true)
	if err != nil {
		return nil, fmt.Errorf("add: %w", err)
	}
	defer unlockCommit()
	if err := s.checkSameCommit(commitDir, &m); err != nil {
		return nil, fmt.Errorf("add: %w", err)
	}
	tmp, err := os.MkdirTemp(commitDir, addPrefix)
	if err != nil {
		return nil, fmt.Errorf("add: %w", err)
	}
	defer os.RemoveAll(tmp) // a no-op once renamed
	for i, f := range m.Files {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("add: %w", err)
		}
		if err := copyRunFile(req.Files[i], filepath.Join(tmp, f.Name), f); err != nil {
			return nil, fmt.Errorf("add: %w", err)
		}
	}
	mdata, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("add: %w", err)
	}
	if len(mdata)+1 > MaxManifestBytes {
		return nil, fmt.Errorf("add: the run's manifest would be %d bytes, over %d, the most a reader reads: %d benchmarks in the run", len(mdata)+1, MaxManifestBytes, len(m.Benchmarks))
	}
	if err := writeSynced(filepath.Join(tmp, manifestFile), append(mdata, '\n')); err != nil {
		return nil, fmt.Errorf("add: %w", err)
	}
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	final := filepath.Join(commitDir, now.UTC().Format("20060102T150405.000000000Z")+"-"+hex.EncodeToString(rnd[:]))
	if err := os.Rename(tmp, final); err != nil {
		return nil, fmt.Errorf("add: %w", err)
	}
	if d, err := os.Open(commitDir); err == nil {
		_ = d.Sync() // the rename itself survives a crash
		d.Close()
	}
	return &Run{Dir: final, Manifest: m}, nil
}

// checkSameCommit refuses a run whose commit time or scenario hashes
// differ from those another run of the same commit recorded.
func (s *Store) checkSameCommit(commitDir string, m *Manifest) error {
	runs, err := readCommit(commitDir, m.Runner, m.Commit, false)
	if err != nil {
		return err
	}
	for _, r := range runs {
		if !r.Manifest.CommitTime.Equal(m.CommitTime) {
			return fmt.Errorf("commit %s: commit time %s, but run %s recorded %s", m.Commit,
				m.CommitTime.Format(time.RFC3339), r.Dir, r.Manifest.CommitTime.Format(time.RFC3339))
		}
		for name, b := range m.Benchmarks {
			if o, ok := r.Manifest.Benchmarks[name]; ok && o.ScenarioSHA != b.ScenarioSHA {
				return fmt.Errorf("commit %s: %s has scenario-sha %s, but run %s of the same commit has %s: one commit runs one version of a scenario",
					m.Commit, name, short(b.ScenarioSHA), r.Dir, short(o.ScenarioSHA))
			}
		}
	}
	return nil
}

func short(sha string) string {
	if sha == "" {
		return "(none)"
	}
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

func writeSynced(name string, data []byte) error {
	f, err := os.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// checkRunFile reads one file of an add through, checks it by its kind
// and adds what a benchfmt file reports to benchmarks. It returns the
// file's size and SHA-256. It streams the file: memory does not grow with
// its size.
func checkRunFile(path string, benchmarks map[string]Benchmark) (File, error) {
	f := File{Name: filepath.Base(path)}
	// A reader refuses these names (checkFile): filing one would make
	// every later read of the runner type fail.
	if strings.HasPrefix(f.Name, ".") || f.Name == manifestFile {
		return f, fmt.Errorf("%s: a run cannot hold a file named %q (a dot file, or the run's own %s): rename it", path, f.Name, manifestFile)
	}
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".benchfmt", ".txt", ".bench":
		f.Kind = KindBenchfmt
	case ".json":
		f.Kind = KindResult
	default:
		return f, fmt.Errorf("%s: unknown kind of file %q: a run holds benchfmt files (.benchfmt, .txt, .bench) and JSON files (result, gate report)", path, ext)
	}
	fh, err := os.Open(path)
	if err != nil {
		return f, err
	}
	defer fh.Close()
	h := &hashCounter{h: sha256.New()}
	r := io.TeeReader(io.LimitReader(fh, MaxFileBytes+1), h)
	var perr error
	if f.Kind == KindBenchfmt {
		perr = scanBenchfmt(path, r, benchmarks)
	} else {
		var gate bool
		if gate, perr = scanJSONObject(r); perr != nil {
			perr = fmt.Errorf("%s: not a JSON object: %w", path, perr)
		} else if gate {
			f.Kind = KindGate
		}
	}
	if _, err := io.Copy(io.Discard, r); err != nil {
		return f, fmt.Errorf("%s: %w", path, err)
	}
	if h.n > MaxFileBytes {
		return f, fmt.Errorf("%s: larger than %d bytes, the most one file of a run may hold", path, MaxFileBytes)
	}
	if perr != nil {
		return f, perr
	}
	f.Bytes = h.n
	f.SHA256 = hex.EncodeToString(h.h.Sum(nil))
	return f, nil
}

// A hashCounter hashes and counts what is written to it.
type hashCounter struct {
	h hash.Hash
	n int64
}

func (c *hashCounter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return c.h.Write(p)
}

// scanJSONObject reads one JSON object, and nothing after it but white
// space, holding one element of a top-level list or object in memory at a
// time: a result's lists of per-request numbers never whole. It reports
// whether the object is a gate's report: one with "verdict" and
// "comparisons" at its top.
func scanJSONObject(r io.Reader) (gate bool, err error) {
	dec := json.NewDecoder(r)
	if t, err := dec.Token(); err != nil {
		return false, err
	} else if t != json.Delim('{') {
		return false, fmt.Errorf("the file starts with %v", t)
	}
	var verdict, comparisons bool
	var raw json.RawMessage // reused: Decode appends to raw[:0]
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return false, err
		}
		switch key {
		case "verdict":
			verdict = true
		case "comparisons":
			comparisons = true
		}
		t, err := dec.Token()
		if err != nil {
			return false, err
		}
		if t != json.Delim('{') && t != json.Delim('[') {
			continue
		}
		for dec.More() {
			if t == json.Delim('{') {
				if _, err := dec.Token(); err != nil {
					return false, err
				}
			}
			if err := dec.Decode(&raw); err != nil {
				return false, err
			}
		}
		if _, err := dec.Token(); err != nil {
			return false, err
		}
	}
	if _, err := dec.Token(); err != nil {
		return false, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return false, errors.New("data after the object")
	}
	return verdict && comparisons, nil
}

// copyRunFile copies a file of an add into the run, synced, and checks
// that it is still the file checkRunFile read: its size and SHA-256.
func copyRunFile(src, dst string, want File) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	h := &hashCounter{h: sha256.New()}
	_, err = io.Copy(io.MultiWriter(out, h), io.LimitReader(in, MaxFileBytes+1))
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%s: %w", src, err)
	}
	if h.n != want.Bytes || hex.EncodeToString(h.h.Sum(nil)) != want.SHA256 {
		return fmt.Errorf("%s: changed while it was being added: add it again", src)
	}
	return nil
}

// scenarioKey is the benchfmt file configuration key of a scenario's
// version, as internal/pipeline writes it.
const scenarioKey = "scenario-sha"

// scanBenchfmt reads a benchfmt file's result lines into benchmarks.
func scanBenchfmt(path string, r io.Reader, benchmarks map[string]Benchmark) error {
	rd := benchfmt.NewReader(r, path)
	for rd.Scan() {
		switch rec := rd.Result().(type) {
		case *benchfmt.SyntaxError:
			return rec
		case *benchfmt.Result:
			name := string(rec.Name.Full())
			sha := string(rec.GetConfig(scenarioKey))
			b, seen := benchmarks[name]
			if seen && b.ScenarioSHA != sha {
				file, line := rec.Pos()
				return fmt.Errorf("%s:%d: %s: scenario-sha %s, but an earlier line has %s: one run runs one version of a scenario", file, line, name, short(sha), short(b.ScenarioSHA))
			}
			b.ScenarioSHA = sha
			if LineRefusal(rec) != "" {
				b.Refused++
			} else {
				b.Valid++
			}
			benchmarks[name] = b
		}
	}
	if err := rd.Err(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
