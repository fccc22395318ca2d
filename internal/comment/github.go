package comment

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// maxPages bounds the comment listing (100 a page). A pull request with
// more than 3000 comments gets a new one.
const maxPages = 30

// A GitHub is the part of GitHub's API the comment needs: who the token
// is, and a pull request's issue comments.
type GitHub struct {
	// API is the REST API's base URL (https://api.github.com).
	API string
	// GraphQL is the GraphQL endpoint; "" derives it from API.
	GraphQL string
	// Repo is OWNER/NAME; Token the credential.
	Repo, Token string
	Client      *http.Client
}

// A user is a comment's author as the REST API shows it.
type user struct {
	Login string `json:"login"`
	ID    int64  `json:"id"`
	Type  string `json:"type"`
}

type issueComment struct {
	ID   int64  `json:"id"`
	Body string `json:"body"`
	User *user  `json:"user"`
}

// An identity is who the token acts as.
type identity struct {
	// login and id come from GET /user, for a person's token.
	login string
	id    int64
	// bot is the login of an app's bot, from GraphQL's viewer, for an
	// Actions or app installation token, which GET /user refuses.
	bot string
}

// owns reports whether the identity wrote a comment by u.
func (me identity) owns(u *user) bool {
	switch {
	case u == nil:
		return false
	case me.id != 0:
		return u.ID == me.id
	case me.bot != "":
		// GraphQL names an app's bot with or without "[bot]"; the REST
		// API always with it, and with type Bot. A person's account
		// cannot hold brackets, so a look-alike person never matches.
		return u.Type == "Bot" && strings.EqualFold(strings.TrimSuffix(u.Login, "[bot]"), strings.TrimSuffix(me.bot, "[bot]"))
	}
	return false
}

func (me identity) String() string {
	if me.bot != "" {
		return me.bot
	}
	return me.login
}

// Upsert updates the pull request's comment that starts with marker and
// was written by the token's own identity, or creates one. It returns
// the comment's id and whether it was created. A comment that starts with
// the marker but has another author is left alone.
func (g *GitHub) Upsert(ctx context.Context, pr int, marker, body string) (int64, bool, error) {
	if !strings.Contains(g.Repo, "/") {
		return 0, false, fmt.Errorf("repository %q: want OWNER/NAME (-repo or GITHUB_REPOSITORY)", g.Repo)
	}
	me, err := g.whoAmI(ctx)
	if err != nil {
		return 0, false, err
	}
	base := strings.TrimRight(g.API, "/") + "/repos/" + g.Repo
	for page := 1; page <= maxPages; page++ {
		var cs []issueComment
		if err := g.call(ctx, http.MethodGet, fmt.Sprintf("%s/issues/%d/comments?per_page=100&page=%d", base, pr, page), nil, &cs); err != nil {
			return 0, false, err
		}
		for _, c := range cs {
			// The gate's comment starts with the marker. A comment that
			// only mentions it, or another author's copy, is not ours.
			if strings.HasPrefix(c.Body, marker) && me.owns(c.User) {
				var out issueComment
				err := g.call(ctx, http.MethodPatch, fmt.Sprintf("%s/issues/comments/%d", base, c.ID), map[string]string{"body": body}, &out)
				return c.ID, false, err
			}
		}
		if len(cs) < 100 {
			break
		}
	}
	var out issueComment
	if err := g.call(ctx, http.MethodPost, fmt.Sprintf("%s/issues/%d/comments", base, pr), map[string]string{"body": body}, &out); err != nil {
		return 0, false, err
	}
	return out.ID, true, nil
}

// whoAmI asks who the token is. A person's token answers GET /user. An
// Actions or app installation token gets 403 there, and answers
// GraphQL's viewer instead.
func (g *GitHub) whoAmI(ctx context.Context) (identity, error) {
	var u user
	err := g.call(ctx, http.MethodGet, strings.TrimRight(g.API, "/")+"/user", nil, &u)
	var se *statusError
	switch {
	case err == nil && u.ID != 0:
		return identity{login: u.Login, id: u.ID}, nil
	case err == nil:
		return identity{}, errors.New("who is the token: GET /user answered no user id")
	case !errors.As(err, &se) || (se.code != http.StatusForbidden && se.code != http.StatusNotFound):
		return identity{}, fmt.Errorf("who is the token: %w", err)
	}
	var v struct {
		Data struct {
			Viewer struct {
				Login string `json:"login"`
			} `json:"viewer"`
		} `json:"data"`
		Errors []struct {
			Message string `json:"message"`
		} `json:"errors"`
	}
	if err := g.call(ctx, http.MethodPost, g.graphQL(), map[string]string{"query": "query { viewer { login } }"}, &v); err != nil {
		return identity{}, fmt.Errorf("who is the token: GET /user refused it, and %w", err)
	}
	if len(v.Errors) > 0 || v.Data.Viewer.Login == "" {
		msg := "no login"
		if len(v.Errors) > 0 {
			msg = v.Errors[0].Message
		}
		return identity{}, fmt.Errorf("who is the token: GraphQL viewer: %s", msg)
	}
	return identity{bot: v.Data.Viewer.Login}, nil
}

// graphQL is the GraphQL endpoint: GitHub.com's next to its REST API,
// GitHub Enterprise Server's at /api/graphql beside /api/v3.
func (g *GitHub) graphQL() string {
	if g.GraphQL != "" {
		return g.GraphQL
	}
	api := strings.TrimRight(g.API, "/")
	if b, ok := strings.CutSuffix(api, "/api/v3"); ok {
		return b + "/api/graphql"
	}
	return api + "/graphql"
}

// A statusError is an API answer other than 2xx.
type statusError struct {
	method, url string
	code        int
	status, msg string
}

func (e *statusError) Error() string {
	return fmt.Sprintf("%s %s: %s: %s", e.method, e.url, e.status, e.msg)
}

// call sends one API request and decodes the answer into out.
func (g *GitHub) call(ctx context.Context, method, url string, in, out any) error {
	var body io.Reader
	if in != nil {
		data, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("%s %s: %w", method, url, err)
		}
		body = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, url, err)
	}
	req.Header.Set("Accept", "application/vnd.github+json")
	req.Header.Set("Authorization", "Bearer "+g.Token)
	req.Header.Set("X-GitHub-Api-Version", "2022-11-28")
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	hc := g.Client
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, url, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, url, err)
	}
	if resp.StatusCode/100 != 2 {
		msg := strings.TrimSpace(string(data))
		if len(msg) > 300 {
			msg = msg[:300] + "…"
		}
		return &statusError{method, url, resp.StatusCode, resp.Status, msg}
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s %s: the answer: %w", method, url, err)
	}
	return nil
}
