package pipeline

import (
	"context"
	"errors"
	"io"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/benchtest/scenario"
)

// fakeKind registers a target kind that counts starts and stops.
func fakeKind(t *testing.T, fail error) (kind string, starts, stops *atomic.Int32) {
	t.Helper()
	kind = "fake-" + t.Name()
	starts, stops = new(atomic.Int32), new(atomic.Int32)
	starters[kind] = func(_ context.Context, spec scenario.Target, _ io.Writer) (*Target, error) {
		starts.Add(1)
		if fail != nil {
			return nil, fail
		}
		return &Target{Kind: spec.Kind, Model: spec.Model, close: func(context.Context) error { stops.Add(1); return nil }}, nil
	}
	t.Cleanup(func() { delete(starters, kind) })
	return kind, starts, stops
}

func TestPoolSharesAndStops(t *testing.T) {
	kind, starts, stops := fakeKind(t, nil)
	p := &Pool{entries: map[string]*entry{}}
	var a1, a2, b *Target
	t.Run("owner", func(t *testing.T) {
		var err error
		t.Run("first", func(t *testing.T) {
			a1, err = p.Acquire(t.Context(), t, scenario.Target{Kind: kind, Model: "a"})
			require.NoError(t, err)
		})
		// The first subtest released its reference: nothing else held the
		// target, so it stopped.
		assert.Equal(t, int32(1), stops.Load())

		// The owner holds the target for its subtests.
		a1, err = p.Acquire(t.Context(), t, scenario.Target{Kind: kind, Model: "a"})
		require.NoError(t, err)
		t.Run("second", func(t *testing.T) {
			a2, err = p.Acquire(t.Context(), t, scenario.Target{Kind: kind, Model: "a", StartTimeout: 5})
			require.NoError(t, err)
			b, err = p.Acquire(t.Context(), t, scenario.Target{Kind: kind, Model: "b"})
			require.NoError(t, err)
		})
		assert.Same(t, a1, a2, "same spec (start_timeout aside): one target")
		assert.NotSame(t, a1, b)
		assert.Equal(t, int32(3), starts.Load())
		assert.Equal(t, int32(2), stops.Load(), "b stopped with its test, a is still held")
	})
	assert.Equal(t, int32(3), stops.Load(), "a stopped when its owner ended")
	assert.Empty(t, p.entries)
}

func TestPoolKeepUntilCloseAll(t *testing.T) {
	kind, starts, stops := fakeKind(t, nil)
	p := &Pool{entries: map[string]*entry{}, keep: true}
	for range 3 {
		t.Run("count", func(t *testing.T) {
			_, err := p.Acquire(t.Context(), t, scenario.Target{Kind: kind})
			require.NoError(t, err)
		})
	}
	assert.Equal(t, int32(1), starts.Load(), "-count repetitions share the target")
	assert.Equal(t, int32(0), stops.Load())
	require.NoError(t, p.CloseAll())
	assert.Equal(t, int32(1), stops.Load())
}

func TestPoolStartError(t *testing.T) {
	kind, starts, _ := fakeKind(t, errors.New("no such image"))
	p := &Pool{entries: map[string]*entry{}}
	_, err := p.Acquire(t.Context(), t, scenario.Target{Kind: kind})
	require.EqualError(t, err, "no such image")
	_, err = p.Acquire(t.Context(), t, scenario.Target{Kind: kind})
	require.EqualError(t, err, "no such image")
	assert.Equal(t, int32(1), starts.Load(), "a failed start is not retried by every scenario")

	_, err = p.Acquire(t.Context(), t, scenario.Target{Kind: "k8s"})
	require.EqualError(t, err, "start k8s target: unknown kind (kinds: [sim inproc vllm url container])")
}

func TestSimSettings(t *testing.T) {
	set, err := simSettings(scenario.Target{Args: []string{"--max-num-seqs=4", "slowdown=1.1"}, Model: "m"})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"max_num_seqs": "4", "slowdown": "1.1", "model": "m"}, set)
	_, err = simSettings(scenario.Target{Args: []string{"--fast"}})
	assert.EqualError(t, err, `simulator arg "--fast": want --knob=value`)
}
