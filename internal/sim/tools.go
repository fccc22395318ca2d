package sim

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"unicode/utf8"
)

// toolSpec is what the simulator reads of one entry of a request's tools.
type toolSpec struct {
	Type     string `json:"type"`
	Function struct {
		Name       string `json:"name"`
		Parameters struct {
			Properties map[string]json.RawMessage `json:"properties"`
		} `json:"parameters"`
	} `json:"function"`
}

// toolSet is a chat request's tools with its tool_choice: nil when the
// request has none or chose "none".
type toolSet struct {
	specs []toolSpec
	// always is true for tool_choice "required" or a named function; forced
	// names that function.
	always bool
	forced string
}

// parseToolChoice reads tools and tool_choice and checks them as vLLM's
// ChatCompletionRequest does: a tool_choice needs tools, only "none",
// "auto", "required" or a named function are known, and a named function
// must be one of the tools. Without tool_choice, tools mean "auto".
func parseToolChoice(rawTools, rawChoice json.RawMessage) (*toolSet, error) {
	var specs []toolSpec
	hasTools := len(rawTools) > 0 && string(rawTools) != "null"
	if hasTools {
		if err := json.Unmarshal(rawTools, &specs); err != nil {
			return nil, invalid("tools: Input should be a valid list of function tools")
		}
		for i, t := range specs {
			if t.Function.Name == "" {
				return nil, invalid(fmt.Sprintf("tools[%d].function.name: Field required", i))
			}
		}
	}
	choice := "auto"
	var named struct {
		Function *struct {
			Name *string `json:"name"`
		} `json:"function"`
	}
	switch {
	case len(rawChoice) == 0 || string(rawChoice) == "null":
	case json.Unmarshal(rawChoice, &choice) == nil:
		if !hasTools && choice != "none" {
			return nil, invalid("When using `tool_choice`, `tools` must be set.")
		}
		if choice != "none" && choice != "auto" && choice != "required" {
			return nil, invalid(fmt.Sprintf("Invalid value for `tool_choice`: %s! Only named tools, \"none\", \"auto\" or \"required\" are supported.", choice))
		}
	case json.Unmarshal(rawChoice, &named) == nil:
		if !hasTools {
			return nil, invalid("When using `tool_choice`, `tools` must be set.")
		}
		usage := "Correct usage: `{\"type\": \"function\", \"function\": {\"name\": \"my_function\"}}`"
		if named.Function == nil || named.Function.Name == nil || *named.Function.Name == "" {
			return nil, invalid("Expected field `name` in `function` in `tool_choice`! " + usage)
		}
		if !slices.ContainsFunc(specs, func(t toolSpec) bool { return t.Function.Name == *named.Function.Name }) {
			return nil, invalid("The tool specified in `tool_choice` does not match any of the specified `tools`")
		}
		return &toolSet{specs: specs, always: true, forced: *named.Function.Name}, nil
	default:
		return nil, invalid("tool_choice: Input should be a string or a named function")
	}
	if choice == "none" || len(specs) == 0 {
		return nil, nil
	}
	return &toolSet{specs: specs, always: choice == "required"}, nil
}

// A toolPlan is the tool call one choice answers with. Its tokens are the
// call's text as the chat template renders it (callText), tokenized in
// pieces: the head up to "arguments":, the arguments' opening up to the
// quote of their one string value, argTokens words from the output
// vocabulary (the value), and the closing quote and braces. The stream
// sends the name when the head's last token is out, and each piece's part
// of the arguments when its last token is (a word's at once): a parser
// that needs the whole name, as vLLM's tool parsers do.
type toolPlan struct {
	id     string
	name   string
	args   string // the whole arguments text
	script []int  // the call's tokens
	nameAt int    // index in script of the token that completes the name
	argAt  []string
	// textAt is, per token of script, the text of the call that token
	// completes (its piece's text on the piece's last token): the text
	// of a call cut short is that of its first tokens.
	textAt []string
}

// cutText is the text of a call cut short after its first n tokens, as
// far as its pieces are complete.
func (p *toolPlan) cutText(n int) string {
	t := ""
	for _, s := range p.textAt[:min(n, len(p.textAt))] {
		t += s
	}
	return t
}

// maxToolNameBytes bounds a tool name taken into a generated call.
const maxToolNameBytes = 256

// drawTool decides whether a choice calls a tool (probability
// tool_call_rate, always for tool_choice "required" or a named function)
// and which, and builds the call, all from the choice's seed. The value
// has at most maxTokens words (the choice could not send more), so a
// request's calls hold no more than its output could.
func (s *Server) drawTool(ts *toolSet, seed uint64, maxTokens int) *toolPlan {
	if ts == nil {
		return nil
	}
	rng := rand.New(rand.NewPCG(seed, 0x7001c411))
	if u := rng.Float64(); !ts.always && !(u < s.p.ToolCallRate) {
		return nil
	}
	spec := ts.specs[rng.IntN(len(ts.specs))]
	if ts.forced != "" {
		for _, t := range ts.specs {
			if t.Function.Name == ts.forced {
				spec = t
				break
			}
		}
	}
	name := cutUTF8(spec.Function.Name, maxToolNameBytes)
	key := "input"
	if props := spec.Function.Parameters.Properties; len(props) > 0 {
		keys := make([]string, 0, len(props))
		for k := range props {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		key = cutUTF8(keys[rng.IntN(len(keys))], maxToolNameBytes)
	}
	head := `{"name": ` + string(marshal(name)) + `, "arguments":`
	open := ` {` + string(marshal(key)) + `: "`
	const tail = `"}}`
	p := &toolPlan{name: name, id: fmt.Sprintf("chatcmpl-tool-%016x%016x", rng.Uint64(), rng.Uint64())}
	p.script = append(p.script, s.tk.Encode(head, false)...)
	p.nameAt = len(p.script) - 1
	p.argAt = make([]string, len(p.script))
	openIDs := s.tk.Encode(open, false)
	p.script = append(p.script, openIDs...)
	p.argAt = append(p.argAt, make([]string, len(openIDs))...)
	p.argAt[len(p.argAt)-1] = open[1:]
	for range min(s.p.ToolCallArgTokens, maxTokens) {
		id := s.vocab.ids[rng.IntN(len(s.vocab.ids))]
		p.script = append(p.script, id)
		p.argAt = append(p.argAt, s.vocab.texts[id])
	}
	tailIDs := s.tk.Encode(tail, false)
	p.script = append(p.script, tailIDs...)
	p.argAt = append(p.argAt, make([]string, len(tailIDs))...)
	p.argAt[len(p.argAt)-1] = `"}`
	p.textAt = slices.Clone(p.argAt)
	p.textAt[p.nameAt] = head
	p.textAt[p.nameAt+len(openIDs)] = open
	p.textAt[len(p.textAt)-1] = tail
	for _, a := range p.argAt {
		p.args += a
	}
	return p
}

// cutUTF8 returns s cut to at most n bytes on a character boundary: a
// character cut in two would go out as U+FFFD, a name the client sends back
// differently from the one the call was generated with.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// reasoningTokens is how many of an answer of n tokens are reasoning:
// reasoning_share of them, rounded.
func (p Params) reasoningTokens(n int) int {
	return int(math.Round(p.ReasoningShare * float64(n)))
}
