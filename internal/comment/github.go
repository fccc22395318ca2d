package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// maxPages bounds the comment listing (100 a page): a pull request with
// more than 3000 comments gets a new one.
const maxPages = 30

// github is the part of the GitHub REST API the comment needs: issue
// comments (a pull request is an issue).
type github struct {
	api, repo, token string
	hc               *http.Client
}

type comment struct {
	ID   int64  `json:"id"`
	Body string `json:"body"`
}

// upsert updates the pull request's comment that starts with marker, or
// creates one. It returns the comment's id and whether it was created.
func (g *github) upsert(ctx context.Context, pr int, marker, body string) (int64, bool, error) {
	if !strings.Contains(g.repo, "/") {
		return 0, false, fmt.Errorf("repository %q: want OWNER/NAME (-repo or GITHUB_REPOSITORY)", g.repo)
	}
	base := strings.TrimRight(g.api, "/") + "/repos/" + g.repo
	for page := 1; page <= maxPages; page++ {
		var cs []comment
		if err := g.call(ctx, http.MethodGet, fmt.Sprintf("%s/issues/%d/comments?per_page=100&page=%d", base, pr, page), nil, &cs); err != nil {
			return 0, false, err
		}
		for _, c := range cs {
			// The gate's comment starts with the marker; another comment
			// that only mentions it (a reviewer quoting it) is not ours
			// to overwrite.
			if strings.HasPrefix(c.Body, marker) {
				var out comment
				err := g.call(ctx, http.MethodPatch, fmt.Sprintf("%s/issues/comments/%d", base, c.ID), map[string]string{"body": body}, &out)
				return c.ID, false, err
			}
		}
		if len(cs) < 100 {
			break
		}
	}
	var out comment
	if err := g.call(ctx, http.MethodPost, fmt.Sprintf("%s/issues/%d/comments", base, pr), map[string]string{"body": body}, &out); err != nil {
		return 0, false, err
	}
	return out.ID, true, nil
}

// call sends one API request and decodes the answer into out.
func (g *github) call(ctx context.Context, method, url string, in, out any) error {
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
	req.Header.Set("Authorization", "Bearer "+g.token)
	req.Header.Set("X-GitHub-Api-Version", "2022-11-28")
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := g.hc.Do(req)
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
		return fmt.Errorf("%s %s: %s: %s", method, url, resp.Status, msg)
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s %s: the answer: %w", method, url, err)
	}
	return nil
}
