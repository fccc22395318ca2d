package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/servegate/servegate/internal/comment"
)

const commentUsage = `usage: servegate comment post -markdown FILE -exit CODE -pr N [-json FILE] [-site URL -runner R] [-repo OWNER/NAME] [-marker ID] [-dry-run]
       servegate comment status -exit CODE

post puts the gate's verdict on a pull request as one comment. The comment
is found again by a hidden marker and by its author, the token's own
identity, and updated in place on every push. A comment by anyone else is
never touched. The token is $GITHUB_TOKEN (or $GH_TOKEN), the API
$GITHUB_API_URL (default https://api.github.com), the repository
$GITHUB_REPOSITORY unless -repo is given.

status prints a workflow annotation titled by the verdict and exits with
the gate's code: 0 pass, 1 regression, 2 for anything else.

Exit status of post: 0 posted (or printed with -dry-run), 2 refused.
`

// runComment posts the pull request comment or prints the job status.
func runComment(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, commentUsage)
		return 2
	}
	switch args[0] {
	case "-h", "--help", "help":
		fmt.Fprint(stdout, commentUsage)
		return 0
	case "post":
		p := comment.Post{Getenv: getenv}
		fs := flag.NewFlagSet("servegate comment post", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		fs.StringVar(&p.MarkdownFile, "markdown", "", "")
		fs.StringVar(&p.JSONFile, "json", "", "")
		fs.IntVar(&p.Exit, "exit", -1, "")
		fs.IntVar(&p.PR, "pr", 0, "")
		fs.StringVar(&p.Repo, "repo", "", "")
		fs.StringVar(&p.SiteURL, "site", "", "")
		fs.StringVar(&p.Runner, "runner", "", "")
		fs.StringVar(&p.Marker, "marker", comment.DefaultMarker, "")
		fs.BoolVar(&p.DryRun, "dry-run", false, "")
		if err := fs.Parse(args[1:]); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fmt.Fprint(stdout, commentUsage)
				return 0
			}
			fmt.Fprintf(stderr, "servegate comment post: %v\n\n%s", err, commentUsage)
			return 2
		}
		if fs.NArg() > 0 {
			fmt.Fprintf(stderr, "servegate comment post: unexpected argument %q\n\n%s", fs.Arg(0), commentUsage)
			return 2
		}
		if err := p.Run(ctx, stdout); err != nil {
			fmt.Fprintf(stderr, "servegate comment post: %v\n", err)
			return 2
		}
		return 0
	case "status":
		fs := flag.NewFlagSet("servegate comment status", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		exit := fs.Int("exit", -1, "")
		if err := fs.Parse(args[1:]); err != nil || fs.NArg() > 0 {
			fmt.Fprintf(stderr, "servegate comment status: want -exit CODE\n\n%s", commentUsage)
			return 2
		}
		return comment.Status(*exit, stdout)
	}
	fmt.Fprintf(stderr, "servegate comment: unknown command %q\n\n%s", args[0], commentUsage)
	return 2
}
