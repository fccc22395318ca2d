package stats

import "math"

// StudentCDF is the distribution function of Student's t with df
// degrees of freedom at x >= 0. It integrates the density by Simpson's
// rule.
func StudentCDF(x float64, df int) float64 {
	nu := float64(df)
	la, _ := math.Lgamma((nu + 1) / 2)
	lb, _ := math.Lgamma(nu / 2)
	c := math.Exp(la-lb) / math.Sqrt(nu*math.Pi)
	f := func(t float64) float64 { return c * math.Pow(1+t*t/nu, -(nu+1)/2) }
	const steps = 2000
	h := x / steps
	sum := f(0) + f(x)
	for i := 1; i < steps; i++ {
		w := 2.0
		if i%2 == 1 {
			w = 4
		}
		sum += w * f(float64(i)*h)
	}
	return 0.5 + sum*h/3
}

// StudentQuantile is the p-quantile (p > 0.5) of Student's t with df
// degrees of freedom. It inverts StudentCDF by bisection.
func StudentQuantile(p float64, df int) float64 {
	lo, hi := 0.0, 1000.0
	for range 100 {
		mid := (lo + hi) / 2
		if StudentCDF(mid, df) < p {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}
