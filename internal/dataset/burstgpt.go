package dataset

import (
	"context"
	"encoding/csv"
	"errors"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/servegate/servegate/internal/tokenizer"
)

// burstRow is one usable BurstGPT request: its lengths and timestamp.
type burstRow struct {
	ts            float64
	input, output int
}

// BurstGPT's column names (the header of BurstGPT_*.csv).
var burstColumns = []string{"Timestamp", "Model", "Request tokens", "Response tokens"}

// readBurstGPT reads a BurstGPT CSV file and keeps the GPT-4 rows with a
// positive response length, as vLLM does.
func readBurstGPT(path string) ([]burstRow, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cr := csv.NewReader(f)
	cr.FieldsPerRecord = -1
	header, err := cr.Read()
	if err != nil {
		return nil, fileErr(path, 1, "want a CSV header with columns %s: %v", strings.Join(burstColumns, ", "), csvMsg(err))
	}
	col := map[string]int{}
	for i, h := range header {
		col[strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))] = i
	}
	for _, c := range burstColumns {
		if _, ok := col[c]; !ok {
			return nil, fileErr(path, 1, "missing column %q", c)
		}
	}
	var rows []burstRow
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		line, _ := cr.FieldPos(0)
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				line = pe.Line
			}
			return nil, fileErr(path, line, "%v", csvMsg(err))
		}
		field := func(name string) (string, error) {
			i := col[name]
			if i >= len(rec) {
				return "", fileErr(path, line, "missing column %q (row has %d fields)", name, len(rec))
			}
			return strings.TrimSpace(rec[i]), nil
		}
		model, err := field("Model")
		if err != nil {
			return nil, err
		}
		ts, err := field("Timestamp")
		if err != nil {
			return nil, err
		}
		var r burstRow
		if r.ts, err = strconv.ParseFloat(ts, 64); err != nil {
			return nil, fileErr(path, line, "column \"Timestamp\": want a number, got %q", ts)
		}
		for _, num := range []struct {
			name string
			dst  *int
		}{{"Request tokens", &r.input}, {"Response tokens", &r.output}} {
			v, err := field(num.name)
			if err != nil {
				return nil, err
			}
			if *num.dst, err = parseCount(v); err != nil {
				return nil, fileErr(path, line, "column %q: want a whole number of tokens, got %q", num.name, v)
			}
		}
		if model == "GPT-4" && r.output > 0 {
			rows = append(rows, r)
		}
	}
	return rows, nil
}

// parseCount reads a token count written as an integer or, as pandas may
// write it, a float with no fraction ("12.0").
func parseCount(s string) (int, error) {
	if n, err := strconv.Atoi(s); err == nil {
		return n, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f != float64(int(f)) {
		return 0, errors.New("not a whole number")
	}
	return int(f), nil
}

func csvMsg(err error) string {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return "malformed CSV: " + pe.Err.Error()
	}
	return err.Error()
}

// loadBurstGPT builds the burstgpt dataset (vLLM's BurstGPTDataset): rows
// drawn at random (without replacement when the file has enough, with
// replacement otherwise, exactly as pandas' DataFrame.sample with
// random_state=Seed draws them), and for sample i a prompt decoded from the ids
// (i+j) mod BaseVocabSize, j < the row's request tokens, whose length is
// taken to be the request tokens. With DisableShuffle the rows are taken in
// file order, cycling when there are too few (vLLM ignores the flag here).
// With TraceReplay the first NumPrompts rows are replayed at their
// timestamps.
func loadBurstGPT(ctx context.Context, s Spec, tok *tokenizer.Tokenizer) ([]Sample, error) {
	rows, err := readBurstGPT(s.Path)
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, fileErr(s.Path, 0, "no GPT-4 row with positive Response tokens")
	}
	picked := pickRows(s, rows)
	g := newRandomGen(s, tok)
	vocab := tok.BaseVocabSize()
	samples := make([]Sample, len(picked))
	if err := parallel(ctx, len(picked), func(i int) {
		r := picked[i]
		ids := make([]int, r.input)
		for j := range ids {
			ids[j] = (i + j) % vocab
		}
		samples[i] = Sample{Prompt: g.decode(ids), PromptLen: r.input, OutputLen: r.output, RequestID: s.RequestIDPrefix + strconv.Itoa(i)}
		if s.TraceReplay {
			samples[i].Arrival, samples[i].HasArrival = arrival(r.ts, picked[0].ts), true
		}
	}); err != nil {
		return nil, err
	}
	return samples, nil
}

// pickRows chooses the BurstGPT rows to turn into samples.
func pickRows(s Spec, rows []burstRow) []burstRow {
	n := s.NumPrompts
	switch {
	case s.TraceReplay:
		return rows[:min(n, len(rows))]
	case s.DisableShuffle:
		out := make([]burstRow, n)
		for i := range out {
			out[i] = rows[i%len(rows)]
		}
		return out
	default:
		out := make([]burstRow, n)
		for i, k := range pandasSample(s.Seed, len(rows), n, n > len(rows)) {
			out[i] = rows[k]
		}
		return out
	}
}
