package engine

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestScheduleShapes(t *testing.T) {
	t.Run("infinite rate sends all at once", func(t *testing.T) {
		for _, rate := range []float64{0, math.Inf(1)} {
			s, err := NewSchedule(5, rate, 1, nil, 1)
			if err != nil {
				t.Fatal(err)
			}
			for i, o := range s.Offsets {
				if o != 0 || !math.IsInf(s.Rates[i], 1) {
					t.Errorf("rate %v: offset %d = %v rate %v", rate, i, o, s.Rates[i])
				}
			}
		}
	})
	t.Run("constant gaps at infinite burstiness", func(t *testing.T) {
		s, err := NewSchedule(5, 10, math.Inf(1), nil, 1)
		if err != nil {
			t.Fatal(err)
		}
		want := []time.Duration{100 * ms, 200 * ms, 300 * ms, 400 * ms, 500 * ms}
		if !slices.Equal(s.Offsets, want) {
			t.Errorf("offsets %v, want %v", s.Offsets, want)
		}
	})
	t.Run("rescaled so the last lands at N/rate", func(t *testing.T) {
		for _, b := range []float64{0.25, 1, 3} {
			s, err := NewSchedule(1000, 50, b, nil, 7)
			if err != nil {
				t.Fatal(err)
			}
			if last := s.Seconds[len(s.Seconds)-1]; math.Abs(last-20) > 1e-9 {
				t.Errorf("burstiness %v: last arrival %v s, want 20", b, last)
			}
			if !slices.IsSorted(s.Offsets) || s.Offsets[0] <= 0 {
				t.Errorf("burstiness %v: offsets not increasing from a positive first gap", b)
			}
		}
	})
	t.Run("seeded", func(t *testing.T) {
		a, _ := NewSchedule(50, 5, 1, nil, 42)
		b, _ := NewSchedule(50, 5, 1, nil, 42)
		c, _ := NewSchedule(50, 5, 1, nil, 43)
		if !slices.Equal(a.Offsets, b.Offsets) || slices.Equal(a.Offsets, c.Offsets) {
			t.Error("same seed must repeat, another seed must differ")
		}
	})
}

// TestGapDistribution checks the gamma gaps' squared coefficient of
// variation, 1/burstiness (1 for Poisson), on many samples; the seed makes
// the check deterministic.
func TestGapDistribution(t *testing.T) {
	for _, b := range []float64{0.5, 1, 2, 8} {
		s, err := NewSchedule(200000, 100, b, nil, 3)
		if err != nil {
			t.Fatal(err)
		}
		var sum, sq float64
		prev := 0.0
		for _, x := range s.Seconds {
			g := x - prev
			prev = x
			sum += g
			sq += g * g
		}
		n := float64(len(s.Seconds))
		mean := sum / n
		cv2 := (sq/n - mean*mean) / (mean * mean)
		if math.Abs(mean-0.01) > 1e-9 {
			t.Errorf("burstiness %v: mean gap %v, want 0.01 after rescaling", b, mean)
		}
		if want := 1 / b; math.Abs(cv2-want) > 0.03*want+0.01 {
			t.Errorf("burstiness %v: CV² %v, want %v", b, cv2, want)
		}
	}
}

func TestRampUpRates(t *testing.T) {
	lin, err := NewSchedule(5, 0, 1, &RampUp{Strategy: "linear", StartRPS: 2, EndRPS: 10}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if want := []float64{2, 4, 6, 8, 10}; !slices.Equal(lin.Rates, want) {
		t.Errorf("linear rates %v, want %v", lin.Rates, want)
	}
	exp, err := NewSchedule(3, 0, 1, &RampUp{Strategy: "exponential", StartRPS: 1, EndRPS: 16}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if want := []float64{1, 4, 16}; !slices.Equal(exp.Rates, want) {
		t.Errorf("exponential rates %v, want %v", exp.Rates, want)
	}
	c, err := NewSchedule(4, 0, math.Inf(1), &RampUp{Strategy: "linear", StartRPS: 1, EndRPS: 4}, 1)
	if err != nil {
		t.Fatal(err)
	}
	// Constant gaps 1/rate with no rescaling: 1, 1/2, 1/3, 1/4 seconds.
	want := []float64{1, 1.5, 1.5 + 1.0/3, 1.5 + 1.0/3 + 0.25}
	for i := range want {
		if math.Abs(c.Seconds[i]-want[i]) > 1e-12 {
			t.Errorf("ramp offsets %v, want %v", c.Seconds, want)
			break
		}
	}
}

func TestScheduleErrors(t *testing.T) {
	tests := []struct {
		name  string
		n     int
		rate  float64
		burst float64
		ramp  *RampUp
		want  string
	}{
		{"no requests", 0, 1, 1, nil, "no requests"},
		{"negative rate", 3, -1, 1, nil, "request rate"},
		{"negative burstiness", 3, 1, -1, nil, "burstiness"},
		{"ramp with rate", 3, 5, 1, &RampUp{Strategy: "linear", StartRPS: 1, EndRPS: 2}, "leave the request rate unset"},
		{"unknown strategy", 3, 0, 1, &RampUp{Strategy: "cubic", StartRPS: 1, EndRPS: 2}, "unknown ramp-up strategy"},
		{"start above end", 3, 0, 1, &RampUp{Strategy: "linear", StartRPS: 3, EndRPS: 2}, "must not exceed"},
		{"exponential from zero", 3, 0, 1, &RampUp{Strategy: "exponential", StartRPS: 0, EndRPS: 2}, "cannot start at 0"},
		{"linear from zero", 3, 0, 1, &RampUp{Strategy: "linear", StartRPS: 0, EndRPS: 2}, "non-positive request rate"},
	}
	for _, tt := range tests {
		_, err := NewSchedule(tt.n, tt.rate, tt.burst, tt.ramp, 1)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err %v, want %q", tt.name, err, tt.want)
		}
	}
}
