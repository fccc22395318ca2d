// Package client sends one benchmark request to an OpenAI-compatible
// server and measures it the way vllm bench serve's request functions do:
// a streamed completion or chat completion parsed incrementally, or a
// pooling (embeddings, rerank) request, each turned into a metrics.Record
// with monotonic-clock timings. Failures are records, never errors.
//
// Requests to an http:// URL that no proxy applies to go through the
// package's own HTTP/1.1 transport (h1.go, h1body.go), so that an open
// stream costs one goroutine, the caller's, with a stack within 4 KiB,
// and one read buffer, in which the chunked framing is decoded in place
// and the SSE parser finds its lines; https, proxies and a caller's own
// *http.Client go through net/http.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/servegate/servegate/internal/metrics"
	"github.com/servegate/servegate/internal/redact"
	"github.com/servegate/servegate/internal/tokenizer"
)

// Backends, named as vllm bench serve's --backend.
const (
	BackendOpenAI           = "openai"
	BackendVLLM             = "vllm"
	BackendOpenAIChat       = "openai-chat"
	BackendOpenAIEmbeddings = "openai-embeddings"
	BackendVLLMRerank       = "vllm-rerank"
	// BackendOpenAIResponses streams OpenAI's Responses API
	// (/v1/responses); servegate's own, not one of vllm bench serve's.
	BackendOpenAIResponses = "openai-responses"
)

// Backends lists the backends the client implements: the one list that
// scenario validation, `servegate bench --backend` and the docs read.
var Backends = []string{BackendOpenAI, BackendVLLM, BackendOpenAIChat, BackendOpenAIEmbeddings, BackendVLLMRerank, BackendOpenAIResponses}

// SendsSampling reports whether backend is a generation backend (vLLM's
// OpenAI-compatible ones, and openai-responses), which sends sampling
// parameters (and for which the random datasets force ignore_eos).
func SendsSampling(backend string) bool {
	return backend == BackendOpenAI || backend == BackendVLLM || backend == BackendOpenAIChat || backend == BackendOpenAIResponses
}

// endpointSuffixes are the URL endings each backend accepts, as vLLM
// validates them.
var endpointSuffixes = map[string][]string{
	BackendOpenAI:           {"completions"},
	BackendVLLM:             {"completions"},
	BackendOpenAIChat:       {"chat/completions"},
	BackendOpenAIEmbeddings: {"embeddings"},
	BackendVLLMRerank:       {"rerank"},
	BackendOpenAIResponses:  {"responses"},
}

// defaultEndpoints are the request paths of the backends' APIs.
var defaultEndpoints = map[string]string{
	BackendOpenAI:           "/v1/completions",
	BackendVLLM:             "/v1/completions",
	BackendOpenAIChat:       "/v1/chat/completions",
	BackendOpenAIEmbeddings: "/v1/embeddings",
	BackendVLLMRerank:       "/v1/rerank",
	BackendOpenAIResponses:  "/v1/responses",
}

// DefaultEndpoint is the request path of backend's API, "" for an
// unknown backend.
func DefaultEndpoint(backend string) string { return defaultEndpoints[backend] }

// IsPooling reports whether backend is a pooling (embeddings, rerank or
// vLLM's pooling) backend, which vLLM summarises with its embedding
// metrics.
func IsPooling(backend string) bool {
	return strings.Contains(backend, "embeddings") || strings.Contains(backend, "rerank") || backend == "vllm-pooling"
}

// CheckEndpoint returns an error when backend is unknown or url does not
// end the way the backend's API does (vLLM's _validate_api_url).
func CheckEndpoint(backend, url string) error {
	suffixes, ok := endpointSuffixes[backend]
	if !ok {
		return fmt.Errorf("check endpoint: unknown backend %q", backend)
	}
	for _, s := range append(suffixes, "profile") {
		if strings.HasSuffix(url, s) {
			return nil
		}
	}
	return fmt.Errorf("check endpoint: %s URL %q must end with one of %q", backend, redact.String(url), suffixes)
}

// Sampling holds the sampling parameters sent with generation requests;
// nil fields are not sent, except Temperature, which defaults to 0 (greedy)
// as in vllm bench serve.
type Sampling struct {
	Temperature       *float64
	TopP              *float64
	TopK              *int
	MinP              *float64
	FrequencyPenalty  *float64
	PresencePenalty   *float64
	RepetitionPenalty *float64
}

// params returns the sampling parameters as request fields.
func (s Sampling) params() map[string]any {
	m := map[string]any{"temperature": 0.0}
	set := func(k string, v *float64) {
		if v != nil {
			m[k] = *v
		}
	}
	set("temperature", s.Temperature)
	set("top_p", s.TopP)
	set("min_p", s.MinP)
	set("frequency_penalty", s.FrequencyPenalty)
	set("presence_penalty", s.PresencePenalty)
	set("repetition_penalty", s.RepetitionPenalty)
	if s.TopK != nil {
		m["top_k"] = *s.TopK
	}
	return m
}

// Limits on what a server may send. Memory per streamed request is
// bounded by the read buffer (at most the line cap), the event data (at
// most the line cap), the generated text (MaxTokenBytes a token of the
// output cap, at most MaxTextBytes, and at least the line cap) and the
// timings (8 bytes an output chunk, at most the output cap).
const (
	// DefaultMaxLineBytes is the line cap when Client.MaxLineBytes is 0.
	DefaultMaxLineBytes = 1 << 20
	// MaxLineBytesLimit is the largest line cap a client accepts.
	MaxLineBytesLimit = 1 << 30
	// PoolingBodyFactor is how many line caps a pooling response body
	// may hold (64 MiB by default).
	PoolingBodyFactor = 64
	// OutputSlack is how many output chunks, and usage tokens, a stream
	// may carry past max_tokens (times n when extra_body sets n) before
	// the request fails as metrics.FailureExcessOutput.
	OutputSlack = 16
	// MaxTokenBytes is the generated text allowed per token of the output
	// cap: more than any vocabulary's longest token.
	MaxTokenBytes = 256
	// MaxTextBytes caps the generated text of one request whatever
	// max_tokens says (unless the line cap is larger).
	MaxTextBytes = 64 << 20
	// unboundedOutput is the output cap of a request without max_tokens.
	unboundedOutput = 1 << 20
)

// lineLimit is the line cap in force.
func (c *Client) lineLimit() int {
	switch {
	case c.MaxLineBytes <= 0:
		return DefaultMaxLineBytes
	case c.MaxLineBytes > MaxLineBytesLimit:
		return MaxLineBytesLimit
	}
	return c.MaxLineBytes
}

// outputCap is how many output chunks (and usage tokens) req may receive:
// max_tokens (max_completion_tokens, max_output_tokens: as the payload
// finally sends it) plus OutputSlack, times n.
func (c *Client) outputCap(req Request) int {
	maxTokens, n := req.OutputLen, 1
	for _, k := range []string{"max_tokens", "max_completion_tokens", "max_output_tokens"} {
		if v, ok := intValue(c.ExtraBody[k]); ok {
			maxTokens = v
		}
	}
	if v, ok := intValue(c.ExtraBody["n"]); ok && v > 1 {
		n = min(v, 1<<10)
	}
	if maxTokens <= 0 || maxTokens > unboundedOutput {
		maxTokens = unboundedOutput
	}
	return (maxTokens + OutputSlack) * n
}

// intValue reads a JSON or YAML number as an int.
func intValue(v any) (int, bool) {
	switch x := v.(type) {
	case int:
		return x, true
	case int64:
		return int(max(min(x, 1<<40), -1)), true
	case float64:
		if x >= -1 && x <= 1<<40 {
			return int(x), true
		}
	}
	return 0, false
}

// DefaultSessionHeader is the header that carries a session's id when
// Client.SessionHeader is empty.
const DefaultSessionHeader = "x-session-id"

// A Client sends requests of one backend to one URL. Its zero value is not
// usable: set Backend, URL and Model. A Client is safe for concurrent use.
type Client struct {
	// Backend is one of the Backend constants.
	Backend string
	// URL is the full API URL (base URL plus endpoint).
	URL string
	// Model is the model id; ModelName, when set, is sent instead.
	Model, ModelName string
	// HTTP sends the requests when set. When nil, requests to an http://
	// URL that no proxy applies to (http.ProxyFromEnvironment) go through
	// the package's own HTTP/1.1 transport, which costs an open stream one
	// goroutine (the caller's) and one read buffer; any other URL goes
	// through a client from NewHTTPClient.
	HTTP *http.Client
	// MaxConns is how many idle connections are kept for later requests;
	// 0 means 4096.
	MaxConns int
	// Warmer, when set, supplies warm connections before any is dialled
	// (see Warmer.Warm), and the connections dialled after are stamped
	// too, so that requests are timed from their write and chunks from
	// their arrival. Used only when HTTP is nil.
	Warmer *Warmer
	// Epoch is the zero of every time in the records; it must carry a
	// monotonic reading (time.Now()).
	Epoch time.Time
	// Timeout bounds each request, body included; 0 means none.
	Timeout time.Duration
	// Tokenizer counts output tokens when the server sends no usage; nil
	// leaves OutputTokens at 0 then.
	Tokenizer *tokenizer.Tokenizer
	// Sampling parameters for generation backends.
	Sampling Sampling
	// Logprobs is sent as "logprobs" by the completions backends (null
	// when nil).
	Logprobs *int
	// IgnoreEOS sends "ignore_eos": true when set.
	IgnoreEOS bool
	// ExtraBody is merged into every payload last, overriding any field.
	ExtraBody map[string]any
	// Headers are added to every request; x-request-id overrides them.
	Headers map[string]string
	// SessionHeader names the header that carries a request's SessionID;
	// empty means DefaultSessionHeader.
	SessionHeader string
	// APIKey is sent as a bearer token; empty uses $OPENAI_API_KEY, and no
	// Authorization header is sent when both are empty.
	APIKey string
	// MaxLineBytes caps one SSE line and one event's data, in bytes: past
	// it the request fails as metrics.FailureLineTooLong and the stream is
	// closed. A pooling (embeddings, rerank) response body may be
	// PoolingBodyFactor times as long. 0 means DefaultMaxLineBytes (1 MiB);
	// values above MaxLineBytesLimit (1 GiB) count as that limit.
	MaxLineBytes int

	once    sync.Once
	h1      *h1Transport // the own transport, when it sends the requests
	url     *url.URL
	bufPool sync.Pool // of *streamBufs
}

// streamBufs are the scratch buffers of one stream, reused across
// requests: the read buffer, the event data, the generated text (copied
// into the record at the end) and the JSON scanner's scratch.
type streamBufs struct {
	read, data, text, scratch []byte
	// sse and stream are the stream's SSE reader and state, kept here
	// rather than in readStream's frame (see DoPrepared).
	sse    sseReader
	stream streamState
	// tools assembles a stream's tool calls.
	tools toolCalls
}

// maxPooledBytes is the largest buffer a finished stream hands back to
// the pool; a larger one (a long line, a long text) is left to the
// garbage collector, so that one odd answer does not pin memory in every
// later stream.
const maxPooledBytes = 64 << 10

// keep returns b for the pool, or nil when it is too large to keep.
func keep(b []byte) []byte {
	if cap(b) > maxPooledBytes {
		return nil
	}
	return b
}

// A Request is one request to send.
type Request struct {
	// Prompt is the prompt (completions), user message (chat), input
	// (embeddings) or query (rerank).
	Prompt string
	// Documents are the documents to rank (rerank only).
	Documents []string
	// Inputs, when set, are the texts of one batched embeddings request,
	// sent as the "input" list instead of Prompt (embeddings only).
	Inputs []string
	// PromptLen is the prompt's length in tokens as the dataset counted it.
	PromptLen int
	// OutputLen is max_tokens (max_completion_tokens for chat).
	OutputLen int
	// RequestID is sent as x-request-id when set.
	RequestID string
	// Model, when set, overrides the model name sent (a LoRA module).
	Model string
	// Messages, when set, is the whole conversation, sent instead of
	// Prompt as "messages" (chat) or "input" (responses).
	Messages []Message
	// Tools, when set, is sent as the request's "tools": a JSON array of
	// tool definitions in OpenAI's chat format.
	Tools json.RawMessage
	// SessionID, when set, is sent in the client's SessionHeader.
	SessionID string
}

// A Message is one message of a conversation.
type Message struct {
	// Role is system, user, assistant or tool.
	Role string
	// Content is the message's text.
	Content string
	// ToolCalls are the calls an assistant message made.
	ToolCalls []metrics.ToolCall
	// ToolCallID is the call a tool message answers.
	ToolCallID string
}

// writeBufferBytes is the size of the write buffer the HTTP transport
// keeps for each connection (net/http's default is 4 KiB). A request
// goes out in the same two system calls with either (the headers and the
// start of the body, then the rest of the body straight from the
// request), and the smaller buffer saves 3 KiB per open stream. The read
// buffer keeps its default: it bounds how many events that arrived
// together one read takes.
const writeBufferBytes = 1 << 10

// NewHTTPClient returns an HTTP client tuned for benchmarking one host: no
// idle-connection cap below maxConns (0 means 4096), no compression, no
// overall timeout (requests carry their own), a small write buffer.
func NewHTTPClient(maxConns int) *http.Client {
	if maxConns <= 0 {
		maxConns = 4096
	}
	t := &http.Transport{
		Proxy: http.ProxyFromEnvironment,
		DialContext: (&net.Dialer{
			Timeout:   30 * time.Second,
			KeepAlive: 30 * time.Second,
		}).DialContext,
		MaxIdleConns:        maxConns,
		MaxIdleConnsPerHost: maxConns,
		IdleConnTimeout:     60 * time.Second,
		DisableCompression:  true,
		ForceAttemptHTTP2:   false,
		WriteBufferSize:     writeBufferBytes,
	}
	return &http.Client{Transport: t}
}

func (c *Client) init() {
	c.once.Do(func() {
		c.url, _ = url.Parse(c.URL)
		if c.HTTP == nil && c.url != nil {
			c.h1 = newH1Transport(c.url, c.Warmer, c.MaxConns)
		}
		if c.HTTP == nil && c.h1 == nil {
			c.HTTP = NewHTTPClient(c.MaxConns)
			if c.Warmer != nil {
				c.HTTP.Transport.(*http.Transport).DialContext = c.Warmer.DialContext
			}
		}
		if c.Epoch.IsZero() {
			c.Epoch = time.Now()
		}
		c.bufPool.New = func() any { return new(streamBufs) }
		h := http.Header{}
		c.setHeaders(h, "", "")
		secret := map[string]string{}
		for k := range h {
			secret[k] = h.Get(k)
		}
		redact.Request(c.URL, secret) // masked in every text servegate writes
	})
}

// now is the monotonic time since Epoch.
func (c *Client) now() time.Duration { return time.Since(c.Epoch) }

// A Prepared is a request with its payload and headers built, ready to
// send with DoPrepared. It is used once.
type Prepared struct {
	req    Request
	body   []byte
	header http.Header
	err    error
	outCap int
	// wire is the whole request, head and body, for the own transport;
	// close is true when its headers ask the server to close the
	// connection after it.
	wire  []byte
	close bool
}

// Prepare builds req's payload and headers ahead of time, so that sending
// it costs only the HTTP round trip (the engine prepares the next request
// while it waits for that request's send time). For the own transport
// the request's bytes are built here, ready for one write.
func (c *Client) Prepare(req Request) Prepared {
	c.init()
	p := Prepared{req: req, header: make(http.Header, 4), outCap: c.outputCap(req)}
	p.body, p.err = c.payload(req)
	c.setHeaders(p.header, req.RequestID, req.SessionID)
	if c.h1 != nil && p.err == nil {
		p.wire, p.err = requestHead(c.url, p.header, p.body)
		p.close = closesConnection(p.header)
		p.body, p.header = nil, nil
	}
	return p
}

// CloseIdleConnections closes the connections kept for later requests.
func (c *Client) CloseIdleConnections() {
	c.init()
	if c.h1 != nil {
		c.h1.closeIdle()
	} else {
		c.HTTP.CloseIdleConnections()
	}
}

// Do sends req and returns its record. It never returns an error: a
// failure is a record with Success false, a Failure kind and an Error text.
func (c *Client) Do(ctx context.Context, req Request) metrics.Record {
	p := c.Prepare(req)
	var rec metrics.Record
	c.DoPrepared(ctx, &p, &rec)
	return rec
}

// DoPrepared sends a prepared request and writes its record to rec
// (whatever rec held is overwritten), like Do. The record's Error carries
// no credential of the client's (see package redact). It drops the
// request's bytes once they are written, so that a long prompt is not
// held for the whole stream. Request and record go by pointer, not by
// value: the caller's frame and this one are under every open stream's
// reads, and a goroutine whose stack stays within 4 KiB does not grow it
// to 8 (BenchmarkOpenStreams in package engine).
func (c *Client) DoPrepared(ctx context.Context, p *Prepared, rec *metrics.Record) {
	c.init()
	*rec = metrics.Record{RequestID: p.req.RequestID, PromptLen: p.req.PromptLen}
	if p.err != nil {
		rec.Failure, rec.Error = metrics.FailureTransport, redact.String(p.err.Error())
		return
	}
	// Each transport's work is in a function of its own, so that this
	// frame stays small.
	bufs := c.bufPool.Get().(*streamBufs)
	if c.h1 != nil {
		c.doH1(ctx, p, rec, bufs)
	} else {
		c.doHTTP(ctx, p, rec, bufs)
	}
	bufs.read = keep(bufs.read)
	c.bufPool.Put(bufs)
	if rec.Error != "" {
		rec.Error = redact.String(rec.Error)
	}
}

// doHTTP sends a prepared request through c.HTTP and reads its answer
// into rec.
func (c *Client) doHTTP(ctx context.Context, p *Prepared, rec *metrics.Record, bufs *streamBufs) {
	rctx, cancel := ctx, context.CancelFunc(func() {})
	if c.Timeout > 0 {
		rctx, cancel = context.WithTimeout(ctx, c.Timeout)
	}
	defer cancel()
	body := bytes.NewReader(p.body)
	hreq, err := http.NewRequestWithContext(rctx, http.MethodPost, c.URL, body)
	if err != nil {
		rec.Failure, rec.Error = metrics.FailureTransport, fmt.Sprintf("build request: %v", err)
		return
	}
	hreq.Header = p.header
	var conn *stampedConn
	hreq = hreq.WithContext(httptrace.WithClientTrace(rctx, &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) {
			if conn, _ = info.Conn.(*stampedConn); conn != nil {
				conn.arm()
			}
		},
	}))
	rec.Start = c.now()
	resp, err := c.HTTP.Do(hreq)
	if err != nil {
		// The transport read the body past what it wrote by at most its
		// write buffer: a body not read to its end was cut.
		if body.Len() > 0 && ctx.Err() == nil && (errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)) {
			total := len(p.body)
			err = &url.Error{Op: "Post", URL: c.URL, Err: &SendCutError{Sent: total - body.Len(), Total: total}}
			rec.SendCut = true
		}
		c.fail(ctx, rctx, rec, err)
		return
	}
	defer resp.Body.Close()
	now := c.clock(conn, rec)
	c.read(ctx, rctx, &answer{status: resp.StatusCode, contentType: resp.Header.Get("Content-Type"), body: resp.Body}, bufs, rec, p.outCap, now)
}

// doH1 sends a prepared request through the own transport (h1.go) and
// reads its answer into rec, in this goroutine alone.
func (c *Client) doH1(ctx context.Context, p *Prepared, rec *metrics.Record, bufs *streamBufs) {
	if cap(bufs.read) == 0 {
		bufs.read = make([]byte, initialReadBytes)
	}
	rec.Start = c.now()
	x, buf, n, err := c.h1.send(ctx, p, c.Timeout, bufs.read[:cap(bufs.read)])
	bufs.read = buf
	if err != nil {
		c.fail(ctx, ctx, rec, &url.Error{Op: "Post", URL: c.URL, Err: err})
		var cut *SendCutError
		rec.SendCut = errors.As(err, &cut)
		return
	}
	defer x.finish()
	now := c.clock(x.stamped, rec)
	a := &answer{status: x.head.status, contentType: x.head.contentType, body: &x.body, buffered: buf[:n]}
	c.read(ctx, ctx, a, bufs, rec, p.outCap, now)
}

// clock returns the clock of a request's answer: over a stamped
// connection (conn not nil) that carried the request, the instants the
// connection noted, and the request's start moved to its first write;
// otherwise c.now.
func (c *Client) clock(conn *stampedConn, rec *metrics.Record) func() time.Duration {
	if conn != nil {
		if sent, ok := since(conn.sent.Load(), c.Epoch); ok && sent >= rec.Start {
			rec.Start = sent
			return func() time.Duration { return conn.at(c.Epoch, c.now) }
		}
	}
	return c.now
}

// An answer is a response as both transports give it.
type answer struct {
	status      int
	contentType string
	body        io.Reader
	// buffered are body bytes read with the head, at the front of the
	// stream's read buffer; body reads what follows them.
	buffered []byte
}

// reader reads the whole body.
func (a *answer) reader() io.Reader {
	if len(a.buffered) == 0 {
		return a.body
	}
	return io.MultiReader(bytes.NewReader(a.buffered), a.body)
}

// read reads an answer into rec: a stream, or else a whole body.
func (c *Client) read(ctx, rctx context.Context, a *answer, bufs *streamBufs, rec *metrics.Record, outCap int, now func() time.Duration) {
	rec.HTTPStatus = a.status
	if a.status == http.StatusOK && !IsPooling(c.Backend) {
		c.readStream(ctx, rctx, a, bufs, rec, outCap, now)
		return
	}
	c.readWhole(ctx, rctx, a, rec, now)
}

// readWhole reads an HTTP error or a pooling body into rec.
func (c *Client) readWhole(ctx, rctx context.Context, a *answer, rec *metrics.Record, now func() time.Duration) {
	if a.status != http.StatusOK {
		rec.Failure = metrics.FailureHTTPStatus
		rec.Error = httpError(a.status, a.reader())
		return
	}
	c.readPooling(ctx, rctx, a.reader(), rec, now)
}

// setHeaders sets content type, authorization, extra headers, the
// session id (in SessionHeader) and the request id, in vLLM's order of
// precedence: a request's own ids override the client's extra headers.
func (c *Client) setHeaders(h http.Header, id, session string) {
	h.Set("Content-Type", "application/json")
	key := c.APIKey
	if key == "" {
		key = os.Getenv("OPENAI_API_KEY")
	}
	if key != "" {
		h.Set("Authorization", "Bearer "+key)
	}
	for k, v := range c.Headers {
		h.Set(k, v)
	}
	if session != "" {
		h.Set(c.sessionHeader(), session)
	}
	if id != "" {
		h.Set("x-request-id", id)
	}
}

// sessionHeader is the header that carries a request's session id.
func (c *Client) sessionHeader() string {
	if c.SessionHeader == "" {
		return DefaultSessionHeader
	}
	return c.SessionHeader
}
