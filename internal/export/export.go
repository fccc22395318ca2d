// Package export writes a results store's figures in other tools'
// formats: Bencher Metric Format JSON (one commit, for "bencher run
// --adapter json") and the CSV that Apache Otava's csv data source reads
// (one runner type's history).
//
// Both read every unit of every benchmark, not only the gated ones, and
// leave out result lines marked interrupted or invalid.
package export

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/servegate/servegate/internal/stats"
	"github.com/servegate/servegate/internal/store"
)

// A Point is one commit's results: for each benchmark and unit, the
// values of its valid result lines.
type Point struct {
	Commit string
	Time   time.Time
	Values map[string]map[string][]float64 // benchmark → unit → values
	// SHA is each benchmark's scenario-sha.
	SHA map[string]string
}

// Load reads one runner type's commits from the store, oldest first.
// With runner "" the store must hold one runner type.
func Load(st *store.Store, runner string) ([]Point, []string, error) {
	if runner == "" {
		runners, err := st.Runners()
		if err != nil {
			return nil, nil, fmt.Errorf("export: %w", err)
		}
		if len(runners) > 1 {
			return nil, nil, fmt.Errorf("export: %s holds %d runner types (%s): pick one with --runner", st.Dir, len(runners), strings.Join(runners, ", "))
		}
		runner = runners[0]
	}
	defer st.ReadLock()() // no prune removes a commit while its files are read
	commits, notes, err := st.Commits(runner)
	if err != nil {
		return nil, nil, fmt.Errorf("export: %w", err)
	}
	var out []Point
	for _, c := range commits {
		p := Point{Commit: c.ID, Time: c.Time, Values: map[string]map[string][]float64{}, SHA: map[string]string{}}
		rd := benchfmt.Files{Paths: c.FilesOf(store.KindBenchfmt)}
		for rd.Scan() {
			switch rec := rd.Result().(type) {
			case *benchfmt.SyntaxError:
				return nil, nil, fmt.Errorf("export: %v", rec)
			case *benchfmt.Result:
				if store.LineRefusal(rec) != "" {
					continue
				}
				bench := string(rec.Name.Full())
				p.SHA[bench] = string(rec.GetConfig("scenario-sha"))
				if p.Values[bench] == nil {
					p.Values[bench] = map[string][]float64{}
				}
				for _, v := range rec.Values {
					if !math.IsNaN(v.Value) && !math.IsInf(v.Value, 0) {
						p.Values[bench][v.Unit] = append(p.Values[bench][v.Unit], v.Value)
					}
				}
			}
		}
		if err := rd.Err(); err != nil {
			return nil, nil, fmt.Errorf("export: %w", err)
		}
		if len(p.Values) == 0 {
			notes = append(notes, fmt.Sprintf("commit %s: no valid result line, left out", c.ID))
			continue
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil, notes, fmt.Errorf("export: runner %s of %s has no commit with a valid result", runner, st.Dir)
	}
	return out, notes, nil
}

// A Metric is one BMF measure: the median of the commit's runs and the
// smallest and largest run.
type Metric struct {
	Value      float64 `json:"value"`
	LowerValue float64 `json:"lower_value"`
	UpperValue float64 `json:"upper_value"`
}

// BMF returns a commit's figures in Bencher Metric Format: benchmark
// name → measure (the benchfmt unit) → metric. The schema
// (https://bencher.dev/docs/reference/bencher-metric-format) requires
// value and allows lower_value and upper_value.
func BMF(p Point) map[string]map[string]Metric {
	out := map[string]map[string]Metric{}
	for bench, units := range p.Values {
		for unit, vs := range units {
			if out[bench] == nil {
				out[bench] = map[string]Metric{}
			}
			out[bench][unit] = Metric{Value: stats.Median(vs), LowerValue: slices.Min(vs), UpperValue: slices.Max(vs)}
		}
	}
	return out
}

// WriteBMF writes a commit's figures as BMF JSON (keys sorted).
func WriteBMF(w io.Writer, p Point) error {
	data, err := json.MarshalIndent(BMF(p), "", "  ")
	if err != nil {
		return fmt.Errorf("write bmf: %w", err)
	}
	_, err = w.Write(append(data, '\n'))
	return err
}

// WriteCSV writes a history as the CSV Otava's csv data source reads: a
// header "time,commit,<metric>..." and one row per commit, oldest first,
// with the time as "2006-01-02 15:04:05 +0000" and each metric the
// median of the commit's runs. A metric column is "<scenario>.<unit>"
// (the benchmark's scenario= part, else its name; the full name when
// two benchmarks share the scenario), one per benchmark
// and unit the newest commit reports; with benchmark set, only that
// benchmark's, named by unit alone. Otava needs a number in every cell,
// so a commit missing a column, or one that ran another version of a
// benchmark's scenario than the newest commit, is left out with a note.
// A name or commit that a spreadsheet would read as a formula (it starts
// with =, +, -, @, a tab or a carriage return) is written after a
// single quote, as OWASP advises against CSV injection; the figures,
// which servegate writes, are left as they are.
// It returns the metric columns (as written) and the notes.
func WriteCSV(w io.Writer, pts []Point, benchmark string) ([]string, []string, error) {
	newest := pts[len(pts)-1]
	type col struct{ bench, unit, name string }
	var cols []col
	for _, bench := range slices.Sorted(maps.Keys(newest.Values)) {
		if benchmark != "" && bench != benchmark {
			continue
		}
		for _, unit := range slices.Sorted(maps.Keys(newest.Values[bench])) {
			name := scenario(bench) + "." + unit
			if benchmark != "" {
				name = unit
			}
			cols = append(cols, col{bench, unit, name})
		}
	}
	// Two benchmarks of one scenario (Scenarios/scenario=x and
	// Capacity/scenario=x) would share a column name, and Otava keys
	// metrics by name: such columns are named by the full benchmark name.
	count := map[string]int{}
	for _, c := range cols {
		count[c.name]++
	}
	for i, c := range cols {
		if count[c.name] > 1 {
			cols[i].name = c.bench + "." + c.unit
		}
	}
	if len(cols) == 0 {
		return nil, nil, fmt.Errorf("export: the newest commit %s has no benchmark %q (it has %s)", newest.Commit, benchmark, strings.Join(slices.Sorted(maps.Keys(newest.Values)), ", "))
	}
	cw := csv.NewWriter(w)
	header := []string{"time", "commit"}
	var names []string
	for _, c := range cols {
		header = append(header, cellSafe(c.name))
		names = append(names, cellSafe(c.name))
	}
	if err := cw.Write(header); err != nil {
		return nil, nil, fmt.Errorf("write csv: %w", err)
	}
	var notes []string
	for _, p := range pts {
		row := []string{p.Time.UTC().Format("2006-01-02 15:04:05 -0700"), cellSafe(p.Commit)}
		why := ""
		for _, c := range cols {
			vs := p.Values[c.bench][c.unit]
			switch {
			case p.SHA[c.bench] != newest.SHA[c.bench] && len(vs) > 0:
				why = fmt.Sprintf("ran another version of %s", c.bench)
			case len(vs) == 0:
				why = fmt.Sprintf("has no %s of %s", c.unit, c.bench)
			}
			if why != "" {
				break
			}
			row = append(row, strconv.FormatFloat(stats.Median(vs), 'g', -1, 64))
		}
		if why != "" {
			notes = append(notes, fmt.Sprintf("commit %s %s: left out", p.Commit, why))
			continue
		}
		if err := cw.Write(row); err != nil {
			return nil, nil, fmt.Errorf("write csv: %w", err)
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return nil, nil, fmt.Errorf("write csv: %w", err)
	}
	return names, notes, nil
}

// cellSafe neutralises a text cell a spreadsheet would run as a formula.
func cellSafe(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}

// scenario is a benchmark's scenario= name part, else its name.
func scenario(bench string) string {
	for _, part := range strings.Split(bench, "/") {
		if v, ok := strings.CutPrefix(part, "scenario="); ok && v != "" {
			return v
		}
	}
	return bench
}
