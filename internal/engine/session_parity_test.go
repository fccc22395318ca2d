package engine

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/internal/conversation"
	"github.com/servegate/servegate/internal/metrics"
	"github.com/servegate/servegate/internal/sim"
	"github.com/servegate/servegate/internal/tokenizer"
)

// envMultiTurn names the directory that holds vLLM's
// benchmarks/multi_turn (benchmark_serving_multi_turn.py and its
// bench_dataset.py, bench_utils.py) for TestSessionsParityWithVLLM.
const envMultiTurn = "SERVEGATE_VLLM_MULTI_TURN"

// turnKey names one request of a conversation: its first user message and
// the number of user messages sent.
type turnKey struct {
	first string
	users int
}

// plainMessage is a message as vLLM's multi-turn client sends it.
type plainMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// messageRecorder serves the in-process simulator (gpu-8b profile, every
// answer exactly max_tokens long) and keeps the messages of every chat
// request, by conversation and turn.
func messageRecorder(tb testing.TB) (string, func() map[turnKey][]plainMessage) {
	tb.Helper()
	srv, err := sim.New(sim.Config{Profile: "gpu-8b", Set: map[string]string{"eos_min_ratio": "1", "model": "servegate/sim-parity"}})
	require.NoError(tb, err)
	var mu sync.Mutex
	got := map[turnKey][]plainMessage{}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var p struct {
			Messages []plainMessage `json:"messages"`
		}
		if r.URL.Path == "/v1/chat/completions" && json.Unmarshal(body, &p) == nil && len(p.Messages) > 0 {
			k := turnKey{}
			for _, m := range p.Messages {
				if m.Role == "user" {
					if k.users == 0 {
						k.first = m.Content
					}
					k.users++
				}
			}
			mu.Lock()
			got[k] = p.Messages
			mu.Unlock()
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		srv.ServeHTTP(w, r)
	}))
	tb.Cleanup(func() { hs.Close(); _ = srv.Close() })
	return hs.URL, func() map[turnKey][]plainMessage {
		mu.Lock()
		defer mu.Unlock()
		return got
	}
}

// parityConversations writes a conversations file in vLLM's multi-turn
// input format: 3 conversations of 3 user turns, whose assistant messages
// set each answer's length (vLLM's client asks for as many tokens as the
// file's answer has, and so does the file source).
func parityConversations(tb testing.TB, dir string) string {
	tb.Helper()
	var convs []map[string]any
	for c := range 3 {
		var msgs []plainMessage
		for k := range 3 {
			msgs = append(msgs,
				plainMessage{"user", fmt.Sprintf("Question %d of conversation %d: how do rivers shape the land around them?", k, c)},
				plainMessage{"assistant", strings.Repeat("water carries stone downhill and ", 2+k+c)})
		}
		convs = append(convs, map[string]any{"id": fmt.Sprintf("conv-%d", c), "messages": msgs})
	}
	b, err := json.Marshal(convs)
	require.NoError(tb, err)
	path := filepath.Join(dir, "conversations.json")
	require.NoError(tb, os.WriteFile(path, b, 0o644))
	return path
}

// statsLines keeps the lines of vLLM's client output that carry its TTFT
// and TPOT statistics.
func statsLines(out string) string {
	var keep []string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "ttft_ms") || strings.Contains(l, "tpot_ms") || strings.Contains(l, "count") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

// vllmVenv finds the Python venv `make vllm-image` leaves
// (containers/vllm/image/build.sh --info prints venv=...).
func vllmVenv(tb testing.TB) (string, error) {
	tb.Helper()
	out, err := exec.Command("../../containers/vllm/image/build.sh", "--info").Output()
	if err != nil {
		return "", fmt.Errorf("containers/vllm/image/build.sh --info: %v", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "venv="); ok {
			if _, err := os.Stat(filepath.Join(v, "bin", "python")); err != nil {
				return "", fmt.Errorf("no venv at %s (run make vllm-image)", v)
			}
			return v, nil
		}
	}
	return "", fmt.Errorf("build.sh --info printed no venv")
}

// TestSessionsParityWithVLLM drives vLLM's multi-turn client
// (benchmark_serving_multi_turn.py, from the venv `make vllm-image`
// leaves) and servegate's session driver over one conversations file
// against the same simulator (answers seeded by the request's seed 0, as
// vLLM's client sends it, and exactly max_tokens long), and checks that
// at every turn of every conversation both sent the same messages: the
// file's user turns with the server's actual earlier answers.
func TestSessionsParityWithVLLM(t *testing.T) {
	dir := os.Getenv(envMultiTurn)
	if dir == "" {
		t.Skipf("%s is not set: the directory of vLLM's benchmarks/multi_turn (benchmark_serving_multi_turn.py)", envMultiTurn)
	}
	if _, err := os.Stat(filepath.Join(dir, "benchmark_serving_multi_turn.py")); err != nil {
		t.Skipf("%s=%s holds no benchmark_serving_multi_turn.py", envMultiTurn, dir)
	}
	venv, err := vllmVenv(t)
	if err != nil {
		t.Skip(err)
	}
	tmp := t.TempDir()
	file := parityConversations(t, tmp)
	// vLLM's client loads the tokenizer with AutoTokenizer: the bundled
	// Llama-3 tokenizer.json in a model directory of its own.
	tokDir := filepath.Join(tmp, "tokenizer")
	require.NoError(t, os.MkdirAll(tokDir, 0o755))
	js, err := tokenizer.BundledJSON(tokenizer.Llama3)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(tokDir, "tokenizer.json"), js, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(tokDir, "tokenizer_config.json"), []byte(`{"tokenizer_class": "PreTrainedTokenizerFast"}`), 0o644))

	theirsURL, theirs := messageRecorder(t)
	cmd := exec.CommandContext(t.Context(), filepath.Join(venv, "bin", "python"), filepath.Join(dir, "benchmark_serving_multi_turn.py"),
		"-i", file, "-m", tokDir, "--served-model-name", "servegate/sim-parity", "-u", theirsURL,
		"-p", "1", "-k", "1", "--seed", "0")
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(), "HF_HUB_OFFLINE=1", "TRANSFORMERS_OFFLINE=1", "PYTHONPATH="+dir)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "vLLM's client:\n%s", out)

	tok, err := tokenizer.Bundled(tokenizer.Llama3)
	require.NoError(t, err)
	convs, err := conversation.Load(t.Context(), conversation.Source{Kind: conversation.KindFile, Path: file}, "", tok, 0)
	require.NoError(t, err)
	oursURL, ours := messageRecorder(t)
	cfg := chatConfig(oursURL)
	cfg.Model, cfg.Tokenizer = "servegate/sim-parity", tok
	cfg.ExtraBody = map[string]any{"seed": 0}
	res, err := RunSessions(t.Context(), cfg, Sessions{Conversations: convs, MaxActive: 1})
	require.NoError(t, err)
	for _, r := range res.Records {
		require.True(t, r.Success, r.Error)
	}

	// Side by side, for the record (not asserted: one run, a loaded machine).
	// vLLM's client corrects TTFT and TPOT by the first chunk's token
	// count (its TPOT is the decode time over the tokens after the first
	// chunk); servegate keeps vllm bench serve's definitions (TTFT to the
	// first chunk, TPOT over the tokens after the first).
	s := metrics.Summarize(res.Records, res.Duration, metrics.Options{})
	t.Logf("servegate: mean TTFT %.2f ms, median %.2f ms; mean TPOT %.2f ms, median %.2f ms (%d requests)", s.TTFT.Mean, s.TTFT.Median, s.TPOT.Mean, s.TPOT.Median, s.Completed)
	t.Logf("vLLM's multi-turn client (its statistics table):\n%s", statsLines(string(out)))

	want, got := theirs(), ours()
	require.Len(t, want, 9, "vLLM's client: 3 conversations of 3 turns\n%s", out)
	require.Len(t, got, 9)
	for k, msgs := range want {
		assert.Equal(t, msgs, got[k], "conversation %q, turn %d", k.first, k.users-1)
	}
}
