// Command historydemo builds a results store from real simulator runs
// and writes its dashboard: "make history-demo". It stands in for a
// project's main branch: COMMITS commits, RUNS runs of one scenario each
// against the in-process simulator, the server made SLOWDOWN slower (the
// simulator's slowdown knob: every engine step takes that much longer,
// the way a slower server build would) from commit STEP-AT on. The
// scenario file stays the same, so its results stay comparable; only
// the server changed. The dashboard's TTFT chart marks the step.
//
//	go run ./ci/cmd/historydemo -out out/history-demo
package main

import (
	"bytes"
	"context"
	"crypto/sha1"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"time"

	"github.com/servegate/servegate/benchtest/scenario"
	"github.com/servegate/servegate/internal/gate"
	"github.com/servegate/servegate/internal/pipeline"
	"github.com/servegate/servegate/internal/report"
	"github.com/servegate/servegate/internal/site"
	"github.com/servegate/servegate/internal/store"
)

// demoScenario is a burst of 16 short chat requests at a simulator that
// runs 4 sequences per 40 ms step: the p99 TTFT is the fourth wave's,
// about 13 steps (~0.55 s), long enough that a slower step shows through
// a shared machine's scheduling noise (tens of ms at a load average of
// 20; 10 ms steps, as in internal/gate's accuracy test, drowned a 10% step in
// it). About a second a run.
const demoScenario = `name: history-demo
description: A burst of 16 chat requests at a simulator with 40 ms steps of 4 sequences (make history-demo).
target:
  kind: inproc
  args: [--max_num_seqs=4, --step_fixed_ms=40, --prefill_token_us=5, --seq_us=100, --jitter=0.05]
backend: openai-chat
dataset: {name: random, num_prompts: 16, input_len: 64, output_len: 4, seed: 1}
load: {request_rate: inf, warmups: 1, max_duration: 60s, request_timeout: 30s}
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("historydemo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "out/history-demo", "output `dir`: store/ and site/ are made under it (store/ must not exist yet)")
	commits := fs.Int("commits", 40, "commits to simulate (6 to 500)")
	runs := fs.Int("runs", 3, "runs per commit (1 to 20)")
	stepAt := fs.Int("step-at", 25, "the first commit (0-based) of the slower server")
	slowdown := fs.Float64("slowdown", 1.10, "the slower server's slowdown factor (1.10: every step 10% slower)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *commits < store.MinKeepCommits || *commits > 500 || *runs < 1 || *runs > 20 || *stepAt < 0 || *stepAt >= *commits || !(*slowdown > 0 && *slowdown <= 10) {
		fmt.Fprintln(stderr, "historydemo: -commits 6..500, -runs 1..20, -step-at within the commits, -slowdown in (0, 10]")
		return 2
	}
	if err := demo(ctx, *out, *commits, *runs, *stepAt, *slowdown, stdout); err != nil {
		fmt.Fprintf(stderr, "historydemo: %v\n", err)
		return 1
	}
	return 0
}

func demo(ctx context.Context, out string, commits, runs, stepAt int, slowdown float64, stdout io.Writer) error {
	storeDir, siteDir := filepath.Join(out, "store"), filepath.Join(out, "site")
	if _, err := os.Stat(storeDir); err == nil {
		return fmt.Errorf("%s exists: remove it (rm -r %s) to build the demo again", storeDir, storeDir)
	}
	st, err := store.Create(storeDir)
	if err != nil {
		return err
	}
	scs, err := scenario.Parse("history-demo.yaml", []byte(demoScenario))
	if err != nil {
		return err
	}
	sc := scs[0]
	plan := pipeline.NewPlan(sc)
	if err := plan.Prepare(ctx); err != nil {
		return err
	}
	// Two servers: today's, and the slower one from the step on.
	fast, err := pipeline.StartTarget(ctx, sc.Target, io.Discard)
	if err != nil {
		return err
	}
	defer fast.Close(context.Background())
	slowSpec := sc.Target
	slowSpec.Args = append(append([]string(nil), sc.Target.Args...), "--slowdown="+strconv.FormatFloat(slowdown, 'g', -1, 64))
	slow, err := pipeline.StartTarget(ctx, slowSpec, io.Discard)
	if err != nil {
		return err
	}
	defer slow.Close(context.Background())

	start := time.Now()
	t0 := time.Now().UTC().Truncate(time.Hour).Add(-time.Duration(commits) * time.Hour)
	tmp, err := os.MkdirTemp("", "historydemo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	for i := range commits {
		tgt := fast
		if i >= stepAt {
			tgt = slow
		}
		var b bytes.Buffer
		w := report.NewBenchfmtWriter(&b)
		for range runs {
			o, err := pipeline.Execute(ctx, plan, tgt, pipeline.Hooks{})
			if err != nil {
				return fmt.Errorf("commit %d: %w", i, err)
			}
			if err := w.WriteBenchfmtResult("Scenarios/scenario="+sc.Name, 1, o.BenchConfig(), o.BenchMetrics()); err != nil {
				return err
			}
		}
		f := filepath.Join(tmp, "bench.benchfmt")
		if err := os.WriteFile(f, b.Bytes(), 0o644); err != nil {
			return err
		}
		id := fmt.Sprintf("%x", sha1.Sum([]byte(fmt.Sprintf("history-demo commit %d", i))))
		if _, err := st.Add(ctx, store.AddRequest{Commit: id, CommitTime: t0.Add(time.Duration(i) * time.Hour), Runner: "demo", Version: "demo", Files: []string{f}}); err != nil {
			return err
		}
		mark := ""
		if i == stepAt {
			mark = fmt.Sprintf("  <- server %.0f%% slower from here", 100*(slowdown-1))
		}
		fmt.Fprintf(stdout, "commit %2d %s: %d runs%s\n", i, id[:10], runs, mark)
	}
	rep, err := gate.RunChangePointsStore(st, gate.ChangePointOptions{})
	if rep == nil {
		return err
	}
	if err := rep.WriteText(stdout); err != nil {
		return err
	}
	sum, err := site.Write(ctx, site.Config{Store: st, Out: siteDir, Title: "servegate history demo"})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\n%d commits × %d runs in %s; store %s; site %s (%d pages, %d bytes): open %s\n",
		commits, runs, time.Since(start).Round(time.Second), storeDir, siteDir, len(sum.Pages), sum.Bytes, filepath.Join(siteDir, site.PageName(sc.Name)))
	return nil
}
