package conversation

import "time"

// A Conversation is the script of one session.
type Conversation struct {
	// ID names the conversation (the file's id, or generated).
	ID string
	// At, when HasAt, is the offset from the run's start at which the
	// session begins (a trace's timestamp); otherwise the arrival
	// process decides.
	At    time.Duration
	HasAt bool
	// System, when not empty, is sent first as a system message.
	System string
	// Turns are the user turns, in order.
	Turns []Turn
}

// A Turn is one user turn of a conversation.
type Turn struct {
	// User is the user message's text.
	User string
	// UserTokens is its length in tokens, as the tokenizer counts it.
	UserTokens int
	// MaxTokens is the number of output tokens asked for the reply: the
	// drawn output length (synthetic), the token count of the file's next
	// assistant message, at least 1 (file, sharegpt; vLLM's client sends it
	// as both min_tokens and max_tokens by default), or the trace's
	// output_length (mooncake). 0 means no limit: a file's last user
	// message with no answer after it, for which vLLM sends neither.
	MaxTokens int
}

// A Distribution draws numbers: "constant" (Value), "uniform" (Min, Max),
// "zipf" (Alpha, Max), "poisson" (Alpha, Max) or "lognormal" (Mean,
// Sigma, Max), as vLLM's multi-turn generator names them in
// generate_multi_turn.json. Max caps zipf, poisson and lognormal draws
// (0: no cap), as vLLM does. Draws are deterministic for a seed but are
// not numpy's numbers (see Float and Int).
type Distribution struct {
	Distribution string  `json:"distribution" yaml:"distribution"`
	Value        float64 `json:"value,omitempty" yaml:"value"`
	Min          float64 `json:"min,omitempty" yaml:"min"`
	Max          float64 `json:"max,omitempty" yaml:"max"`
	Alpha        float64 `json:"alpha,omitempty" yaml:"alpha"`
	Mean         float64 `json:"mean,omitempty" yaml:"mean"`
	Sigma        float64 `json:"sigma,omitempty" yaml:"sigma"`
}
