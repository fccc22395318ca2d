//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package store

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
	return lockDir(s.Dir, exclusive)
}

// lockDir takes the lock file of dir (a store, or a commit directory in
// it), shared or exclusive, and returns its release.
func lockDir(dir string, exclusive bool) (func(), error) {
	f, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_CREATE|os.O_RDWR, 0o644)
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

// ReadLock takes the store's lock shared for a reader and returns its
// release: a prune waits until the reader has read the runs' files, so
// none vanishes under it (Commits takes it too, for its own reads). A
// store whose lock file is missing (no add yet) or cannot be opened
// (read-only) is read unlocked: nothing prunes it.
func (s *Store) ReadLock() func() {
	f, err := os.Open(filepath.Join(s.Dir, lockFile))
	if err != nil {
		return func() {}
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_SH)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return func() {}
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}
}
