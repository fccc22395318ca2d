package scenario

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/servegate/servegate/internal/client"
	"github.com/servegate/servegate/internal/conversation"
	"github.com/servegate/servegate/internal/engine"
	"github.com/servegate/servegate/internal/limit"
	"github.com/servegate/servegate/internal/metrics"
)

// Sessions make a scenario multi-turn: conversations from Source replace
// the dataset, sessions arrive as Arrival says, and each turn sends the
// whole history with the server's actual answers (engine.RunSessions).
type Sessions struct {
	// Source says where the conversations come from (synthetic, a
	// conversations file, ShareGPT, a Mooncake trace).
	Source conversation.Source `yaml:"source"`
	// Arrival is how sessions arrive: rate and burstiness. A trace's
	// conversations arrive at their own times instead.
	Arrival SessionArrival `yaml:"arrival"`
	// MaxActive limits the sessions in progress; 0 is unlimited.
	MaxActive int `yaml:"max_active"`
	// ThinkTime is the pause between the end of a reply and the next user
	// turn, in seconds; none when unset.
	ThinkTime *conversation.Distribution `yaml:"think_time"`
	// MaxTurns caps the user turns of a session; 0 sends them all.
	MaxTurns int `yaml:"max_turns"`
	// MaxDuration ends a session (no further user turn) once it has run
	// this long; 0 is no limit.
	MaxDuration Duration `yaml:"max_duration"`
	// Warmups is how many of the first conversations run as warm-up
	// sessions before the run, out of every figure.
	Warmups int `yaml:"warmups"`
	// Header names the HTTP header that carries the session id. Default
	// x-session-id.
	Header string `yaml:"header"`
	// Tools, when set, declares tools and drives the tool loop.
	Tools *Tools `yaml:"tools"`
	// Seed seeds the conversations' draws, the session arrivals and the
	// think times, tool latencies and tool results. Default 0.
	Seed int64 `yaml:"seed"`
}

// A SessionArrival is the arrival process of sessions.
type SessionArrival struct {
	// Rate is the mean session arrival rate, sessions/s; inf (the
	// default) starts every session at once, max_active permitting.
	Rate float64 `yaml:"rate"`
	// Burstiness is the gamma shape of the gaps, as load.burstiness.
	// Default 1 (Poisson).
	Burstiness float64 `yaml:"burstiness"`
}

// Tools are the tools a session declares and how their calls are
// answered.
type Tools struct {
	// Definitions are the tool definitions sent with every request, in
	// OpenAI's chat format ({type: function, function: {name, ...}}).
	Definitions []map[string]any `yaml:"definitions"`
	// Latency is how long a tool runs before its result is sent, in
	// seconds; none when unset.
	Latency *conversation.Distribution `yaml:"latency"`
	// ResultTokens is the length of a tool result in tokens. Default a
	// constant 64.
	ResultTokens *conversation.Distribution `yaml:"result_tokens"`
	// MaxRounds caps the requests that carry tool results per user turn.
	// Default 8. A request answered with tool calls past it counts in
	// tool_cap_hits.
	MaxRounds int `yaml:"max_rounds"`
}

// sessionMetrics are the SLO metric name fragments that exist only in a
// session run.
var sessionMetricWords = []string{"_ttft_first_turn_ms", "_ttft_later_turns_ms", "_session_duration_ms",
	metrics.SessionCount, metrics.SessionGoodputRatio, metrics.ToolRounds, metrics.MeanToolRounds, metrics.ToolCapHits}

// IsSessionMetric reports whether an SLO metric exists only in a session
// run (the session figures of metrics.Summary).
func IsSessionMetric(name string) bool {
	for _, w := range sessionMetricWords {
		if name == w || (strings.HasPrefix(w, "_") && strings.HasSuffix(name, w)) {
			return true
		}
	}
	return false
}

// loadKeysNotForSessions are the load keys a session scenario replaces.
var loadKeysNotForSessions = map[string]string{
	"request_rate":    "sessions.arrival.rate",
	"burstiness":      "sessions.arrival.burstiness",
	"ramp_up":         "sessions.arrival",
	"max_concurrency": "sessions.max_active",
	"warmups":         "sessions.warmups",
	"trace_replay":    "a mooncake source (its timestamps start the sessions)",
}

// sessionDefaults fills the session keys not written.
func (sc *Scenario) sessionDefaults() {
	s := sc.Sessions
	if s == nil {
		return
	}
	if !sc.pos.has("backend") {
		sc.Backend = client.BackendOpenAIChat
		if !sc.pos.has("endpoint") {
			sc.Endpoint = client.DefaultEndpoint(sc.Backend)
		}
	}
	if !sc.pos.has("sessions.arrival.rate") {
		s.Arrival.Rate = defaultRequestRate
	}
	if !sc.pos.has("sessions.arrival.burstiness") {
		s.Arrival.Burstiness = defaultBurstiness
	}
	if s.Header == "" {
		s.Header = client.DefaultSessionHeader
	}
	if t := s.Tools; t != nil && !sc.pos.has("sessions.tools.max_rounds") {
		t.MaxRounds = engine.DefaultMaxToolRounds
	}
}

// validateSessions checks the session keys, and that a scenario without
// them names no session metric.
func (sc *Scenario) validateSessions() error {
	s := sc.Sessions
	if s == nil {
		for i, b := range sc.SLO.Bounds {
			if IsSessionMetric(b.Metric) {
				return sc.errorf(fmt.Sprintf("slo.bounds[%d]", i), "%s exists only in a session run; add a sessions block", b.Metric)
			}
		}
		return nil
	}
	if sc.pos.has("dataset") {
		return sc.errorf("dataset", "a session scenario takes its conversations from sessions.source; remove dataset")
	}
	for k, instead := range loadKeysNotForSessions {
		if sc.pos.has("load." + k) {
			return sc.errorf("load."+k, "not for a session scenario; use %s", instead)
		}
	}
	if sc.Capacity != nil {
		return sc.errorf("capacity", "a capacity search is not for a session scenario")
	}
	if !engine.SendsConversations(sc.Backend) {
		return sc.errorf("backend", "a session scenario sends conversations: it needs %s or %s, got %s", client.BackendOpenAIChat, client.BackendOpenAIResponses, sc.Backend)
	}
	if err := s.Source.Validate(); err != nil {
		return sc.fieldError("sessions.source", err)
	}
	a := s.Arrival
	if math.IsNaN(a.Rate) || a.Rate <= 0 {
		return sc.errorf("sessions.arrival.rate", "must be a positive rate in sessions/s (or inf for all at once), got %v", a.Rate)
	}
	if math.IsNaN(a.Burstiness) || a.Burstiness <= 0 {
		return sc.errorf("sessions.arrival.burstiness", "must be positive (1 is Poisson, below 1 burstier, inf constant gaps), got %v", a.Burstiness)
	}
	ints := []struct {
		key string
		v   int
	}{{"max_active", s.MaxActive}, {"max_turns", s.MaxTurns}, {"warmups", s.Warmups}}
	for _, i := range ints {
		if i.v < 0 {
			return sc.errorf("sessions."+i.key, "must not be negative, got %d", i.v)
		}
	}
	if s.MaxDuration < 0 {
		return sc.errorf("sessions.max_duration", "must not be negative, got %s", s.MaxDuration.D())
	}
	if h := s.Header; strings.ContainsAny(h, " \t\r\n:") {
		return sc.errorf("sessions.header", "%q is not a header name", h)
	}
	if d := s.ThinkTime; d != nil {
		if err := d.Validate("sessions.think_time", false); err != nil {
			return sc.fieldError("", err)
		}
	}
	return sc.validateTools()
}

// validateTools checks sessions.tools.
func (sc *Scenario) validateTools() error {
	t := sc.Sessions.Tools
	if t == nil {
		return nil
	}
	if len(t.Definitions) == 0 {
		return sc.errorf("sessions.tools.definitions", "required with tools: the tool definitions sent with every request")
	}
	for i, d := range t.Definitions {
		key := fmt.Sprintf("sessions.tools.definitions[%d]", i)
		fn, _ := d["function"].(map[string]any)
		if d["type"] != "function" || fn == nil {
			return sc.errorf(key, "want {type: function, function: {name: ..., parameters: ...}}")
		}
		if name, _ := fn["name"].(string); name == "" {
			return sc.errorf(key+".function.name", "required")
		}
	}
	if _, err := json.Marshal(t.Definitions); err != nil {
		return sc.errorf("sessions.tools.definitions", "not expressible as JSON: %v", err)
	}
	if t.MaxRounds < 1 {
		return sc.errorf("sessions.tools.max_rounds", "must be at least 1, got %d", t.MaxRounds)
	}
	if d := t.Latency; d != nil {
		if err := d.Validate("sessions.tools.latency", false); err != nil {
			return sc.fieldError("", err)
		}
	}
	if d := t.ResultTokens; d != nil {
		if err := d.Validate("sessions.tools.result_tokens", true); err != nil {
			return sc.fieldError("", err)
		}
	}
	return nil
}

// fieldError turns a conversation.FieldError into a scenario Error whose
// field is prefix plus its field, on that field's line.
func (sc *Scenario) fieldError(prefix string, err error) error {
	var fe *conversation.FieldError
	if errors.As(err, &fe) {
		return sc.errorf(join(prefix, fe.Field), "%s", fe.Msg)
	}
	return sc.errorf(prefix, "%v", err)
}

// sessionLimits are the session keys' limits (numLimits).
func (sc *Scenario) sessionLimits() []limit.Check {
	var s Sessions
	if sc.Sessions != nil {
		s = *sc.Sessions
	}
	rounds := 0
	if s.Tools != nil {
		rounds = s.Tools.MaxRounds
	}
	return []limit.Check{
		limit.Int("sessions.max_active", s.MaxActive, engine.MaxConcurrencyLimit),
		limit.Int("sessions.max_turns", s.MaxTurns, engine.MaxSessionTurns),
		limit.Int("sessions.warmups", s.Warmups, engine.MaxSessionWarmups),
		limit.Duration("sessions.max_duration", s.MaxDuration.D(), engine.MaxTimeout),
		limit.Int("sessions.tools.max_rounds", rounds, engine.MaxToolRoundsLimit),
	}
}

// ToolsJSON is the tool definitions as the JSON array requests carry, nil
// without tools.
func (s *Sessions) ToolsJSON() json.RawMessage {
	if s == nil || s.Tools == nil || len(s.Tools.Definitions) == 0 {
		return nil
	}
	b, _ := json.Marshal(s.Tools.Definitions) // validated
	return b
}
