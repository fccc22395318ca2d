package scenario

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// An Error is a problem with a scenario file: one message naming the file,
// the line and the field.
type Error struct {
	// File is the scenario file ("" when parsed from bytes with no name).
	File string
	// Line is the 1-based line of the field, 0 when unknown.
	Line int
	// Field is the dotted path of the field ("load.request_rate",
	// "slo.bounds[1]"), "" for the file as a whole.
	Field string
	// Msg says what is wrong.
	Msg string
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
	} else {
		b.WriteString("<scenario>")
	}
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	b.WriteString(": ")
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// positions maps a field path to the line it was written on. A path absent
// from the map was not written (its value is the default).
type positions map[string]int

// line returns the line of path, or of its nearest written parent.
func (p positions) line(path string) int {
	for {
		if l, ok := p[path]; ok {
			return l
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			return p[""]
		}
		path = path[:i]
	}
}

// has reports whether path was written in the file.
func (p positions) has(path string) bool { _, ok := p[path]; return ok }

// A nodeDecoder decodes itself from a YAML node (an SLO bound, a duration);
// the decoder adds the file, line and field to its error.
type nodeDecoder interface {
	decodeNode(n *yaml.Node) error
}

// decoder walks a YAML node tree into Go values, rejecting unknown keys and
// wrong types, and records where each field was written.
type decoder struct {
	file string
	pos  positions
}

func (d *decoder) errorf(n *yaml.Node, path, format string, args ...any) error {
	return &Error{File: d.file, Line: n.Line, Field: path, Msg: fmt.Sprintf(format, args...)}
}

var decoderType = reflect.TypeFor[nodeDecoder]()

func (d *decoder) decode(n *yaml.Node, v reflect.Value, path string) error {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	d.pos[path] = n.Line
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		v.SetZero()
		return nil
	}
	if v.CanAddr() && v.Addr().Type().Implements(decoderType) {
		if err := v.Addr().Interface().(nodeDecoder).decodeNode(n); err != nil {
			return d.errorf(n, path, "%v", err)
		}
		return nil
	}
	switch v.Kind() {
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		return d.decode(n, v.Elem(), path)
	case reflect.Struct:
		return d.structure(n, v, path)
	case reflect.String:
		if n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
			return d.errorf(n, path, "want a string, got %s", describe(n))
		}
		v.SetString(n.Value)
	case reflect.Bool:
		if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" {
			return d.errorf(n, path, "want true or false, got %s", describe(n))
		}
		b, _ := strconv.ParseBool(n.Value)
		v.SetBool(b)
	case reflect.Int, reflect.Int64:
		if n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
			return d.errorf(n, path, "want an integer, got %s", describe(n))
		}
		var i int64
		if err := n.Decode(&i); err != nil {
			return d.errorf(n, path, "want an integer, got %s", describe(n))
		}
		v.SetInt(i)
	case reflect.Float64:
		f, ok := number(n)
		if !ok {
			return d.errorf(n, path, "want a number, got %s", describe(n))
		}
		v.SetFloat(f)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return d.errorf(n, path, "want a list, got %s", describe(n))
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, c := range n.Content {
			if err := d.decode(c, s.Index(i), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		v.Set(s)
	case reflect.Map:
		return d.mapping(n, v, path)
	default:
		return d.errorf(n, path, "cannot decode into %s", v.Type())
	}
	return nil
}

func (d *decoder) structure(n *yaml.Node, v reflect.Value, path string) error {
	if n.Kind != yaml.MappingNode {
		return d.errorf(n, path, "want a mapping of keys, got %s", describe(n))
	}
	fields := map[string][]int{}
	var known []string
	yamlFields(v.Type(), nil, fields, &known)
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		sub := join(path, k.Value)
		if k.Kind != yaml.ScalarNode {
			return d.errorf(k, path, "want a key, got %s", describe(k))
		}
		if seen[k.Value] {
			return d.errorf(k, sub, "duplicate key")
		}
		seen[k.Value] = true
		fi, ok := fields[k.Value]
		if !ok {
			return d.errorf(k, sub, "unknown key (known keys here: %s)", strings.Join(known, ", "))
		}
		if err := d.decode(val, v.FieldByIndex(fi), sub); err != nil {
			return err
		}
		d.pos[sub] = k.Line
	}
	return nil
}

// yamlFields collects the YAML keys of struct type t with their field
// indexes: a tag's name (options such as omitempty dropped), and the keys
// of an embedded struct tagged ",inline" as the struct's own.
func yamlFields(t reflect.Type, at []int, fields map[string][]int, known *[]string) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("yaml")
		name, opts, _ := strings.Cut(tag, ",")
		idx := append(append([]int(nil), at...), i)
		if name == "" && strings.Contains(opts, "inline") && f.Type.Kind() == reflect.Struct {
			yamlFields(f.Type, idx, fields, known)
			continue
		}
		if name == "" || name == "-" {
			continue
		}
		fields[name] = idx
		*known = append(*known, name)
	}
}

func (d *decoder) mapping(n *yaml.Node, v reflect.Value, path string) error {
	if n.Kind != yaml.MappingNode {
		return d.errorf(n, path, "want a mapping, got %s", describe(n))
	}
	m := reflect.MakeMapWithSize(v.Type(), len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		sub := join(path, k.Value)
		if k.Kind != yaml.ScalarNode {
			return d.errorf(k, path, "want a key, got %s", describe(k))
		}
		if m.MapIndex(reflect.ValueOf(k.Value)).IsValid() {
			return d.errorf(k, sub, "duplicate key")
		}
		elem := reflect.New(v.Type().Elem()).Elem()
		switch elem.Kind() {
		case reflect.Interface:
			var x any
			if err := val.Decode(&x); err != nil {
				return d.errorf(val, sub, "%v", err)
			}
			if x != nil {
				elem.Set(reflect.ValueOf(x))
			}
		case reflect.String:
			// Environment values and headers: any scalar, as written.
			if val.Kind != yaml.ScalarNode {
				return d.errorf(val, sub, "want a string, got %s", describe(val))
			}
			elem.SetString(val.Value)
		default:
			if err := d.decode(val, elem, sub); err != nil {
				return err
			}
		}
		d.pos[sub] = k.Line
		m.SetMapIndex(reflect.ValueOf(k.Value), elem)
	}
	v.Set(m)
	return nil
}

// decodeNode reads a duration as time.ParseDuration does, or a bare 0.
func (dur *Duration) decodeNode(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!int" && n.Value == "0" {
		*dur = 0
		return nil
	}
	if n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
		return fmt.Errorf("want a duration such as 30s or 5m, got %s", describe(n))
	}
	t, err := time.ParseDuration(n.Value)
	if err != nil {
		return fmt.Errorf("want a duration such as 30s or 5m, got %q", n.Value)
	}
	*dur = Duration(t)
	return nil
}

// number reads a YAML int or float, and also the strings inf and +inf
// (which YAML would otherwise read as text).
func number(n *yaml.Node) (float64, bool) {
	if n.Kind != yaml.ScalarNode {
		return 0, false
	}
	switch n.Tag {
	case "!!int", "!!float":
		var f float64
		if err := n.Decode(&f); err != nil {
			return 0, false
		}
		return f, true
	case "!!str":
		switch strings.ToLower(n.Value) {
		case "inf", "+inf", "infinity":
			return math.Inf(1), true
		}
	}
	return 0, false
}

// describe names a node's type and value for an error message.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!str":
			return fmt.Sprintf("string %q", n.Value)
		case "!!int", "!!float":
			return "number " + n.Value
		case "!!bool":
			return "boolean " + n.Value
		}
		return n.Value
	}
	return "nothing"
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}
