package metrics

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestKnownMetric(t *testing.T) {
	tests := []struct {
		name string
		want bool
	}{
		{"p99_ttft_ms", true},
		{"p99.9_ttft_ms", true},
		{"p50_itl_ms", true},
		{"p0_tpot_ms", true},
		{"p100_e2el_ms", true},
		{"p33.3_e2el_ms", true},
		{"mean_itl_ms", true},
		{"median_tpot_ms", true},
		{"std_e2el_ms", true},
		{"p99_schedule_lag_ms", true},
		{"mean_queue_ms", true},
		{"p90_e2el_with_queue_ms", true},
		{"failed", true},
		{"completed", true},
		{"request_goodput", true},
		{"output_throughput", true},
		{"max_concurrent_requests", true},
		{"failed_timeout", true},
		{"failure_ratio", true},
		{"p99.0_ttft_ms", false}, // vLLM writes p99
		{"p101_ttft_ms", false},
		{"p-1_ttft_ms", false},
		{"p99_ttft", false},
		{"p99_ttft_sec", false},
		{"max_ttft_ms", false},
		{"p99_foo_ms", false},
		{"ttft", false},
		{"failed_oops", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := KnownMetric(tt.name); got != tt.want {
			t.Errorf("KnownMetric(%q) = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// rec builds a successful record: start and TTFT in ms, then ITL gaps.
func rec(startMS, ttftMS float64, out int, itlMS ...float64) Record {
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	r := Record{Start: ms(startMS), Scheduled: ms(startMS), Dispatched: ms(startMS), TTFT: ms(ttftMS), OutputTokens: out, PromptLen: 10, Success: true}
	r.Latency = r.TTFT
	for _, g := range itlMS {
		r.ITL = append(r.ITL, ms(g))
		r.Latency += ms(g)
	}
	return r
}

func TestSummarizeSmall(t *testing.T) {
	recs := []Record{
		rec(0, 100, 3, 10, 30),
		rec(500, 200, 1),
		{Failure: FailureTimeout, Error: "timeout", Start: time.Second, Scheduled: time.Second, Dispatched: time.Second},
		{Failure: FailureCanceled, Unsent: true},
	}
	s := Summarize(recs, 2*time.Second, Options{Goodput: map[string]float64{"ttft": 150}})
	checks := map[string]float64{
		"completed":               2,
		"failed":                  1, // the unsent record is left out
		"failed_timeout":          1,
		"failed_canceled":         0,
		"failure_ratio":           1.0 / 3,
		"total_input_tokens":      20,
		"total_output_tokens":     4,
		"request_throughput":      1,
		"request_goodput":         0.5,
		"output_throughput":       2,
		"total_token_throughput":  12,
		"mean_ttft_ms":            150,
		"median_ttft_ms":          150,
		"std_ttft_ms":             50,
		"p50_ttft_ms":             150,
		"p100_ttft_ms":            200,
		"p0_ttft_ms":              100,
		"mean_tpot_ms":            20, // only the 3-token request: (140-100)/2
		"mean_itl_ms":             20,
		"mean_e2el_ms":            170,
		"max_output_tokens_per_s": 4,
		"max_concurrent_requests": 2,
		"mean_schedule_lag_ms":    0,
	}
	for name, want := range checks {
		got, ok := s.Value(name)
		if !ok || !close(got, want, 1e-12) {
			t.Errorf("%s = %v (%v), want %v", name, got, ok, want)
		}
	}
	if _, ok := s.Value("nonsense"); ok {
		t.Error("Value(nonsense) known")
	}
	if got := s.OutputLens; len(got) != 4 || got[0] != 3 || got[1] != 1 || got[2] != 0 {
		t.Errorf("output lens %v", got)
	}
}

func TestSummarizeEmptyAndPooling(t *testing.T) {
	s := Summarize(nil, time.Second, Options{})
	for _, name := range []string{"mean_ttft_ms", "p99_itl_ms", "std_e2el_ms", "max_output_tokens_per_s"} {
		if v, ok := s.Value(name); !ok || v != 0 {
			t.Errorf("%s = %v, %v on no records, want 0", name, v, ok)
		}
	}
	if _, ok := s.Value("request_goodput"); ok {
		t.Error("request_goodput known without goodput SLOs")
	}
	p := Summarize([]Record{{Success: true, Latency: 3 * time.Millisecond, ServerPromptTokens: 7, PromptLen: 99}}, time.Second, Options{Pooling: true})
	if v, _ := p.Value("total_input_tokens"); v != 7 {
		t.Errorf("pooling input tokens %v, want the server's 7", v)
	}
	if _, ok := p.Value("mean_ttft_ms"); ok {
		t.Error("pooling summary knows TTFT")
	}
	if v, _ := p.Value("p99_e2el_ms"); !close(v, 3, 1e-12) {
		t.Errorf("pooling p99 e2el %v", v)
	}
}

func TestPercentileMatchesNumpyByHand(t *testing.T) {
	st := newStats([]float64{4, 2, 3, 1})
	for _, c := range []struct{ p, want float64 }{
		{0, 1}, {25, 1.75}, {50, 2.5}, {75, 3.25}, {99, 3.97}, {100, 4},
	} {
		if got := st.Percentile(c.p) / 1000; !close(got, c.want, 1e-15) {
			t.Errorf("Percentile(%v) = %v, want %v", c.p, got, c.want)
		}
	}
	// vLLM's np.percentile(x or 0, p): no samples report 0.
	empty := newStats(nil)
	if empty.Percentile(99) != 0 || empty.Median != 0 {
		t.Errorf("empty: p99 %v, median %v, want 0 and 0", empty.Percentile(99), empty.Median)
	}
}

func TestWriteResultAppend(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "res.json")
	for i, mode := range []bool{false, true, true} {
		if err := WriteResult(path, []byte(`{"n": `+string(rune('0'+i))+`}`), mode); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := os.ReadFile(path)
	if got := string(b); got != "{\"n\": 0}\n{\"n\": 1}\n{\"n\": 2}" {
		t.Errorf("file = %q", got)
	}
	if err := WriteResult(path, []byte(`{}`), false); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "{}" {
		t.Errorf("overwrite left %q", b)
	}
}

func TestPytorchRecords(t *testing.T) {
	recs := []Record{rec(0, 100, 3, 10, 30), rec(5, 120, 2, 7)}
	s := Summarize(recs, time.Second, Options{})
	info := RunInfo{Backend: "openai", ModelID: "m", RequestRate: 0}
	t.Setenv(PytorchEnv, "")
	if b := s.PytorchRecords(info, true, nil); b != nil {
		t.Fatalf("records without %s", PytorchEnv)
	}
	t.Setenv(PytorchEnv, "1")
	b := s.PytorchRecords(info, true, map[string]any{"model": "m", "request_rate": "inf"})
	var got []struct {
		Benchmark struct {
			Name      string `json:"name"`
			ExtraInfo struct {
				Args map[string]any `json:"args"`
			} `json:"extra_info"`
		} `json:"benchmark"`
		Model  struct{ Name string } `json:"model"`
		Metric struct {
			Name      string         `json:"name"`
			Values    []float64      `json:"benchmark_values"`
			ExtraInfo map[string]any `json:"extra_info"`
		} `json:"metric"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("%v in %s", err, b)
	}
	if len(got) != 12 {
		t.Fatalf("%d records, want 12", len(got))
	}
	if got[0].Metric.Name != "median_ttft_ms" || got[0].Metric.Values[0] != 110 || got[0].Model.Name != "m" || got[0].Benchmark.Name != "vLLM benchmark" {
		t.Errorf("first record %+v", got[0])
	}
	ei := got[0].Metric.ExtraInfo
	if _, ok := ei["ttfts"]; ok {
		t.Error("ttfts in extra_info")
	}
	if _, ok := ei["mean_ttft_ms"]; ok {
		t.Error("a metric in extra_info")
	}
	if ei["request_rate"] != "inf" || ei["completed"] != 2.0 {
		t.Errorf("extra_info %v", ei)
	}
	if p := PytorchPath("out/res.json"); p != "out/res.pytorch.json" {
		t.Errorf("path %q", p)
	}
	if !strings.Contains(string(b), `"args": {"model": "m", "request_rate": "inf"}`) {
		t.Errorf("args not rendered: %.300s", b)
	}
}

func TestRadixSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 255, 256, 1000, 100000} {
		keys := make([]uint64, n)
		for i := range keys {
			switch i % 3 {
			case 0:
				keys[i] = rng.Uint64()
			case 1:
				keys[i] = uint64(rng.IntN(1 << 20))
			default:
				keys[i] = 1<<63 ^ uint64(rng.Int64N(1<<40)-1<<39)
			}
		}
		want := slices.Clone(keys)
		slices.Sort(want)
		radixSort(keys)
		if !slices.Equal(keys, want) {
			t.Errorf("n=%d: radix sort differs from slices.Sort", n)
		}
	}
	ds := []time.Duration{5, -3, 0, 1 << 40, -1 << 40, 7}
	for range 100 {
		ds = append(ds, time.Duration(rng.Int64N(1<<50)-1<<49))
	}
	st := newDurationStats(ds)
	for i := 1; i < len(st.sorted); i++ {
		if st.sorted[i-1] > st.sorted[i] {
			t.Fatal("durations with negatives not sorted")
		}
	}
}

func TestResultJSONHeader(t *testing.T) {
	s := Summarize([]Record{rec(0, 100, 2, 20)}, time.Second, Options{})
	got := string(s.ResultJSON(RunInfo{
		Date: "20251129-180000", Backend: "vllm", Label: "ramp", ModelID: "m", TokenizerID: "t", NumPrompts: 1,
		Metadata:       [][2]string{{" backend ", " overridden "}},
		RampUpStrategy: "linear", RampUpStartRPS: 1, RampUpEndRPS: 3,
		RPSChanges: []RPSChange{{1, "2025-11-29T18:00:00"}, {2, "2025-11-29T18:00:01.500000"}},
	}, false))
	want := `{"date": "20251129-180000", "endpoint_type": "vllm", "backend": "overridden", "label": "ramp", "model_id": "m", "tokenizer_id": "t", "num_prompts": 1, ` +
		`"request_rate": "inf", "burstiness": 1.0, "max_concurrency": null, "ramp_up_strategy": "linear", "ramp_up_start_rps": 1, "ramp_up_end_rps": 3, ` +
		`"duration": 1.0, "completed": 1, "failed": 0, "total_input_tokens": 10, "total_output_tokens": 2, "request_throughput": 1.0, "request_goodput": null, ` +
		`"output_throughput": 2.0, "total_token_throughput": 12.0, "max_output_tokens_per_s": 2.0, "max_concurrent_requests": 1, ` +
		`"rps_change_events": [{"rps": 1, "timestamp": "2025-11-29T18:00:00"}, {"rps": 2, "timestamp": "2025-11-29T18:00:01.500000"}], ` +
		`"mean_ttft_ms": 100.0, "median_ttft_ms": 100.0, "std_ttft_ms": 0.0, "p99_ttft_ms": 100.0, ` +
		// (0.12 - 0.1) s in floating point, as Python computes it too.
		`"mean_tpot_ms": 19.99999999999999, "median_tpot_ms": 19.99999999999999, "std_tpot_ms": 0.0, "p99_tpot_ms": 19.99999999999999, ` +
		`"mean_itl_ms": 20.0, "median_itl_ms": 20.0, "std_itl_ms": 0.0, "p99_itl_ms": 20.0}`
	if got != want {
		t.Errorf("result JSON\n got %s\nwant %s", got, want)
	}
}
