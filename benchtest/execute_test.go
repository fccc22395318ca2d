package benchtest

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/servegate/servegate/benchtest/engine"
	"github.com/servegate/servegate/benchtest/metrics"
	"github.com/servegate/servegate/benchtest/report"
)

// A run cut short by cancellation is marked interrupted in benchfmt and
// the result header, with its unsent requests counted; one stopped at its
// maximum duration is not.
func TestOutcomeInterrupted(t *testing.T) {
	recs := []metrics.Record{{Success: true}, {Unsent: true}, {Unsent: true}}
	for _, tc := range []struct {
		stopped error
		want    bool
	}{
		{nil, false},
		{fmt.Errorf("run: %w", engine.ErrMaxDuration), false},
		{context.Canceled, true},
	} {
		o := &Outcome{Plan: &Plan{}, Target: &Target{}, Result: &engine.Result{Records: recs, Stopped: tc.stopped}}
		assert.Equal(t, tc.want, o.Interrupted(), "%v", tc.stopped)
		assert.Equal(t, tc.want, containsConfig(o.BenchConfig(), "interrupted", "true"), "%v", tc.stopped)
		info := o.RunInfo()
		assert.Equal(t, tc.want, info.Interrupted)
		if tc.want {
			assert.Equal(t, 2, info.Unsent)
		}
	}
}

func containsConfig(cfg []report.BenchConfig, k, v string) bool {
	for _, c := range cfg {
		if c.Key == k && c.Value == v {
			return true
		}
	}
	return false
}
