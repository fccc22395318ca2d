package accuracy

import (
	"context"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/testcontainers/testcontainers-go"

	"github.com/servegate/servegate/containers/simulator"
	"github.com/servegate/servegate/internal/sim"
)

// envVerdictContainer runs TestAccuracyVerdict's servers as simulator
// containers, the servegate-sim image a scenario's sim target starts,
// instead of in this process.
const envVerdictContainer = "SERVEGATE_ACCURACY_CONTAINER"

// containerStarter returns a simRunner.start that runs each server as
// a simulator container with the knobs of the in-process one, passed
// as its flags, and removes it at the end of the test.
func containerStarter(tb testing.TB, ctx context.Context) func(simServer, sim.Params) (string, error) {
	tb.Helper()
	img, err := simulator.Image(ctx, nil)
	require.NoError(tb, err)
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	return func(k simServer, p sim.Params) (string, error) {
		opts := []testcontainers.ContainerCustomizer{
			simulator.WithKnob("model", p.Model),
			simulator.WithKnob("max_num_seqs", strconv.Itoa(p.MaxNumSeqs)),
			simulator.WithKnob("step_fixed_ms", f(p.StepFixedMS)),
			simulator.WithKnob("prefill_token_us", f(p.PrefillTokenUS)),
			simulator.WithKnob("seq_us", f(p.SeqUS)),
			simulator.WithKnob("jitter", f(p.Jitter)),
			simulator.WithKnob("decode_slowdown", f(p.DecodeSlowdown)),
			simulator.WithKnob("fault_stall_rate", f(p.FaultStallRate)),
			simulator.WithKnob("fault_stall_ms", f(p.FaultStallMS)),
			simulator.WithKnob("fault_stall_after", strconv.Itoa(p.FaultStallAfter)),
		}
		if k.slowdown > 0 {
			opts = append(opts, simulator.WithSlowdown(k.slowdown))
		}
		c, err := simulator.Run(ctx, img, opts...)
		if c != nil {
			testcontainers.CleanupContainer(tb, c)
		}
		if err != nil {
			return "", err
		}
		return c.BaseURL(ctx)
	}
}
