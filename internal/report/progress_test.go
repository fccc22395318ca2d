package report

import (
	"bytes"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeClock is a clock the test advances by hand.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }
func lastFrame(out string) string {
	frames := strings.Split(out, "\r")
	return strings.TrimSuffix(strings.TrimSuffix(frames[len(frames)-1], "\n"), "\x1b[K")
}

func TestProgressBarFrames(t *testing.T) {
	clk := &fakeClock{t: time.Unix(0, 0)}
	var buf bytes.Buffer
	b := NewProgressBar(&buf, 1000)
	b.Now = clk.now
	b.Width = 20

	b.Update(0, 1000)
	assert.Equal(t, "  0%|                    | 0/1000 [00:00<?, ? req/s]", lastFrame(buf.String()))

	clk.advance(12 * time.Second)
	b.Update(450, 1000)
	assert.Equal(t, " 45%|█████████           | 450/1000 [00:12<00:15, 37.50 req/s]", lastFrame(buf.String()))

	clk.advance(10 * time.Millisecond)
	n := strings.Count(buf.String(), "\r")
	b.Update(451, 1000)
	assert.Equal(t, n, strings.Count(buf.String(), "\r"), "no redraw within the interval")

	clk.advance(8 * time.Second)
	b.Update(1000, 1000)
	b.Finish()
	b.Update(3, 1000)
	out := buf.String()
	assert.Equal(t, "100%|████████████████████| 1000/1000 [00:20<00:00, 49.98 req/s]", lastFrame(out))
	assert.True(t, strings.HasSuffix(out, "\n"))
	assert.Equal(t, 1, strings.Count(out, "\n"), "Finish ends the line once")
}

func TestProgressBarPartialCells(t *testing.T) {
	assert.Equal(t, "█▌  ", bar(0.4, 4))
	assert.Equal(t, "    ", bar(0, 4))
	assert.Equal(t, "████", bar(1, 4))
	assert.Equal(t, "1:01:01", clock(3661*time.Second))
}

func TestProgressBarConcurrentUpdates(t *testing.T) {
	var buf bytes.Buffer
	b := NewProgressBar(&buf, 100)
	var wg sync.WaitGroup
	for i := 1; i <= 100; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); b.Update(i, 100) }()
	}
	wg.Wait()
	b.Finish()
	assert.Contains(t, buf.String(), "/100 [")
}

func TestIsTerminal(t *testing.T) {
	assert.False(t, IsTerminal(&bytes.Buffer{}))
	f, err := os.CreateTemp(t.TempDir(), "out")
	require.NoError(t, err)
	defer f.Close()
	assert.False(t, IsTerminal(f))
	if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
		defer tty.Close()
		assert.True(t, IsTerminal(tty))
	}
}

func TestProgressBarPlain(t *testing.T) {
	clk := &fakeClock{t: time.Unix(0, 0)}
	var buf bytes.Buffer
	b := NewProgressBar(&buf, 20)
	b.Now, b.Plain, b.Width = clk.now, true, 10
	for i := 1; i <= 20; i++ {
		clk.advance(time.Second)
		b.Update(i, 20)
	}
	b.Finish()
	out := buf.String()
	assert.NotContains(t, out, "\r")
	assert.NotContains(t, out, "\x1b")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	assert.Len(t, lines, 11, "the first update, one line per tenth below 100%, then Finish")
	assert.Equal(t, "100%|██████████| 20/20 [00:19<00:00, 1.05 req/s]", lines[len(lines)-1])
}
