package engine

import (
	"math"
	"strings"
	"testing"
	"time"
)

// TestConfigLimits: numbers past the documented limits are errors naming
// them and the limit (NumWarmups math.MaxInt64 used to panic in
// makeslice).
func TestConfigLimits(t *testing.T) {
	tests := []struct {
		set  func(*Config)
		want string
	}{
		{func(c *Config) { c.NumWarmups = math.MaxInt64 }, "run: warm-ups 9223372036854775807 is over the maximum 10000"},
		{func(c *Config) { c.MaxConcurrency = MaxConcurrencyLimit + 1 }, "run: max concurrency 100001 is over the maximum 100000"},
		{func(c *Config) { c.MaxLineBytes = 1<<30 + 1 }, "run: max line bytes 1073741825 is over the maximum 1073741824"},
		{func(c *Config) { c.MaxLineBytes = -1 }, "run: max line bytes must not be negative, got -1"},
		{func(c *Config) { c.RequestTimeout = math.MaxInt64 }, "run: request timeout 2562047h47m16.854775807s is over the maximum 168h0m0s"},
		{func(c *Config) { c.MaxDuration = MaxTimeout + time.Second }, "run: max duration 168h0m1s is over the maximum 168h0m0s"},
	}
	for _, tt := range tests {
		cfg := Config{BaseURL: refusedURL(t), Model: "m"}
		tt.set(&cfg)
		_, err := Run(t.Context(), cfg, samples(1))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("err = %v, want %q", err, tt.want)
		}
	}
}
