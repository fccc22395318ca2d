package dataset

import (
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/fixtures"
)

// shareGPTIDs maps each first-turn text in fixtures/datasets/sharegpt.json
// to the entry's id, so tests can say which entries a load kept.
func shareGPTIDs(t *testing.T) map[string]string {
	t.Helper()
	data, err := os.ReadFile(fixture("sharegpt.json"))
	require.NoError(t, err)
	var entries []struct {
		ID    string `json:"id"`
		Convs []struct {
			Value string `json:"value"`
		} `json:"conversations"`
	}
	require.NoError(t, json.Unmarshal(data, &entries))
	ids := map[string]string{}
	for _, e := range entries {
		if len(e.Convs) > 0 {
			ids[e.Convs[0].Value] = e.ID
		}
	}
	return ids
}

type kept struct {
	id, requestID     string
	promptLen, outLen int
}

func keptOf(t *testing.T, samples []Sample) []kept {
	ids := shareGPTIDs(t)
	var out []kept
	for _, s := range samples {
		out = append(out, kept{ids[s.Prompt], s.RequestID, s.PromptLen, s.OutputLen})
	}
	return out
}

func TestShareGPT(t *testing.T) {
	tok := loadTokenizer(t, fixtures.Llama3)
	// Every expectation here is what vLLM v0.13 selects on this file:
	// fixtures/datasets/crosscheck.py replays vLLM's ShareGPTDataset with
	// CPython's random and the tokenizers library (token counts include BOS,
	// as vLLM counts them).
	tests := []struct {
		name string
		spec Spec
		want []kept
	}{
		{
			name: "file order, lengths from the completion",
			spec: Spec{NumPrompts: 5, DisableShuffle: true},
			// dropped: empty, one-turn, no-conversations (fewer than two turns),
			// short-prompt (2 < 4), short-output (2 < 4), long-prompt (1290 > 1024),
			// long-total (852 + 1454 > 2048).
			want: []kept{
				{"capital", "0", 13, 15},
				{"russian-japanese", "1", 22, 15},
				{"three-turns", "2", 8, 10},
				{"chinese-emoji", "3", 15, 19},
				{"four-tokens", "4", 4, 7},
			},
		},
		{
			name: "fixed output length lifts the output filter",
			spec: Spec{NumPrompts: 7, DisableShuffle: true, ShareGPT: ShareGPTParams{OutputLen: 100}},
			want: []kept{
				{"capital", "0", 13, 100},
				{"russian-japanese", "1", 22, 100},
				{"short-output", "2", 9, 100},
				{"long-total", "3", 852, 100},
				{"three-turns", "4", 8, 100},
				{"chinese-emoji", "5", 15, 100},
				{"four-tokens", "6", 4, 100},
			},
		},
		{
			name: "stops at num prompts",
			spec: Spec{NumPrompts: 2, DisableShuffle: true, RequestIDPrefix: "sg-"},
			want: []kept{{"capital", "sg-0", 13, 15}, {"russian-japanese", "sg-1", 22, 15}},
		},
		{
			name: "shuffled with seed 0",
			spec: Spec{NumPrompts: 5},
			want: []kept{
				{"chinese-emoji", "0", 15, 19},
				{"russian-japanese", "1", 22, 15},
				{"capital", "2", 13, 15},
				{"four-tokens", "3", 4, 7},
				{"three-turns", "4", 8, 10},
			},
		},
		{
			name: "shuffled with seed 1",
			spec: Spec{NumPrompts: 5, Seed: 1},
			want: []kept{
				{"three-turns", "0", 8, 10},
				{"chinese-emoji", "1", 15, 19},
				{"capital", "2", 13, 15},
				{"four-tokens", "3", 4, 7},
				{"russian-japanese", "4", 22, 15},
			},
		},
		{
			name: "oversampled with fresh ids",
			spec: Spec{NumPrompts: 8, DisableShuffle: true},
			want: []kept{
				{"capital", "0", 13, 15},
				{"russian-japanese", "1", 22, 15},
				{"three-turns", "2", 8, 10},
				{"chinese-emoji", "3", 15, 19},
				{"four-tokens", "4", 4, 7},
				{"chinese-emoji", "5", 15, 19},
				{"chinese-emoji", "6", 15, 19},
				{"capital", "7", 13, 15},
			},
		},
		{
			name: "no oversample",
			spec: Spec{NumPrompts: 8, DisableShuffle: true, NoOversample: true},
			want: []kept{
				{"capital", "0", 13, 15},
				{"russian-japanese", "1", 22, 15},
				{"three-turns", "2", 8, 10},
				{"chinese-emoji", "3", 15, 19},
				{"four-tokens", "4", 4, 7},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.spec.Name = ShareGPT
			tt.spec.Path = fixture("sharegpt.json")
			got, err := Load(context.Background(), tt.spec, tok)
			require.NoError(t, err)
			assert.Equal(t, tt.want, keptOf(t, got))
			again, err := Load(context.Background(), tt.spec, tok)
			require.NoError(t, err)
			assert.Equal(t, got, again, "same seed, same samples")
		})
	}
}

func TestShareGPTErrors(t *testing.T) {
	tok := loadTokenizer(t, fixtures.Llama3)
	tests := []struct {
		name, path, want string
	}{
		{"value not a string", fixture("sharegpt_bad_value.json"), fixture("sharegpt_bad_value.json") + `:3: entry 1: conversations[0] has no string "value"`},
		{"syntax", fixture("sharegpt_bad_syntax.json"), fixture("sharegpt_bad_syntax.json") + `:3: entry 1: malformed JSON: invalid character '"' after object key:value pair`},
		{"filters leave nothing", fixture("sharegpt_all_filtered.json"), fixture("sharegpt_all_filtered.json") + `: the length filters left no conversation: 2 too short (prompt or output < 4 tokens), 0 too long (prompt > 1024 or prompt + output > 2048 tokens)`},
		{"not an array", writeTemp(t, "obj.json", "{\"conversations\": []}\n"), "obj.json:1: want a JSON array of conversations"},
		{"no two-turn entry", writeTemp(t, "few.json", "[\n{\"conversations\": []},\n{}\n]\n"), "few.json: no entry with two or more conversation turns (2 entries)"},
		{"null value", writeTemp(t, "null.json", "[\n{\"conversations\": [{\"value\": \"What is the capital of France?\"}, {\"value\": null}]}\n]\n"), `null.json:2: entry 0: conversations[1] has no string "value"`},
		// encoding/json would read the byte as U+FFFD; vLLM refuses the file.
		{"value not UTF-8", writeTemp(t, "latin1.json", "[\n{\"conversations\": [{\"value\": \"What is the capital of France?\"},\n {\"value\": \"caf\xe9 Paris\"}]}\n]\n"), `latin1.json:3: entry 0: conversations[1].value: byte 0xe9 is not UTF-8`},
		{"missing file", "/nonexistent/sharegpt.json", "open /nonexistent/sharegpt.json: no such file or directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(context.Background(), Spec{Name: ShareGPT, Path: tt.path}, tok)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			assert.Contains(t, err.Error(), "load sharegpt dataset: ")
		})
	}
}
