package conversation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/servegate/servegate/internal/dataset"
	"github.com/servegate/servegate/internal/tokenizer"
)

// A message is one entry of a conversation's messages, as read.
type message struct {
	role, content string
}

// readConversations reads a conversations file in vLLM's multi-turn input
// format (Load reads a file that holds an object as a generator
// configuration instead, as vLLM's --input-file does): a JSON list of {"id": string, "messages": [{"role", "content"}]}
// in which messages alternate user, assistant, user, ... from a user
// message (an optional system message may come first; vLLM's client
// rejects one). Each user message becomes a Turn; its MaxTokens is the
// token count of the assistant message after it, at least 1, as vLLM's
// client asks for by default (--limit-max-tokens and --limit-min-tokens
// 0: min_tokens and max_tokens from the dataset), or 0 (no limit) for a
// last user message without an answer. Token counts are without special
// tokens, as vLLM counts them.
func readConversations(ctx context.Context, path string, tok *tokenizer.Tokenizer) ([]Conversation, error) {
	l, err := openJSONList(path, `conversations ({"id", "messages"})`, "conversation")
	if err != nil {
		return nil, err
	}
	defer l.Close()
	var convs []Conversation
	ids := map[string]bool{}
	total := 0
	for {
		raw, off, done, err := l.next(ctx)
		if err != nil {
			return nil, err
		}
		if done {
			break
		}
		idx := l.n - 1
		line := func(k int) int {
			if k < 0 {
				return lineOf(path, off)
			}
			return lineOf(path, off+elementOffset(raw, "messages", k))
		}
		var entry struct {
			ID       json.RawMessage   `json:"id"`
			Messages []json.RawMessage `json:"messages"`
		}
		if err := json.Unmarshal(raw, &entry); err != nil {
			return nil, fileErr(path, line(-1), "conversation %d: want an object with \"id\" and a \"messages\" list", idx)
		}
		id, ok := jsonString(entry.ID)
		if !ok {
			return nil, fileErr(path, line(-1), "conversation %d: id: want a string, got %s", idx, jsonKind(entry.ID))
		}
		if len(id) > MaxIDBytes {
			return nil, fileErr(path, line(-1), "conversation %d: id: %d bytes is over the maximum %d (it goes into every request's x-request-id header)", idx, len(id), MaxIDBytes)
		}
		name := fmt.Sprintf("conversation %d (id %q)", idx, id)
		if ids[id] {
			return nil, fileErr(path, line(-1), "%s: id: found more than once", name)
		}
		ids[id] = true
		if len(entry.Messages) == 0 {
			return nil, fileErr(path, line(-1), "%s: messages: want a non-empty list", name)
		}
		if len(entry.Messages) > MaxMessages {
			return nil, fileErr(path, line(-1), "%s: messages: %d is over the maximum %d", name, len(entry.Messages), MaxMessages)
		}
		msgs := make([]message, len(entry.Messages))
		for k, m := range entry.Messages {
			if msgs[k], err = parseMessage(m, k); err != nil {
				return nil, fileErr(path, line(k), "%s: %v", name, err)
			}
		}
		conv, err := turnsOf(msgs, tok)
		var me *msgError
		if errors.As(err, &me) {
			return nil, fileErr(path, line(me.k), "%s: messages[%d].%s", name, me.k, me.msg)
		}
		conv.ID = id
		for _, t := range conv.Turns {
			total += t.UserTokens
		}
		if total > totalLimit {
			return nil, fileErr(path, line(-1), "%s: the user messages so far hold over %d tokens", name, totalLimit)
		}
		convs = append(convs, conv)
	}
	if len(convs) == 0 {
		return nil, fileErr(path, 0, "no conversations")
	}
	return convs, nil
}

// parseMessage reads message k, a {"role", "content"} object.
func parseMessage(raw json.RawMessage, k int) (message, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return message{}, fmt.Errorf("messages[%d]: want an object with \"role\" and \"content\", got %s", k, jsonKind(raw))
	}
	var msg message
	var ok bool
	if msg.role, ok = jsonString(m["role"]); !ok {
		return msg, fmt.Errorf("messages[%d].role: want a string, got %s", k, jsonKind(m["role"]))
	}
	if msg.content, ok = jsonString(m["content"]); !ok {
		return msg, fmt.Errorf("messages[%d].content: want a string, got %s", k, jsonKind(m["content"]))
	}
	if msg.role == "user" && len(m) != 2 {
		for key := range m {
			if key != "role" && key != "content" {
				return msg, fmt.Errorf("messages[%d].%s: a user message has only \"role\" and \"content\" (vLLM's client asserts it)", k, key)
			}
		}
	}
	return msg, nil
}

// A msgError is a conversation that breaks the message order at message k.
type msgError struct {
	k   int
	msg string
}

func (e *msgError) Error() string { return "messages[" + strconv.Itoa(e.k) + "]." + e.msg }

// turnsOf turns alternating messages into a Conversation's System and
// Turns.
func turnsOf(msgs []message, tok *tokenizer.Tokenizer) (Conversation, error) {
	var c Conversation
	first := 0
	if msgs[0].role == "system" {
		c.System = msgs[0].content
		first = 1
	}
	if first == len(msgs) {
		return c, &msgError{0, "role: a conversation needs a user message after its system message"}
	}
	for k := first; k < len(msgs); k++ {
		want := "user"
		if (k-first)%2 == 1 {
			want = "assistant"
		}
		if msgs[k].role != want {
			return c, &msgError{k, fmt.Sprintf("role: %q where %q belongs: messages must alternate user, assistant, user, ... from a user message", msgs[k].role, want)}
		}
		if want == "assistant" {
			c.Turns[len(c.Turns)-1].MaxTokens = max(1, dataset.CountText(tok, msgs[k].content))
			continue
		}
		c.Turns = append(c.Turns, Turn{User: msgs[k].content, UserTokens: dataset.CountText(tok, msgs[k].content)})
	}
	return c, nil
}
