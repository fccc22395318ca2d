package sim

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/fixtures"
)

// startStamped runs a simulator on a StampListener, as `servegate sim`
// serves it, and returns its address.
func startStamped(t *testing.T) string {
	t.Helper()
	p := testParams()
	s, err := New(Config{Params: &p, Tokenizer: realTokenizer(t, fixtures.Llama3)})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	hs := &http.Server{Handler: s, ConnContext: ConnContext}
	go hs.Serve(StampListener(ln))
	t.Cleanup(func() { hs.Close(); s.Close() })
	return ln.Addr().String()
}

// completion is a raw HTTP/1.1 streamed completion request with id.
func completion(id string) []byte {
	body := `{"prompt":"hello there","max_tokens":2,"stream":true}`
	return fmt.Appendf(nil, "POST /v1/completions HTTP/1.1\r\nHost: sim\r\nContent-Type: application/json\r\nx-request-id: %s\r\nContent-Length: %d\r\n\r\n%s", id, len(body), body)
}

// readAnswer reads one whole response from br.
func readAnswer(t *testing.T, br *bufio.Reader) {
	t.Helper()
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	_, err = io.Copy(io.Discard, resp.Body)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

// intakeOf fetches request id's ground truth and returns its intake_ms
// (nil when the server does not know it).
func intakeOf(t *testing.T, addr, id string) *float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/debug/requests/" + id)
	require.NoError(t, err)
	defer resp.Body.Close()
	var tr Truth
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&tr))
	return tr.IntakeMS
}

// TestIntakeCountsFromTheSocket checks intake_ms: a request whose head
// reaches the socket in two parts 300 ms apart is handled no earlier than
// its second part, and its intake counts from the first, so it is at
// least 250 ms. The next request on the same connection, sent whole 500
// ms later, counts from its own bytes, not the earlier request's (which
// would make it at least 500 ms).
func TestIntakeCountsFromTheSocket(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("receive stamps are Linux's")
	}
	addr := startStamped(t)
	// The kernel turns receive stamping on a little after the first
	// socket asks: wait until a request has a known intake.
	known := false
	for i := 0; i < 50 && !known; i++ {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		id := fmt.Sprintf("warm-%d", i)
		_, err = c.Write(completion(id))
		require.NoError(t, err)
		readAnswer(t, bufio.NewReader(c))
		c.Close()
		known = intakeOf(t, addr, id) != nil
		time.Sleep(20 * time.Millisecond)
	}
	require.True(t, known, "no request got a receive stamp")

	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	br := bufio.NewReader(c)
	req := completion("split")
	_, err = c.Write(req[:20])
	require.NoError(t, err)
	time.Sleep(300 * time.Millisecond)
	_, err = c.Write(req[20:])
	require.NoError(t, err)
	readAnswer(t, br)
	split := intakeOf(t, addr, "split")
	require.NotNil(t, split)
	require.GreaterOrEqual(t, *split, 250.0, "intake of a request split 300 ms apart")

	time.Sleep(500 * time.Millisecond)
	_, err = c.Write(completion("whole"))
	require.NoError(t, err)
	readAnswer(t, br)
	whole := intakeOf(t, addr, "whole")
	require.NotNil(t, whole)
	require.GreaterOrEqual(t, *whole, 0.0)
	require.Less(t, *whole, 450.0, "the second request's intake counts from the first request's bytes")
}

// TestIntakeUnknownWithoutStamps checks that a simulator served without a
// StampListener leaves intake_ms out rather than inventing one.
func TestIntakeUnknownWithoutStamps(t *testing.T) {
	p := testParams()
	_, url := start(t, Config{Params: &p})
	res := post(t.Context(), url+"/v1/completions", map[string]any{"prompt": "hi", "max_tokens": 2, "stream": true}, map[string]string{"x-request-id": "plain"})
	require.NoError(t, res.err)
	resp, err := http.Get(url + "/debug/requests/plain")
	require.NoError(t, err)
	defer resp.Body.Close()
	var raw map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&raw))
	require.Contains(t, raw, "arrival_unix_ns")
	require.NotContains(t, raw, "intake_ms")
}
