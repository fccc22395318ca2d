// Command prcomment puts servegate's gate verdict on a pull request: one
// comment, found again by a hidden marker and updated in place on every
// push, and the job's status from the gate's exit code. The workflow
// templates in ci/workflows run it.
//
//	prcomment post -markdown gate.md -json gate.json -exit 1 -pr 42 [-site URL -runner R]
//	prcomment status -exit 1
//
// post builds the comment from the gate's Markdown report (verbatim),
// led by the verdict and, from the gate's JSON report, the regressed
// units with their change, p-value and runs, each linked to its chart on
// the dashboard (servegate history site). It talks to the GitHub REST
// API at $GITHUB_API_URL (default https://api.github.com) with
// $GITHUB_TOKEN (or $GH_TOKEN), for the repository $GITHUB_REPOSITORY
// unless -repo is given.
//
// status prints a workflow annotation titled by the verdict ("servegate:
// pass", "servegate: regression", "servegate: cannot tell") and exits
// with the gate's code, so the job passes on 0 and fails on 1 and 2 with
// a title that says which.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

const usage = `usage: prcomment post -markdown FILE -exit CODE -pr N [-json FILE] [-site URL] [-runner R] [-repo OWNER/NAME] [-dry-run]
       prcomment status -exit CODE
`

// run is main without the process: args without the program name, the
// environment through getenv. It returns the exit status.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "post":
		if err := post(ctx, args[1:], getenv, stdout); err != nil {
			fmt.Fprintf(stderr, "prcomment post: %v\n", err)
			return 2
		}
		return 0
	case "status":
		fs := flag.NewFlagSet("prcomment status", flag.ContinueOnError)
		fs.SetOutput(stderr)
		exit := fs.Int("exit", -1, "the gate's exit `code`: 0 pass, 1 regression, 2 cannot tell")
		if err := fs.Parse(args[1:]); err != nil {
			return 2
		}
		return status(*exit, stdout)
	}
	fmt.Fprint(stderr, usage)
	return 2
}

// A verdict is what a gate exit code means, in the comment and the
// job's annotation.
type verdict struct {
	icon, title, level, text string
}

// verdicts by the gate's exit code (internal/gate: ExitPass, ExitRegression,
// ExitBadInput).
var verdicts = map[int]verdict{
	0: {"✅", "servegate: pass", "notice", "no gated unit regressed"},
	1: {"❌", "servegate: regression", "error", "a gated unit regressed beyond its tolerance"},
	2: {"⚠️", "servegate: cannot tell", "error", "the gate could not reach a verdict (bad input or too few runs); see the job log"},
}

// verdictOf returns the verdict of an exit code; any code but 0 and 1
// is "cannot tell": the tool failed closed.
func verdictOf(exit int) verdict {
	if v, ok := verdicts[exit]; ok {
		return v
	}
	v := verdicts[2]
	v.text = fmt.Sprintf("the gate exited %d: no verdict; see the job log", exit)
	return v
}

// status prints the annotation of the gate's exit code and returns the
// code the job exits with: 0, 1, or 2 for anything else.
func status(exit int, stdout io.Writer) int {
	v := verdictOf(exit)
	fmt.Fprintf(stdout, "::%s title=%s::%s (gate exit %d)\n", v.level, v.title, v.text, exit)
	if exit == 0 || exit == 1 {
		return exit
	}
	return 2
}

// post builds the comment and creates or updates it.
func post(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	fs := flag.NewFlagSet("prcomment post", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	mdFile := fs.String("markdown", "", "the gate's Markdown report `file` (gate -markdown)")
	jsonFile := fs.String("json", "", "the gate's JSON report `file` (gate -json), for the regressed units and their links")
	exit := fs.Int("exit", -1, "the gate's exit `code`")
	pr := fs.Int("pr", 0, "the pull request `number`")
	repo := fs.String("repo", getenv("GITHUB_REPOSITORY"), "the repository, `OWNER/NAME`")
	siteURL := fs.String("site", "", "the dashboard's base `URL` (servegate history site), for links to the charts")
	runner := fs.String("runner", "", "the runner `type` the dashboard's charts are filed under")
	marker := fs.String("marker", "servegate-gate", "the hidden marker `id` that finds the comment again (one per workflow)")
	dry := fs.Bool("dry-run", false, "print the comment; post nothing")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *mdFile == "" || *exit < 0 {
		return fmt.Errorf("want -markdown FILE and -exit CODE")
	}
	md, err := os.ReadFile(*mdFile)
	if os.IsNotExist(err) && *exit != 0 {
		// The gate never ran (a checkout or a benchmark failed): the
		// comment still says there is no verdict.
		md, err = []byte("_The gate wrote no report; see the job log._\n"), nil
	}
	if err != nil {
		return fmt.Errorf("read the gate's Markdown: %w", err)
	}
	in := bodyInput{Markdown: string(md), Exit: *exit, SiteURL: *siteURL, Runner: *runner, Marker: *marker}
	if *jsonFile != "" {
		data, err := os.ReadFile(*jsonFile)
		if err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("read the gate's JSON: %w", err)
		}
		in.JSON = data
	}
	body, err := commentBody(in)
	if err != nil {
		return err
	}
	if *dry {
		_, err := io.WriteString(stdout, body)
		return err
	}
	if *pr <= 0 {
		return fmt.Errorf("-pr %d: want the pull request number", *pr)
	}
	token := getenv("GITHUB_TOKEN")
	if token == "" {
		token = getenv("GH_TOKEN")
	}
	if token == "" {
		return fmt.Errorf("no GITHUB_TOKEN or GH_TOKEN in the environment")
	}
	api := getenv("GITHUB_API_URL")
	if api == "" {
		api = "https://api.github.com"
	}
	gh := &github{api: api, repo: *repo, token: token, hc: &http.Client{Timeout: 30 * time.Second}}
	id, created, err := gh.upsert(ctx, *pr, markerOf(*marker), body)
	if err != nil {
		return err
	}
	verb := "updated"
	if created {
		verb = "created"
	}
	fmt.Fprintf(stdout, "%s comment %s on %s#%s\n", verb, strconv.FormatInt(id, 10), *repo, strconv.Itoa(*pr))
	return nil
}
