package gate

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/perf/benchfmt"
	"golang.org/x/perf/benchproc"
)

// Side labels: the .file value every result of one side carries, so that
// benchstat's column projection (.file) yields exactly two columns.
const (
	sideBase = "base"
	sideHead = "head"
)

// benchExts are the file name extensions read from a directory input.
var benchExts = []string{".txt", ".bench", ".benchfmt"}

// expand turns each input (a file or a directory) into file paths: a
// directory contributes its *.txt, *.bench and *.benchfmt files in name
// order.
func expand(inputs []string) ([]string, error) {
	var files []string
	for _, in := range inputs {
		st, err := os.Stat(in)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			files = append(files, in)
			continue
		}
		ents, err := os.ReadDir(in)
		if err != nil {
			return nil, err
		}
		n := len(files)
		for _, e := range ents {
			for _, ext := range benchExts {
				if e.Type().IsRegular() && strings.HasSuffix(e.Name(), ext) && !strings.HasPrefix(e.Name(), ".") {
					files = append(files, filepath.Join(in, e.Name()))
					break
				}
			}
		}
		if len(files) == n {
			return nil, fmt.Errorf("%s: no %s files in directory", in, strings.Join(benchExts, ", "))
		}
	}
	if len(files) == 0 {
		return nil, errors.New("no input files")
	}
	return files, nil
}

// cellKey locates one sample: a table (file configuration and unit, as
// benchstat's -table .config) and a row (benchstat's -row .fullname).
type cellKey struct {
	table, row benchproc.Key
}

// cell holds the values of one benchmark and unit on each side.
type cell struct {
	base, head []float64
	// basePair and headPair are the pair labels (the pair: key) of
	// base's and head's values, index for index; read fills them only
	// in paired mode.
	basePair, headPair []string
	// residue keys seen in this cell; more than one means results that
	// differ in a hidden dimension were pooled (benchstat warns too).
	residue map[benchproc.Key]bool
}

// runKey locates the runs of one benchmark under one file configuration
// (a table key without its unit), to count the runs that report no value
// of a unit.
type runKey struct {
	config string
	row    benchproc.Key
}

// inputs is everything read from the two sides.
type inputs struct {
	cells    map[cellKey]*cell
	runs     map[runKey]*[2]int // result lines per side: [0] base, [1] head
	tables   []benchproc.Key    // sorted as benchstat sorts them
	rows     []benchproc.Key
	unit     *benchproc.Field
	units    benchfmt.UnitMetadataMap
	seen     map[string]bool // tidied units present in either side
	warnings []string        // syntax errors, conflicting metadata
	paired   bool            // gated rows are compared pair by pair
}

// read reads base and head the way benchstat reads "benchstat base head":
// results are projected into tables by .config and unit, rows by
// .fullname and columns by .file, after applying filter and ignoring the
// keys in ignore (benchstat's -filter and -ignore).
//
// In paired mode every result line must carry a pair: key (exit 2 naming
// file:line otherwise), and each value keeps its pair label.
func read(base, head []string, filter, ignore string, paired bool) (*inputs, error) {
	if filter == "" {
		filter = "*"
	}
	flt, err := benchproc.NewFilter(filter)
	if err != nil {
		return nil, fmt.Errorf("parse filter: %w", err)
	}
	var parser benchproc.ProjectionParser
	tableBy, unitField, err := parser.ParseWithUnit(".config", flt)
	if err != nil {
		return nil, err
	}
	rowBy, err := parser.Parse(".fullname", flt)
	if err != nil {
		return nil, err
	}
	if _, err := parser.Parse(".file", flt); err != nil {
		return nil, err
	}
	if _, err := parser.Parse(ignore, flt); err != nil {
		return nil, fmt.Errorf("parse ignore: %w", err)
	}
	// The run markers are verdicts on a run, not its configuration: the
	// lines they refuse never get here, and "interrupted: false" in head
	// matches a base that never wrote the key.
	if _, err := parser.Parse(markerKeys(ignore), flt); err != nil {
		return nil, fmt.Errorf("parse ignore: %w", err)
	}
	residueBy := parser.Residue()

	baseFiles, err := expand(base)
	if err != nil {
		return nil, fmt.Errorf("read base: %w", err)
	}
	headFiles, err := expand(head)
	if err != nil {
		return nil, fmt.Errorf("read head: %w", err)
	}
	var paths []string
	for _, f := range baseFiles {
		paths = append(paths, sideBase+"="+f)
	}
	for _, f := range headFiles {
		paths = append(paths, sideHead+"="+f)
	}

	in := &inputs{cells: map[cellKey]*cell{}, runs: map[runKey]*[2]int{}, unit: unitField, seen: map[string]bool{}}
	tables, rows := map[benchproc.Key]bool{}, map[benchproc.Key]bool{}
	count := map[string]int{}
	bad, refused, unpaired := rejects{why: badValues}, rejects{why: refusedRuns}, rejects{why: unpairedRuns}
	files := benchfmt.Files{Paths: paths, AllowLabels: true}
	for files.Scan() {
		switch rec := files.Result().(type) {
		case *benchfmt.SyntaxError:
			in.warnings = append(in.warnings, rec.Error())
		case *benchfmt.Result:
			// Bad numbers are refused wherever they are, filtered
			// out or not: nothing non-finite may reach the statistics.
			if msg := badValue(rec); msg != "" {
				bad.add(rec, msg)
				continue
			}
			ok, err := flt.Apply(rec)
			if !ok {
				if err != nil {
					in.warnings = append(in.warnings, err.Error())
				}
				continue
			}
			if msg := unusable(rec); msg != "" {
				refused.add(rec, msg)
				continue
			}
			pair := string(rec.GetConfig(pairKey))
			if paired && pair == "" {
				unpaired.add(rec, "no "+pairKey+": key")
				continue
			}
			side := string(rec.GetConfig(".file"))
			count[side]++
			rowKey := rowBy.Project(rec)
			residue := residueBy.Project(rec)
			rows[rowKey] = true
			for i, tk := range tableBy.ProjectValues(rec) {
				if i == 0 {
					in.countRun(tk, rowKey, side)
				}
				tables[tk] = true
				in.seen[rec.Values[i].Unit] = true
				k := cellKey{tk, rowKey}
				c := in.cells[k]
				if c == nil {
					c = &cell{residue: map[benchproc.Key]bool{}}
					in.cells[k] = c
				}
				c.residue[residue] = true
				if side == sideBase {
					c.base = append(c.base, rec.Values[i].Value)
				} else {
					c.head = append(c.head, rec.Values[i].Value)
				}
				if paired && side == sideBase {
					c.basePair = append(c.basePair, pair)
				} else if paired {
					c.headPair = append(c.headPair, pair)
				}
			}
		}
	}
	if err := files.Err(); err != nil {
		return nil, fmt.Errorf("read inputs: %w", err)
	}
	if err := errors.Join(bad.err(), refused.err(), unpaired.err()); err != nil {
		return nil, err
	}
	if count[sideBase] == 0 {
		return nil, fmt.Errorf("read base: %s: no benchmark results", strings.Join(baseFiles, ", "))
	}
	if count[sideHead] == 0 {
		return nil, fmt.Errorf("read head: %s: no benchmark results", strings.Join(headFiles, ", "))
	}
	in.units = files.Units()
	in.tables, in.rows = sortedKeys(tables), sortedKeys(rows)
	return in, nil
}

// countRun counts one result line of the benchmark row under the file
// configuration of table key tk.
func (in *inputs) countRun(tk, row benchproc.Key, side string) {
	k := runKey{configString(in.config(tk)), row}
	n := in.runs[k]
	if n == nil {
		n = new([2]int)
		in.runs[k] = n
	}
	if side == sideHead {
		n[1]++
	} else {
		n[0]++
	}
}

// runCount returns how many result lines of row under table key tk
// each side has, whatever units they report.
func (in *inputs) runCount(tk, row benchproc.Key) (base, head int) {
	if n := in.runs[runKey{configString(in.config(tk)), row}]; n != nil {
		return n[0], n[1]
	}
	return 0, 0
}

func configString(kv []KeyValue) string {
	var b strings.Builder
	for _, c := range kv {
		fmt.Fprintf(&b, "%s\x00%s\x00", c.Key, c.Value)
	}
	return b.String()
}

func sortedKeys(m map[benchproc.Key]bool) []benchproc.Key {
	keys := make([]benchproc.Key, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	benchproc.SortKeys(keys)
	return keys
}

// config returns the file configuration of a table key, without the unit.
func (in *inputs) config(table benchproc.Key) []KeyValue {
	var kv []KeyValue
	for _, f := range table.Projection().FlattenedFields() {
		if f == in.unit {
			continue
		}
		if v := table.Get(f); v != "" {
			kv = append(kv, KeyValue{Key: f.Name, Value: v})
		}
	}
	return kv
}

// configDiff describes how two table keys differ, for example
// `target: "sim" in base, "vllm" in head`, and returns the keys.
func (in *inputs) configDiff(base, head benchproc.Key) (string, []string) {
	var diffs, keys []string
	for _, f := range base.Projection().FlattenedFields() {
		if f == in.unit {
			continue
		}
		if b, h := base.Get(f), head.Get(f); b != h {
			diffs = append(diffs, fmt.Sprintf("%s: %q in base, %q in head", f.Name, b, h))
			keys = append(keys, f.Name)
		}
	}
	return strings.Join(diffs, "; "), keys
}

// A KeyValue is one file configuration entry ("target: sim").
type KeyValue struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}
