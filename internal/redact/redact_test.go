package redact

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestString(t *testing.T) {
	Keep("echoed-key-7731")
	for _, tc := range []struct{ in, want string }{
		{"http://user:secret@127.0.0.1:8000", "http://xxxxx@127.0.0.1:8000"},
		{"https://ghp_token123@example.com/v1", "https://xxxxx@example.com/v1"},
		{`Post "http://u:p%40ss@host/v1/completions": dial tcp: refused`, `Post "http://xxxxx@host/v1/completions": dial tcp: refused`},
		{"base http://127.0.0.1:8000 and mail me@example.com", "base http://127.0.0.1:8000 and mail me@example.com"},
		{"Authorization: Bearer sk-abc.def", "Authorization: Bearer xxxxx"},
		{"http://h/v1?api-key=abc&x=1&sig=zz", "http://h/v1?api-key=xxxxx&x=1&sig=xxxxx"},
		{"invalid key echoed-key-7731 sent", "invalid key xxxxx sent"},
		{"Output token throughput (tok/s): 12.5", "Output token throughput (tok/s): 12.5"},
		{"Total generated tokens: 1234", "Total generated tokens: 1234"},
		{"", ""},
	} {
		require.Equal(t, tc.want, String(tc.in), "String(%q)", tc.in)
	}
}

func TestRequest(t *testing.T) {
	Request("http://planted-user:planted-pw-1@127.0.0.1:1/?access_token=planted-q-2", map[string]string{
		"Authorization":       "Basic planted-basic-3",
		"x-api-key":           "planted-key-4",
		"x-additional-info":   "0.3.3",
		"X-Custom-Session-Id": "planted-session-5",
	})
	text := "planted-pw-1 planted-q-2 planted-basic-3 planted-key-4 planted-session-5 0.3.3 planted-user"
	require.Equal(t, "xxxxx xxxxx xxxxx xxxxx xxxxx 0.3.3 planted-user", String(text),
		"the password, sensitive query and header values are masked; a plain header and a user name with a password are not")
	require.Equal(t, Mask, Header("X-Api-Key", "anything"))
	require.Equal(t, "0.3.3", Header("x-additional-info", "0.3.3"))
}

func TestKeepIgnoresShortValues(t *testing.T) {
	Keep("on", "")
	require.Equal(t, "on 12", String("on 12"))
}

func TestSensitiveName(t *testing.T) {
	for name, want := range map[string]bool{
		"Authorization": true, "Proxy-Authorization": true, "api-key": true, "X-API-Key": true,
		"Cookie": true, "x-auth-token": true, "sig": true, "x-request-id": false, "Content-Type": false,
		"x-additional-info": false, "design": false,
	} {
		require.Equal(t, want, SensitiveName(name), name)
	}
}

func BenchmarkStringClean(b *testing.B) {
	Keep("bench-secret-value")
	s := "request 17 failed (http_status): HTTP 500 Internal Server Error: engine dead"
	for b.Loop() {
		_ = String(s)
	}
}
