package sim

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Every field of Params is a knob. Its YAML key is the field's yaml tag
// (max_num_seqs), its flag the key with dashes (--max-num-seqs) and its
// environment variable the key in upper case after EnvPrefix
// (SERVEGATE_SIM_MAX_NUM_SEQS). Precedence: flags > environment > YAML
// profile > DefaultParams.

// EnvPrefix starts the name of every environment variable the simulator
// reads.
const EnvPrefix = "SERVEGATE_SIM_"

//go:embed profiles/*.yaml
var profileFS embed.FS

// Knobs returns the YAML keys of every knob, sorted.
func Knobs() []string {
	var keys []string
	t := reflect.TypeFor[Params]()
	for i := range t.NumField() {
		keys = append(keys, t.Field(i).Tag.Get("yaml"))
	}
	sort.Strings(keys)
	return keys
}

// Profiles returns the names of the shipped profiles, sorted.
func Profiles() []string {
	entries, _ := profileFS.ReadDir("profiles")
	var names []string
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e.Name(), ".yaml"))
	}
	return names
}

// LoadProfile returns DefaultParams overlaid with a profile: a shipped
// profile's name (see Profiles) or the path of a YAML file. An unknown key or
// a value of the wrong type is an error naming the file and line.
func LoadProfile(nameOrPath string) (Params, error) {
	p := DefaultParams()
	if nameOrPath == "" {
		return p, nil
	}
	data, err := profileFS.ReadFile(path.Join("profiles", nameOrPath+".yaml"))
	src := "profile " + nameOrPath
	if err != nil {
		if !strings.ContainsAny(nameOrPath, "/.") {
			return p, fmt.Errorf("load profile: unknown profile %q (shipped: %s; or give a YAML file path)", nameOrPath, strings.Join(Profiles(), ", "))
		}
		data, err = os.ReadFile(nameOrPath)
		if err != nil {
			return p, fmt.Errorf("load profile: %w", err)
		}
		src = nameOrPath
	}
	if err := decodeYAML(data, &p); err != nil {
		return p, fmt.Errorf("load profile %s: %w", src, err)
	}
	return p, nil
}

// decodeYAML overlays a YAML document on p, refusing unknown keys.
func decodeYAML(data []byte, p *Params) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(p); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

// Set sets one knob from its text form, by YAML key.
func (p *Params) Set(key, value string) error {
	f, ok := knobField(p, key)
	if !ok {
		return fmt.Errorf("unknown knob %q (known: %s)", key, strings.Join(Knobs(), ", "))
	}
	value = strings.TrimSpace(value)
	switch f.Kind() {
	case reflect.String:
		f.SetString(value)
	case reflect.Int, reflect.Int64:
		v, err := strconv.ParseInt(value, 10, 64)
		if err != nil {
			return fmt.Errorf("knob %s: %q is not an integer", key, value)
		}
		f.SetInt(v)
	case reflect.Float64:
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return fmt.Errorf("knob %s: %q is not a number", key, value)
		}
		f.SetFloat(v)
	case reflect.Bool:
		v, err := strconv.ParseBool(value)
		if err != nil {
			return fmt.Errorf("knob %s: %q is not a boolean", key, value)
		}
		f.SetBool(v)
	default:
		return fmt.Errorf("knob %s: unsupported type %s", key, f.Kind())
	}
	return nil
}

// Help returns a knob's one-line description, by YAML key.
func Help(key string) string {
	t := reflect.TypeFor[Params]()
	for i := range t.NumField() {
		if t.Field(i).Tag.Get("yaml") == key {
			return t.Field(i).Tag.Get("help")
		}
	}
	return ""
}

// Get returns one knob's value in its text form.
func (p *Params) Get(key string) (string, bool) {
	f, ok := knobField(p, key)
	if !ok {
		return "", false
	}
	return fmt.Sprint(f.Interface()), true
}

func knobField(p *Params, key string) (reflect.Value, bool) {
	v := reflect.ValueOf(p).Elem()
	t := v.Type()
	for i := range t.NumField() {
		if t.Field(i).Tag.Get("yaml") == key {
			return v.Field(i), true
		}
	}
	return reflect.Value{}, false
}

// ApplyEnv sets every knob whose environment variable (EnvPrefix + upper-case
// key) is set. environ is os.Environ's form; unknown SERVEGATE_SIM_ variables
// are errors, so a typo does not pass silently. SERVEGATE_SIM_PROFILE and
// SERVEGATE_SIM_TOKENIZER, SERVEGATE_SIM_PORT and SERVEGATE_SIM_HOST are
// read by Main and skipped here.
func (p *Params) ApplyEnv(environ []string) error {
	var errs []error
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(k, EnvPrefix) {
			continue
		}
		key := strings.ToLower(strings.TrimPrefix(k, EnvPrefix))
		switch key {
		case "profile", "tokenizer", "port", "host":
			continue
		}
		if _, ok := knobField(p, key); !ok {
			errs = append(errs, fmt.Errorf("environment %s: unknown knob %q", k, key))
			continue
		}
		if err := p.Set(key, v); err != nil {
			errs = append(errs, fmt.Errorf("environment %s: %w", k, err))
		}
	}
	return errors.Join(errs...)
}
