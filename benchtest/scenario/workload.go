package scenario

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"slices"

	"gopkg.in/yaml.v3"
)

// workload hashes a measured scenario node without its target block: the
// whole, and each top-level key apart.
func workload(n *yaml.Node) (string, map[string]string) {
	keys := map[string]string{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i].Value
		if k == "target" {
			continue
		}
		enc, err := yaml.Marshal(n.Content[i+1])
		if err != nil {
			// A node that was just decoded encodes again.
			enc = []byte(err.Error())
		}
		sum := sha256.Sum256(enc)
		keys[k] = hex.EncodeToString(sum[:])
	}
	all := sha256.New()
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		all.Write([]byte(k + " " + keys[k] + "\n"))
	}
	return hex.EncodeToString(all.Sum(nil)), keys
}

// WorkloadDiff returns the top-level keys whose content differs between
// the workloads of a and b, sorted: dataset, load, slo and the like. The
// target block is not part of a workload.
func WorkloadDiff(a, b *Scenario) []string {
	var out []string
	for k, h := range a.keys {
		if b.keys[k] != h {
			out = append(out, k)
		}
	}
	for k := range b.keys {
		if _, ok := a.keys[k]; !ok {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}
