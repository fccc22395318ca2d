package dataset

import (
	"fmt"
	"strconv"
)

// oversample draws samples again, uniformly with replacement, until there
// are n, giving each copy the next fresh request id, as vLLM's
// maybe_oversample_requests does. With noOversample it returns the samples
// as they are.
func oversample(samples []Sample, n int, s Spec) ([]Sample, error) {
	if !s.NoOversample && len(samples) < n && len(samples) > 0 {
		r := newPyRandom(s.Seed)
		base := len(samples)
		for i := range n - base {
			c := samples[r.below(base)]
			c.RequestID = s.RequestIDPrefix + strconv.Itoa(base+i)
			samples = append(samples, c)
		}
	}
	seen := make(map[string]bool, len(samples))
	for _, x := range samples {
		if seen[x.RequestID] {
			return nil, fmt.Errorf("duplicate request id %q", x.RequestID)
		}
		seen[x.RequestID] = true
	}
	return samples, nil
}
