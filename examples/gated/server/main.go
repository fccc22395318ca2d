// Command server is the example's server under test: an OpenAI-compatible
// chat completions endpoint that streams max_tokens words, the first
// after firstToken and each next one after perToken. A pull request that
// makes it slower is what servegate compare catches.
package main

import (
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"time"
)

// The server's costs: the wait before the first token (a prefill) and
// between tokens (a decode step).
const (
	firstToken = 40 * time.Millisecond
	perToken   = 5 * time.Millisecond
)

const model = "example-server"

func main() {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {})
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"object":"list","data":[{"id":%q,"object":"model"}]}`, model)
	})
	mux.HandleFunc("POST /v1/chat/completions", chat)
	log.Fatal(http.ListenAndServe(":8000", mux))
}

// chat streams the answer as server-sent events, then the usage.
func chat(w http.ResponseWriter, r *http.Request) {
	var req struct {
		MaxTokens           int `json:"max_tokens"`
		MaxCompletionTokens int `json:"max_completion_tokens"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, "want a JSON body", http.StatusBadRequest)
		return
	}
	n := max(req.MaxTokens, req.MaxCompletionTokens, 1)
	w.Header().Set("Content-Type", "text/event-stream")
	flusher, _ := w.(http.Flusher)
	send := func(v any) {
		data, _ := json.Marshal(v)
		fmt.Fprintf(w, "data: %s\n\n", data)
		if flusher != nil {
			flusher.Flush()
		}
	}
	time.Sleep(firstToken)
	for i := range n {
		if i > 0 {
			time.Sleep(perToken)
		}
		finish := any(nil)
		if i == n-1 {
			finish = "length"
		}
		send(map[string]any{"object": "chat.completion.chunk", "model": model,
			"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": " word"}, "finish_reason": finish}}})
	}
	send(map[string]any{"object": "chat.completion.chunk", "model": model, "choices": []any{},
		"usage": map[string]any{"completion_tokens": n}})
	fmt.Fprint(w, "data: [DONE]\n\n")
}
