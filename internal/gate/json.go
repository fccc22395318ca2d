package gate

import (
	"encoding/json"
	"maps"
	"math"
	"slices"
)

// The JSON forms of Sample and Comparison: infinite or undefined numbers
// become null, the file configuration an object, direction and tolerance
// words.

// sampleJSON is the JSON form of a Sample, both ways: its own fields
// plus the bounds, null when infinite. plainSample drops Sample's
// methods, so that marshalling does not recurse.
type (
	plainSample Sample
	sampleJSON  struct {
		*plainSample
		Lo *float64 `json:"lo"`
		Hi *float64 `json:"hi"`
	}
)

// MarshalJSON writes the sample with an infinite bound as null.
func (s *Sample) MarshalJSON() ([]byte, error) {
	bound := func(v float64) *float64 {
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return nil
		}
		return &v
	}
	return json.Marshal(sampleJSON{(*plainSample)(s), bound(s.Lo), bound(s.Hi)})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (s *Sample) UnmarshalJSON(data []byte) error {
	in := sampleJSON{plainSample: (*plainSample)(s)}
	if err := json.Unmarshal(data, &in); err != nil {
		return err
	}
	s.Lo, s.Hi = math.Inf(-1), math.Inf(1)
	if in.Lo != nil {
		s.Lo = *in.Lo
	}
	if in.Hi != nil {
		s.Hi = *in.Hi
	}
	return nil
}

// comparisonJSON is the JSON form of a Comparison, both ways: the file
// configuration as an object, the direction and tolerance in words, and
// Delta as null when it is not finite.
type (
	plainComparison Comparison
	comparisonJSON  struct {
		*plainComparison
		Config    map[string]string `json:"config,omitempty"`
		Delta     *float64          `json:"delta"`
		Better    string            `json:"better,omitempty"`
		Tolerance string            `json:"tolerance,omitempty"`
	}
)

// MarshalJSON writes the comparison with the file configuration as an
// object, the direction and tolerance in words, and a non-finite Delta as
// null.
func (c *Comparison) MarshalJSON() ([]byte, error) {
	out := comparisonJSON{plainComparison: (*plainComparison)(c)}
	if len(c.Config) > 0 {
		out.Config = map[string]string{}
		for _, kv := range c.Config {
			out.Config[kv.Key] = kv.Value
		}
	}
	if c.Base != nil && c.Head != nil && !math.IsInf(c.Delta, 0) && !math.IsNaN(c.Delta) {
		d := c.Delta
		out.Delta = &d
	}
	if c.Gated {
		out.Better, out.Tolerance = directionWord(c.Better), c.Tolerance.String()
	}
	return json.Marshal(out)
}

// UnmarshalJSON reads what MarshalJSON writes. The configuration comes
// back sorted by key: JSON objects keep no order.
func (c *Comparison) UnmarshalJSON(data []byte) error {
	in := comparisonJSON{plainComparison: (*plainComparison)(c)}
	if err := json.Unmarshal(data, &in); err != nil {
		return err
	}
	c.Config = nil
	for _, k := range slices.Sorted(maps.Keys(in.Config)) {
		c.Config = append(c.Config, KeyValue{Key: k, Value: in.Config[k]})
	}
	c.Delta = math.NaN()
	if in.Delta != nil {
		c.Delta = *in.Delta
	}
	c.Better, _ = parseDirection(in.Better)
	if in.Tolerance != "" {
		t, err := ParseTolerance(in.Tolerance)
		if err != nil {
			return err
		}
		c.Tolerance = t
	}
	return nil
}
