package scenario

import (
	"fmt"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// GPUs is a vllm or container target's request for GPUs, as docker run
// --gpus takes it: all of them (gpus: all), a count (gpus: 2), or device
// ids (gpus: [0, 1], or the GPUs' UUIDs). The zero value asks for none.
type GPUs struct {
	// All asks for every GPU.
	All bool `json:"all,omitempty"`
	// Count asks for that many GPUs.
	Count int `json:"count,omitempty"`
	// IDs asks for these devices: indexes or UUIDs.
	IDs []string `json:"ids,omitempty"`
}

// None reports whether g asks for no GPU.
func (g GPUs) None() bool { return !g.All && g.Count == 0 && len(g.IDs) == 0 }

// String is g as the scenario file writes it: all, 2, [0, 1].
func (g GPUs) String() string {
	switch {
	case g.All:
		return "all"
	case g.Count > 0:
		return strconv.Itoa(g.Count)
	case len(g.IDs) > 0:
		return "[" + strings.Join(g.IDs, ", ") + "]"
	}
	return "none"
}

// MarshalYAML writes g as the file does, nothing for no GPU.
func (g GPUs) MarshalYAML() (any, error) {
	switch {
	case g.None():
		return nil, nil
	case g.All:
		return "all", nil
	case g.Count > 0:
		return g.Count, nil
	}
	return g.IDs, nil
}

// decodeNode reads all, a positive count, or a list of device ids.
func (g *GPUs) decodeNode(n *yaml.Node) error {
	const want = "want all, a count of GPUs, or a list of device ids such as [0, 1]"
	*g = GPUs{}
	switch {
	case n.Kind == yaml.ScalarNode && n.Tag == "!!str" && n.Value == "all":
		g.All = true
	case n.Kind == yaml.ScalarNode && n.Tag == "!!int":
		c, err := strconv.Atoi(n.Value)
		if err != nil || c < 1 {
			return fmt.Errorf("%s; got %s", want, describe(n))
		}
		g.Count = c
	case n.Kind == yaml.SequenceNode && len(n.Content) > 0:
		for _, e := range n.Content {
			if e.Kind != yaml.ScalarNode || (e.Tag != "!!int" && e.Tag != "!!str") || e.Value == "" {
				return fmt.Errorf("%s; got %s in the list", want, describe(e))
			}
			g.IDs = append(g.IDs, e.Value)
		}
	default:
		return fmt.Errorf("%s; got %s", want, describe(n))
	}
	return nil
}
