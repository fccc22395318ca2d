package compare

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/servegate/servegate/internal/gate"
)

// The modes of -mode: how base's and head's runs come to be.
const (
	// ModePaired runs base and head in pairs, one schedule for both,
	// judged by the sequential paired verdict after each round.
	ModePaired = "paired"
	// ModeInterleaved runs each side's whole benchmarks alone, base,
	// head, base, head, Count times each, then judges the two sets of
	// runs with servegate gate's comparison.
	ModeInterleaved = "interleaved"
)

// Modes are the values of -mode.
var Modes = []string{ModePaired, ModeInterleaved, ModeStored}

// DefaultCount is -mode interleaved's runs per side.
const DefaultCount = 10

// minCount is the fewest runs per side -mode interleaved takes. With 3
// runs a side, the smallest p-value benchstat's U test can give is 0.1:
// no change could ever be significant at alpha 0.05.
const minCount = 4

// Environment variables an interleaved run is told its place by.
const (
	envSide = "SERVEGATE_COMPARE_SIDE"
	envRun  = "SERVEGATE_COMPARE_RUN"
)

// checkInterleaved reports the flags -mode interleaved does not take.
func (cfg *Config) checkInterleaved() error {
	if cfg.Mode != ModeInterleaved {
		if cfg.Count != 0 {
			return inputErrorf("-count %d: only with -mode interleaved; the paired verdict runs pairs until it ends", cfg.Count)
		}
		return nil
	}
	if cfg.Count != 0 && cfg.Count < minCount {
		return inputErrorf("-count %d: -mode interleaved wants %d or more runs a side (with fewer no change is ever significant at alpha 0.05)", cfg.Count, minCount)
	}
	for _, f := range []struct {
		flag string
		set  bool
	}{{"-run", cfg.Run != ""}, {"-parallel", cfg.Parallel != 0}, {"-pair-mode", cfg.PairMode != ""},
		{"-base-url", cfg.BaseURL != ""}, {"-head-url", cfg.HeadURL != ""}} {
		if f.set {
			return inputErrorf("%s: not with -mode interleaved, which runs every scenario of the packages, one side at a time", f.flag)
		}
	}
	return nil
}

// A side is one side's module root and scenario packages in
// -mode interleaved.
type side struct {
	name, root string
	pkgs       []*testPkg
}

// buildSides finds each side's scenario packages and builds their test
// binaries from that side's tree, so that each side runs its own
// harness.
func buildSides(ctx context.Context, cfg Config, baseRoot, headRoot, bin string, log io.Writer) ([]*side, error) {
	sides := []*side{{name: "base", root: baseRoot}, {name: "head", root: headRoot}}
	for _, s := range sides {
		pkgs, err := findPackages(ctx, s.root, cmpOr(cfg.Packages, []string{"./..."}))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.name, err)
		}
		s.pkgs = pkgs
		dir := filepath.Join(bin, s.name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			return nil, err
		}
		fmt.Fprintf(log, "compare: building the tests of %d package(s) from %s\n", len(pkgs), s.name)
		if err := buildTests(ctx, s.root, dir, pkgs); err != nil {
			return nil, fmt.Errorf("%s: %w", s.name, err)
		}
	}
	return sides, nil
}

// interleave is -mode interleaved: base's benchmarks, head's, base's,
// head's, Count times each, so that a drift of the machine hits both
// sides alike. servegate gate's comparison judges them, and its reports
// are compare's.
func interleave(ctx context.Context, cfg Config, sides []*side, out string, res *Result, log io.Writer) error {
	count := cmp.Or(cfg.Count, DefaultCount)
	for i := 1; i <= count; i++ {
		for _, s := range sides {
			for j, p := range s.pkgs {
				dir := filepath.Join(out, "runs", fmt.Sprintf("%s-%d", s.name, i), fmt.Sprintf("p%d", j+1))
				if err := runWhole(ctx, s.name, i, p, dir, out); err != nil {
					return err
				}
			}
		}
		fmt.Fprintf(log, "compare: run %d of %d of each side done\n", i, count)
	}
	pol := gate.DefaultPolicy()
	if cfg.Policy != "" {
		var err error
		if pol, err = gate.LoadPolicy(cfg.Policy); err != nil {
			return inputErrorf("-policy: %v", err)
		}
	}
	// The full-precision benchfmt files when both sides wrote them; go
	// test's output rounds to 4 digits.
	ext := "benchfmt"
	for _, s := range sides {
		if fi, err := os.Stat(filepath.Join(out, s.name+".benchfmt")); err != nil || fi.Size() == 0 {
			ext = "txt"
		}
	}
	// The image is not compared: the simulator image's tag is a hash of
	// its sources, which a pull request may change.
	rep, err := gate.Run(ctx, gate.Config{
		Base:   []string{filepath.Join(out, "base."+ext)},
		Head:   []string{filepath.Join(out, "head."+ext)},
		Policy: pol, Ignore: "image",
	})
	if rep == nil {
		return inputErrorf("judge the runs: %v", err)
	}
	if err != nil {
		fmt.Fprintf(log, "compare: %v\n", err)
	}
	res.Interleaved = rep
	return nil
}

// runWhole runs one side's benchmarks of one package once, alone, its
// outputs in dir. Its go test output goes to SIDE.txt and its benchfmt
// file to SIDE.benchfmt under out.
func runWhole(ctx context.Context, name string, i int, p *testPkg, dir, out string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	logPath := dir + ".log"
	logf, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer logf.Close()
	tail := &tailWriter{max: 64 << 10}
	stdout, err := os.OpenFile(filepath.Join(out, name+".txt"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer stdout.Close()
	cmd := exec.CommandContext(ctx, p.Binary, "-test.run=^$", "-test.bench="+benchPattern(nil),
		"-test.benchtime=1x", "-test.count=1")
	cmd.Dir = p.Dir
	cmd.Env = append(slices.Clone(os.Environ()), "SERVEGATE_OUT="+dir, envSide+"="+name, envRun+"="+strconv.Itoa(i))
	cmd.Stdout = io.MultiWriter(logf, tail, stdout)
	cmd.Stderr = io.MultiWriter(logf, tail)
	cmd.WaitDelay = 30 * time.Second
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return inputErrorf("%s run %d of the tests of %s: %v; the end of its output (all of it in %s):\n%s",
			name, i, p.ImportPath, err, logPath, tail.String())
	}
	data, err := os.ReadFile(filepath.Join(dir, "bench.benchfmt"))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	// A benchfmt key holds until a later line changes it: clear the run
	// markers before each run's lines.
	return appendFile(filepath.Join(out, name+".benchfmt"), append([]byte("interrupted:\ninvalid:\n"), data...))
}
