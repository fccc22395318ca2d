package dataset

import (
	"context"
	"encoding/json"

	"github.com/servegate/servegate/internal/tokenizer"
)

// readSpecBench reads Spec-Bench's question.jsonl: rows with a "turns" list
// whose first entry is the prompt and a "category", keeping the rows of
// category (all when empty).
func readSpecBench(path, category string) ([]row, error) {
	var rows []row
	err := readJSONL(path, func(n int, obj map[string]json.RawMessage) error {
		raw, ok := obj["turns"]
		if !ok {
			return fileErr(path, n, "missing field \"turns\"")
		}
		var turns []string
		if err := json.Unmarshal(raw, &turns); err != nil || len(turns) == 0 {
			return fileErr(path, n, "field \"turns\": want a non-empty list of strings, got %s", raw)
		}
		var cat string
		if raw, ok := obj["category"]; ok {
			if cat, ok = jsonString(raw); !ok {
				return fileErr(path, n, "field \"category\": want a string, got %s", raw)
			}
		}
		if category == "" || category == cat {
			rows = append(rows, row{prompt: turns[0], line: n})
		}
		return nil
	})
	return rows, err
}

// loadSpecBench builds the spec_bench dataset (vLLM's SpecBench): the first
// turn of each question, chat-formatted unless skipped, with a fixed output
// length.
func loadSpecBench(ctx context.Context, s Spec, tok *tokenizer.Tokenizer) ([]Sample, error) {
	rows, err := readSpecBench(s.Path, s.SpecBench.Category)
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 && s.SpecBench.Category != "" {
		return nil, fileErr(s.Path, 0, "no rows of category %q", s.SpecBench.Category)
	}
	return promptRows(ctx, s, tok, rows, s.SpecBench.OutputLen)
}
