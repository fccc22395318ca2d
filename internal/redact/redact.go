// Package redact keeps credentials out of everything servegate writes:
// console, result JSON, benchfmt files, slo.md, the HTML report and logs.
//
// String masks what it can recognise in any text: the user information of a
// URL ("http://user:secret@host" becomes "http://xxxxx@host"), the value of a
// sensitive query parameter (?api-key=...), the token after an
// authorization scheme ("Bearer abc" becomes "Bearer xxxxx"), and every
// secret registered with Keep or Request. Credentials a pattern cannot
// recognise, such as an x-api-key value a server echoes in an error body,
// are masked because the client registered them when it was configured:
// once a process has been given a secret, no text it writes through String
// carries it.
package redact

import (
	"net/url"
	"regexp"
	"sort"
	"strings"
	"sync"
)

// Mask replaces a secret, as url.URL.Redacted writes a password.
const Mask = "xxxxx"

// minSecret is the length below which a registered value is not masked
// everywhere: masking "1" or "on" in every text would destroy numbers and
// words. Credentials are longer.
const minSecret = 4

// maxSecrets bounds the registry; past it, the oldest values stay and new
// ones are dropped (patterns still apply).
const maxSecrets = 1024

var registry struct {
	mu      sync.RWMutex
	values  map[string]bool
	ordered []string // longest first, so that a secret containing another is masked whole
}

// Keep registers secret values that String masks wherever they appear from
// now on, in this process. Values shorter than 4 bytes are ignored.
func Keep(values ...string) {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	if registry.values == nil {
		registry.values = map[string]bool{}
	}
	changed := false
	for _, v := range values {
		for _, form := range []string{v, url.QueryEscape(v), url.PathEscape(v)} {
			if len(form) < minSecret || registry.values[form] || len(registry.values) >= maxSecrets {
				continue
			}
			registry.values[form] = true
			registry.ordered = append(registry.ordered, form)
			changed = true
		}
	}
	if changed {
		sort.SliceStable(registry.ordered, func(i, j int) bool { return len(registry.ordered[i]) > len(registry.ordered[j]) })
	}
}

// Request registers the secrets of a request configuration: the user
// information of rawURL and its sensitive query values, and the values of
// the sensitive headers among headers (with the token after an
// authorization scheme on its own).
func Request(rawURL string, headers map[string]string) {
	var vs []string
	if u, err := url.Parse(rawURL); err == nil {
		if u.User != nil {
			if p, ok := u.User.Password(); ok {
				vs = append(vs, p)
			} else { // a user name alone is a token (https://TOKEN@host)
				vs = append(vs, u.User.Username())
			}
		}
		for k, qv := range u.Query() {
			if SensitiveName(k) {
				vs = append(vs, qv...)
			}
		}
	}
	for k, v := range headers {
		if SensitiveName(k) {
			vs = append(vs, v)
			if _, tok, ok := strings.Cut(strings.TrimSpace(v), " "); ok {
				vs = append(vs, strings.TrimSpace(tok))
			}
		}
	}
	Keep(vs...)
}

// sensitiveWords are the parts of a header or query parameter name that
// mark its value as a credential (Authorization, X-Api-Key, api-key,
// Cookie, X-Auth-Token, access_token, sig, ...).
var sensitiveWords = []string{"auth", "key", "token", "secret", "passw", "cookie", "session", "signature", "sig", "credential"}

// SensitiveName reports whether a header or query parameter named name
// carries a credential.
func SensitiveName(name string) bool {
	n := strings.ToLower(name)
	for _, w := range sensitiveWords {
		if w == "sig" {
			if n == "sig" || strings.HasSuffix(n, "-sig") || strings.HasSuffix(n, "_sig") {
				return true
			}
			continue
		}
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

var (
	// userinfo is the user information of a URL: scheme://user:pass@.
	userinfo = regexp.MustCompile(`(?i)\b([a-z][a-z0-9+.\-]*://)[^\s/?#@"'<>]+@`)
	// authScheme is a token after the Bearer authorization scheme (other
	// schemes are words of ordinary text; their values are registered).
	authScheme = regexp.MustCompile(`(?i)\b(bearer)(\s+)[A-Za-z0-9._~+/=\-]{4,}`)
	// queryParam is one name=value pair of a query string.
	queryParam = regexp.MustCompile(`([?&;])([A-Za-z0-9_.\-]+)=([^&#\s"'<>]*)`)
)

// String returns s with every credential it recognises masked (see the
// package documentation).
func String(s string) string {
	if s == "" {
		return s
	}
	if strings.Contains(s, "@") {
		s = userinfo.ReplaceAllString(s, "${1}"+Mask+"@")
	}
	s = authScheme.ReplaceAllString(s, "${1}${2}"+Mask)
	if strings.ContainsAny(s, "?&;") {
		s = queryParam.ReplaceAllStringFunc(s, func(m string) string {
			sub := queryParam.FindStringSubmatch(m)
			if !SensitiveName(sub[2]) || sub[3] == "" {
				return m
			}
			return sub[1] + sub[2] + "=" + Mask
		})
	}
	registry.mu.RLock()
	defer registry.mu.RUnlock()
	for _, v := range registry.ordered {
		if strings.Contains(s, v) {
			s = strings.ReplaceAll(s, v, Mask)
		}
	}
	return s
}

// Header returns a header's value as it may be shown: Mask for a sensitive
// header, else the value through String.
func Header(name, value string) string {
	if SensitiveName(name) {
		return Mask
	}
	return String(value)
}
