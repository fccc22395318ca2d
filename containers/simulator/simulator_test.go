package simulator

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/testcontainers/testcontainers-go"

	"github.com/servegate/servegate/containers/dockertest"
	"github.com/servegate/servegate/fixtures"
)

// TestContainer builds the image (or finds it by content hash), starts it,
// streams one completion, checks the ground truth, and cleans up.
func TestContainer(t *testing.T) {
	dockertest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	img, err := Image(ctx, os.Stderr)
	require.NoError(t, err)
	ctr, err := Run(ctx, img, WithProfile("cpu-small"), WithKnob("step_fixed_ms", "5"))
	testcontainers.CleanupContainer(t, ctr)
	require.NoError(t, err)
	base, err := ctr.BaseURL(ctx)
	require.NoError(t, err)

	body := `{"model":"servegate/sim-cpu-small","prompt":"The quick brown fox","max_tokens":8,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/completions", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Request-Id", "container-1")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	var texts []string
	var usage map[string]int
	done := false
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if line == "[DONE]" {
			done = true
			break
		}
		var c struct {
			Choices []struct{ Text string } `json:"choices"`
			Usage   map[string]int          `json:"usage"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &c), line)
		if len(c.Choices) > 0 {
			texts = append(texts, c.Choices[0].Text)
		}
		if c.Usage != nil {
			usage = c.Usage
		}
	}
	require.NoError(t, sc.Err())
	require.True(t, done, "stream ended without [DONE]")
	require.Len(t, texts, 8)
	// The image carries the Llama-3 tokenizer: "<|begin_of_text|>The quick brown fox" is 5 tokens.
	require.Equal(t, map[string]int{"prompt_tokens": 5, "completion_tokens": 8, "total_tokens": 13}, usage)

	truth, err := ctr.Truth(ctx, "container-1")
	require.NoError(t, err)
	require.Equal(t, 8, truth.OutputTokens)
	require.Len(t, truth.ChunkMS, 8)
	require.Equal(t, "length", truth.FinishReason)

	// A second Image call finds the image by its hash instead of rebuilding.
	tag, err := Image(ctx, nil)
	require.NoError(t, err)
	require.Equal(t, img, tag)
	inspect, err := ctr.Inspect(ctx)
	require.NoError(t, err)
	require.Equal(t, tag, inspect.Config.Image)
}

// TestContainerTokenizerFile: a scenario's own tokenizer replaces the
// image's Llama-3 one.
func TestContainerTokenizerFile(t *testing.T) {
	dockertest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	img, err := Image(ctx, nil)
	require.NoError(t, err)
	ctr, err := Run(ctx, img, WithProfile("instant"), WithTokenizerFile(fixtures.Tokenizer(t, fixtures.BERT)))
	testcontainers.CleanupContainer(t, ctr)
	require.NoError(t, err)
	base, err := ctr.BaseURL(ctx)
	require.NoError(t, err)
	resp, err := http.Post(base+"/v1/completions", "application/json",
		strings.NewReader(`{"prompt":"The quick brown fox","max_tokens":2}`))
	require.NoError(t, err)
	defer resp.Body.Close()
	var out struct {
		Usage map[string]int `json:"usage"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	require.Equal(t, 6, out.Usage["prompt_tokens"], "[CLS] the quick brown fox [SEP]")
}
