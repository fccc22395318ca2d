package dataset

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/servegate/servegate/internal/tokenizer"
)

// sonnetBase is the instruction every sonnet prompt starts with (vLLM's).
const sonnetBase = "Pick as many lines as you can from these poem lines:\n"

// maxSonnetRejects bounds the draws that may in a row give a prompt longer
// than InputLen; vLLM would loop forever.
const maxSonnetRejects = 1000

// readLines reads a text file's lines, each with its newline, as Python's
// readlines does.
func readLines(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var lines []string
	r := bufio.NewReader(f)
	for {
		line, err := r.ReadString('\n')
		if line != "" {
			lines = append(lines, line)
		}
		if err != nil {
			break
		}
	}
	return lines, nil
}

// loadSonnet builds the sonnet dataset (vLLM's SonnetDataset): the base
// instruction, the poem's first lines as a shared prefix of about PrefixLen
// tokens, then lines drawn at random (with replacement) up to about InputLen
// tokens; a draw whose chat-formatted prompt is longer than InputLen is
// drawn again. Line counts come from the mean line length in tokens, rounded
// half to even as Python's round does. openai-chat gets the raw prompt,
// other backends the chat-formatted one; PromptLen is always the formatted
// prompt's length.
func loadSonnet(ctx context.Context, s Spec, tok *tokenizer.Tokenizer) ([]Sample, error) {
	lines, err := readLines(s.Path)
	if err != nil {
		return nil, err
	}
	if len(lines) == 0 {
		return nil, fileErr(s.Path, 0, "no lines")
	}
	cfg := s.TokenizerConfig
	if cfg == nil || cfg.ChatTemplate == "" {
		return nil, fmt.Errorf("the tokenizer has no chat template, which sonnet needs: give a tokenizer_config.json with chat_template (Spec.TokenizerConfig)")
	}
	total := 0
	for _, l := range lines {
		total += countTokens(tok, l, true)
	}
	avg := float64(total) / float64(len(lines))
	baseFmt, err := cfg.userTurn(sonnetBase)
	if err != nil {
		return nil, err
	}
	p := s.Sonnet
	baseOffset := countTokens(tok, baseFmt, true)
	if p.InputLen <= baseOffset {
		return nil, fmt.Errorf("input length %d must be higher than the base prompt length (%d)", p.InputLen, baseOffset)
	}
	numInput := int(math.RoundToEven(float64(p.InputLen-baseOffset) / avg))
	numPrefix := max(int(math.RoundToEven(float64(p.PrefixLen-baseOffset)/avg)), 0)
	prefix := strings.Join(lines[:min(numPrefix, len(lines))], "")
	r := newPyRandom(s.Seed)
	var samples []Sample
	for rejects := 0; len(samples) < s.NumPrompts; {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var b strings.Builder
		b.WriteString(sonnetBase)
		b.WriteString(prefix)
		for range numInput - numPrefix {
			b.WriteString(lines[int(r.random()*float64(len(lines)))])
		}
		prompt := b.String()
		formatted, err := cfg.userTurn(prompt)
		if err != nil {
			return nil, err
		}
		n := countTokens(tok, formatted, true)
		if n > p.InputLen {
			if rejects++; rejects == maxSonnetRejects {
				return nil, fileErr(s.Path, 0, "%d draws in a row gave prompts longer than the input length %d; raise it", rejects, p.InputLen)
			}
			continue
		}
		rejects = 0
		if s.Backend != "openai-chat" {
			prompt = formatted
		}
		samples = append(samples, Sample{Prompt: prompt, PromptLen: n, OutputLen: p.OutputLen, RequestID: s.RequestIDPrefix + strconv.Itoa(len(samples))})
	}
	return samples, nil
}
