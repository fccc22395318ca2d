package conversation

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/servegate/servegate/internal/dataset"
	"github.com/servegate/servegate/internal/tokenizer"
)

// A sgTurn is one {"from", "value"} of a ShareGPT entry.
type sgTurn struct {
	from, value string
	off         int64 // its entry's byte offset in the file, for errors
	k           int   // its index in the entry's conversations
}

// A sgEntry is one ShareGPT entry or, once merged, one conversation.
type sgEntry struct {
	id    string
	turns []sgTurn
	off   int64 // the entry's byte offset in the file, for errors
}

// sgRoles maps ShareGPT's "from" to a chat role, as vLLM's conversion
// does.
var sgRoles = map[string]string{
	"human": "user", "user": "user",
	"gpt": "assistant", "bing": "assistant", "chatgpt": "assistant", "bard": "assistant",
	"system": "system",
}

// readShareGPT reads a ShareGPT file ([{"id": "<conversation>_<part>",
// "conversations": [{"from", "value"}]}]) through the conversion vLLM's
// benchmarks/multi_turn/convert_sharegpt_to_openai.py makes, then reads the
// result as a conversations file. The conversion, with Python's random
// reproduced so that a seed picks what the script picks for that --seed:
//
//   - shuffle the entries (random.shuffle after random.seed(seed));
//   - merge the parts of a conversation (the id before "_") in that
//     shuffled order, dropping a part's first message when it comes from
//     the same side as the previous part's last;
//   - drop conversations with fewer than min_turns messages;
//   - map "from" to a role (human, user: user; gpt, bing, chatgpt, bard:
//     assistant; system: system; anything else is an error), skip a first
//     message that is not the user's, stop at max_turns messages (counted
//     before that skip);
//   - drop conversations whose roles do not alternate user, assistant,
//     ... (a system message drops its conversation) or with a message
//     shorter than min_content_len or longer than max_content_len
//     characters, or, unless keep_ascii, a message of plain ASCII (vLLM's
//     content_is_valid keeps only messages with a non-ASCII character);
//   - keep max_items of them with random.sample.
//
// Dropped conversations are dropped silently, as the script does; a
// conversion that keeps none is an error that counts why.
func readShareGPT(ctx context.Context, path string, src Source, tok *tokenizer.Tokenizer, seed int64) ([]Conversation, error) {
	entries, err := readShareGPTEntries(ctx, path)
	if err != nil {
		return nil, err
	}
	r := dataset.NewPyRandom(seed)
	r.Shuffle(len(entries), func(i, j int) { entries[i], entries[j] = entries[j], entries[i] })
	merged, err := mergeParts(path, entries)
	if err != nil {
		return nil, err
	}
	var kept []sgEntry
	var short, broken, ascii, length int
	for _, e := range merged {
		if src.MinTurns > 0 && len(e.turns) < src.MinTurns {
			short++
			continue
		}
		var msgs []sgTurn // from holds the role from here on
		for i, t := range e.turns {
			role, ok := sgRoles[t.from]
			if !ok {
				return nil, fileErr(path, lineOfItem(path, t.off, "conversations", t.k), "conversation %q: conversations[%d].from: %q is not one of human, user, gpt, bing, chatgpt, bard, system", e.id, t.k, t.from)
			}
			if i == 0 && role != "user" {
				continue
			}
			if src.MaxTurns > 0 && i >= src.MaxTurns {
				break
			}
			msgs = append(msgs, sgTurn{from: role, value: t.value})
		}
		if len(msgs) == 0 {
			continue
		}
		switch sgCheck(msgs, src) {
		case "roles":
			broken++
		case "ascii":
			ascii++
		case "length":
			length++
		default:
			kept = append(kept, sgEntry{id: e.id, turns: msgs})
		}
	}
	if len(kept) == 0 {
		return nil, fileErr(path, 0, "the conversion kept no conversation of %d: %d shorter than min_turns, %d not alternating user and assistant, %d with a message out of min_content_len/max_content_len, %d with a plain-ASCII message (vLLM's conversion keeps only messages with a non-ASCII character; keep_ascii: true keeps them)",
			len(merged), short, broken, length, ascii)
	}
	if src.MaxItems > 0 && len(kept) > src.MaxItems {
		idx := r.Sample(len(kept), src.MaxItems)
		sampled := make([]sgEntry, len(idx))
		for i, k := range idx {
			sampled[i] = kept[k]
		}
		kept = sampled
	}
	convs := make([]Conversation, len(kept))
	total := 0
	for i, e := range kept {
		msgs := make([]message, len(e.turns))
		for k, t := range e.turns {
			msgs[k] = message{role: t.from, content: t.value}
		}
		c, err := turnsOf(msgs, tok)
		if err != nil { // the conversion checked the alternation
			return nil, fmt.Errorf("sharegpt conversation %q: %w", e.id, err)
		}
		c.ID = e.id
		for _, t := range c.Turns {
			total += t.UserTokens
		}
		if total > totalLimit {
			return nil, fileErr(path, 0, "the converted user messages hold over %d tokens; lower max_items", totalLimit)
		}
		convs[i] = c
	}
	return convs, nil
}

// sgCheck returns why vLLM's conversion drops msgs ("roles", "length",
// "ascii"), or "" to keep them; it checks message by message in the
// script's order.
func sgCheck(msgs []sgTurn, src Source) string {
	for k, m := range msgs {
		want := "user"
		if k%2 == 1 {
			want = "assistant"
		}
		if m.from != want {
			return "roles"
		}
		n := utf8.RuneCountInString(m.value)
		if (src.MinContentLen > 0 && n < src.MinContentLen) || (src.MaxContentLen > 0 && n > src.MaxContentLen) {
			return "length"
		}
		if !src.KeepASCII && isASCII(m.value) {
			return "ascii"
		}
	}
	return ""
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// mergeParts groups entries by conversation id (the id before "_") in
// order of first appearance and merges their parts in order, dropping a
// part's first message when it comes from the same side as the previous
// part's last, as vLLM's conversion does.
func mergeParts(path string, entries []sgEntry) ([]sgEntry, error) {
	index := map[string]int{}
	var convs []sgEntry
	for _, e := range entries {
		id := e.id
		if strings.Count(id, "_") > 1 {
			return nil, fileErr(path, lineOf(path, e.off), "id: %q has more than one \"_\"; vLLM's conversion splits ids into <conversation>_<part>", id)
		}
		id, _, _ = strings.Cut(id, "_") // an id without "_" is its own conversation (vLLM fails on it)
		turns := e.turns
		k, seen := index[id]
		if !seen {
			k = len(convs)
			index[id] = k
			convs = append(convs, sgEntry{id: id, off: e.off})
		} else if c := convs[k]; len(c.turns) > 0 && len(turns) > 0 && c.turns[len(c.turns)-1].from == turns[0].from {
			turns = turns[1:]
		}
		convs[k].turns = append(convs[k].turns, turns...)
	}
	out := convs[:0]
	for _, c := range convs {
		if len(c.turns) > 0 {
			out = append(out, c)
		}
	}
	return out, nil
}

// readShareGPTEntries streams a ShareGPT file's entries.
func readShareGPTEntries(ctx context.Context, path string) ([]sgEntry, error) {
	l, err := openJSONList(path, `ShareGPT entries ({"id", "conversations"})`, "entry")
	if err != nil {
		return nil, err
	}
	defer l.Close()
	var entries []sgEntry
	for {
		raw, off, done, err := l.next(ctx)
		if err != nil {
			return nil, err
		}
		if done {
			break
		}
		idx := l.n - 1
		var item struct {
			ID            json.RawMessage `json:"id"`
			Conversations *[]struct {
				From  json.RawMessage `json:"from"`
				Value json.RawMessage `json:"value"`
			} `json:"conversations"`
		}
		if err := json.Unmarshal(raw, &item); err != nil {
			return nil, fileErr(path, lineOf(path, off), "entry %d: want an object with \"id\" and a \"conversations\" list of {\"from\", \"value\"}", idx)
		}
		id, ok := jsonString(item.ID)
		if !ok {
			return nil, fileErr(path, lineOf(path, off), "entry %d: id: want a string, got %s", idx, jsonKind(item.ID))
		}
		if len(id) > MaxIDBytes {
			return nil, fileErr(path, lineOf(path, off), "entry %d: id: %d bytes is over the maximum %d (it goes into every request's x-request-id header)", idx, len(id), MaxIDBytes)
		}
		if item.Conversations == nil {
			return nil, fileErr(path, lineOf(path, off), "entry %d (id %q): conversations: missing", idx, id)
		}
		if len(*item.Conversations) > MaxMessages {
			return nil, fileErr(path, lineOf(path, off), "entry %d (id %q): conversations: %d messages is over the maximum %d", idx, id, len(*item.Conversations), MaxMessages)
		}
		e := sgEntry{id: id, off: off, turns: make([]sgTurn, len(*item.Conversations))}
		for k, t := range *item.Conversations {
			e.turns[k].off, e.turns[k].k = off, k
			at := func(field string, v json.RawMessage) error {
				return fileErr(path, lineOf(path, off+elementOffset(raw, "conversations", k)), "entry %d (id %q): conversations[%d].%s: want a string, got %s", idx, id, k, field, jsonKind(v))
			}
			if e.turns[k].from, ok = jsonString(t.From); !ok {
				return nil, at("from", t.From)
			}
			if e.turns[k].value, ok = jsonString(t.Value); !ok {
				return nil, at("value", t.Value)
			}
		}
		entries = append(entries, e)
	}
	if len(entries) == 0 {
		return nil, fileErr(path, 0, "no entries")
	}
	return entries, nil
}

// lineOfItem returns the line of element k of the list under key in the
// JSON object at byte offset off of the file at path; only for errors.
func lineOfItem(path string, off int64, key string, k int) int {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	if _, err := f.Seek(off, 0); err != nil {
		return 0
	}
	var raw json.RawMessage
	if err := json.NewDecoder(f).Decode(&raw); err != nil {
		return lineOf(path, off)
	}
	return lineOf(path, off+elementOffset(raw, key, k))
}
