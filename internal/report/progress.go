package report

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// A ProgressBar draws "requests done of total" on one terminal line, with
// the completion rate, the elapsed time and an estimate of the time left,
// in the style of the tqdm bar vllm bench serve shows:
//
//	45%|███████████▎             | 450/1000 [00:12<00:15, 36.52 req/s]
//
// Update is safe for concurrent use and redraws at most every Interval.
// Show it only on a terminal (see IsTerminal), unless asked.
type ProgressBar struct {
	// Interval is the least time between redraws. Default 100ms.
	Interval time.Duration
	// Width is the bar's width in cells. Default 25.
	Width int
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Plain draws for a log rather than a terminal: a full line at each
	// tenth of the way and at the end, with no carriage returns or escape
	// sequences.
	Plain bool

	mu       sync.Mutex
	w        io.Writer
	done     int
	total    int
	start    time.Time
	drawn    time.Time
	finished bool
}

// NewProgressBar returns a bar of total steps that draws on w. Its clock
// starts at the first Update; call Update(0, total) to start it and draw
// the empty bar.
func NewProgressBar(w io.Writer, total int) *ProgressBar {
	return &ProgressBar{w: w, total: total}
}

func (b *ProgressBar) now() time.Time {
	if b.Now != nil {
		return b.Now()
	}
	return time.Now()
}

// Update records that done of total steps are finished and redraws when
// Interval has passed or the bar is full. Its signature fits
// engine.Config.Progress.
func (b *ProgressBar) Update(done, total int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.finished {
		return
	}
	now := b.now()
	if b.start.IsZero() {
		b.start = now
	}
	prev := b.done
	b.done, b.total = done, total
	if b.Plain {
		if total > 0 && (done*10/total > prev*10/total || b.drawn.IsZero()) && done < total {
			b.drawn = now
			fmt.Fprintln(b.w, b.line(now))
		}
		return
	}
	interval := b.Interval
	if interval <= 0 {
		interval = 100 * time.Millisecond
	}
	if done < total && !b.drawn.IsZero() && now.Sub(b.drawn) < interval {
		return
	}
	b.drawn = now
	fmt.Fprintf(b.w, "\r%s\x1b[K", b.line(now))
}

// Finish draws the final state and ends the line. Later updates are ignored.
func (b *ProgressBar) Finish() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.finished {
		return
	}
	b.finished = true
	now := b.now()
	if b.start.IsZero() {
		b.start = now
	}
	if b.Plain {
		fmt.Fprintln(b.w, b.line(now))
		return
	}
	fmt.Fprintf(b.w, "\r%s\x1b[K\n", b.line(now))
}

// line renders the bar without control characters.
func (b *ProgressBar) line(now time.Time) string {
	width := b.Width
	if width <= 0 {
		width = 25
	}
	frac := 0.0
	if b.total > 0 {
		frac = min(1, float64(b.done)/float64(b.total))
	}
	elapsed := now.Sub(b.start)
	rate := 0.0
	if elapsed > 0 {
		rate = float64(b.done) / elapsed.Seconds()
	}
	eta, rateText := "?", "?"
	if elapsed > 0 {
		rateText = fmt.Sprintf("%.2f", rate)
	}
	if rate > 0 {
		eta = clock(time.Duration(float64(b.total-b.done) / rate * float64(time.Second)))
	}
	return fmt.Sprintf("%3.0f%%|%s| %d/%d [%s<%s, %s req/s]",
		frac*100, bar(frac, width), b.done, b.total, clock(elapsed), eta, rateText)
}

// bar fills width cells to frac with eighth-block characters.
func bar(frac float64, width int) string {
	eighths := int(frac * float64(width*8))
	full, part := eighths/8, eighths%8
	s := strings.Repeat("█", full)
	if full < width {
		if part > 0 {
			s += string([]rune("▏▎▍▌▋▊▉")[part-1])
			full++
		}
		s += strings.Repeat(" ", width-full)
	}
	return s
}

// clock formats a duration as mm:ss, or h:mm:ss from an hour on.
func clock(d time.Duration) string {
	s := int(d.Round(time.Second).Seconds())
	if s >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
	}
	return fmt.Sprintf("%02d:%02d", s/60, s%60)
}

// IsTerminal reports whether w is a terminal (a character device), where
// a progress bar belongs.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
