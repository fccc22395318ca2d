//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package history

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lock takes the store's lock file, shared or exclusive, and returns its
// release. flock(2) locks belong to the open file, so two adds in one
// process exclude a prune as two processes do.
func (s *Store) lock(exclusive bool) (func(), error) {
	f, err := os.OpenFile(filepath.Join(s.Dir, lockFile), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock store: %w", err)
	}
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	for {
		err = syscall.Flock(int(f.Fd()), how)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock store: %w", err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
