package metrics

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The golden files in testdata were computed by numpy with
// testdata/gen_golden.py (run it with /tmp/pyvenv/bin/python from
// testdata to regenerate them); these tests need no Python.

type goldenRecord struct {
	RequestID          string  `json:"request_id"`
	Scheduled          int64   `json:"scheduled"`
	Dispatched         int64   `json:"dispatched"`
	Start              int64   `json:"start"`
	PromptLen          int     `json:"prompt_len"`
	ServerPromptTokens int     `json:"server_prompt_tokens"`
	TTFT               int64   `json:"ttft"`
	ITL                []int64 `json:"itl"`
	Latency            int64   `json:"latency"`
	OutputTokens       int     `json:"output_tokens"`
	GeneratedText      string  `json:"generated_text"`
	Success            bool    `json:"success"`
	Failure            string  `json:"failure"`
	Error              string  `json:"error"`
	HTTPStatus         int     `json:"http_status"`
	Unsent             bool    `json:"unsent"`
	ChunkTokens        []int   `json:"chunk_tokens"`
}

func loadGoldenRecords(tb testing.TB) ([]Record, time.Duration) {
	tb.Helper()
	var f struct {
		DurationNS int64          `json:"duration_ns"`
		Records    []goldenRecord `json:"records"`
	}
	readJSON(tb, "records.json", &f)
	recs := make([]Record, len(f.Records))
	for i, g := range f.Records {
		itl := make([]time.Duration, len(g.ITL))
		for j, v := range g.ITL {
			itl[j] = time.Duration(v)
		}
		recs[i] = Record{
			RequestID: g.RequestID, Scheduled: time.Duration(g.Scheduled),
			Dispatched: time.Duration(g.Dispatched), Start: time.Duration(g.Start),
			PromptLen: g.PromptLen, ServerPromptTokens: g.ServerPromptTokens,
			TTFT: time.Duration(g.TTFT), ITL: itl, Latency: time.Duration(g.Latency),
			OutputTokens: g.OutputTokens, GeneratedText: g.GeneratedText,
			Success: g.Success, Failure: FailureKind(g.Failure), Error: g.Error,
			HTTPStatus: g.HTTPStatus, Unsent: g.Unsent, ChunkTokens: g.ChunkTokens,
		}
	}
	return recs, time.Duration(f.DurationNS)
}

func readJSON(tb testing.TB, name string, v any) {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		tb.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		tb.Fatalf("%s: %v", name, err)
	}
}

type goldenOptions struct {
	PercentileMetrics []string           `json:"percentile_metrics"`
	Percentiles       []float64          `json:"percentiles"`
	Goodput           map[string]float64 `json:"goodput"`
	Pooling           bool               `json:"pooling"`
}

func (g goldenOptions) options() Options {
	return Options{PercentileMetrics: g.PercentileMetrics, Percentiles: g.Percentiles, Goodput: g.Goodput, Pooling: g.Pooling}
}

func loadExpected(tb testing.TB) map[string]struct {
	Options goldenOptions      `json:"options"`
	Values  map[string]float64 `json:"values"`
} {
	var exp map[string]struct {
		Options goldenOptions      `json:"options"`
		Values  map[string]float64 `json:"values"`
	}
	readJSON(tb, "expected.json", &exp)
	return exp
}

// TestGoldenValues checks every number numpy computed against
// Summary.Value, to 1e-9 relative (in practice they are bit-identical).
func TestGoldenValues(t *testing.T) {
	recs, dur := loadGoldenRecords(t)
	for name, set := range loadExpected(t) {
		t.Run(name, func(t *testing.T) {
			s := Summarize(recs, dur, set.Options.options())
			if len(set.Values) < 20 {
				t.Fatalf("only %d expected values", len(set.Values))
			}
			for key, want := range set.Values {
				if !KnownMetric(key) {
					t.Errorf("KnownMetric(%q) = false", key)
				}
				got, ok := s.Value(key)
				if !ok {
					t.Errorf("Value(%q) unknown", key)
					continue
				}
				if !close(got, want, 1e-9) {
					t.Errorf("%s = %.17g, numpy %.17g", key, got, want)
				} else if got != want {
					t.Logf("%s = %.17g, numpy %.17g (within tolerance, not identical)", key, got, want)
				}
			}
		})
	}
}

func close(a, b, rel float64) bool {
	if a == b {
		return true
	}
	return math.Abs(a-b) <= rel*math.Max(math.Abs(a), math.Abs(b))
}

// TestGoldenResultJSON compares ResultJSON byte for byte with the file
// Python's json.dump wrote for the same records.
func TestGoldenResultJSON(t *testing.T) {
	recs, dur := loadGoldenRecords(t)
	exp := loadExpected(t)
	info := RunInfo{
		Date:           "20251129-180000",
		Backend:        "openai-chat",
		ModelID:        "meta-llama/Llama-3.2-1B-Instruct",
		TokenizerID:    "meta-llama/Llama-3.2-1B-Instruct",
		NumPrompts:     300,
		Metadata:       [][2]string{{"gpu", "none"}, {"run", "golden"}},
		RequestRate:    20,
		Burstiness:     1,
		MaxConcurrency: 16,
	}
	for _, name := range []string{"all", "pooling"} {
		for _, detailed := range []bool{false, true} {
			file := "result_" + name + ".json"
			if detailed {
				file = "result_" + name + "-detailed.json"
			}
			t.Run(file, func(t *testing.T) {
				in := info
				if name == "pooling" {
					in.Backend = "openai-embeddings"
				}
				s := Summarize(recs, dur, exp[name].Options.options())
				got := s.ResultJSON(in, detailed)
				want, err := os.ReadFile(filepath.Join("testdata", file))
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					i := 0
					for i < len(got) && i < len(want) && got[i] == want[i] {
						i++
					}
					lo := max(0, i-80)
					t.Errorf("differs at byte %d:\n got: …%s\nwant: …%s", i, got[lo:min(len(got), i+80)], want[lo:min(len(want), i+80)])
				}
			})
		}
	}
}

func TestPyFloat(t *testing.T) {
	var cases [][2]json.RawMessage
	readJSON(t, "floats.json", &cases)
	for _, c := range cases {
		var repr string
		var f float64
		if err := json.Unmarshal(c[0], &repr); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(c[1], &f); err != nil {
			t.Fatal(err)
		}
		if repr == "-0.0" {
			f = math.Copysign(0, -1)
		}
		if got := PyFloat(f); got != repr {
			t.Errorf("PyFloat(%v) = %q, Python %q", f, got, repr)
		}
	}
}

// TestRecordsFromResultRoundTrip saves the golden records as a detailed
// result with servegate's extras, reads them back and summarises again:
// every number and the file itself come out the same.
func TestRecordsFromResultRoundTrip(t *testing.T) {
	recs, dur := loadGoldenRecords(t)
	for name, set := range loadExpected(t) {
		t.Run(name, func(t *testing.T) {
			opts := set.Options.options()
			info := RunInfo{Date: "d", Backend: "openai", ModelID: "m", Extras: true}
			s := Summarize(recs, dur, opts)
			saved := s.ResultJSON(info, true)
			back, bdur, err := RecordsFromResult(saved)
			if err != nil {
				t.Fatal(err)
			}
			if bdur != dur {
				t.Errorf("duration %v, want %v", bdur, dur)
			}
			s2 := Summarize(back, bdur, opts)
			for key := range set.Values {
				a, _ := s.Value(key)
				b, _ := s2.Value(key)
				if a != b {
					t.Errorf("%s: %v before, %v after the round trip", key, a, b)
				}
			}
			if again := s2.ResultJSON(info, true); !bytes.Equal(again, saved) {
				t.Error("result JSON changed in the round trip")
			}
		})
	}
}

// TestRecordsFromPlainDetailedResult reads a detailed file without
// servegate's extras (as vLLM's layout plus start_times and latencies).
func TestRecordsFromPlainDetailedResult(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "result_all-detailed.json"))
	if err != nil {
		t.Fatal(err)
	}
	back, dur, err := RecordsFromResult(data)
	if err != nil {
		t.Fatal(err)
	}
	exp := loadExpected(t)["all"]
	s := Summarize(back, dur, exp.Options.options())
	// The plain file cannot tell unsent requests from failed ones, so
	// "failed" counts them, nor does it hold per-chunk token counts, which
	// the peak output rate uses; every latency number is unchanged.
	for _, key := range []string{"completed", "mean_ttft_ms", "p99_itl_ms", "std_tpot_ms", "p99.9_e2el_ms", "max_concurrent_requests", "output_throughput", "request_goodput"} {
		got, _ := s.Value(key)
		if want := exp.Values[key]; !close(got, want, 1e-12) {
			t.Errorf("%s = %v, want %v", key, got, want)
		}
	}
	if _, _, err := RecordsFromResult([]byte(`{"duration": 1.0, "completed": 3}`)); err == nil {
		t.Error("a plain (not detailed) result was accepted")
	}
}
