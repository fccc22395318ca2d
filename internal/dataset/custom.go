package dataset

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
	"time"

	"github.com/servegate/servegate/internal/tokenizer"
)

// row is one prompt read from a JSONL file.
type row struct {
	prompt    string
	outputLen int     // 0: the dataset's default
	ts        float64 // arrival time in seconds, when hasTS
	hasTS     bool
	line      int
}

// readJSONL calls parse for every non-blank line of a JSONL file with the
// line's number.
func readJSONL(path string, parse func(line int, obj map[string]json.RawMessage) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 1<<30)
	for n := 1; sc.Scan(); n++ {
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(b, &obj); err != nil {
			return fileErr(path, n, "%s", jsonMsg(err))
		}
		if i, field := InvalidUTF8(b); i >= 0 {
			return fileErr(path, n, "%s: byte 0x%02x is not UTF-8; vLLM reads the file as UTF-8 and refuses it", field, b[i])
		}
		if err := parse(n, obj); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	return nil
}

// readCustom reads custom JSONL rows: a string "prompt", an optional
// positive integer "output_tokens" and an optional "timestamp" (seconds as
// a number, or an RFC 3339 time).
func readCustom(path string) ([]row, error) {
	var rows []row
	err := readJSONL(path, func(n int, obj map[string]json.RawMessage) error {
		r := row{line: n}
		raw, ok := obj["prompt"]
		if !ok {
			return fileErr(path, n, "missing field \"prompt\"")
		}
		if r.prompt, ok = jsonString(raw); !ok {
			return fileErr(path, n, "field \"prompt\": want a string, got %s", raw)
		}
		if raw, ok := obj["output_tokens"]; ok {
			if err := json.Unmarshal(raw, &r.outputLen); err != nil || r.outputLen < 1 {
				return fileErr(path, n, "field \"output_tokens\": want a positive integer, got %s", raw)
			}
		}
		if raw, ok := obj["timestamp"]; ok {
			ts, err := parseTimestamp(raw)
			if err != nil {
				return fileErr(path, n, "field \"timestamp\": %v", err)
			}
			r.ts, r.hasTS = ts, true
		}
		rows = append(rows, r)
		return nil
	})
	return rows, err
}

// parseTimestamp reads a time in seconds, or an RFC 3339 time as seconds
// since the Unix epoch.
func parseTimestamp(raw json.RawMessage) (float64, error) {
	var f float64
	if json.Unmarshal(raw, &f) == nil {
		return f, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		t, err := time.Parse(time.RFC3339Nano, s)
		if err == nil {
			return float64(t.UnixNano()) / 1e9, nil
		}
	}
	return 0, fmt.Errorf("want seconds or an RFC 3339 time, got %s", raw)
}

// arrange orders rows for sampling: by timestamp for a trace replay (file
// order among equal times), shuffled with the seed, or as in the file.
func arrange(s Spec, rows []row) error {
	switch {
	case s.TraceReplay:
		for _, r := range rows {
			if !r.hasTS {
				return fileErr(s.Path, r.line, "trace replay needs a \"timestamp\" on every row")
			}
		}
		sort.SliceStable(rows, func(i, j int) bool { return rows[i].ts < rows[j].ts })
	case !s.DisableShuffle:
		pyShuffle(newPyRandom(s.Seed), rows)
	}
	return nil
}

// arrival is a trace time as an offset from the trace's first request.
func arrival(ts, first float64) time.Duration {
	return time.Duration((ts - first) * float64(time.Second))
}

// loadCustom builds the custom dataset (vLLM's CustomDataset).
func loadCustom(ctx context.Context, s Spec, tok *tokenizer.Tokenizer) ([]Sample, error) {
	rows, err := readCustom(s.Path)
	if err != nil {
		return nil, err
	}
	return promptRows(ctx, s, tok, rows, s.Custom.OutputLen)
}

// promptRows turns JSONL rows into samples the way vLLM's CustomDataset
// does: ordered, chat-formatted unless skipped, counted with special
// tokens, then oversampled.
func promptRows(ctx context.Context, s Spec, tok *tokenizer.Tokenizer, rows []row, outputLen int) ([]Sample, error) {
	if len(rows) == 0 {
		return nil, fileErr(s.Path, 0, "no rows")
	}
	if err := arrange(s, rows); err != nil {
		return nil, err
	}
	if !s.SkipChatTemplate && (s.TokenizerConfig == nil || s.TokenizerConfig.ChatTemplate == "") {
		return nil, fmt.Errorf("the tokenizer has no chat template: give a tokenizer_config.json with chat_template (Spec.TokenizerConfig) or skip the chat template")
	}
	n := s.NumPrompts
	if n < 0 {
		n = len(rows)
	}
	var samples []Sample
	for i, r := range rows[:min(n, len(rows))] {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		prompt := r.prompt
		if !s.SkipChatTemplate {
			var err error
			if prompt, err = s.TokenizerConfig.userTurn(r.prompt); err != nil {
				return nil, fileErr(s.Path, r.line, "%v", err)
			}
		}
		x := Sample{
			Prompt:    prompt,
			PromptLen: countTokens(tok, prompt, true),
			OutputLen: outputLen,
			RequestID: s.RequestIDPrefix + strconv.Itoa(i),
		}
		if r.outputLen > 0 {
			x.OutputLen = r.outputLen
		}
		if s.TraceReplay {
			x.Arrival, x.HasArrival = arrival(r.ts, rows[0].ts), true
		}
		samples = append(samples, x)
	}
	if s.TraceReplay {
		return samples, nil
	}
	return oversample(samples, n, s)
}
