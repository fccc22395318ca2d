package simulator

import (
	"fmt"
	"os"
	"time"

	"github.com/testcontainers/testcontainers-go"

	"github.com/servegate/servegate/internal/sim"
)

// options are the simulator's settings for Run.
type options struct {
	profile   string
	slowdown  float64
	knobs     map[string]string
	timeout   time.Duration
	tokenizer string
}

// An Option configures the simulator that Run starts. Options are also
// testcontainers.ContainerCustomizers, so they mix with the generic ones.
type Option func(*options) error

// Customize implements testcontainers.ContainerCustomizer; the work is done
// by Run.
func (o Option) Customize(*testcontainers.GenericContainerRequest) error { return nil }

var _ testcontainers.ContainerCustomizer = Option(nil)

// WithProfile selects a shipped profile by name, such as "gpu-8b".
// The simulator's README lists the profiles.
func WithProfile(name string) Option {
	return func(o *options) error { o.profile = name; return nil }
}

// WithSlowdown sets the global slowdown factor (1.10 = 10% slower steps).
func WithSlowdown(f float64) Option {
	return func(o *options) error {
		if !(f > 0) {
			return fmt.Errorf("slowdown must be > 0, got %v", f)
		}
		o.slowdown = f
		return nil
	}
}

// WithKnob sets one knob by its YAML key, like the flag of the same name
// (WithKnob("max_num_seqs", "8")).
func WithKnob(key, value string) Option {
	return func(o *options) error {
		var p sim.Params
		if err := p.Set(key, value); err != nil {
			return err
		}
		if o.knobs == nil {
			o.knobs = map[string]string{}
		}
		o.knobs[key] = value
		return nil
	}
}

// WithTokenizerFile serves with this tokenizer.json instead of the image's
// Llama-3 one, so that prompt and output token counts match the model a
// scenario names.
func WithTokenizerFile(path string) Option {
	return func(o *options) error {
		if _, err := os.Stat(path); err != nil {
			return fmt.Errorf("tokenizer file: %w", err)
		}
		o.tokenizer = path
		return nil
	}
}

// WithStartupTimeout bounds the wait for /health (default 2 minutes).
func WithStartupTimeout(d time.Duration) Option {
	return func(o *options) error { o.timeout = d; return nil }
}
