package cpuset

import (
	"os"
	"slices"
	"strconv"
	"testing"
)

func threads(tb testing.TB) []int {
	tb.Helper()
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		tb.Fatal(err)
	}
	var out []int
	for _, e := range ents {
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, tid)
		}
	}
	return out
}

// TestPinEveryThread pins the test process to one CPU and checks that
// every thread took it, then restores the mask.
func TestPinEveryThread(t *testing.T) {
	cpus, err := usable()
	if err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() {
		if err := pin(cpus); err != nil {
			t.Errorf("restore: %v", err)
		}
	})
	one := cpus[len(cpus)-1:]
	if err := pin(one); err != nil {
		t.Fatal(err)
	}
	for _, tid := range threads(t) {
		got, err := affinity(tid)
		if err != nil {
			continue // exited
		}
		if !slices.Equal(got, one) {
			t.Errorf("thread %d runs on %v, want %v", tid, got, one)
		}
	}
}
