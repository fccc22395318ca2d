package scenario

import (
	"fmt"
	"strings"
)

// SimKnobs turns a simulator target's args ("--max_num_seqs=4",
// "slowdown=1.1") into simulator knob settings keyed by their YAML names.
func (t Target) SimKnobs() (map[string]string, error) {
	set := map[string]string{}
	for _, a := range t.Args {
		k, v, ok := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("simulator arg %q: want --knob=value", a)
		}
		set[strings.ReplaceAll(k, "-", "_")] = v
	}
	return set, nil
}
