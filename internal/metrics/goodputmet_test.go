package metrics

import (
	"encoding/json"
	"math"
	"testing"
)

// TestGoodputMet checks the per-request goodput_met array of a detailed
// result with servegate's extras: one entry a request, true exactly for
// the requests request_goodput counts, and absent without goodput SLOs.
func TestGoodputMet(t *testing.T) {
	recs, dur := loadGoldenRecords(t)
	for _, slo := range []map[string]float64{nil, {"ttft": 50}, {"ttft": 80, "tpot": 20}, {"e2el": 1500}} {
		s := Summarize(recs, dur, Options{Goodput: slo})
		var res struct {
			Duration   float64  `json:"duration"`
			Goodput    *float64 `json:"request_goodput"`
			GoodputMet []bool   `json:"goodput_met"`
		}
		data, _ := ReadablePyJSON(s.ResultJSON(RunInfo{Extras: true}, true))
		if err := json.Unmarshal(data, &res); err != nil {
			t.Fatal(err)
		}
		if slo == nil {
			if res.GoodputMet != nil {
				t.Errorf("no SLO: goodput_met written")
			}
			continue
		}
		if len(res.GoodputMet) != len(recs) {
			t.Fatalf("%v: %d entries for %d requests", slo, len(res.GoodputMet), len(recs))
		}
		good := 0
		for i, g := range res.GoodputMet {
			if g {
				good++
				if !recs[i].Success {
					t.Errorf("%v: request %d failed but met the SLO", slo, i)
				}
			}
		}
		if good == 0 || good == len(recs) {
			t.Errorf("%v: %d of %d good: choose an SLO that splits the requests", slo, good, len(recs))
		}
		if got := float64(good) / res.Duration; res.Goodput == nil || math.Abs(got-*res.Goodput) > 1e-9 {
			t.Errorf("%v: goodput_met counts %v req/s, request_goodput %v", slo, got, res.Goodput)
		}
		// The summary file (not detailed) keeps no per-request array.
		var plain map[string]any
		data, _ = ReadablePyJSON(s.ResultJSON(RunInfo{Extras: true}, false))
		if err := json.Unmarshal(data, &plain); err != nil {
			t.Fatal(err)
		}
		if _, ok := plain["goodput_met"]; ok {
			t.Errorf("%v: goodput_met in a summary result", slo)
		}
	}
}
