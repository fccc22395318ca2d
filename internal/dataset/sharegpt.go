package dataset

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"

	"github.com/servegate/servegate/internal/tokenizer"
)

// ShareGPT length filters (vLLM's is_valid_sequence defaults).
const (
	minSeqLen      = 4    // prompts and completions shorter than this are dropped
	maxPromptLen   = 1024 // prompts longer than this are dropped
	maxSequenceLen = 2048 // prompt + output longer than this are dropped
)

// conversation is one usable ShareGPT entry: its first two turns.
type conversation struct {
	prompt, completion string
}

// readShareGPT reads a ShareGPT JSON file: an array of objects whose
// "conversations" lists turns with a "value". Entries with fewer than two
// turns are skipped, as vLLM does; anything malformed is an error naming its
// line.
func readShareGPT(path string) ([]conversation, int, error) {
	data, err := readFileLimited(path)
	if err != nil {
		return nil, 0, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('[') {
		return nil, 0, fileErr(path, lineAt(data, dec.InputOffset()), "want a JSON array of conversations")
	}
	var convs []conversation
	total := 0
	for dec.More() {
		start := skipSpace(data, dec.InputOffset())
		var entry struct {
			Conversations *[]struct {
				Value json.RawMessage `json:"value"`
			} `json:"conversations"`
		}
		if err := dec.Decode(&entry); err != nil {
			return nil, 0, fileErr(path, errLine(data, start, err), "entry %d: %v", total, jsonMsg(err))
		}
		if i, field := InvalidUTF8(data[start:dec.InputOffset()]); i >= 0 {
			return nil, 0, fileErr(path, lineAt(data, start+int64(i)), "entry %d: %s: byte 0x%02x is not UTF-8; vLLM reads the file as UTF-8 and refuses it", total, field, data[start+int64(i)])
		}
		total++
		if entry.Conversations == nil || len(*entry.Conversations) < 2 {
			continue
		}
		turns := *entry.Conversations
		var c conversation
		for k, dst := range []*string{&c.prompt, &c.completion} {
			var ok bool
			if *dst, ok = jsonString(turns[k].Value); !ok {
				return nil, 0, fileErr(path, lineAt(data, start), "entry %d: conversations[%d] has no string \"value\"", total-1, k)
			}
		}
		convs = append(convs, c)
	}
	if _, err := dec.Token(); err != nil {
		return nil, 0, fileErr(path, lineAt(data, dec.InputOffset()), "%v", jsonMsg(err))
	}
	return convs, total, nil
}

// loadShareGPT builds the sharegpt dataset (vLLM's ShareGPTDataset).
func loadShareGPT(ctx context.Context, s Spec, tok *tokenizer.Tokenizer) ([]Sample, error) {
	convs, total, err := readShareGPT(s.Path)
	if err != nil {
		return nil, err
	}
	if len(convs) == 0 {
		return nil, fileErr(s.Path, 0, "no entry with two or more conversation turns (%d entries)", total)
	}
	if !s.DisableShuffle {
		pyShuffle(newPyRandom(s.Seed), convs)
	}
	fixed := s.ShareGPT.OutputLen > 0
	var samples []Sample
	var tooShort, tooLong int
	for _, c := range convs {
		if len(samples) >= s.NumPrompts {
			break
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		promptLen := countTokens(tok, c.prompt, true)
		outLen := s.ShareGPT.OutputLen
		if !fixed {
			outLen = countTokens(tok, c.completion, true)
		}
		switch {
		case promptLen < minSeqLen || (!fixed && outLen < minSeqLen):
			tooShort++
			continue
		case promptLen > maxPromptLen || promptLen+outLen > maxSequenceLen:
			tooLong++
			continue
		}
		samples = append(samples, Sample{
			Prompt:    c.prompt,
			PromptLen: promptLen,
			OutputLen: outLen,
			RequestID: s.RequestIDPrefix + strconv.Itoa(len(samples)),
		})
	}
	if len(samples) == 0 {
		return nil, fileErr(s.Path, 0, "the length filters left no conversation: %d too short (prompt or output < %d tokens), %d too long (prompt > %d or prompt + output > %d tokens)",
			tooShort, minSeqLen, tooLong, maxPromptLen, maxSequenceLen)
	}
	return oversample(samples, s.NumPrompts, s)
}
