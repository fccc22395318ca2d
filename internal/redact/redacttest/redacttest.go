// Package redacttest plants credentials in a benchmark run and checks that
// none of them reaches what the run writes: a simulator server (in-process)
// that fails some requests with an error body echoing the credential
// headers it received, fixed secret values, and a check over files and
// captured output.
package redacttest

import (
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/internal/sim"
)

// The planted secrets: a URL password, a bearer token (an Authorization
// header) and an API key (an x-api-key header).
const (
	User     = "planted-user"
	Password = "planted-pw-31337"
	Bearer   = "planted-bearer-4141"
	APIKey   = "planted-apikey-5959"
)

// Secrets are the values no output may carry.
var Secrets = []string{Password, Bearer, APIKey}

// A Server is an in-process simulator that echoes credentials in errors.
type Server struct {
	*httptest.Server
	// Seen counts requests that arrived carrying the planted bearer token
	// and API key: proof that the secrets were sent at all.
	Seen atomic.Int64
	// Echoed counts the failures whose body echoed them.
	Echoed atomic.Int64
}

// NewServer starts a simulator serving model (profile instant); every
// third generation request fails with HTTP 500 and a body that echoes the
// Authorization and X-Api-Key headers, as a careless proxy might. It is
// closed when tb ends.
func NewServer(tb testing.TB, model string) *Server {
	tb.Helper()
	srv, err := sim.New(sim.Config{Profile: "instant", Set: map[string]string{"model": model}})
	require.NoError(tb, err)
	s := &Server{}
	var n atomic.Int64
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth, key := r.Header.Get("Authorization"), r.Header.Get("X-Api-Key")
		if strings.Contains(auth, Bearer) && key == APIKey {
			s.Seen.Add(1)
		}
		if strings.HasSuffix(r.URL.Path, "completions") && n.Add(1)%3 == 0 {
			s.Echoed.Add(1)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprintf(w, `{"object":"error","message":"denied for Authorization %q, x-api-key %q at %s","code":500}`, auth, key, r.Host)
			return
		}
		srv.ServeHTTP(w, r)
	}))
	tb.Cleanup(func() {
		srv.Close()
		s.CloseClientConnections()
		s.Close()
	})
	return s
}

// URL is the server's base URL with the planted user and password.
func (s *Server) URL() string {
	return strings.Replace(s.Server.URL, "://", "://"+User+":"+Password+"@", 1)
}

// RequireClean fails tb for every planted secret found in what (a name for
// the message) with its context.
func RequireClean(tb testing.TB, what string, data []byte) {
	tb.Helper()
	for _, sec := range Secrets {
		if i := strings.Index(string(data), sec); i >= 0 {
			lo, hi := max(0, i-80), min(len(data), i+len(sec)+40)
			tb.Errorf("%s carries the secret %q: …%s…", what, sec, data[lo:hi])
		}
	}
}

// RequireCleanDir runs RequireClean on every file under dir and returns
// how many files it read.
func RequireCleanDir(tb testing.TB, dir string) int {
	tb.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		n++
		RequireClean(tb, path, data)
		return nil
	})
	require.NoError(tb, err)
	return n
}
