package stats

import "math"

// NormalCDF is the standard normal distribution function Φ(z).
func NormalCDF(z float64) float64 {
	return 0.5 * math.Erfc(-z/math.Sqrt2)
}

// NormalQuantile is the inverse of NormalCDF: the z with Φ(z) = p.
// It is -Inf at 0, +Inf at 1 and NaN outside [0, 1].
func NormalQuantile(p float64) float64 {
	return -math.Sqrt2 * math.Erfcinv(2*p)
}
