package sim

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"
)

// Request size limits. vLLM reads any body and tokenizes any prompt; the
// simulator refuses what cannot fit instead of spending seconds and
// gigabytes on it.
const (
	// maxBytesPerToken is how many body bytes a token of the context
	// may take (JSON-escaped text, or a token id and its comma); no real
	// prompt needs more.
	maxBytesPerToken = 64
	// bodySlack is the room for the rest of a request beside its prompt.
	bodySlack = 1 << 20
	// maxPoolingBody is the largest embeddings or rerank body (a batch
	// of inputs, each checked against max_model_len).
	maxPoolingBody = 16 << 20
	// maxN is the most choices (n) one request may ask for.
	maxN = 1024
)

// genBodyLimit is the largest generation request body the server reads.
func (s *Server) genBodyLimit() int64 {
	return bodySlack + maxBytesPerToken*int64(s.p.MaxModelLen)
}

// checkInputBytes refuses, before tokenizing it, an input of n bytes, too
// long to fit max_model_len tokens.
func (s *Server) checkInputBytes(n int) error {
	if n > maxBytesPerToken*s.p.MaxModelLen {
		return bad(http.StatusBadRequest, "This model's maximum context length is %d tokens. However, your request has an input of %d bytes, more than %d bytes a token. Please reduce the length of the input.", s.p.MaxModelLen, n, maxBytesPerToken)
	}
	return nil
}

// endpointFuncs names the vLLM function behind each path, which FastAPI
// quotes in a validation error.
var endpointFuncs = map[string]string{
	"/v1/completions":      "create_completion",
	"/v1/chat/completions": "create_chat_completion",
	"/v1/embeddings":       "create_embedding",
	"/rerank":              "do_rerank",
	"/v1/rerank":           "do_rerank_v1",
	"/v2/rerank":           "do_rerank_v2",
}

// decodeBody reads a JSON request body into v. A body that is not JSON is
// answered as vLLM answers it: FastAPI's RequestValidationError text (one
// json_invalid error at Python's character position, with the message of
// Python's json decoder), type "Bad Request", status 400.
//
// A body longer than limit bytes is refused with a 400 after reading
// limit bytes of it, so that a huge prompt costs neither memory nor a long
// tokenization.
func decodeBody(r *http.Request, v any, limit int64) error {
	data, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		return bad(http.StatusBadRequest, "read request body: %v", err)
	}
	if int64(len(data)) > limit {
		return bad(http.StatusBadRequest, "The request body is over %d bytes, the most the simulator reads (at most %d bytes a token of max_model_len, plus 1 MiB). Please reduce the length of the input.", limit, maxBytesPerToken)
	}
	err = json.Unmarshal(data, v)
	if err == nil {
		return nil
	}
	if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok && te.Field == "" {
		// A body that is JSON but not an object fails inside vLLM, which
		// answers with Starlette's bare 500.
		return &badRequest{plain500}
	}
	var msg string
	detail := ""
	if len(data) == 0 {
		// FastAPI takes an empty body for a missing one.
		detail = "{'type': 'missing', 'loc': ('body',), 'msg': 'Field required', 'input': None}"
	} else if _, ok := errors.AsType[*json.SyntaxError](err); ok {
		pos, why := pythonJSONError(data)
		detail = fmt.Sprintf("{'type': 'json_invalid', 'loc': ('body', %d), 'msg': 'JSON decode error', 'input': {}, 'ctx': {'error': '%s'}}", pos, why)
	}
	if detail != "" {
		// The file and line are where vLLM's endpoint wrapper is defined;
		// they vary with the installation.
		msg = fmt.Sprintf("1 validation error:\n  %s\n\n  File \"vllm/entrypoints/utils.py\", line 518, in %s\n    %s %s [%s]",
			detail, endpointFuncs[r.URL.Path], r.Method, r.URL.Path, detail)
	} else {
		msg = fmt.Sprintf("invalid request body: %v", err)
	}
	e := newError(http.StatusBadRequest, "%s", msg)
	e.Error.Type = "Bad Request" // FastAPI's validation error, as vLLM reports it
	return &badRequest{e}
}

// plain500 stands for Starlette's answer to an unhandled exception: 500,
// text/plain, "Internal Server Error" (writeError writes it as such).
var plain500 = errorResponse{Error: errorInfo{Message: "Internal Server Error", Code: http.StatusInternalServerError}}

// pythonJSONError returns where (in characters) and why Python's json
// module rejects data, for the common cases: what Go's decoder says of the
// first bad byte (a NUL is appended, so a cut-off document fails there as
// Python's does at its end), in Python's words.
func pythonJSONError(data []byte) (pos int, why string) {
	probe := append(append([]byte(nil), data...), 0)
	err := json.Unmarshal(probe, new(any))
	se, ok := errors.AsType[*json.SyntaxError](err)
	if !ok {
		return utf8.RuneCount(data), "Expecting value"
	}
	off := int(se.Offset) - 1 // Go's offset is after the bad byte
	off = max(0, min(off, len(data)))
	msg := se.Error()
	switch {
	case strings.Contains(msg, "in string literal"):
		if off == len(data) {
			return utf8.RuneCount(data[:stringStart(data)]), "Unterminated string starting at"
		}
		return utf8.RuneCount(data[:off]), "Invalid control character at"
	case strings.Contains(msg, "in literal"):
		// Python fails at the start of a word that is not true, false or
		// null.
		for off > 0 && data[off-1] >= 'a' && data[off-1] <= 'z' {
			off--
		}
		why = "Expecting value"
	case strings.Contains(msg, "after object key:value pair"), strings.Contains(msg, "after array element"):
		why = "Expecting ',' delimiter"
	case strings.Contains(msg, "after object key"):
		why = "Expecting ':' delimiter"
	case strings.Contains(msg, "looking for beginning of object key string"):
		why = "Expecting property name enclosed in double quotes"
	case strings.Contains(msg, "after top-level value"):
		why = "Extra data"
	default:
		why = "Expecting value"
	}
	return utf8.RuneCount(data[:off]), why
}

// stringStart is the offset of the quote that opens the string left open
// at the end of data.
func stringStart(data []byte) int {
	start, in := 0, false
	for i := 0; i < len(data); i++ {
		switch {
		case in && data[i] == '\\':
			i++
		case data[i] == '"':
			if !in {
				start = i
			}
			in = !in
		}
	}
	return start
}
