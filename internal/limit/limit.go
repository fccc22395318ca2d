// Package limit checks numbers against their documented maxima for the
// front doors that name them: scenario keys and bench flags. The maxima
// themselves belong to the packages that use the numbers (dataset.MaxLen,
// engine.MaxWarmups, ...).
package limit

import (
	"strconv"
	"time"
)

// A Check is one number against its maximum.
type Check struct {
	// Name is the key or flag the number came from.
	Name string
	// Over is true when the value is past the maximum (NaN is).
	Over bool
	// Value and Max are the value and the maximum as errors and docs
	// write them.
	Value, Max string
}

// Int checks an integer.
func Int(name string, v, max int) Check {
	return Check{name, v > max, strconv.Itoa(v), strconv.Itoa(max)}
}

// Float checks a number; nil (unset) passes.
func Float(name string, v *float64, max float64) Check {
	c := Check{Name: name, Max: strconv.FormatFloat(max, 'f', -1, 64)}
	if v != nil {
		c.Over, c.Value = !(*v <= max), strconv.FormatFloat(*v, 'g', -1, 64)
	}
	return c
}

// Duration checks a duration.
func Duration(name string, v, max time.Duration) Check {
	return Check{name, v > max, v.String(), max.String()}
}

// FirstOver returns the first check past its maximum.
func FirstOver(checks []Check) (Check, bool) {
	for _, c := range checks {
		if c.Over {
			return c, true
		}
	}
	return Check{}, false
}
