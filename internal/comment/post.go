package comment

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

// A Post says what to post where. Its environment gives the token and
// the API's address.
type Post struct {
	// MarkdownFile and JSONFile are the gate's reports; JSONFile may be
	// "" or missing.
	MarkdownFile, JSONFile string
	// Exit is the gate's exit code.
	Exit int
	// PR is the pull request's number; Repo its OWNER/NAME, "" for
	// $GITHUB_REPOSITORY.
	PR   int
	Repo string
	// SiteURL and Runner locate the dashboard's charts.
	SiteURL, Runner string
	// Marker is the hidden marker's id; "" means DefaultMarker.
	Marker string
	// DryRun writes the body to the output and posts nothing.
	DryRun bool
	// Getenv reads the environment; nil means os.Getenv.
	Getenv func(string) string
}

// Run builds the comment and creates or updates it. It says which to w.
func (p Post) Run(ctx context.Context, w io.Writer) error {
	getenv := p.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if p.MarkdownFile == "" || p.Exit < 0 {
		return errors.New("want -markdown FILE and -exit CODE")
	}
	md, err := os.ReadFile(p.MarkdownFile)
	if errors.Is(err, os.ErrNotExist) && p.Exit != 0 {
		// The gate never ran (a checkout or a benchmark failed). The
		// comment still says there is no verdict.
		md, err = []byte("_The gate wrote no report; see the job log._\n"), nil
	}
	if err != nil {
		return fmt.Errorf("read the gate's Markdown: %w", err)
	}
	in := Input{Markdown: string(md), Exit: p.Exit, SiteURL: p.SiteURL, Runner: p.Runner, Marker: p.Marker}
	if p.JSONFile != "" {
		data, err := os.ReadFile(p.JSONFile)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("read the gate's JSON: %w", err)
		}
		in.JSON = data
	}
	body, err := Body(in)
	if err != nil {
		return err
	}
	if p.DryRun {
		_, err := io.WriteString(w, body)
		return err
	}
	if p.PR <= 0 {
		return fmt.Errorf("-pr %d: want the pull request number", p.PR)
	}
	token := getenv("GITHUB_TOKEN")
	if token == "" {
		token = getenv("GH_TOKEN")
	}
	if token == "" {
		return errors.New("no GITHUB_TOKEN or GH_TOKEN in the environment")
	}
	repo := p.Repo
	if repo == "" {
		repo = getenv("GITHUB_REPOSITORY")
	}
	api := getenv("GITHUB_API_URL")
	if api == "" {
		api = "https://api.github.com"
	}
	gh := &GitHub{API: api, GraphQL: getenv("GITHUB_GRAPHQL_URL"), Repo: repo, Token: token, Client: &http.Client{Timeout: 30 * time.Second}}
	marker := p.Marker
	if marker == "" {
		marker = DefaultMarker
	}
	id, created, err := gh.Upsert(ctx, p.PR, Marker(marker), body)
	if err != nil {
		return err
	}
	verb := "updated"
	if created {
		verb = "created"
	}
	fmt.Fprintf(w, "%s comment %d on %s#%d\n", verb, id, repo, p.PR)
	return nil
}
