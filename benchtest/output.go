package benchtest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/servegate/servegate/benchtest/scenario"
	"github.com/servegate/servegate/internal/pipeline"
	"github.com/servegate/servegate/internal/report"
)

// Output files, under the output directory (SERVEGATE_OUT, default
// $TMPDIR/servegate):
//
//	<scenario>.<mode>.<n>.json  vLLM's result JSON with per-request detail,
//	                            one per run (mode test or bench, n from 1)
//	test.benchfmt               every Run of the process, benchstat format
//	bench.benchfmt              every Bench iteration of the process
//	bench-base.benchfmt         in paired mode (SERVEGATE_PAIRED_BASE), the
//	                            base side's runs; bench.benchfmt holds head's
//	<scenario>.pair.json        in paired mode, what the pair left for
//	                            the comparison (pipeline.PairRecord)
//	slo.md                      the SLO table of every Run, Markdown
//
// The benchfmt and Markdown files are truncated by the first write of a
// process and appended to after, so one `go test` invocation leaves one
// file of each.
const (
	testBenchfmt  = "test.benchfmt"
	benchBenchfmt = "bench.benchfmt"
	baseBenchfmt  = "bench-base.benchfmt"
	sloMarkdown   = "slo.md"
)

// OutDir returns the directory results are written to: SERVEGATE_OUT, or
// servegate under the system's temporary directory.
func OutDir() string {
	if d := os.Getenv(scenario.EnvOut); d != "" {
		return d
	}
	return filepath.Join(os.TempDir(), "servegate")
}

// outputs are the files of this process, opened on first use.
type outputs struct {
	mu     sync.Mutex
	dir    string
	files  map[string]*os.File
	bfw    map[string]*report.BenchfmtWriter
	counts map[string]int
}

var out = &outputs{}

func (o *outputs) init() error {
	if o.files != nil {
		return nil
	}
	o.dir = OutDir()
	if err := os.MkdirAll(o.dir, 0o755); err != nil {
		return fmt.Errorf("output directory: %w", err)
	}
	o.files = map[string]*os.File{}
	o.bfw = map[string]*report.BenchfmtWriter{}
	o.counts = map[string]int{}
	return nil
}

// file returns the process's file name under the output directory,
// truncating it on first use.
func (o *outputs) file(name string) (*os.File, error) {
	if f, ok := o.files[name]; ok {
		return f, nil
	}
	f, err := os.Create(filepath.Join(o.dir, name))
	if err != nil {
		return nil, fmt.Errorf("output file: %w", err)
	}
	o.files[name] = f
	return f, nil
}

// writeResult writes the result JSON of one run and returns its path.
func (o *outputs) writeResult(name, mode string, data []byte) (string, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := o.init(); err != nil {
		return "", err
	}
	k := name + "." + mode
	o.counts[k]++
	path := filepath.Join(o.dir, fmt.Sprintf("%s.%d.json", k, o.counts[k]))
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return "", fmt.Errorf("write result: %w", err)
	}
	return path, nil
}

// writeRecord writes a paired run's record as <scenario>.pair.json.
func (o *outputs) writeRecord(rec *pipeline.PairRecord) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := o.init(); err != nil {
		return err
	}
	data, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return fmt.Errorf("pair record: %w", err)
	}
	if err := os.WriteFile(filepath.Join(o.dir, rec.Scenario+".pair.json"), append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("pair record: %w", err)
	}
	return nil
}

// writeBenchfmt appends one result line to the mode's benchfmt file and
// returns the file's path.
func (o *outputs) writeBenchfmt(file, name string, cfg []report.BenchConfig, ms []report.BenchMetric) (string, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := o.init(); err != nil {
		return "", err
	}
	f, err := o.file(file)
	if err != nil {
		return "", err
	}
	w, ok := o.bfw[file]
	if !ok {
		w = report.NewBenchfmtWriter(f)
		o.bfw[file] = w
	}
	return f.Name(), w.WriteBenchfmtResult(name, 1, cfg, ms)
}

// appendText appends text to a process file.
func (o *outputs) appendText(file, text string) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := o.init(); err != nil {
		return err
	}
	f, err := o.file(file)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(text); err != nil {
		return fmt.Errorf("write %s: %w", file, err)
	}
	return nil
}

// benchName turns a test or benchmark name into the benchfmt name that
// `go test -bench` prints for it, without "Benchmark": the Test or
// Benchmark prefix dropped and -GOMAXPROCS added when it is not 1, so that
// Run and Bench results of a scenario compare under benchstat.
func benchName(full string) string {
	n := full
	for _, p := range []string{"Benchmark", "Test"} {
		if s, ok := strings.CutPrefix(n, p); ok {
			n = s
			break
		}
	}
	n = strings.Map(func(r rune) rune {
		if r == ' ' || r == '\t' {
			return '_'
		}
		return r
	}, n)
	if procs := runtime.GOMAXPROCS(0); procs != 1 {
		n = fmt.Sprintf("%s-%d", n, procs)
	}
	return n
}
