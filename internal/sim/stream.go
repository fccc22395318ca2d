package sim

import (
	"net/http"
	"time"
)

// stream writes a request's output as server-sent events the way vLLM does:
// one chunk per engine output (tokens that piled up while the writer was
// behind go out merged in one chunk), chat's role-only chunks (one per
// choice) right before the first content, the finish reason on each
// choice's last content chunk, then the usage chunk when asked for, then
// [DONE]. The n choices of a request go out as their tokens come, each
// chunk carrying one choice, in index order within an engine step, as
// vLLM's output collector hands them over.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, j *job, kids []*seq) {
	fl, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	if fl != nil {
		fl.Flush()
	}
	outs := make([]choiceOut, len(kids))
	for i := range outs {
		outs[i].cw = s.newChunkWriter(j, i)
		if j.logprobs {
			outs[i].lp = newLogprobSampler(s.vocab, j.choices[i].seed, j.greedy)
		}
	}
	chunks, total := 0, 0
	roleSent := false
	for left := len(kids); left > 0; {
		if !s.wait(r, kids) {
			return
		}
		for i, sq := range kids {
			o := &outs[i]
			if o.done {
				continue
			}
			ids, finished, reason := sq.take()
			if reason == "abort" {
				return
			}
			if len(ids) > 0 {
				if chunks == j.fault.errorAfter {
					s.abortAll(kids)
					w.Write(streamError(http.StatusInternalServerError, "The simulated engine failed mid-generation (injected by the simulator)."))
					w.Write([]byte("data: [DONE]\n\n"))
					if fl != nil {
						fl.Flush()
					}
					return
				}
				if chunks == j.fault.abortAfter {
					s.abortAll(kids)
					panic(http.ErrAbortHandler)
				}
				if j.fault.stall > 0 && chunks == j.fault.stallAfter {
					if !sleepCtx(r, j.fault.stall) {
						s.abortAll(kids)
						return
					}
					// take's finish state is the sequence's, not a delta.
					var more []int
					more, finished, reason = sq.take()
					ids = append(ids, more...)
				}
				finish := ""
				if finished {
					finish = reason
				}
				if j.chat && !roleSent {
					roleSent = true
					for k := range kids {
						writeEvent(w, s.chatRoleChunk(j, k))
					}
				}
				from := o.sent
				o.sent += len(ids)
				total += len(ids)
				var event []byte
				switch c := &j.choices[i]; {
				case chunks == j.fault.malformedAfter:
					event = []byte("data: {\"id\":\"" + j.id + "\",\"object\":\n\n")
				case j.chat && c.rich():
					event = s.richChunk(j, i, c, from, ids, finish, o.sent)
				default:
					event = o.cw.chunk(s.vocab.text(ids), o.logprobs(j, s.vocab, ids), finish, o.sent)
				}
				if event != nil {
					w.Write(event)
				}
				if fl != nil {
					fl.Flush()
				}
				if event == nil {
					o.held += len(ids)
				} else {
					sq.recordChunk(o.held + len(ids))
					o.held = 0
					chunks++
				}
			}
			if finished {
				o.done = true
				left--
			}
		}
	}
	if j.includeUsage {
		object := "text_completion"
		if j.chat {
			object = "chat.completion.chunk"
		}
		writeEvent(w, usageChunk{ID: j.id, Object: object, Created: j.created, Model: s.p.Model,
			Choices: []struct{}{}, Usage: newUsage(len(j.prompt), total)})
	}
	w.Write([]byte("data: [DONE]\n\n"))
	if fl != nil {
		fl.Flush()
	}
}

// choiceOut is what the stream keeps of one choice.
type choiceOut struct {
	cw     *chunkWriter
	lp     *logprobSampler // nil without logprobs
	sent   int             // tokens sent
	offset int             // characters of text sent (completions' text_offset)
	lpJSON []byte          // the last chunk's logprobs JSON, its buffer reused
	held   int             // tokens that went out in no chunk yet (a tool call's name in progress)
	done   bool
}

// logprobs returns the JSON of the logprobs of the choice's next ids, nil
// when the request asked for none. The bytes are reused by the next call.
func (o *choiceOut) logprobs(j *job, v *vocab, ids []int) []byte {
	if o.lp == nil {
		return nil
	}
	if j.chat {
		o.lpJSON = v.chatLogprobsOf(o.lp, ids, j.topK).append(o.lpJSON[:0])
		return o.lpJSON
	}
	lp, off := v.completionLogprobsOf(o.lp, ids, j.topK, o.offset)
	o.offset = off
	o.lpJSON = lp.append(o.lpJSON[:0])
	return o.lpJSON
}

// await blocks until the engine hands the sequence tokens or finishes it;
// ok is false when the client or the server went away (the sequence is then
// aborted).
func (s *Server) await(r *http.Request, sq *seq) (ids []int, finished bool, reason string, ok bool) {
	for {
		if ids, finished, reason, any := sq.tryTake(); any {
			return ids, finished, reason, true
		}
		select {
		case <-sq.notify:
		case <-r.Context().Done():
			s.eng.abort(sq)
			return nil, false, "", false
		case <-s.done:
			return nil, false, "", false
		}
	}
}

// wait blocks until the engine may have handed one of kids tokens or
// finished it (they share one notify channel, and every delivery leaves a
// notice in it); false when the client or the server went away (the
// sequences are then aborted).
func (s *Server) wait(r *http.Request, kids []*seq) bool {
	select {
	case <-kids[0].notify:
		return true
	case <-r.Context().Done():
		s.abortAll(kids)
		return false
	case <-s.done:
		return false
	}
}

func (s *Server) abortAll(kids []*seq) {
	for _, sq := range kids {
		s.eng.abort(sq)
	}
}

// tryTake is take that also says whether there was anything to take.
func (sq *seq) tryTake() (ids []int, finished bool, reason string, any bool) {
	ids, finished, reason = sq.take()
	return ids, finished, reason, len(ids) > 0 || finished
}

func (sq *seq) recordChunk(tokens int) {
	at := time.Since(sq.arrival)
	sq.mu.Lock()
	sq.truth.ChunkTimes = append(sq.truth.ChunkTimes, at)
	sq.truth.ChunkTokens = append(sq.truth.ChunkTokens, tokens)
	sq.mu.Unlock()
}

func sleepCtx(r *http.Request, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	}
}

func writeEvent(w http.ResponseWriter, v any) {
	b := marshal(v)
	buf := make([]byte, 0, len(b)+8)
	buf = append(buf, "data: "...)
	buf = append(buf, b...)
	buf = append(buf, "\n\n"...)
	w.Write(buf)
}

func (s *Server) chatRoleChunk(j *job, index int) chatChunk {
	empty := ""
	c := chatChunk{ID: j.id, Object: "chat.completion.chunk", Created: j.created, Model: s.p.Model,
		Choices:        []chatChunkChoice{{Index: index, Delta: chatDelta{Role: "assistant", Content: &empty}}},
		PromptTokenIDs: jsonNull}
	if j.continuous {
		u := newUsage(len(j.prompt), 0)
		c.Usage = &u
	}
	return c
}

// contentChunk is choice index's chunk carrying ids, with logprobs lp (a
// *completionLogprobs or *chatLogprobs, nil for none); sent counts the
// choice's tokens sent so far, these included. The stream writes the same
// bytes with chunkWriter; this is the reference it is tested against.
func (s *Server) contentChunk(j *job, index int, ids []int, lp any, finish string, sent int) any {
	text := s.vocab.text(ids)
	var fr *string
	if finish != "" {
		fr = &finish
	}
	if j.chat {
		ch := chatChunkChoice{Index: index, Delta: chatDelta{Content: &text}, FinishReason: fr, TokenIDs: jsonNull}
		ch.Logprobs, _ = lp.(*chatLogprobs)
		if fr != nil {
			ch.StopReason = jsonNull
		}
		c := chatChunk{ID: j.id, Object: "chat.completion.chunk", Created: j.created, Model: s.p.Model,
			Choices: []chatChunkChoice{ch}}
		if j.continuous {
			u := newUsage(len(j.prompt), sent)
			c.Usage = &u
		}
		return c
	}
	ch := completionChunkChoice{Index: index, Text: text, FinishReason: fr}
	ch.Logprobs, _ = lp.(*completionLogprobs)
	c := completionChunk{ID: j.id, Object: "text_completion", Created: j.created, Model: s.p.Model,
		Choices: []completionChunkChoice{ch}}
	if j.continuous {
		c.Usage = newUsage(len(j.prompt), sent).full()
	}
	return c
}

// respond waits for every choice's whole output and answers in one JSON
// body, the choices in index order.
func (s *Server) respond(w http.ResponseWriter, r *http.Request, j *job, kids []*seq) {
	outs := make([][]int, len(kids))
	reasons := make([]string, len(kids))
	for left := len(kids); left > 0; {
		if !s.wait(r, kids) {
			return
		}
		for i, sq := range kids {
			if reasons[i] != "" {
				continue
			}
			ids, finished, rsn := sq.take()
			if rsn == "abort" {
				return
			}
			outs[i] = append(outs[i], ids...)
			if finished {
				reasons[i] = rsn
				left--
			}
		}
	}
	if j.fault.abortAfter >= 0 {
		panic(http.ErrAbortHandler)
	}
	if j.fault.errorAfter >= 0 {
		writeError(w, newError(http.StatusInternalServerError, "The simulated engine failed (injected by the simulator)."))
		return
	}
	if j.fault.stall > 0 && !sleepCtx(r, j.fault.stall) {
		return
	}
	if j.fault.malformedAfter >= 0 {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id":"` + j.id + `","object":`))
		return
	}
	total := 0
	for _, out := range outs {
		total += len(out)
	}
	kids[0].recordChunk(total) // the body is one chunk, whatever the choices
	u := newUsage(len(j.prompt), total).full()
	if j.chat {
		choices := make([]chatResponseChoice, len(kids))
		for i, out := range outs {
			choices[i] = chatResponseChoice{Index: i, FinishReason: reasons[i], Message: s.chatMessageOf(&j.choices[i], out)}
			if reasons[i] == "stop" && j.choices[i].tool != nil {
				choices[i].FinishReason = "tool_calls"
			}
			if j.logprobs {
				choices[i].Logprobs = s.vocab.chatLogprobsOf(newLogprobSampler(s.vocab, j.choices[i].seed, j.greedy), out, j.topK)
			}
		}
		writeJSON(w, http.StatusOK, chatResponse{ID: j.id, Object: "chat.completion", Created: j.created, Model: s.p.Model,
			Choices: choices, Usage: u})
		return
	}
	choices := make([]completionResponseChoice, len(kids))
	for i, out := range outs {
		choices[i] = completionResponseChoice{Index: i, Text: s.vocab.text(out), FinishReason: reasons[i]}
		if j.logprobs {
			choices[i].Logprobs, _ = s.vocab.completionLogprobsOf(newLogprobSampler(s.vocab, j.choices[i].seed, j.greedy), out, j.topK, 0)
		}
	}
	writeJSON(w, http.StatusOK, completionResponse{ID: j.id, Object: "text_completion", Created: j.created, Model: s.p.Model,
		Choices: choices, Usage: u})
}
