package shard

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/servegate/servegate/internal/client"
	"github.com/servegate/servegate/internal/metrics"
)

// A Part is one shard's detailed result file, as `servegate bench
// --shard i/N --save-result --save-detailed` writes it.
type Part struct {
	// Name names the file in errors.
	Name string
	// Data is the file's content (its first JSON object is read).
	Data []byte
}

// A Start is when one shard started, measured on its own machine.
type Start struct {
	// Name is the Part's name.
	Name string
	// Shard is which shard the part holds.
	Shard Spec
	// Requests is the number of records the shard holds.
	Requests int
	// Start is when the shard's schedule started.
	Start time.Time
	// Late is Start minus the common start time: how late the shard
	// woke, on its own clock.
	Late time.Duration
	// Duration is the shard's benchmark duration.
	Duration time.Duration
}

// A Merged is the shards' results joined into one run.
type Merged struct {
	// Records are every request of the full schedule, in schedule order,
	// their times moved onto one timeline whose zero is the earliest
	// shard's start.
	Records []metrics.Record
	// Duration runs from the earliest shard's start to the end of the
	// last request of any shard.
	Duration time.Duration
	// Info is the result header: the shards' common one, with the shard
	// keys replaced by "shards", "start_at" and "clock_skew_ms".
	Info metrics.RunInfo
	// Options are the summary options the shards' files were written
	// with (their percentile keys; goodput comes from the caller).
	Options metrics.Options
	// HasGoodput reports that the shards' files carry request_goodput,
	// whose SLOs a result file does not record.
	HasGoodput bool
	// StartAt is the common start time the shards were given.
	StartAt time.Time
	// Starts are the shards' starts, by shard index.
	Starts []Start
	// Skew is the spread of the shards' starts: the latest Late minus
	// the earliest. It is measured on each machine's own clock, so an
	// offset between the machines' clocks adds to it unseen; keep them
	// synchronised (NTP, chrony).
	Skew time.Duration
}

// keys of the header that belong to one shard, not to the run.
var perShardKeys = []string{"date", "shard", "shard_start"}

// Merge joins the detailed results of all N shards of one run. It fails
// when a shard is missing or present twice, when the shards disagree on
// the run (model, rate, seed-bearing settings, start time, number of
// requests), or when a file is not a shard's detailed result.
func Merge(parts []Part) (*Merged, error) {
	if len(parts) == 0 {
		return nil, errors.New("merge: no shard results")
	}
	shards := make([]*part, len(parts))
	for i, p := range parts {
		sp, err := readPart(p)
		if err != nil {
			return nil, err
		}
		shards[i] = sp
	}
	first := shards[0]
	n := first.spec.Count
	byIndex := make([]*part, n+1)
	var errs []error
	for _, s := range shards {
		if s.spec.Count != n {
			errs = append(errs, fmt.Errorf("%s: shard %s, but %s is shard %s: all shards of a run have the same N", s.name, s.spec, first.name, first.spec))
			continue
		}
		if prev := byIndex[s.spec.Index]; prev != nil {
			errs = append(errs, fmt.Errorf("%s and %s are both shard %s", prev.name, s.name, s.spec))
			continue
		}
		byIndex[s.spec.Index] = s
		if d := diffHeaders(first, s); d != "" {
			errs = append(errs, fmt.Errorf("%s and %s are not shards of one run: %s", first.name, s.name, d))
		}
	}
	var missing []string
	for i := 1; i <= n; i++ {
		if byIndex[i] == nil {
			missing = append(missing, fmt.Sprintf("%d/%d", i, n))
		}
	}
	if len(missing) > 0 {
		errs = append(errs, fmt.Errorf("missing shards: %s (got %d of %d files)", strings.Join(missing, ", "), len(parts), n))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("merge: %w", errors.Join(errs...))
	}
	return join(byIndex[1:], first)
}

// join puts the records of every shard (in shard order) on one timeline.
func join(shards []*part, first *part) (*Merged, error) {
	n, total := len(shards), first.total
	m := &Merged{StartAt: first.startAt, Records: make([]metrics.Record, total)}
	minLate, maxLate := time.Duration(math.MaxInt64), time.Duration(math.MinInt64)
	for _, s := range shards {
		late := s.start.Sub(s.startAt)
		minLate, maxLate = min(minLate, late), max(maxLate, late)
		m.Starts = append(m.Starts, Start{Name: s.name, Shard: s.spec, Requests: len(s.records), Start: s.start, Late: late, Duration: s.duration})
	}
	m.Skew = maxLate - minLate
	for _, s := range shards {
		shift := s.start.Sub(s.startAt) - minLate
		for k, r := range s.records {
			r.Scheduled += shift
			r.Dispatched += shift
			r.Start += shift
			m.Records[k*n+s.spec.Index-1] = r
		}
		m.Duration = max(m.Duration, shift+s.duration)
	}
	m.Info, m.Options, m.HasGoodput = first.info, first.opts, first.goodput
	m.Info.Date = slices.MaxFunc(shards, func(a, b *part) int { return strings.Compare(a.info.Date, b.info.Date) }).info.Date
	m.Info.RPSChanges = mergeRPSChanges(shards)
	m.Info.Metadata = append(m.Info.Metadata,
		[2]string{"shards", strconv.Itoa(n)},
		[2]string{"start_at", first.startAt.UTC().Format(time.RFC3339Nano)},
		[2]string{"clock_skew_ms", metrics.PyFloat(float64(m.Skew) / 1e6)})
	return m, nil
}

// mergeRPSChanges keeps, for each rate a ramp-up reached, the earliest
// time any shard saw it.
func mergeRPSChanges(shards []*part) []metrics.RPSChange {
	first := map[int]string{}
	for _, s := range shards {
		for _, c := range s.info.RPSChanges {
			if t, ok := first[c.RPS]; !ok || c.Timestamp < t {
				first[c.RPS] = c.Timestamp
			}
		}
	}
	var out []metrics.RPSChange
	for rps, ts := range first {
		out = append(out, metrics.RPSChange{RPS: rps, Timestamp: ts})
	}
	slices.SortFunc(out, func(a, b metrics.RPSChange) int { return a.RPS - b.RPS })
	return out
}

// A part is one shard's file, read.
type part struct {
	name     string
	spec     Spec
	total    int
	start    time.Time
	startAt  time.Time
	duration time.Duration
	records  []metrics.Record
	header   []field // the run header, in file order
	info     metrics.RunInfo
	opts     metrics.Options
	goodput  bool
}

// A field is one top-level key of a result file and its raw value.
type field struct {
	key string
	raw json.RawMessage
}

func readPart(p Part) (*part, error) {
	fail := func(format string, a ...any) error {
		return fmt.Errorf("merge: %s: %s", p.Name, fmt.Sprintf(format, a...))
	}
	fields, err := topLevel(p.Data)
	if err != nil {
		return nil, fail("%v", err)
	}
	get := func(key string) (json.RawMessage, bool) {
		for _, f := range fields {
			if f.key == key {
				return f.raw, true
			}
		}
		return nil, false
	}
	str := func(key string) string {
		raw, _ := get(key)
		var s string
		_ = json.Unmarshal(raw, &s)
		return s
	}
	s := &part{name: p.Name}
	if _, ok := get("shard"); !ok {
		return nil, fail("not a shard's result (no \"shard\" key): run servegate bench with --shard i/N --start-at T --save-result --save-detailed")
	}
	if s.spec, err = Parse(str("shard")); err != nil {
		return nil, fail("%v", err)
	}
	if s.total, err = strconv.Atoi(str("shard_requests")); err != nil || s.total < s.spec.Count {
		return nil, fail("shard_requests %q: want the number of requests of the full schedule, at least N", str("shard_requests"))
	}
	if s.start, err = time.Parse(time.RFC3339Nano, str("shard_start")); err != nil {
		return nil, fail("shard_start %q: want an RFC 3339 time", str("shard_start"))
	}
	if s.startAt, err = time.Parse(time.RFC3339Nano, str("start_at")); err != nil {
		return nil, fail("start_at %q: want an RFC 3339 time (every shard needs the same --start-at)", str("start_at"))
	}
	if s.records, s.duration, err = metrics.RecordsFromResult(p.Data); err != nil {
		return nil, fail("%v", err)
	}
	if want := len(s.spec.Indices(s.total)); len(s.records) != want {
		return nil, fail("shard %s of %d requests holds %d records, want %d", s.spec, s.total, len(s.records), want)
	}
	if _, ok := get("request_ids"); !ok {
		return nil, fail("no request_ids: the file lacks servegate's per-request arrays (write it with servegate bench --shard)")
	}
	s.info, s.header = runInfo(fields)
	s.opts = summaryOptions(fields, s.info.Backend)
	raw, _ := get("request_goodput")
	s.goodput = len(raw) > 0 && string(raw) != "null"
	return s, nil
}

// topLevel returns the first JSON object's keys and raw values, in order.
// A value Python writes bare (NaN, Infinity, -Infinity) keeps its word.
func topLevel(data []byte) ([]field, error) {
	data, nonFinite := metrics.ReadablePyJSON(data)
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, errors.New("read result: not a JSON object")
	}
	var out []field
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("read result: %w", err)
		}
		key, _ := t.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, fmt.Errorf("read result: key %s: %w", key, err)
		}
		if word, ok := nonFinite[key]; ok && string(raw) == "null" {
			raw = json.RawMessage(word)
		}
		out = append(out, field{key, raw})
	}
	return out, nil
}

// headerKeys are the keys of vLLM's result header; the keys between
// num_prompts and request_rate are --metadata pairs.
var headerKeys = []string{"date", "endpoint_type", "backend", "label", "model_id", "tokenizer_id", "num_prompts",
	"request_rate", "burstiness", "max_concurrency", "ramp_up_strategy", "ramp_up_start_rps", "ramp_up_end_rps"}

// runInfo rebuilds the RunInfo a result file was written with, and
// returns its header fields (everything before "duration").
func runInfo(fields []field) (metrics.RunInfo, []field) {
	var info metrics.RunInfo
	var header []field
	inMeta := false
	for _, f := range fields {
		if f.key == "duration" {
			break
		}
		header = append(header, f)
		var s string
		_ = json.Unmarshal(f.raw, &s)
		switch f.key {
		case "date":
			info.Date = s
		case "backend":
			info.Backend = s
		case "label":
			info.Label = s
		case "model_id":
			info.ModelID = s
		case "tokenizer_id":
			info.TokenizerID = s
		case "num_prompts":
			_ = json.Unmarshal(f.raw, &info.NumPrompts)
			inMeta = true
			continue
		case "request_rate":
			info.RequestRate = math.Inf(1)
			_ = metrics.UnmarshalFloat(f.raw, &info.RequestRate)
		case "burstiness":
			_ = metrics.UnmarshalFloat(f.raw, &info.Burstiness)
		case "max_concurrency":
			_ = json.Unmarshal(f.raw, &info.MaxConcurrency)
		case "ramp_up_strategy":
			info.RampUpStrategy = s
		case "ramp_up_start_rps":
			_ = json.Unmarshal(f.raw, &info.RampUpStartRPS)
		case "ramp_up_end_rps":
			_ = json.Unmarshal(f.raw, &info.RampUpEndRPS)
		}
		if f.key == "request_rate" {
			inMeta = false
		}
		if inMeta && !slices.Contains(perShardKeys, f.key) && f.key != "shard_requests" && f.key != "start_at" {
			v := s
			if len(f.raw) > 0 && f.raw[0] != '"' {
				v = string(f.raw)
			}
			info.Metadata = append(info.Metadata, [2]string{f.key, v})
		}
	}
	for _, f := range fields {
		switch f.key {
		case "request_ids":
			info.Extras = true
		case "rps_change_events":
			var ev []struct {
				RPS       int    `json:"rps"`
				Timestamp string `json:"timestamp"`
			}
			_ = json.Unmarshal(f.raw, &ev)
			for _, e := range ev {
				info.RPSChanges = append(info.RPSChanges, metrics.RPSChange{RPS: e.RPS, Timestamp: e.Timestamp})
			}
		}
	}
	return info, header
}

var percentileKey = regexp.MustCompile(`^p([0-9.]+)_(ttft|tpot|itl|e2el)_ms$`)

// summaryOptions reads which percentile metrics and percentiles a result
// file reports from its keys.
func summaryOptions(fields []field, backend string) metrics.Options {
	opts := metrics.Options{Pooling: client.IsPooling(backend)}
	for _, f := range fields {
		for _, m := range []string{"ttft", "tpot", "itl", "e2el"} {
			if f.key == "mean_"+m+"_ms" {
				opts.PercentileMetrics = append(opts.PercentileMetrics, m)
			}
		}
		if sub := percentileKey.FindStringSubmatch(f.key); sub != nil && sub[2] == firstOr(opts.PercentileMetrics, "") {
			if p, err := strconv.ParseFloat(sub[1], 64); err == nil {
				opts.Percentiles = append(opts.Percentiles, p)
			}
		}
	}
	return opts
}

func firstOr(list []string, def string) string {
	if len(list) == 0 {
		return def
	}
	return list[0]
}

// diffHeaders names the run settings two shards disagree on: every
// header key but the per-shard ones.
func diffHeaders(a, b *part) string {
	if !a.startAt.Equal(b.startAt) {
		return fmt.Sprintf("start_at %s against %s", a.startAt.Format(time.RFC3339Nano), b.startAt.Format(time.RFC3339Nano))
	}
	if a.total != b.total {
		return fmt.Sprintf("shard_requests %d against %d", a.total, b.total)
	}
	values := func(p *part) map[string]string {
		m := map[string]string{}
		for _, f := range p.header {
			if !slices.Contains(perShardKeys, f.key) {
				m[f.key] = string(f.raw)
			}
		}
		return m
	}
	va, vb := values(a), values(b)
	var diffs []string
	for _, f := range a.header {
		k := f.key
		if slices.Contains(perShardKeys, k) {
			continue
		}
		if va[k] != vb[k] {
			diffs = append(diffs, fmt.Sprintf("%s %s against %s", k, va[k], orMissing(vb, k)))
		}
	}
	for k := range vb {
		if _, ok := va[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s only in the second", k))
		}
	}
	slices.Sort(diffs)
	return strings.Join(diffs, "; ")
}

func orMissing(m map[string]string, k string) string {
	if v, ok := m[k]; ok {
		return v
	}
	return "(missing)"
}

// Summary summarises the merged records with the shards' options and the
// goodput SLOs given (the files do not record them). It fails when the
// shards reported goodput and no SLOs are given, rather than drop it.
func (m *Merged) Summary(goodput map[string]float64) (*metrics.Summary, error) {
	if m.HasGoodput && len(goodput) == 0 && !m.Options.Pooling {
		return nil, errors.New("merge: the shards report request_goodput, whose SLOs a result file does not record: give the run's goodput SLOs (--goodput) to merge")
	}
	opts := m.Options
	opts.Goodput = goodput
	return metrics.Summarize(m.Records, m.Duration, opts), nil
}
