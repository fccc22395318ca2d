package client

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"testing"
	"time"
)

// events reads every event of stream, step bytes a read.
func events(stream []byte, step int) ([][2]string, error) {
	r := newSSEReader(&chunkedReader{b: stream, step: step}, func() time.Duration { return 0 }, make([]byte, 64), 0, nil, 1<<20)
	var out [][2]string
	for {
		ev, err := r.next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, [2]string{string(ev.Type), string(ev.Data)})
	}
}

// FuzzSSESplit: however the bytes are split across reads, the reader
// yields the same events (the seed corpus runs as a normal test).
func FuzzSSESplit(f *testing.F) {
	for _, name := range []string{"vllm-0.13-completions.sse", "vllm-0.13-chat.sse", "vllm-0.13-chat-continuous-usage.sse"} {
		f.Add(readFixture(f, name), 1)
		f.Add(readFixture(f, name), 7)
	}
	f.Add([]byte("data:a\r\ndata: b\r\rdata:c\n\n: ping\nevent: x\ndata\n\n"), 1)
	f.Add([]byte("data: x\r"), 1)
	f.Fuzz(func(t *testing.T, stream []byte, step int) {
		if step <= 0 || step > 1<<16 {
			return
		}
		whole, err := events(stream, len(stream)+1)
		if err != nil {
			t.Fatal(err)
		}
		split, err := events(stream, step)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(whole, split) {
			t.Errorf("split %d changed the events:\nwhole %q\nsplit %q", step, whole, split)
		}
	})
}

// FuzzParseChunk: on any input the scanner does not panic, and on valid
// JSON it agrees with encoding/json about choices[0]'s text and the usage.
func FuzzParseChunk(f *testing.F) {
	for _, name := range []string{"vllm-0.13-completions.sse", "vllm-0.13-chat-continuous-usage.sse"} {
		evs, _ := events(readFixture(f, name), 1<<20)
		for _, ev := range evs {
			f.Add([]byte(ev[1]))
		}
	}
	f.Add([]byte(`{"choices":[{"text":"a\u00e9\ud83e\udd50\n\"","delta":null}],"usage":{"completion_tokens":3}}`))
	f.Add([]byte(`{"choices":[{"delta":{"content":"x","role":"assistant"}},{"text":"second"}]}`))
	f.Add([]byte(`{"error":{"message":"boom"}}`))
	f.Add([]byte(`{"choices": [ ] , "usage" : null }`))
	f.Add([]byte(`{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"f","arguments":"{\"a\""}}]},"finish_reason":"tool_calls"}],"usage":{"completion_tokens":2,"completion_tokens_details":{"reasoning_tokens":1}}}`))
	f.Add([]byte(`{"choices":[{"delta":{"reasoning_content":"x","reasoning":"x","tool_calls":[{"function":null},{}]}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var scratch []byte
		c, text, err := parseChunk(data, nil, &scratch, &toolCalls{})
		var v map[string]any
		if !json.Valid(data) || json.Unmarshal(data, &v) != nil || v == nil {
			return // invalid JSON or not an object: the scanner may reject it
		}
		for _, k := range []string{`"choices"`, `"usage"`, `"text"`, `"content"`, `"delta"`, `"completion_tokens"`} {
			if bytes.Count(data, []byte(k)) > 1 {
				return // duplicate keys: encoding/json keeps the last, the scanner all
			}
		}
		if err != nil {
			t.Fatalf("valid JSON rejected: %v", err)
		}
		want, hasChoices := "", false
		if choices, ok := v["choices"].([]any); ok && len(choices) > 0 {
			first, isObj := choices[0].(map[string]any)
			hasChoices = isObj
			if s, ok := first["text"].(string); ok {
				want += s
			}
			if d, ok := first["delta"].(map[string]any); ok {
				if s, ok := d["content"].(string); ok {
					want += s
				}
			}
		}
		// Raw invalid UTF-8 passes through the scanner; encoding/json turns
		// each bad byte into U+FFFD, as a range over the string does.
		if string([]rune(string(text))) != want || c.choices != hasChoices {
			t.Errorf("text %q choices %v, encoding/json says %q %v", text, c.choices, want, hasChoices)
		}
		if u, ok := v["usage"].(map[string]any); ok {
			if n, ok := u["completion_tokens"].(float64); ok && n == float64(int(n)) && c.completion != int(n) {
				t.Errorf("completion tokens %d, encoding/json says %v", c.completion, n)
			}
		}
	})
}
