package conversation

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
)

// The distribution names, as vLLM's multi-turn generator spells them in
// generate_multi_turn.json.
const (
	Constant  = "constant"
	Uniform   = "uniform"
	Zipf      = "zipf"
	Poisson   = "poisson"
	Lognormal = "lognormal"
)

// Distributions lists the distribution names, the closed word list that
// validation and docs read.
func Distributions() []string { return []string{Constant, Uniform, Zipf, Poisson, Lognormal} }

// Limits on a Distribution's parameters: far above any real use, they keep
// a typing slip from producing values no float can hold.
const (
	// MaxParam is the largest value, min, max or mean of a distribution
	// and the largest poisson alpha.
	MaxParam = 1e9
	// MaxZipfAlpha is the largest zipf alpha (numpy needs alpha > 1).
	MaxZipfAlpha = 100
	// MaxSigma is the largest lognormal sigma.
	MaxSigma = 100
)

// params lists the keys each distribution takes: required, then optional.
var params = map[string][2][]string{
	Constant:  {{"value"}, nil},
	Uniform:   {{"min", "max"}, nil},
	Zipf:      {{"alpha"}, {"max"}},
	Poisson:   {{"alpha"}, {"max"}},
	Lognormal: {{"mean", "sigma"}, {"max"}},
}

// field returns the value of d's parameter key.
func (d Distribution) field(key string) float64 {
	switch key {
	case "value":
		return d.Value
	case "min":
		return d.Min
	case "max":
		return d.Max
	case "alpha":
		return d.Alpha
	case "mean":
		return d.Mean
	case "sigma":
		return d.Sigma
	}
	return 0
}

// Validate checks d. path names d's key in errors (for example
// "prompt_input.num_tokens"); whole asks for a distribution of whole
// numbers (token and turn counts), which needs whole constant and uniform
// bounds, as vLLM draws integers only when both uniform bounds are
// integers. A parameter that is zero counts as absent, as in vLLM, where
// "max": 0 means no cap; a parameter the distribution does not take is an
// error.
func (d Distribution) Validate(path string, whole bool) error {
	ps, ok := params[d.Distribution]
	if !ok {
		if d.Distribution == "" {
			return fieldErr(path+".distribution", "missing; want one of %s", strings.Join(Distributions(), ", "))
		}
		return fieldErr(path+".distribution", "unknown distribution %q; want one of %s", d.Distribution, strings.Join(Distributions(), ", "))
	}
	for _, key := range []string{"value", "min", "max", "alpha", "mean", "sigma"} {
		v := d.field(key)
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fieldErr(path+"."+key, "%v is not a number", v)
		}
		if v != 0 && !slices.Contains(ps[0], key) && !slices.Contains(ps[1], key) {
			return fieldErr(path+"."+key, "%s takes no %s (it takes %s)", d.Distribution, key, strings.Join(append(ps[0], ps[1]...), ", "))
		}
		if math.Abs(v) > MaxParam {
			return fieldErr(path+"."+key, "%v is over the maximum %g", v, float64(MaxParam))
		}
	}
	switch d.Distribution {
	case Constant:
		if d.Value < 0 {
			return fieldErr(path+".value", "%v must not be negative", d.Value)
		}
		if whole && d.Value != math.Trunc(d.Value) {
			return fieldErr(path+".value", "%v must be a whole number", d.Value)
		}
	case Uniform:
		if d.Min < 0 || d.Max < d.Min {
			return fieldErr(path, "uniform needs 0 <= min <= max, got min %v, max %v", d.Min, d.Max)
		}
		if whole && (d.Min != math.Trunc(d.Min) || d.Max != math.Trunc(d.Max)) {
			return fieldErr(path, "uniform bounds must be whole numbers here, got min %v, max %v", d.Min, d.Max)
		}
	case Zipf:
		if !(d.Alpha > 1) || d.Alpha > MaxZipfAlpha {
			return fieldErr(path+".alpha", "zipf needs 1 < alpha <= %d, got %v", MaxZipfAlpha, d.Alpha)
		}
	case Poisson:
		if d.Alpha < 0 {
			return fieldErr(path+".alpha", "poisson needs alpha >= 0, got %v", d.Alpha)
		}
	case Lognormal:
		if d.Sigma < 0 || d.Sigma > MaxSigma {
			return fieldErr(path+".sigma", "lognormal needs 0 <= sigma <= %d, got %v", MaxSigma, d.Sigma)
		}
	}
	if d.Max < 0 {
		return fieldErr(path+".max", "%v must not be negative", d.Max)
	}
	return nil
}

// Float draws a real number from a valid d: constant gives Value, uniform
// a value in [Min, Max) (numpy's uniform), zipf and poisson whole numbers,
// lognormal exp(Mean + Sigma·N(0,1)); zipf, poisson and lognormal are then
// capped at Max when Max is set, as vLLM caps them (np.minimum).
func (d Distribution) Float(r *rand.Rand) float64 {
	var v float64
	switch d.Distribution {
	case Constant:
		return d.Value
	case Uniform:
		return d.Min + (d.Max-d.Min)*r.Float64()
	case Zipf:
		v = float64(zipf(r, d.Alpha))
	case Poisson:
		v = float64(poisson(r, d.Alpha))
	case Lognormal:
		v = math.Exp(d.Mean + d.Sigma*r.NormFloat64())
	}
	if d.Max > 0 {
		v = min(v, d.Max)
	}
	return v
}

// Int draws a whole number from a valid d validated as whole: uniform draws
// from Min to Max inclusive (numpy's randint(min, max + 1)), lognormal
// rounds half to even after the cap (numpy's round), the others are whole
// already. The draw is then clamped to [0, ceiling], the limit of the
// quantity it counts; vLLM has no such ceiling.
func (d Distribution) Int(r *rand.Rand, ceiling int) int {
	var v float64
	switch d.Distribution {
	case Uniform:
		lo, hi := int64(d.Min), int64(d.Max)
		v = float64(lo + r.Int64N(hi-lo+1))
	case Lognormal:
		v = math.RoundToEven(d.Float(r))
	default:
		v = d.Float(r)
	}
	if !(v >= 0) {
		return 0
	}
	return int(min(v, float64(ceiling)))
}

// zipf draws numpy's zipf(alpha): k >= 1 with P(k) proportional to
// k^-alpha. Go's Zipf with v = 1 draws k-1.
func zipf(r *rand.Rand, alpha float64) uint64 {
	return rand.NewZipf(r, alpha, 1, math.MaxUint64-1).Uint64() + 1
}

// poisson draws a Poisson variate of mean lam: multiplication of uniforms
// for lam < 10 and Hörmann's transformed rejection (PTRS) above, the
// methods numpy uses.
func poisson(r *rand.Rand, lam float64) int64 {
	if lam <= 0 {
		return 0
	}
	if lam < 10 {
		enlam, prod := math.Exp(-lam), 1.0
		var k int64
		for {
			prod *= r.Float64()
			if prod <= enlam {
				return k
			}
			k++
		}
	}
	slam, loglam := math.Sqrt(lam), math.Log(lam)
	b := 0.931 + 2.53*slam
	a := -0.059 + 0.02483*b
	invalpha := 1.1239 + 1.1328/(b-3.4)
	vr := 0.9277 - 3.6224/(b-2)
	for {
		u := r.Float64() - 0.5
		v := r.Float64()
		us := 0.5 - math.Abs(u)
		k := math.Floor((2*a/us+b)*u + lam + 0.43)
		if us >= 0.07 && v <= vr {
			return int64(k)
		}
		if k < 0 || (us < 0.013 && v > us) {
			continue
		}
		lg, _ := math.Lgamma(k + 1)
		if math.Log(v)+math.Log(invalpha)-math.Log(a/(us*us)+b) <= -lam+k*loglam-lg {
			return int64(k)
		}
	}
}

// NewRand returns a generator for Distribution draws, seeded from parts
// (a run seed, a stream number, ...) through splitmix64, so
// that nearby seeds (seed 3 and 4, hash ids 2353 and 2366) give unrelated
// streams; PCG seeded with them directly gives correlated ones.
func NewRand(parts ...uint64) *rand.Rand {
	var a, b uint64 = 0x9e3779b97f4a7c15, 0x2545f4914f6cdd1d
	for _, p := range parts {
		a = splitmix64(a ^ p)
		b = splitmix64(b ^ a)
	}
	return rand.New(rand.NewPCG(a, b))
}

// splitmix64 is Vigna's SplitMix64 finalizer.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}
