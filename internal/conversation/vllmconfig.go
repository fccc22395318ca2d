package conversation

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// maxConfigBytes is the largest generator configuration file.
const maxConfigBytes = 1 << 20

// ReadGenerateConfig reads a vLLM generator configuration file, the format
// of benchmarks/multi_turn/generate_multi_turn.json, as it is: its
// text_files are resolved against the file's directory. Unknown keys are
// an error (vLLM ignores them), so that a misspelt key does not silently
// fall back to a default. The result is validated.
func ReadGenerateConfig(path string) (Synthetic, error) {
	var s Synthetic
	f, err := os.Open(path)
	if err != nil {
		return s, fmt.Errorf("read generator config: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxConfigBytes+1))
	if err != nil {
		return s, fmt.Errorf("read generator config: %w", err)
	}
	if len(data) > maxConfigBytes {
		return s, fileErr(path, 0, "over the maximum %d bytes for a generator config", maxConfigBytes)
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(data, &keys); err != nil {
		return s, configErr(path, data, err)
	}
	if _, ok := keys["filetype"]; !ok {
		return s, fileErr(path, lineAt(data, int64(bytes.IndexByte(data, '{'))), "filetype: missing; a generator configuration has \"filetype\": %q (a conversations file is a JSON list)", GenerateFiletype)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return s, configErr(path, data, err)
	}
	if dec.More() {
		return s, fileErr(path, lineAt(data, dec.InputOffset()), "unexpected data after the configuration object")
	}
	if s.Filetype != GenerateFiletype {
		return s, fileErr(path, lineOfKey(data, "filetype"), "filetype: %q, want %q", s.Filetype, GenerateFiletype)
	}
	dir := filepath.Dir(path)
	for i, t := range s.TextFiles {
		s.TextFiles[i] = resolve(dir, t)
	}
	if err := s.validate(""); err != nil {
		var fe *FieldError
		if errors.As(err, &fe) {
			return s, fileErr(path, lineOfPath(data, fe.Field), "%v", err)
		}
		return s, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// configErr names the line of a JSON error in a configuration file.
func configErr(path string, data []byte, err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fileErr(path, lineAt(data, se.Offset-1), "malformed JSON: %v", se)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fileErr(path, lineAt(data, te.Offset-1), "%s: want %s, got JSON %s", te.Field, te.Type, te.Value)
	}
	msg := err.Error()
	if i := strings.Index(msg, "unknown field "); i >= 0 {
		key := strings.Trim(msg[i+len("unknown field "):], `"`)
		return fileErr(path, lineOfKey(data, key), "unknown key %q", key)
	}
	return fileErr(path, 0, "%s", strings.TrimPrefix(msg, "json: "))
}

// lineAt returns the 1-based line of byte offset off in data.
func lineAt(data []byte, off int64) int {
	off = min(max(off, 0), int64(len(data)))
	return bytes.Count(data[:off], []byte{'\n'}) + 1
}

// lineOfKey returns the line of the first "key" in data, or 0.
func lineOfKey(data []byte, key string) int { return lineOfPath(data, key) }

// lineOfPath returns the line of a dotted key path's last key found in
// data, looking for each key after the one before it ("prompt_input",
// then "num_tokens", then "alpha"): the line of the deepest key written,
// or 0 when not even the first is.
func lineOfPath(data []byte, path string) int {
	off, line := 0, 0
	for _, key := range strings.Split(path, ".") {
		key, _, _ = strings.Cut(key, "[")
		i := bytes.Index(data[off:], []byte(`"`+key+`"`))
		if i < 0 {
			break
		}
		off += i
		line = lineAt(data, int64(off))
	}
	return line
}
