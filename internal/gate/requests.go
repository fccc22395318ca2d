package gate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
)

// maxResultRequests bounds the requests read from one result file, so
// that a corrupt or hostile file cannot exhaust memory through the pairs
// built from it (the engine's own limit on requests per run is lower).
const maxResultRequests = 1_000_000

// scheduleTolerance is how far, in seconds, the scheduled offsets of
// request i may differ between base's and head's result files of one
// pair: they come from one plan, so they differ only by the rounding of
// the written floats.
const scheduleTolerance = 1e-3

// pairedResult is the part of a detailed result file (vLLM's
// --save-detailed JSON, with servegate's additions) that request pairs
// are built from. internal/gate imports nothing of benchtest, so it reads the
// documented fields itself.
type pairedResult struct {
	TTFTs          []float64 `json:"ttfts"`
	Errors         []string  `json:"errors"`
	StartTimes     []float64 `json:"start_times"`
	ScheduledTimes []float64 `json:"scheduled_times"`
	// Duration is the run's duration in seconds; RequestGoodput its
	// goodput in req/s (null without goodput SLOs); GoodputMet whether
	// each request counted in it (servegate's detailed files with SLOs).
	Duration       *float64 `json:"duration"`
	RequestGoodput *float64 `json:"request_goodput"`
	GoodputMet     []bool   `json:"goodput_met"`
	// SessionIDs, SessionTurns and ToolRounds name each request of a
	// session run (nil otherwise): its requests pair by them.
	SessionIDs   []string `json:"session_ids"`
	SessionTurns []int    `json:"session_turns"`
	ToolRounds   []int    `json:"session_tool_rounds"`
	runCheck
}

// RequestPairsFromResults matches the requests of the two detailed
// result files of one paired run (base's and head's, one schedule) by
// index and returns their TTFT pairs, in seconds, with the scheduled
// start offset of each. It checks that the two files are a pair: the
// same number of requests and, request by request, the same scheduled
// offset (start_times when a file has no scheduled_times). The requests
// of a session run pair by session, turn and tool round instead
// (matchRequests), in the order of their scheduled offsets. A request
// that failed on either side has no TTFT and is left out; dropped counts
// them (the fail-ratio gate judges failures). Errors name the side and
// the field; name is how the caller calls the pair in them.
func RequestPairsFromResults(name string, base, head []byte) (pairs []RequestPair, dropped int, err error) {
	b, err := readPairedResult(base)
	if err != nil {
		return nil, 0, fmt.Errorf("%s: base: %w", name, err)
	}
	h, err := readPairedResult(head)
	if err != nil {
		return nil, 0, fmt.Errorf("%s: head: %w", name, err)
	}
	matches, err := matchRequests(b, h)
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", name, err)
	}
	for _, m := range matches {
		if b.Errors[m.b] != "" || h.Errors[m.h] != "" {
			dropped++
			continue
		}
		pairs = append(pairs, RequestPair{Start: m.start, Base: b.TTFTs[m.b], Head: h.TTFTs[m.h]})
	}
	return pairs, dropped, nil
}

// schedule returns the scheduled offsets, or the start offsets.
func (r *pairedResult) schedule() []float64 {
	if r.ScheduledTimes != nil {
		return r.ScheduledTimes
	}
	return r.StartTimes
}

// readPairedResult decodes and checks the fields a pair needs.
func readPairedResult(data []byte) (*pairedResult, error) {
	var r pairedResult
	if err := json.NewDecoder(bytes.NewReader(nonFiniteToNull(data))).Decode(&r); err != nil {
		return nil, fmt.Errorf("read result: %w", err)
	}
	n := len(r.TTFTs)
	switch {
	case r.TTFTs == nil:
		return nil, errors.New("read result: no ttfts: want a detailed result file (--save-detailed)")
	case n > maxResultRequests:
		return nil, fmt.Errorf("read result: %d requests, more than the limit of %d", n, maxResultRequests)
	case len(r.Errors) != n:
		return nil, fmt.Errorf("read result: errors: %d entries for %d requests", len(r.Errors), n)
	case len(r.schedule()) != n:
		return nil, fmt.Errorf("read result: scheduled_times/start_times: %d entries for %d requests", len(r.schedule()), n)
	}
	if err := r.runCheck.check(n); err != nil {
		return nil, err
	}
	if r.SessionIDs != nil {
		switch {
		case len(r.SessionIDs) != n:
			return nil, fmt.Errorf("read result: session_ids: %d entries for %d requests", len(r.SessionIDs), n)
		case len(r.SessionTurns) != n:
			return nil, fmt.Errorf("read result: session_turns: %d entries for %d requests", len(r.SessionTurns), n)
		case r.ToolRounds != nil && len(r.ToolRounds) != n:
			return nil, fmt.Errorf("read result: session_tool_rounds: %d entries for %d requests", len(r.ToolRounds), n)
		}
	}
	if r.GoodputMet != nil && len(r.GoodputMet) != n {
		return nil, fmt.Errorf("read result: goodput_met: %d entries for %d requests", len(r.GoodputMet), n)
	}
	if r.Duration != nil && !(*r.Duration > 0 && !math.IsInf(*r.Duration, 0)) {
		return nil, fmt.Errorf("read result: duration %v: want a positive finite number of seconds", *r.Duration)
	}
	for i, s := range r.schedule() {
		if math.IsNaN(s) || math.IsInf(s, 0) || s < 0 {
			return nil, fmt.Errorf("read result: request %d: start offset %v: want a finite offset >= 0", i, s)
		}
	}
	return &r, nil
}

// nonFiniteToNull rewrites the bare NaN, Infinity and -Infinity that
// Python's json.dump writes (and servegate's result files keep, for
// vLLM's sake) as null, outside strings, so that encoding/json reads the
// file; a null TTFT reads as 0, which a pair rejects unless the request
// failed.
func nonFiniteToNull(data []byte) []byte {
	if !bytes.Contains(data, []byte("NaN")) && !bytes.Contains(data, []byte("Infinity")) {
		return data
	}
	out := make([]byte, 0, len(data))
	inString, escaped := false, false
	for i := 0; i < len(data); i++ {
		c := data[i]
		if inString {
			out = append(out, c)
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch {
		case c == '"':
			inString = true
		case bytes.HasPrefix(data[i:], []byte("NaN")):
			out, i = append(out, "null"...), i+len("NaN")-1
			continue
		case bytes.HasPrefix(data[i:], []byte("-Infinity")):
			out, i = append(out, "null"...), i+len("-Infinity")-1
			continue
		case bytes.HasPrefix(data[i:], []byte("Infinity")):
			out, i = append(out, "null"...), i+len("Infinity")-1
			continue
		}
		out = append(out, c)
	}
	return out
}
