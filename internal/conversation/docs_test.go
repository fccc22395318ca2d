package conversation

import (
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

const docsPath = "../../docs/sessions.md"

// docsSection returns the "## Conversation sources" section of
// docs/sessions.md.
func docsSection(tb testing.TB) string {
	tb.Helper()
	doc, err := os.ReadFile(docsPath)
	if err != nil {
		tb.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(doc), "## Conversation sources\n")
	if !ok {
		tb.Fatal("docs/sessions.md has no section Conversation sources")
	}
	if i := strings.Index(sec, "\n#"); i >= 0 {
		sec = sec[:i]
	}
	return sec
}

// TestDocsNameEverything keeps the section true: every kind, distribution
// and key of a Source appears in it.
func TestDocsNameEverything(t *testing.T) {
	sec := docsSection(t)
	var words []string
	words = append(words, Kinds()...)
	words = append(words, Distributions()...)
	var walk func(reflect.Type)
	walk = func(ty reflect.Type) {
		for ty.Kind() == reflect.Pointer || ty.Kind() == reflect.Slice {
			ty = ty.Elem()
		}
		if ty.Kind() != reflect.Struct {
			return
		}
		for i := range ty.NumField() {
			f := ty.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if name != "" && name != "-" {
				words = append(words, name)
			}
			walk(f.Type)
		}
	}
	walk(reflect.TypeFor[Source]())
	for _, w := range words {
		if !strings.Contains(sec, "`"+w+"`") {
			t.Errorf("docs/sessions.md, Conversation sources, does not name `%s`", w)
		}
	}
}

// TestDocsExamples decodes every example of the section (strictly: no
// unknown key) and validates it.
func TestDocsExamples(t *testing.T) {
	blocks := regexp.MustCompile("(?s)```yaml source\n(.*?)```").FindAllStringSubmatch(docsSection(t), -1)
	kinds := map[string]bool{}
	for _, b := range blocks {
		var doc struct {
			Source Source `yaml:"source"`
		}
		dec := yaml.NewDecoder(strings.NewReader(b[1]))
		dec.KnownFields(true)
		if err := dec.Decode(&doc); err != nil {
			t.Errorf("%s: %v", b[1], err)
			continue
		}
		if err := doc.Source.Validate(); err != nil {
			t.Errorf("%s: %v", b[1], err)
		}
		kinds[doc.Source.Kind] = true
	}
	for _, k := range Kinds() {
		if !kinds[k] {
			t.Errorf("no example of a %s source", k)
		}
	}
}

// TestYAMLAsVLLMConfig checks that vLLM's generate_multi_turn.json, JSON
// being YAML, decodes as a source's keys and builds the same source as
// ReadGenerateConfig.
func TestYAMLAsVLLMConfig(t *testing.T) {
	data, err := os.ReadFile("testdata/generate_multi_turn.json")
	if err != nil {
		t.Fatal(err)
	}
	var src Source
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	dec.KnownFields(true)
	if err := dec.Decode(&src); err != nil {
		t.Fatal(err)
	}
	src.Kind = KindSynthetic
	if err := src.Validate(); err != nil {
		t.Fatal(err)
	}
	want, err := ReadGenerateConfig("testdata/generate_multi_turn.json")
	if err != nil {
		t.Fatal(err)
	}
	want.TextFiles = []string{"pg1184.txt"} // ReadGenerateConfig resolves them
	if !reflect.DeepEqual(src.Synthetic, want) {
		t.Errorf("YAML: %+v\nJSON: %+v", src.Synthetic, want)
	}
	a, b := mustLoad(t, src, "testdata", 4), mustLoad(t, Source{Kind: KindSynthetic, Path: "generate_multi_turn.json"}, "testdata", 4)
	if !reflect.DeepEqual(a, b) {
		t.Error("the YAML source and the JSON file gave different conversations")
	}
}
