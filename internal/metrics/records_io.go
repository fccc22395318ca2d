package metrics

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"
)

// recordArrays are servegate's per-request arrays beside vLLM's, in
// request order: what a Record holds that vLLM's detailed result does not.
func (s *Summary) recordArrays() object {
	n := len(s.records)
	ids := make([]string, n)
	prompts := make([]int, n)
	sched := make([]float64, n)
	disp := make([]float64, n)
	free := make([]float64, n)
	kinds := make([]string, n)
	unsent := make([]any, n)
	chunks := make([]any, n)
	for i := range s.records {
		r := &s.records[i]
		ids[i] = r.RequestID
		prompts[i] = r.PromptLen
		sched[i] = seconds(r.Scheduled)
		disp[i] = seconds(r.Dispatched)
		free[i] = seconds(r.Free)
		kinds[i] = string(r.Failure)
		if !r.Success && r.Failure == FailureNone {
			kinds[i] = string(FailureStream)
		}
		unsent[i] = r.Unsent
		if r.ChunkTokens != nil {
			chunks[i] = r.ChunkTokens
		}
	}
	o := object{
		{"request_ids", ids}, {"prompt_lens", prompts},
		{"scheduled_times", sched}, {"dispatch_times", disp}, {"free_times", free},
		{"failure_kinds", kinds}, {"unsent", unsent}, {"chunk_tokens", chunks},
	}
	if len(s.Options.Goodput) > 0 && !s.Options.Pooling {
		// Whether each request counted in request_goodput: the paired
		// fast verdict (internal/gate) resamples these per request.
		good := make([]any, n)
		for i := range s.records {
			r := &s.records[i]
			good[i] = r.Success && !r.Unsent && meetsGoodput(r, s.Options.Goodput)
		}
		o = append(o, Field{"goodput_met", good})
	}
	if s.Sessions != nil {
		o = append(o, s.sessionArrays()...)
	}
	return o
}

// sessionArrays are a session run's per-request arrays: the session, the
// turn, the tool round and the tool-cap flag of each request.
func (s *Summary) sessionArrays() object {
	n := len(s.records)
	ids := make([]string, n)
	turns := make([]int, n)
	rounds := make([]int, n)
	capped := make([]any, n)
	for i := range s.records {
		r := &s.records[i]
		ids[i], turns[i], rounds[i], capped[i] = r.SessionID, r.Turn, r.ToolRound, r.ToolCapHit
	}
	return object{{"session_ids", ids}, {"session_turns", turns}, {"session_tool_rounds", rounds}, {"tool_cap_hit", capped}}
}

// streamArrays are the per-request arrays of a run that streamed
// reasoning or tool calls, in request order: the time to first content
// (seconds, 0 for none), reasoning tokens, tool calls ({id, name,
// arguments} objects) and finish reasons.
func (s *Summary) streamArrays() object {
	n := len(s.records)
	ttfcs := make([]float64, n)
	reasoning := make([]int, n)
	calls := make([]any, n)
	finish := make([]string, n)
	for i := range s.records {
		r := &s.records[i]
		ttfcs[i] = seconds(r.FirstContent)
		reasoning[i] = r.ReasoningTokens
		finish[i] = r.FinishReason
		list := make([]any, len(r.ToolCalls))
		for j, c := range r.ToolCalls {
			list[j] = object{{"id", c.ID}, {"name", c.Name}, {"arguments", c.Arguments}}
		}
		calls[i] = list
	}
	return object{{"ttfcs", ttfcs}, {"reasoning_tokens", reasoning}, {"tool_calls", calls}, {"finish_reasons", finish}}
}

// savedResult is the part of a detailed result file records come from.
type savedResult struct {
	Duration       *float64     `json:"duration"`
	InputLens      []int        `json:"input_lens"`
	OutputLens     []int        `json:"output_lens"`
	TTFTs          []float64    `json:"ttfts"`
	ITLs           [][]float64  `json:"itls"`
	GeneratedTexts []string     `json:"generated_texts"`
	Errors         []string     `json:"errors"`
	StartTimes     []float64    `json:"start_times"`
	Latencies      []float64    `json:"latencies"`
	RequestIDs     []string     `json:"request_ids"`
	PromptLens     []int        `json:"prompt_lens"`
	ScheduledTimes []float64    `json:"scheduled_times"`
	DispatchTimes  []float64    `json:"dispatch_times"`
	FreeTimes      []float64    `json:"free_times"`
	FailureKinds   []string     `json:"failure_kinds"`
	Unsent         []bool       `json:"unsent"`
	ChunkTokens    [][]int      `json:"chunk_tokens"`
	TTFCs          []float64    `json:"ttfcs"`
	Reasoning      []int        `json:"reasoning_tokens"`
	ToolCalls      [][]ToolCall `json:"tool_calls"`
	FinishReasons  []string     `json:"finish_reasons"`
	SessionIDs     []string     `json:"session_ids"`
	SessionTurns   []int        `json:"session_turns"`
	ToolRounds     []int        `json:"session_tool_rounds"`
	ToolCapHit     []bool       `json:"tool_cap_hit"`
}

// readStreamed reads request i's streamArrays entries into r.
func readStreamed(r *Record, v *savedResult, i int, ns func(float64) time.Duration) {
	if v.TTFCs != nil {
		r.FirstContent = ns(v.TTFCs[i])
	}
	if v.Reasoning != nil {
		r.ReasoningTokens = v.Reasoning[i]
		r.ContentTokens = max(r.OutputTokens-r.ReasoningTokens, 0)
	}
	if v.ToolCalls != nil && len(v.ToolCalls[i]) > 0 {
		r.ToolCalls = v.ToolCalls[i]
	}
	if v.FinishReasons != nil {
		r.FinishReason = v.FinishReasons[i]
	}
}

// RecordsFromResult reads the records back from a detailed result file
// (the first JSON object in data, so an appended file gives its first
// run) and the run's duration, so that a saved run can be summarised
// again or merged with others. A file written with RunInfo.Extras gives
// the records exactly; from a plain --save-detailed file (vLLM's own
// included, which needs start_times and latencies, servegate's additions)
// the scheduled times equal the start times, a request failed when its
// error is not empty (kind stream_error), the prompt length is the
// server's count, and each chunk counts as one token for the peak output
// rate; a file without free_times (written before servegate measured
// lateness) reads as sent on time. Times round to the nanosecond they
// were written from.
func RecordsFromResult(data []byte) ([]Record, time.Duration, error) {
	data, _ = ReadablePyJSON(data)
	var v savedResult
	if err := json.NewDecoder(bytes.NewReader(data)).Decode(&v); err != nil {
		return nil, 0, fmt.Errorf("read result: %w", err)
	}
	if v.Duration == nil {
		return nil, 0, errors.New("read result: no duration")
	}
	n := len(v.Latencies)
	if v.Errors == nil || v.StartTimes == nil || v.Latencies == nil || len(v.Errors) != n || len(v.StartTimes) != n {
		return nil, 0, errors.New("read result: not a detailed result (needs errors, start_times and latencies)")
	}
	check := func(name string, l int) error {
		if l != 0 && l != n {
			return fmt.Errorf("read result: %s has %d entries for %d requests", name, l, n)
		}
		return nil
	}
	for name, l := range map[string]int{
		"input_lens": len(v.InputLens), "output_lens": len(v.OutputLens), "ttfts": len(v.TTFTs),
		"itls": len(v.ITLs), "generated_texts": len(v.GeneratedTexts), "request_ids": len(v.RequestIDs),
		"prompt_lens": len(v.PromptLens), "scheduled_times": len(v.ScheduledTimes),
		"dispatch_times": len(v.DispatchTimes), "free_times": len(v.FreeTimes), "failure_kinds": len(v.FailureKinds), "unsent": len(v.Unsent),
		"chunk_tokens": len(v.ChunkTokens), "ttfcs": len(v.TTFCs), "reasoning_tokens": len(v.Reasoning),
		"tool_calls": len(v.ToolCalls), "finish_reasons": len(v.FinishReasons), "session_ids": len(v.SessionIDs), "session_turns": len(v.SessionTurns),
		"session_tool_rounds": len(v.ToolRounds), "tool_cap_hit": len(v.ToolCapHit),
	} {
		if err := check(name, l); err != nil {
			return nil, 0, err
		}
	}
	ns := func(sec float64) time.Duration { return time.Duration(math.Round(sec * 1e9)) }
	recs := make([]Record, n)
	for i := range recs {
		r := &recs[i]
		r.Start, r.Latency, r.Error = ns(v.StartTimes[i]), ns(v.Latencies[i]), v.Errors[i]
		r.Scheduled, r.Dispatched, r.Free = r.Start, r.Start, r.Start
		if v.TTFTs != nil {
			r.TTFT = ns(v.TTFTs[i])
		}
		if v.ITLs != nil && len(v.ITLs[i]) > 0 {
			r.ITL = make([]time.Duration, len(v.ITLs[i]))
			for j, g := range v.ITLs[i] {
				r.ITL[j] = ns(g)
			}
		}
		if v.OutputLens != nil {
			r.OutputTokens = v.OutputLens[i]
		}
		if v.GeneratedTexts != nil {
			r.GeneratedText = v.GeneratedTexts[i]
		}
		if v.InputLens != nil {
			r.ServerPromptTokens = v.InputLens[i]
			r.PromptLen = v.InputLens[i]
		}
		if v.RequestIDs != nil {
			r.RequestID = v.RequestIDs[i]
		}
		if v.PromptLens != nil {
			r.PromptLen = v.PromptLens[i]
		}
		if v.ScheduledTimes != nil {
			r.Scheduled = ns(v.ScheduledTimes[i])
		}
		if v.DispatchTimes != nil {
			r.Dispatched = ns(v.DispatchTimes[i])
		}
		if v.FreeTimes != nil {
			r.Free = ns(v.FreeTimes[i])
		}
		if v.Unsent != nil {
			r.Unsent = v.Unsent[i]
		}
		if v.ChunkTokens != nil {
			r.ChunkTokens = v.ChunkTokens[i]
		}
		readSession(r, &v, i)
		readStreamed(r, &v, i, ns)
		switch {
		case v.FailureKinds != nil:
			r.Failure = FailureKind(v.FailureKinds[i])
		case r.Error != "":
			r.Failure = FailureStream
		}
		r.Success = r.Failure == FailureNone
	}
	return recs, ns(*v.Duration), nil
}

// readSession fills a record's session fields from a saved result.
func readSession(r *Record, v *savedResult, i int) {
	if v.SessionIDs != nil {
		r.SessionID = v.SessionIDs[i]
	}
	if v.SessionTurns != nil {
		r.Turn = v.SessionTurns[i]
	}
	if v.ToolRounds != nil {
		r.ToolRound = v.ToolRounds[i]
	}
	if v.ToolCapHit != nil {
		r.ToolCapHit = v.ToolCapHit[i]
	}
}
