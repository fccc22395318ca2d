package gate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/servegate/servegate/internal/stats"
)

// Merging the gate reports of a sharded suite. Each CI shard job gates
// its own scenarios (base and head on one runner, so noise never crosses
// jobs) and writes -json; a final job merges the reports into one verdict,
// one Markdown report and one exit status:
//
//	servegate gate -merge -shards 3 -markdown gate.md shard-*/gate.json
//
// The merge fails closed: a shard report that is missing (fewer files than
// -shards), unreadable, not a gate report, in error, or inconsistent with
// its own rows makes the merged verdict an error (exit 2), never a pass.

// A ShardReport is one shard's gate report, as -json wrote it.
type ShardReport struct {
	// Name names the report (its file) in the merged errors.
	Name string
	// Data is the -json output.
	Data []byte
}

// MergeReports merges the reports of the shards of one suite; shards is
// the number of shard reports expected. The merged report has every row
// of every shard; its verdict is Error when any shard's is, when a
// report is missing, unreadable or inconsistent, or when two shards gated
// the same row; else Fail when any row failed; else Pass. With Holm on,
// the correction is applied again over the gated rows of all shards, the
// family the merged verdict speaks for.
func MergeReports(parts []ShardReport, shards int) *Report {
	m := &Report{}
	if shards < 1 {
		m.Errors = append(m.Errors, "merge: -merge needs -shards N, the number of shard reports expected: without it a missing shard cannot be told from a smaller suite")
	} else if len(parts) != shards {
		m.Errors = append(m.Errors, fmt.Sprintf("merge: %d shard reports for -shards %d: a shard job is missing or ran twice", len(parts), shards))
	}
	seen := map[string]string{} // row key -> report name
	var summary []string
	first := true
	for _, p := range parts {
		rep, err := readShardReport(p)
		if err != nil {
			m.Errors = append(m.Errors, err.Error())
			summary = append(summary, p.Name+": unreadable")
			continue
		}
		if first {
			m.Alpha, m.Confidence, m.Holm, first = rep.Alpha, rep.Confidence, rep.Holm, false
		} else if rep.Alpha != m.Alpha || rep.Confidence != m.Confidence || rep.Holm != m.Holm {
			m.Errors = append(m.Errors, fmt.Sprintf("merge: %s: alpha %v, confidence %v, Holm %v differ from the first shard's (%v, %v, %v): the shards ran different gates",
				p.Name, rep.Alpha, rep.Confidence, rep.Holm, m.Alpha, m.Confidence, m.Holm))
		}
		for _, e := range rep.Errors {
			m.Errors = append(m.Errors, p.Name+": "+e)
		}
		for _, w := range rep.Warnings {
			m.Warnings = append(m.Warnings, p.Name+": "+w)
		}
		for _, c := range rep.Comparisons {
			key := rowKey(c)
			if other, dup := seen[key]; dup {
				m.Errors = append(m.Errors, fmt.Sprintf("merge: %s %s is in both %s and %s: a scenario ran on two shards", c.Benchmark, c.Unit, other, p.Name))
				continue
			}
			seen[key] = p.Name
			m.Comparisons = append(m.Comparisons, c)
		}
		summary = append(summary, fmt.Sprintf("%s: %s, %d rows", p.Name, rep.Verdict, len(rep.Comparisons)))
	}
	if m.Holm && len(m.Errors) == 0 {
		rejudgeHolm(m)
	}
	if len(m.Comparisons) == 0 && len(m.Errors) == 0 {
		m.Errors = append(m.Errors, "merge: the shard reports hold no comparisons")
	}
	m.Warnings = append(m.Warnings, fmt.Sprintf("merged %d shard reports (%s)", len(parts), strings.Join(summary, "; ")))
	m.Verdict = m.verdict()
	return m
}

// readShardReport reads one -json report and checks that its verdict is
// a verdict and agrees with its rows and errors.
func readShardReport(p ShardReport) (*Report, error) {
	var rep Report
	dec := json.NewDecoder(bytes.NewReader(p.Data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rep); err != nil {
		return nil, fmt.Errorf("merge: %s: not a gate -json report: %v", p.Name, err)
	}
	switch rep.Verdict {
	case Pass, Fail, Error:
	default:
		return nil, fmt.Errorf("merge: %s: verdict %q is not pass, fail or error", p.Name, rep.Verdict)
	}
	for i, c := range rep.Comparisons {
		if c == nil {
			return nil, fmt.Errorf("merge: %s: comparison %d is null", p.Name, i)
		}
		if c.Gated {
			switch c.Verdict {
			case Pass, Fail, Error:
			default:
				return nil, fmt.Errorf("merge: %s: gated row %s %s has verdict %q", p.Name, c.Benchmark, c.Unit, c.Verdict)
			}
		}
	}
	if want := rep.verdict(); rep.Verdict != want && rep.Verdict != Error {
		return nil, fmt.Errorf("merge: %s: verdict %s, but its rows and errors say %s", p.Name, rep.Verdict, want)
	}
	if rep.Verdict == Error && len(rep.Errors) == 0 {
		rep.Errors = []string{"the shard's gate reported an error without a message"}
	}
	if len(rep.Comparisons) == 0 && rep.Verdict != Error {
		return nil, fmt.Errorf("merge: %s: %s with no comparisons: an empty shard cannot pass", p.Name, rep.Verdict)
	}
	return &rep, nil
}

// rowKey identifies a row across shards: benchmark, unit and file
// configuration (in key order: JSON keeps none).
func rowKey(c *Comparison) string {
	kvs := make([]string, len(c.Config))
	for i, kv := range c.Config {
		kvs[i] = kv.Key + "=" + kv.Value
	}
	slices.Sort(kvs)
	return c.Benchmark + "\x00" + c.Unit + "\x00" + strings.Join(kvs, "\x00")
}

// rejudgeHolm applies Holm–Bonferroni over the gated rows of every shard
// that have both sides and judges them again: each shard corrected over
// its own rows only, a smaller family than the merged verdict's.
func rejudgeHolm(m *Report) {
	var gated []*Comparison
	for _, c := range m.Comparisons {
		if c.Gated && c.Base != nil && c.Head != nil && c.Verdict != Error {
			gated = append(gated, c)
		}
	}
	ps := make([]float64, len(gated))
	for i, c := range gated {
		ps[i] = c.P
	}
	pol := &Policy{Alpha: m.Alpha, Confidence: m.Confidence, Holm: true}
	for i, adj := range stats.Holm(ps) {
		c := gated[i]
		c.PAdjusted = adj
		judge(c, pol, len(gated))
	}
	m.Errors = append(m.Errors, problems(m.Comparisons)...)
}

// mainMerge is Main's -merge: read the reports, merge, write like Main.
func mainMerge(files []string, shards int, format, mdFile, jsonFile string, stdout io.Writer, fail func(error) int) int {
	write, err := formatter(format)
	if err != nil {
		return fail(err)
	}
	parts := make([]ShardReport, 0, len(files))
	var readErrs []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			readErrs = append(readErrs, fmt.Sprintf("merge: %v", err))
			continue
		}
		parts = append(parts, ShardReport{Name: f, Data: data})
	}
	rep := MergeReports(parts, shards)
	if len(readErrs) > 0 {
		rep.Errors = append(readErrs, rep.Errors...)
		rep.Verdict = rep.verdict()
	}
	if err := writeReports(rep, write, stdout, mdFile, jsonFile); err != nil {
		return fail(err)
	}
	for _, e := range rep.Errors {
		fail(fmt.Errorf("%s", e))
	}
	return rep.ExitCode()
}
