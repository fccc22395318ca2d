package conversation

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

// TestDistributionDraws checks each distribution's range, caps, rounding
// and mean over many draws from a fixed seed.
func TestDistributionDraws(t *testing.T) {
	tests := []struct {
		name     string
		d        Distribution
		lo, hi   int     // every draw in [lo, hi]
		hitLo    bool    // lo is drawn
		hitHi    bool    // hi is drawn
		mean, at float64 // mean within at of mean (at 0: unchecked)
	}{
		{"constant", Distribution{Distribution: Constant, Value: 7}, 7, 7, true, true, 7, 1e-9},
		{"uniform inclusive", Distribution{Distribution: Uniform, Min: 12, Max: 18}, 12, 18, true, true, 15, 0.1},
		{"zipf capped", Distribution{Distribution: Zipf, Alpha: 1.2, Max: 50}, 1, 50, true, true, 0, 0},
		{"zipf uncapped", Distribution{Distribution: Zipf, Alpha: 3}, 1, MaxTokens, true, false, 1.3684, 0.05}, // zeta(2)/zeta(3)
		{"poisson small", Distribution{Distribution: Poisson, Alpha: 3}, 0, 100, true, false, 3, 0.1},
		{"poisson large", Distribution{Distribution: Poisson, Alpha: 400}, 300, 500, false, false, 400, 1},
		{"poisson capped", Distribution{Distribution: Poisson, Alpha: 400, Max: 390}, 300, 390, false, true, 0, 0},
		{"lognormal capped", Distribution{Distribution: Lognormal, Mean: 6, Sigma: 4, Max: 1500}, 0, 1500, true, true, 0, 0},
		{"lognormal", Distribution{Distribution: Lognormal, Mean: 3, Sigma: 0.5}, 1, 200, false, false, math.Exp(3 + 0.125), 0.5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.d.Validate("d", true); err != nil {
				t.Fatal(err)
			}
			r := rand.New(rand.NewPCG(1, 2))
			const n = 20000
			sum, sawLo, sawHi := 0.0, false, false
			for range n {
				v := tt.d.Int(r, MaxTokens)
				if v < tt.lo || v > tt.hi {
					t.Fatalf("draw %d outside [%d, %d]", v, tt.lo, tt.hi)
				}
				sawLo, sawHi = sawLo || v == tt.lo, sawHi || v == tt.hi
				sum += float64(v)
			}
			if sawLo != tt.hitLo && tt.hitLo || sawHi != tt.hitHi && tt.hitHi {
				t.Errorf("drew lo %v, hi %v; want %v, %v", sawLo, sawHi, tt.hitLo, tt.hitHi)
			}
			if tt.at > 0 && math.Abs(sum/n-tt.mean) > tt.at {
				t.Errorf("mean %.4f, want %.4f ± %v", sum/n, tt.mean, tt.at)
			}
		})
	}
}

// TestDistributionFloat checks real-valued draws: uniform in [min, max),
// lognormal unrounded, and the ceiling of Int.
func TestDistributionFloat(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	u := Distribution{Distribution: Uniform, Min: 0.5, Max: 1.5}
	if err := u.Validate("think_time", false); err != nil {
		t.Fatal(err)
	}
	if err := u.Validate("think_time", true); err == nil {
		t.Error("fractional uniform bounds validated as whole")
	}
	fractional := false
	for range 1000 {
		v := u.Float(r)
		if v < 0.5 || v >= 1.5 {
			t.Fatalf("uniform draw %v outside [0.5, 1.5)", v)
		}
		fractional = fractional || v != math.Trunc(v)
	}
	if !fractional {
		t.Error("no fractional uniform draw")
	}
	big := Distribution{Distribution: Constant, Value: 5000}
	if v := big.Int(r, 100); v != 100 {
		t.Errorf("Int with ceiling 100 = %d", v)
	}
}

// TestDistributionValidate checks the error's field path for bad
// parameters.
func TestDistributionValidate(t *testing.T) {
	tests := []struct {
		d     Distribution
		field string
	}{
		{Distribution{}, "x.distribution"},
		{Distribution{Distribution: "gamma"}, "x.distribution"},
		{Distribution{Distribution: Constant, Value: -1}, "x.value"},
		{Distribution{Distribution: Constant, Value: 2.5}, "x.value"},
		{Distribution{Distribution: Constant, Value: math.NaN()}, "x.value"},
		{Distribution{Distribution: Uniform, Min: 5, Max: 2}, "x"},
		{Distribution{Distribution: Uniform, Min: 1, Max: 2e9}, "x.max"},
		{Distribution{Distribution: Zipf, Alpha: 0.5}, "x.alpha"},
		{Distribution{Distribution: Poisson, Alpha: -2}, "x.alpha"},
		{Distribution{Distribution: Lognormal, Mean: 1, Sigma: -1}, "x.sigma"},
		{Distribution{Distribution: Lognormal, Mean: 1, Sigma: 1, Value: 3}, "x.value"},
		{Distribution{Distribution: Zipf, Alpha: 2, Max: -3}, "x.max"},
	}
	for _, tt := range tests {
		err := tt.d.Validate("x", true)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != tt.field {
			t.Errorf("%+v: got %v, want an error on %s", tt.d, err, tt.field)
		}
	}
}
