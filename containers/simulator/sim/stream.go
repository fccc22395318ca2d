package sim

import (
	"net/http"
	"time"
)

// stream writes a request's output as server-sent events the way vLLM does:
// one chunk per engine output (tokens that piled up while the writer was
// behind go out merged in one chunk), chat's role-only chunk right before
// the first content, the finish reason on the last content chunk, then the
// usage chunk when asked for, then [DONE].
func (s *Server) stream(w http.ResponseWriter, r *http.Request, j *job, sq *seq) {
	fl, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	if fl != nil {
		fl.Flush()
	}
	sent, chunks := 0, 0
	cw := s.newChunkWriter(j)
	for {
		ids, finished, reason, ok := s.await(r, sq)
		if !ok || reason == "abort" {
			return
		}
		if len(ids) > 0 {
			if chunks == j.fault.errorAfter {
				s.eng.abort(sq)
				w.Write(streamError(http.StatusInternalServerError, "The simulated engine failed mid-generation (injected by the simulator)."))
				w.Write([]byte("data: [DONE]\n\n"))
				if fl != nil {
					fl.Flush()
				}
				return
			}
			if chunks == j.fault.abortAfter {
				s.eng.abort(sq)
				panic(http.ErrAbortHandler)
			}
			if j.fault.stall > 0 && chunks == j.fault.stallAfter {
				if !sleepCtx(r, j.fault.stall) {
					s.eng.abort(sq)
					return
				}
				more, fin, rsn, _ := sq.tryTake()
				ids, finished, reason = append(ids, more...), finished || fin, pick(reason, rsn)
			}
			finish := ""
			if finished {
				finish = reason
			}
			if j.chat && chunks == 0 {
				writeEvent(w, s.chatRoleChunk(j))
			}
			sent += len(ids)
			if chunks == j.fault.malformedAfter {
				w.Write([]byte("data: {\"id\":\"" + j.id + "\",\"object\":\n\n"))
			} else {
				w.Write(cw.chunk(s.vocab.text(ids), finish, sent))
			}
			if fl != nil {
				fl.Flush()
			}
			sq.recordChunk(len(ids))
			chunks++
		}
		if finished {
			break
		}
	}
	if j.includeUsage {
		object := "text_completion"
		if j.chat {
			object = "chat.completion.chunk"
		}
		writeEvent(w, usageChunk{ID: j.id, Object: object, Created: j.created, Model: s.p.Model,
			Choices: []struct{}{}, Usage: newUsage(len(j.prompt), sent)})
	}
	w.Write([]byte("data: [DONE]\n\n"))
	if fl != nil {
		fl.Flush()
	}
}

func pick(a, b string) string {
	if b != "" {
		return b
	}
	return a
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

func (s *Server) chatRoleChunk(j *job) chatChunk {
	empty := ""
	c := chatChunk{ID: j.id, Object: "chat.completion.chunk", Created: j.created, Model: s.p.Model,
		Choices:        []chatChunkChoice{{Delta: chatDelta{Role: "assistant", Content: &empty}}},
		PromptTokenIDs: jsonNull}
	if j.continuous {
		u := newUsage(len(j.prompt), 0)
		c.Usage = &u
	}
	return c
}

// contentChunk is the chunk carrying ids; sent counts the tokens sent so
// far, these included. The stream writes the same bytes with chunkWriter;
// this is the reference it is tested against.
func (s *Server) contentChunk(j *job, ids []int, finish string, sent int) any {
	text := s.vocab.text(ids)
	var fr *string
	if finish != "" {
		fr = &finish
	}
	if j.chat {
		ch := chatChunkChoice{Delta: chatDelta{Content: &text}, FinishReason: fr, TokenIDs: jsonNull}
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
	c := completionChunk{ID: j.id, Object: "text_completion", Created: j.created, Model: s.p.Model,
		Choices: []completionChunkChoice{{Text: text, FinishReason: fr}}}
	if j.continuous {
		c.Usage = newUsage(len(j.prompt), sent).full()
	}
	return c
}

// respond waits for the whole output and answers in one JSON body.
func (s *Server) respond(w http.ResponseWriter, r *http.Request, j *job, sq *seq) {
	var out []int
	reason := ""
	for {
		ids, finished, rsn, ok := s.await(r, sq)
		if !ok || rsn == "abort" {
			return
		}
		out = append(out, ids...)
		if finished {
			reason = rsn
			break
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
	sq.recordChunk(len(out))
	text := s.vocab.text(out)
	u := newUsage(len(j.prompt), len(out)).full()
	if j.chat {
		writeJSON(w, http.StatusOK, chatResponse{ID: j.id, Object: "chat.completion", Created: j.created, Model: s.p.Model,
			Choices: []chatResponseChoice{{Message: chatMessage{Role: "assistant", Content: text, ToolCalls: []any{}}, FinishReason: reason}},
			Usage:   u})
		return
	}
	writeJSON(w, http.StatusOK, completionResponse{ID: j.id, Object: "text_completion", Created: j.created, Model: s.p.Model,
		Choices: []completionResponseChoice{{Text: text, FinishReason: reason}}, Usage: u})
}
