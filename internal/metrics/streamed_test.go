package metrics

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"
	"time"
)

// streamedRecords are four requests of a reasoning model with tools: two
// that thought and answered, one that called tools, and one whose tool
// call broke.
func streamedRecords() []Record {
	ms := time.Millisecond
	a := rec(0, 100, 10, 10, 10)
	a.FirstReasoning, a.FirstContent, a.ReasoningTokens, a.ContentTokens = 100*ms, 120*ms, 6, 4
	b := rec(5, 50, 8, 10)
	b.FirstReasoning, b.FirstContent, b.ReasoningTokens, b.ContentTokens = 50*ms, 60*ms, 2, 6
	c := rec(10, 80, 4, 5)
	c.ToolCalls = []ToolCall{{ID: "1", Name: "f", Arguments: "{}"}, {ID: "2", Name: "g", Arguments: `{"x":1}`}}
	c.ContentTokens, c.FinishReason = 4, "tool_calls"
	d := Record{Start: 20 * ms, Failure: FailureBrokenToolCall, Error: "tool call 0 ...", ToolCalls: []ToolCall{{ID: "3", Name: "h", Arguments: "{"}}}
	return []Record{a, b, c, d}
}

// TestStreamedNames: the time to first content, reasoning tokens, tool
// calls and broken tool calls are answered by name.
func TestStreamedNames(t *testing.T) {
	s := Summarize(streamedRecords(), time.Second, Options{})
	want := map[string]float64{
		"mean_ttfc_ms":            90,
		"median_ttfc_ms":          90,
		"p99_ttfc_ms":             119.4,
		"total_reasoning_tokens":  8,
		"mean_reasoning_tokens":   8.0 / 3,
		"total_tool_calls":        2,
		"mean_tool_calls":         2.0 / 3,
		"broken_tool_call_ratio":  0.25,
		"failed_broken_tool_call": 1,
	}
	for name, w := range want {
		if !KnownMetric(name) {
			t.Errorf("%s is not a known metric", name)
		}
		got, ok := s.Value(name)
		if !ok || !close(got, w, 1e-12) {
			t.Errorf("%s = %v (known %v), want %v", name, got, ok, w)
		}
	}
	// No content at all: the ttfc names are unknown, so that an SLO on
	// them fails closed.
	none := Summarize([]Record{rec(0, 10, 1)}, time.Second, Options{})
	if _, ok := none.Value("p99_ttfc_ms"); ok {
		t.Errorf("p99_ttfc_ms known without any content")
	}
}

// TestStreamedResultKeys: a run without reasoning or tools keeps vLLM's
// key set; one with them adds the ttfc statistics and the stream names
// after vLLM's metrics; the per-request arrays round-trip.
func TestStreamedResultKeys(t *testing.T) {
	keys := func(b []byte) []string {
		dec := json.NewDecoder(bytes.NewReader(b))
		var out []string
		dec.Token()
		for dec.More() {
			k, _ := dec.Token()
			out = append(out, k.(string))
			var v json.RawMessage
			_ = dec.Decode(&v)
		}
		return out
	}
	info := RunInfo{Date: "d", Backend: "openai-chat", ModelID: "m"}
	plain := []Record{rec(0, 100, 3, 10, 30), rec(5, 50, 2, 10)}
	for i := range plain {
		plain[i].FirstContent = plain[i].TTFT // what the client records for a plain stream
	}
	plainKeys := keys(Summarize(plain, time.Second, Options{}).ResultJSON(info, false))
	for _, k := range plainKeys {
		if k == "mean_ttfc_ms" || k == "mean_tool_calls" {
			t.Errorf("plain run has %s", k)
		}
	}
	s := Summarize(streamedRecords(), time.Second, Options{})
	got := keys(s.ResultJSON(info, false))
	added := got[len(plainKeys):]
	want := []string{"mean_ttfc_ms", "median_ttfc_ms", "std_ttfc_ms", "p99_ttfc_ms", "total_reasoning_tokens", "mean_reasoning_tokens", "total_tool_calls", "mean_tool_calls", "broken_tool_call_ratio"}
	if !slices.Equal(got[:len(plainKeys)], plainKeys) || !slices.Equal(added, want) {
		t.Errorf("keys %v\nwant vLLM's %v then %v", got, plainKeys, want)
	}

	info.Extras = true
	saved := s.ResultJSON(info, true)
	back, dur, err := RecordsFromResult(saved)
	if err != nil {
		t.Fatal(err)
	}
	s2 := Summarize(back, dur, Options{})
	for _, name := range want {
		a, _ := s.Value(name)
		b, _ := s2.Value(name)
		if a != b {
			t.Errorf("%s: %v before, %v after the round trip", name, a, b)
		}
	}
	if again := s2.ResultJSON(info, true); !bytes.Equal(again, saved) {
		t.Errorf("result JSON changed in the round trip")
	}
}
