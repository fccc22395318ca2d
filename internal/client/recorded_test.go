package client

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/servegate/servegate/fixtures"
	"github.com/servegate/servegate/internal/metrics"
)

// recordedDir holds real vLLM 0.13.0 responses recorded with curl (they
// come with the containers/vllm work).
var recordedDir = filepath.Join(fixtures.Dir(), "fixtures", "vllm-recorded")

// expectRecorded decodes a recorded stream independently of the client,
// with encoding/json over each data line: the text of choices[0] of every
// event, the output chunks (chat's role-only chunk excluded) and the last
// usage.
func expectRecorded(tb testing.TB, body []byte, chat bool) (text string, chunks, completion, prompt int) {
	tb.Helper()
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var ev struct {
			Choices []struct {
				Text  string `json:"text"`
				Delta struct {
					Role    string `json:"role"`
					Content string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
			Usage *struct {
				Prompt     int `json:"prompt_tokens"`
				Completion int `json:"completion_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			tb.Fatalf("recorded event: %v", err)
		}
		if ev.Usage != nil {
			completion, prompt = ev.Usage.Completion, ev.Usage.Prompt
		}
		if len(ev.Choices) == 0 {
			continue
		}
		c := ev.Choices[0]
		text += c.Text + c.Delta.Content
		if chat && c.Delta.Role != "" && c.Delta.Content == "" {
			continue
		}
		chunks++
	}
	return text, chunks, completion, prompt
}

// recordedStatus reads the status code from a recorded headers file.
func recordedStatus(tb testing.TB, path string) int {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		tb.Fatalf("%s: no status line", path)
	}
	code, err := strconv.Atoi(f[1])
	if err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
	return code
}

// TestRealVLLMRecordings replays every streamed completions and chat
// response recorded from a real vLLM 0.13.0 server, split at odd sizes,
// and checks the record against an independent decoding of the same
// bytes; error answers must come out as HTTP failures with vLLM's
// message.
func TestRealVLLMRecordings(t *testing.T) {
	bodies, _ := filepath.Glob(filepath.Join(recordedDir, "*.body.txt"))
	if len(bodies) == 0 {
		t.Skipf("no recordings in %s (they come with the containers/vllm branch)", recordedDir)
	}
	ran := 0
	for _, path := range bodies {
		name := strings.TrimSuffix(filepath.Base(path), ".body.txt")
		var backend string
		switch {
		case strings.Contains(name, "chat"):
			backend = BackendOpenAIChat
		case strings.Contains(name, "completions") || strings.HasPrefix(name, "error-"):
			backend = BackendOpenAI
		default:
			continue // health, metrics, models, ...
		}
		if strings.Contains(name, "nonstream") {
			continue // the benchmark always streams
		}
		body, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		status := recordedStatus(t, filepath.Join(recordedDir, name+".headers.txt"))
		ran++
		t.Run(name, func(t *testing.T) {
			for _, split := range []int{0, 1, 13} {
				srv := newReplay(t, status, body, split)
				rec := newClient(backend, srv.URL).Do(t.Context(), Request{Prompt: "p", PromptLen: 3})
				if status != http.StatusOK {
					var e struct {
						Error struct{ Message string } `json:"error"`
					}
					_ = json.Unmarshal(body, &e)
					if rec.Failure != metrics.FailureHTTPStatus || rec.HTTPStatus != status || !strings.HasSuffix(rec.Error, e.Error.Message) || e.Error.Message == "" {
						t.Errorf("split %d: kind %q status %d error %q, want HTTP %d with %q", split, rec.Failure, rec.HTTPStatus, rec.Error, status, e.Error.Message)
					}
					continue
				}
				text, chunks, completion, prompt := expectRecorded(t, body, backend == BackendOpenAIChat)
				if !rec.Success {
					t.Fatalf("split %d: failed: %s", split, rec.Error)
				}
				if rec.GeneratedText != text || len(rec.ITL)+1 != chunks {
					t.Errorf("split %d: text %q, %d chunks; want %q, %d", split, rec.GeneratedText, len(rec.ITL)+1, text, chunks)
				}
				if completion > 0 && rec.OutputTokens != completion {
					t.Errorf("split %d: output tokens %d, want usage's %d", split, rec.OutputTokens, completion)
				}
				if rec.ServerPromptTokens != prompt {
					t.Errorf("split %d: prompt tokens %d, want %d", split, rec.ServerPromptTokens, prompt)
				}
				checkTimings(t, rec)
			}
		})
	}
	if ran == 0 {
		t.Fatal("no streamed recordings found")
	}
}
