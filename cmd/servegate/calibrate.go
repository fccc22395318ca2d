package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/servegate/servegate/internal/limit"
	"github.com/servegate/servegate/internal/sim"
	"github.com/servegate/servegate/internal/twin"
)

const calibrateSummary = `Calibrate a twin of a real server: fit a simulator profile to the detailed
result files (--save-detailed) of runs against it. What the server states
(vllm:cache_config_info's block size and KV blocks, the flags servegate
started it with) or the flags below give is taken, not fitted; the step
cost (fixed, per prefill token, per sequence, per context token) and the
jitter are fitted to the per-request TTFT and ITL by replaying each run in
virtual time. Prints the residuals and what the runs could not pin down;
writes the profile only when the median error of each figure is within
10% (or with --force, marked as missed). Runs against a simulator, runs
with failed requests, and runs whose server metrics contradict their
records are refused.`

// calibrateArgs are the flags of servegate sim calibrate.
type calibrateArgs struct {
	Out                 *string
	Model               *string
	Force               bool
	MaxEvals            int
	MaxModelLen         int
	MaxNumSeqs          int
	MaxNumBatchedTokens int
	BlockSize           int
	NumKVBlocks         int
	Files               []string
}

func newCalibrateParser(a *calibrateArgs) *argParser {
	p := newArgParser("servegate sim calibrate")
	g := "options"
	p.optStringVar(&a.Out, "output", g, "Write the profile YAML to this file (required; --out works too).")
	p.optStringVar(&a.Model, "model", g, "The profile's model name. Default: the runs' model_id.")
	p.boolVar(&a.Force, "force", g, "Write the profile even when the fit misses the 10% goal (its header says so).")
	p.intVar(&a.MaxEvals, "max-evals", twin.DefaultMaxEvals, g, fmt.Sprintf("The most replays of all runs the fit may make (1 to %d).", twin.MaxEvals))
	c := "server configuration (stated, not fitted; 0 = from the runs)"
	p.intVar(&a.MaxModelLen, "max-model-len", 0, c, "The server's --max-model-len.")
	p.intVar(&a.MaxNumSeqs, "max-num-seqs", 0, c, "The server's --max-num-seqs.")
	p.intVar(&a.MaxNumBatchedTokens, "max-num-batched-tokens", 0, c, "The server's --max-num-batched-tokens.")
	p.intVar(&a.BlockSize, "block-size", 0, c, "The server's KV-cache block size, tokens.")
	p.intVar(&a.NumKVBlocks, "num-kv-blocks", 0, c, "The server's KV-cache size in blocks (vllm:cache_config_info's num_gpu_blocks).")
	p.positionals = &a.Files
	p.usageArgs = "RESULT.json [RESULT.json ...]"
	return p
}

// calibrateLimits checks every number the command takes against its
// maximum: the simulator's own for the configuration.
func calibrateLimits(a *calibrateArgs) []limit.Check {
	knobMax := func(key string) int {
		m, _ := sim.MaxOf(key)
		n, _ := strconv.Atoi(m)
		return n
	}
	return []limit.Check{
		limit.Int("max-evals", a.MaxEvals, twin.MaxEvals),
		limit.Int("max-model-len", a.MaxModelLen, knobMax("max_model_len")),
		limit.Int("max-num-seqs", a.MaxNumSeqs, knobMax("max_num_seqs")),
		limit.Int("max-num-batched-tokens", a.MaxNumBatchedTokens, knobMax("max_num_batched_tokens")),
		limit.Int("block-size", a.BlockSize, knobMax("block_size")),
		limit.Int("num-kv-blocks", a.NumKVBlocks, knobMax("num_kv_blocks")),
	}
}

// runCalibrate is servegate sim calibrate.
func runCalibrate(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	const prog = "servegate sim calibrate"
	a := &calibrateArgs{}
	p := newCalibrateParser(a)
	if wantsHelp(args) {
		p.writeHelp(stdout, twinExperimental+calibrateSummary)
		return 0
	}
	if err := p.parse(args); err != nil {
		return exitCode(prog, err, stderr)
	}
	if err := a.validate(); err != nil {
		return exitCode(prog, err, stderr)
	}
	return exitCode(prog, a.run(ctx, stdout), stderr)
}

func (a *calibrateArgs) validate() error {
	if len(a.Files) == 0 {
		return usagef("want one or more result files")
	}
	if a.Out == nil || *a.Out == "" {
		return usagef("the following arguments are required: --output")
	}
	if c, over := limit.FirstOver(calibrateLimits(a)); over {
		return usagef("--%s %s is over the maximum %s", c.Name, c.Value, c.Max)
	}
	for name, v := range map[string]int{"max-evals": a.MaxEvals, "max-model-len": a.MaxModelLen, "max-num-seqs": a.MaxNumSeqs,
		"max-num-batched-tokens": a.MaxNumBatchedTokens, "block-size": a.BlockSize, "num-kv-blocks": a.NumKVBlocks} {
		if v < 0 || (name == "max-evals" && v == 0) {
			return usagef("--%s must be positive, got %d", name, v)
		}
	}
	return nil
}

// run reads the runs, fits, prints the report and writes the profile.
func (a *calibrateArgs) run(ctx context.Context, stdout io.Writer) error {
	var runs []*twin.Run
	for _, f := range a.Files {
		r, err := twin.ReadRunFile(f)
		if err != nil {
			return err
		}
		runs = append(runs, r)
	}
	opt := twin.Options{MaxEvals: a.MaxEvals, Given: twin.Given{
		MaxModelLen: a.MaxModelLen, MaxNumSeqs: a.MaxNumSeqs, MaxNumBatchedTokens: a.MaxNumBatchedTokens,
		BlockSize: a.BlockSize, NumKVBlocks: a.NumKVBlocks,
	}}
	if a.Model != nil {
		opt.Model = *a.Model
	}
	res, err := twin.Calibrate(ctx, runs, opt)
	if err != nil {
		return err
	}
	res.WriteReport(stdout)
	if !res.Met && !a.Force {
		return fmt.Errorf("the fit missed the goal (median error ≤ %.0f%% on each figure); no profile written (--force writes it, marked as missed)", 100*twin.Goal)
	}
	if err := writeFileAtomic(*a.Out, res.Profile(time.Now())); err != nil {
		return fmt.Errorf("write profile: %w", err)
	}
	fmt.Fprintf(stdout, "\nprofile written to %s (servegate sim --profile %s)\n", *a.Out, *a.Out)
	return nil
}

// writeFileAtomic writes data to a temporary file beside path and renames
// it into place, so that a failed write leaves no half profile.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".calibrate-*.yaml")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(data)
	if werr == nil {
		werr = tmp.Chmod(0o644)
	}
	cerr := tmp.Close()
	if werr != nil || cerr != nil {
		os.Remove(tmp.Name())
		if werr != nil {
			return werr
		}
		return cerr
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}
