package compare

import (
	"context"
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

//go:embed doc.go
var docSource string

// Usage is the package documentation from its "Usage:" line on: what
// `servegate compare -h` prints.
func Usage() string {
	var lines []string
	for _, l := range strings.Split(docSource, "\n") {
		if strings.HasPrefix(l, "package ") {
			break
		}
		l = strings.TrimPrefix(l, "//")
		lines = append(lines, strings.TrimPrefix(l, " "))
	}
	text := strings.Join(lines, "\n") + "\n"
	if i := strings.Index(text, "Usage:\n"); i >= 0 {
		text = text[i:]
	}
	return text
}

// Main runs `servegate compare` with args, the arguments after
// "compare", and returns its exit status: the verdict's, or 2 when
// there is none.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("servegate compare", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var cfg Config
	packages := fs.String("packages", "./...", "")
	fs.StringVar(&cfg.Run, "run", "", "")
	fs.StringVar(&cfg.Out, "out", "out/compare", "")
	fs.StringVar(&cfg.Policy, "policy", "", "")
	fs.IntVar(&cfg.Parallel, "parallel", 0, "")
	fs.StringVar(&cfg.Prepare, "prepare", "", "")
	fs.StringVar(&cfg.PairMode, "pair-mode", "", "")
	fs.StringVar(&cfg.BaseURL, "base-url", "", "")
	fs.StringVar(&cfg.HeadURL, "head-url", "", "")
	fs.StringVar(&cfg.Mode, "mode", "", "")
	fs.IntVar(&cfg.Count, "count", 0, "")
	fs.StringVar(&cfg.Store, "baseline-store", "", "")
	fs.StringVar(&cfg.Runner, "runner", "", "")
	fs.IntVar(&cfg.Fresh, "fresh", 0, "")
	fs.BoolVar(&cfg.NoFallback, "no-fallback", false, "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, Usage())
			return 0
		}
		fmt.Fprintf(stderr, "compare: %v (servegate compare -h: the flags)\n", err)
		return 2
	}
	if n := fs.NArg(); n < 1 || n > 2 {
		fmt.Fprintf(stderr, "compare: want BASE and at most one HEAD, got %d arguments (servegate compare -h: the usage)\n", n)
		return 2
	}
	cfg.Base, cfg.Head = fs.Arg(0), fs.Arg(1)
	cfg.Packages = strings.Fields(*packages)
	cfg.Log = stderr
	res, err := Run(ctx, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "compare: %v\n", err)
		return 2
	}
	if err := res.WriteText(stdout); err != nil {
		fmt.Fprintf(stderr, "compare: %v\n", err)
		return 2
	}
	return res.Exit()
}
