package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/servegate/servegate/internal/stats"
)

// Figures are the per-scenario figures the twin predicts: the
// keys of vLLM's result JSON, read the same way from a measured run and
// from a prediction.
var Figures = []string{"median_ttft_ms", "p90_ttft_ms", "median_tpot_ms", "output_throughput"}

// errInvalid marks a comparison that cannot be made (a file or a figure
// missing): the check says so and exits 2 rather than passing or failing.
var errInvalid = errors.New("invalid comparison")

// Row is one figure of one scenario: predicted, measured and the relative
// error (predicted − measured) / measured.
type Row struct {
	Scenario  string
	Figure    string
	Predicted float64
	Measured  float64
}

// Err is the signed relative error of the prediction, (p − m) / m; NaN
// when the measurement is 0.
func (r Row) Err() float64 {
	if r.Measured == 0 {
		return math.NaN()
	}
	return (r.Predicted - r.Measured) / r.Measured
}

// Verdict is the comparison of a held-out set: every row, the median
// absolute error of each figure across the scenarios, and the capacity.
type Verdict struct {
	Rows []Row
	// MedianAbsErr maps a figure to the median of |error| over the
	// held-out scenarios.
	MedianAbsErr map[string]float64
	// Capacity is the capacity row (req/s); nil when none was compared.
	Capacity *Row
	// Tolerance is the goal on each median error and on the capacity
	// error, a fraction (0.10 = 10%).
	Tolerance float64
}

// Met reports whether every figure's median |error| and the capacity's
// |error| are within the tolerance.
func (v *Verdict) Met() bool {
	for _, f := range Figures {
		if !(v.MedianAbsErr[f] <= v.Tolerance) {
			return false
		}
	}
	return v.Capacity == nil || math.Abs(v.Capacity.Err()) <= v.Tolerance
}

// readResult reads one result JSON file into its top-level keys.
func readResult(path string) (map[string]any, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errInvalid, err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", errInvalid, path, err)
	}
	return m, nil
}

// number is key's value in m as a finite number.
func number(m map[string]any, path, key string) (float64, error) {
	v, ok := m[key].(float64)
	if !ok || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%w: %s: %s missing or not a number", errInvalid, path, key)
	}
	return v, nil
}

// capacityRate is the capacity a search file states: capacity.crossing_rate
// (where the straight line between the margins of the last passing and
// the first failing step crosses zero) when present, else
// max_goodput_rate (the highest passing rate, which moves in jumps of the
// search bracket).
func capacityRate(m map[string]any, path string) (float64, string, error) {
	if c, ok := m["capacity"].(map[string]any); ok {
		if v, ok := c["crossing_rate"].(float64); ok && v > 0 {
			return v, "crossing_rate", nil
		}
	}
	v, err := number(m, path, "max_goodput_rate")
	return v, "max_goodput_rate", err
}

// latest returns the measured result of name in dir: the highest-numbered
// <name>.test.<n>.json (the last run of a go test process).
func latest(dir, name string) (string, error) {
	files, err := filepath.Glob(filepath.Join(dir, name+".test.*.json"))
	if err != nil || len(files) == 0 {
		return "", fmt.Errorf("%w: no measured result %s.test.<n>.json in %s", errInvalid, name, dir)
	}
	n := func(f string) int {
		s := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), name+".test."), ".json")
		i, _ := strconv.Atoi(s)
		return i
	}
	sort.Slice(files, func(i, j int) bool { return n(files[i]) < n(files[j]) })
	return files[len(files)-1], nil
}

// measuredFigure is key of scenario name as measured: in each directory
// of dirs the newest result, and across the directories their median (a
// scenario repeated in N separate checks is compared with the median of
// its N measurements, which the run-to-run spread of a shared machine
// would otherwise dominate). read extracts the figure from one file.
func measuredFigure(dirs []string, name string, read func(m map[string]any, path string) (float64, error)) (float64, error) {
	var files []string
	for _, d := range dirs {
		mp, err := latest(d, name)
		if err != nil {
			return 0, err
		}
		files = append(files, mp)
	}
	return medianOf(files, read)
}

// medianOf is the median of the figure read from each file.
func medianOf(files []string, read func(m map[string]any, path string) (float64, error)) (float64, error) {
	var vs []float64
	for _, f := range files {
		m, err := readResult(f)
		if err != nil {
			return 0, err
		}
		v, err := read(m, f)
		if err != nil {
			return 0, err
		}
		vs = append(vs, v)
	}
	return stats.Median(vs), nil
}

// Compare reads the measured results in each directory of measured
// (<name>.test.<n>.json, as SERVEGATE_OUT holds them; with several
// directories each figure is their median) and the predictions in
// predicted (<name>.json) of each scenario, and of the capacity search
// when capacity is not empty.
func Compare(measured []string, predicted string, scenarios []string, capacity string, tol float64) (*Verdict, error) {
	pred := func(name string) ([]string, error) { return []string{filepath.Join(predicted, name+".json")}, nil }
	return compare(measured, pred, scenarios, capacity, tol)
}

// compare is Compare with the predictions' files given by pred: each
// figure predicted is the median of the figure over pred's files.
func compare(measured []string, pred func(name string) ([]string, error), scenarios []string, capacity string, tol float64) (*Verdict, error) {
	if len(measured) == 0 {
		return nil, fmt.Errorf("%w: no measured directory", errInvalid)
	}
	if len(scenarios) == 0 {
		return nil, fmt.Errorf("%w: no held-out scenario", errInvalid)
	}
	v := &Verdict{MedianAbsErr: map[string]float64{}, Tolerance: tol}
	abs := map[string][]float64{}
	for _, name := range scenarios {
		pf, err := pred(name)
		if err != nil {
			return nil, err
		}
		for _, f := range Figures {
			read := func(m map[string]any, path string) (float64, error) { return number(m, path, f) }
			mv, err := measuredFigure(measured, name, read)
			if err != nil {
				return nil, err
			}
			pv, err := medianOf(pf, read)
			if err != nil {
				return nil, err
			}
			r := Row{Scenario: name, Figure: f, Predicted: pv, Measured: mv}
			if math.IsNaN(r.Err()) {
				return nil, fmt.Errorf("%w: %s: %s measured 0", errInvalid, name, f)
			}
			v.Rows = append(v.Rows, r)
			abs[f] = append(abs[f], math.Abs(r.Err()))
		}
	}
	for f, a := range abs {
		v.MedianAbsErr[f] = stats.Median(a)
	}
	if capacity != "" {
		pf, err := pred(capacity)
		if err != nil {
			return nil, err
		}
		// The crossing on both sides when every file has one, else the
		// highest passing rate on both: like is compared with like.
		files := append([]string(nil), pf...)
		for _, d := range measured {
			mp, err := latest(d, capacity)
			if err != nil {
				return nil, err
			}
			files = append(files, mp)
		}
		key := "crossing_rate"
		for _, f := range files {
			m, err := readResult(f)
			if err != nil {
				return nil, err
			}
			if _, k, _ := capacityRate(m, f); k != "crossing_rate" {
				key = "max_goodput_rate"
			}
		}
		read := func(m map[string]any, path string) (float64, error) {
			if key == "max_goodput_rate" {
				return number(m, path, key)
			}
			v, _, err := capacityRate(m, path)
			return v, err
		}
		mv, err := measuredFigure(measured, capacity, read)
		if err != nil {
			return nil, err
		}
		pv, err := medianOf(pf, read)
		if err != nil {
			return nil, err
		}
		if mv == 0 {
			return nil, fmt.Errorf("%w: %s: no rate passed on the real server", errInvalid, capacity)
		}
		v.Capacity = &Row{Scenario: capacity, Figure: "capacity_" + key, Predicted: pv, Measured: mv}
	}
	return v, nil
}

// Repeatability is the floor under any twin's error on one machine: each
// session (a directory of measurements of the same scenarios, one server
// start) compared with the best prediction there is without a model, the
// median of the other sessions' measurements of the same scenario with
// the same seed.
type Repeatability struct {
	Sessions []string
	Verdicts []*Verdict // one per session, in order
	// Cross marks the table of Cross rather than Repeat: each session's
	// own twin against the other sessions.
	Cross bool
}

// Repeat compares each of the measured directories (at least 3) with the
// median of the others.
func Repeat(measured []string, scenarios []string, capacity string, tol float64) (*Repeatability, error) {
	if len(measured) < 3 {
		return nil, fmt.Errorf("%w: -repeat needs at least 3 measured directories (sessions), got %d", errInvalid, len(measured))
	}
	out := &Repeatability{Sessions: measured}
	for j, d := range measured {
		others := append(append([]string(nil), measured[:j]...), measured[j+1:]...)
		pred := func(name string) ([]string, error) {
			var files []string
			for _, o := range others {
				f, err := latest(o, name)
				if err != nil {
					return nil, err
				}
				files = append(files, f)
			}
			return files, nil
		}
		v, err := compare([]string{d}, pred, scenarios, capacity, tol)
		if err != nil {
			return nil, err
		}
		out.Verdicts = append(out.Verdicts, v)
	}
	return out, nil
}

// Cross compares the twin calibrated from each session with the median
// of the other sessions' measurements: predicted[j] holds the
// predictions (<name>.json) of the twin fitted to measured[j]'s
// calibration runs. It is the error a team should expect of a twin
// calibrated once and used on runs it never saw, made on other days:
// one session's fit can be a lucky draw (or an unlucky one), which a
// check against its own session cannot tell. At least 3 sessions.
func Cross(measured, predicted []string, scenarios []string, capacity string, tol float64) (*Repeatability, error) {
	if len(measured) < 3 {
		return nil, fmt.Errorf("%w: -cross needs at least 3 measured directories (sessions), got %d", errInvalid, len(measured))
	}
	if len(predicted) != len(measured) {
		return nil, fmt.Errorf("%w: -cross needs one -predicted directory per -measured one (the twin fitted to that session), got %d for %d", errInvalid, len(predicted), len(measured))
	}
	out := &Repeatability{Sessions: measured, Cross: true}
	for j := range measured {
		others := append(append([]string(nil), measured[:j]...), measured[j+1:]...)
		v, err := Compare(others, predicted[j], scenarios, capacity, tol)
		if err != nil {
			return nil, err
		}
		out.Verdicts = append(out.Verdicts, v)
	}
	return out, nil
}

// Write prints, per session and figure, the median |error| against the
// median of the other sessions (of the median of the others' measurements
// for Repeat, of the session's own twin for Cross), and the median over
// the sessions.
func (r *Repeatability) Write(w io.Writer) {
	cols := r.Columns()
	if r.Cross {
		fmt.Fprintf(w, "Across sessions: the twin calibrated from each session's calibration runs against the median of the other %d sessions' held-out runs:\n", len(r.Sessions)-1)
		fmt.Fprintf(w, "the median |error| over the held-out set to expect of a twin calibrated once and used on later runs.\n\n")
	} else {
		fmt.Fprintf(w, "Repeatability: each session against the median of the other %d (same scenarios, same seeds, another server start):\n", len(r.Sessions)-1)
		fmt.Fprintf(w, "the median |error| over the held-out set of a twin that predicted every figure perfectly up to the server's own spread.\n\n")
	}
	fmt.Fprintf(w, "| session | %s |\n|---%s|\n", strings.Join(cols, " | "), strings.Repeat("|---:", len(cols)))
	for j, v := range r.Verdicts {
		fmt.Fprintf(w, "| %s |", r.Sessions[j])
		for _, c := range cols {
			fmt.Fprintf(w, " %.1f%% |", 100*v.absErr(c))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprint(w, "| median over sessions |")
	for _, c := range cols {
		fmt.Fprintf(w, " %.1f%% |", 100*r.Median(c))
	}
	fmt.Fprintln(w)
}

// absErr is the verdict's median |error| of figure f over the held-out
// set, or the capacity's |error| when f is a capacity figure
// (capacity_crossing_rate or capacity_max_goodput_rate: each session's
// file says which it has).
func (v *Verdict) absErr(f string) float64 {
	if v.Capacity != nil && strings.HasPrefix(f, "capacity_") {
		return math.Abs(v.Capacity.Err())
	}
	return v.MedianAbsErr[f]
}

// Columns are the table's figures: Figures, and the capacity's when the
// sessions compared one.
func (r *Repeatability) Columns() []string {
	cols := append([]string(nil), Figures...)
	if r.Verdicts[0].Capacity != nil {
		cols = append(cols, r.Verdicts[0].Capacity.Figure)
	}
	return cols
}

// Median is the median over the sessions of figure f's error (a key of
// Figures, or the capacity's figure): the table's last row.
func (r *Repeatability) Median(f string) float64 {
	var per []float64
	for _, v := range r.Verdicts {
		per = append(per, v.absErr(f))
	}
	return stats.Median(per)
}

// Write prints the verdict as Markdown: the table figure × scenario, the
// median errors against the goal, and the verdict line.
func (v *Verdict) Write(w io.Writer) {
	fmt.Fprintln(w, "| scenario | figure | predicted | measured | error |")
	fmt.Fprintln(w, "| --- | --- | ---: | ---: | ---: |")
	for _, r := range v.Rows {
		fmt.Fprintf(w, "| %s | %s | %.4g | %.4g | %+.1f%% |\n", r.Scenario, r.Figure, r.Predicted, r.Measured, 100*r.Err())
	}
	if c := v.Capacity; c != nil {
		fmt.Fprintf(w, "| %s | %s (req/s) | %.4g | %.4g | %+.1f%% |\n", c.Scenario, c.Figure, c.Predicted, c.Measured, 100*c.Err())
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "| figure | median \\|error\\| over the held-out set | goal |\n| --- | ---: | --- |\n")
	for _, f := range Figures {
		e := v.MedianAbsErr[f]
		fmt.Fprintf(w, "| %s | %.1f%% | %s |\n", f, 100*e, okWord(e <= v.Tolerance, v.Tolerance))
	}
	if c := v.Capacity; c != nil {
		e := math.Abs(c.Err())
		fmt.Fprintf(w, "| %s | %.1f%% | %s |\n", c.Figure, 100*e, okWord(e <= v.Tolerance, v.Tolerance))
	}
	fmt.Fprintln(w)
	if v.Met() {
		fmt.Fprintf(w, "twin check: goal MET (every median error and the capacity error within %.0f%%)\n", 100*v.Tolerance)
	} else {
		fmt.Fprintf(w, "twin check: goal MISSED (a median error or the capacity error above %.0f%%)\n", 100*v.Tolerance)
	}
}

func okWord(ok bool, tol float64) string {
	if ok {
		return fmt.Sprintf("≤ %.0f%%: met", 100*tol)
	}
	return fmt.Sprintf("≤ %.0f%%: MISSED", 100*tol)
}
