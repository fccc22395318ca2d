package store

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// TestConcurrentFirstAdds: jobs that add to a store that does not exist
// yet all land: one creates it, the others find it made.
func TestConcurrentFirstAdds(t *testing.T) {
	file := benchfmtFile(t, "aaa", 0.03, "")
	for round := range 100 {
		dir := filepath.Join(t.TempDir(), "store")
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		for i := range 4 {
			wg.Go(func() {
				s, err := Create(dir)
				if err == nil {
					_, err = s.Add(context.Background(), AddRequest{Commit: fmt.Sprintf("c%d", i), CommitTime: t0.Add(time.Duration(i) * time.Hour), Runner: "cpu4", Files: []string{file}})
				}
				if err != nil {
					errs <- fmt.Errorf("round %d, writer %d: %w", round, i, err)
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
	}
}
