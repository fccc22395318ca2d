package scenario

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// LoadFile reads a scenario file: one scenario, a list of them, or several
// YAML documents of either. Defaults are applied and every value is
// validated; the error names the file, the line and the field.
func LoadFile(path string) ([]*Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load scenario: %w", err)
	}
	return Parse(path, data)
}

// LoadDir reads every *.yaml and *.yml file of dir, in name order. Two
// scenarios with the same name are an error.
func LoadDir(dir string) ([]*Scenario, error) {
	var files []string
	for _, pat := range []string{"*.yaml", "*.yml"} {
		m, err := filepath.Glob(filepath.Join(dir, pat))
		if err != nil {
			return nil, fmt.Errorf("load scenarios: %w", err)
		}
		files = append(files, m...)
	}
	sort.Strings(files)
	if len(files) == 0 {
		return nil, fmt.Errorf("load scenarios: no *.yaml or *.yml file in %s", dir)
	}
	var all []*Scenario
	seen := map[string]*Scenario{}
	for _, f := range files {
		scs, err := LoadFile(f)
		if err != nil {
			return nil, err
		}
		for _, sc := range scs {
			if prev, ok := seen[sc.Name]; ok {
				return nil, sc.errorf("name", "%q is also the name of the scenario at %s:%d", sc.Name, prev.File, prev.Line)
			}
			seen[sc.Name] = sc
			all = append(all, sc)
		}
	}
	return all, nil
}

// Parse reads scenarios from data; file names them in errors and is the
// directory relative paths are resolved against ("" for the working
// directory).
func Parse(file string, data []byte) ([]*Scenario, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var out []*Scenario
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, syntaxError(file, err)
		}
		if len(doc.Content) == 0 {
			continue
		}
		root := doc.Content[0]
		switch root.Kind {
		case yaml.MappingNode:
			sc, err := parseOne(file, root, "")
			if err != nil {
				return nil, err
			}
			out = append(out, sc)
		case yaml.SequenceNode:
			for i, n := range root.Content {
				sc, err := parseOne(file, n, fmt.Sprintf("[%d]", i))
				if err != nil {
					return nil, err
				}
				out = append(out, sc)
			}
		default:
			return nil, &Error{File: file, Line: root.Line, Msg: fmt.Sprintf("want a scenario (a mapping) or a list of scenarios, got %s", describe(root))}
		}
	}
	if len(out) == 0 {
		return nil, &Error{File: file, Msg: "no scenario in the file"}
	}
	seen := map[string]*Scenario{}
	for _, sc := range out {
		if prev, ok := seen[sc.Name]; ok {
			return nil, sc.errorf("name", "%q is also the name of the scenario at line %d", sc.Name, prev.Line)
		}
		seen[sc.Name] = sc
	}
	return out, nil
}

func parseOne(file string, n *yaml.Node, prefix string) (*Scenario, error) {
	if n.Kind != yaml.MappingNode {
		return nil, &Error{File: file, Line: n.Line, Field: prefix, Msg: fmt.Sprintf("want a scenario (a mapping), got %s", describe(n))}
	}
	sc := &Scenario{File: file, Line: n.Line}
	d := &decoder{file: file, pos: positions{}}
	if err := d.decode(n, reflect.ValueOf(sc).Elem(), ""); err != nil {
		return nil, err
	}
	sc.pos = d.pos
	sc.pos[""] = n.Line
	enc, err := yaml.Marshal(measured(canonical(n)))
	if err != nil {
		return nil, fmt.Errorf("load scenario: %w", err)
	}
	sum := sha256.Sum256(enc)
	sc.SHA = hex.EncodeToString(sum[:])
	sc.Workload, sc.keys = workload(measured(canonical(n)))
	sc.resolvePaths()
	sc.applyDefaults()
	if err := sc.validate(); err != nil {
		return nil, err
	}
	sc.addSLOPercentiles()
	return sc, nil
}

// resolvePaths makes the dataset path and a tokenizer.json path relative to
// the scenario file's directory.
func (sc *Scenario) resolvePaths() {
	dir := filepath.Dir(sc.File)
	if sc.File == "" {
		return
	}
	if p := sc.Dataset.Path; p != "" && !filepath.IsAbs(p) {
		sc.Dataset.Path = filepath.Join(dir, p)
	}
	if p := sc.Target.Tokenizer; strings.HasSuffix(p, ".json") && !filepath.IsAbs(p) {
		sc.Target.Tokenizer = filepath.Join(dir, p)
	}
	if b := sc.Target.Build; b != nil && b.Context != "" && !filepath.IsAbs(b.Context) {
		b.Context = filepath.Join(dir, b.Context)
	}
	if p := sc.Target.Profile; IsProfileFile(p) && !filepath.IsAbs(p) {
		sc.Target.Profile = filepath.Join(dir, p)
	}
	for i, b := range sc.Target.Backends {
		if IsProfileFile(b.Profile) && !filepath.IsAbs(b.Profile) {
			sc.Target.Backends[i].Profile = filepath.Join(dir, b.Profile)
		}
	}
}

// IsProfileFile reports whether a simulator profile names a YAML file
// rather than a shipped profile: shipped names have no '/' and no '.'.
func IsProfileFile(profile string) bool { return strings.ContainsAny(profile, "/.") }

// canonical copies a node without comments, styles and aliases, so that the
// scenario's SHA depends on its content alone.
func canonical(n *yaml.Node) *yaml.Node {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	c := &yaml.Node{Kind: n.Kind, Tag: n.Tag, Value: n.Value}
	for _, sub := range n.Content {
		c.Content = append(c.Content, canonical(sub))
	}
	return c
}

// measured drops from a canonical scenario node what does not change the
// measurement (description, slo.bounds, harness), so that tightening a
// bound or a harness limit keeps results comparable with the previous
// ones.
func measured(n *yaml.Node) *yaml.Node {
	drop := func(m *yaml.Node, key string) {
		for i := 0; i+1 < len(m.Content); i += 2 {
			if m.Content[i].Value == key {
				m.Content = append(m.Content[:i], m.Content[i+2:]...)
				return
			}
		}
	}
	drop(n, "description")
	drop(n, "harness")
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == "slo" && n.Content[i+1].Kind == yaml.MappingNode {
			drop(n.Content[i+1], "bounds")
		}
	}
	return n
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// parserProblems are the messages of yaml.v3's parser errors (as opposed
// to its scanner's). yaml.v3 reports a parser error at the 0-based line of
// the construct it was reading (or of the problem), a scanner error at the
// 1-based line, so a parser error's line is one short.
var parserProblems = []string{
	"did not find expected <stream-start>", "did not find expected <document start>",
	"found undefined tag handle", "did not find expected node content",
	"did not find expected '-' indicator", "did not find expected key",
	"did not find expected ',' or ']'", "did not find expected ',' or '}'",
	"found duplicate %YAML directive", "found incompatible YAML document", "found duplicate %TAG directive",
}

// syntaxError turns a yaml.v3 parse error into an Error with the 1-based
// line.
func syntaxError(file string, err error) error {
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		line, _ := strconv.Atoi(m[1])
		if slices.Contains(parserProblems, m[2]) {
			line++
		}
		return &Error{File: file, Line: line, Msg: "invalid YAML: " + m[2]}
	}
	return &Error{File: file, Msg: "invalid YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")}
}
