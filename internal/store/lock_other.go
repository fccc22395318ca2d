//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package store

// lock is a no-op where flock(2) is missing: adds stay whole and never
// collide (unique temporary and run names), but a prune there must not
// run while an add does.
func (s *Store) lock(bool) (func(), error) { return func() {}, nil }

// lockDir is a no-op where flock(2) is missing: there, two adds of one
// commit that disagree may both land.
func lockDir(string, bool) (func(), error) { return func() {}, nil }

// ReadLock is a no-op where flock(2) is missing.
func (s *Store) ReadLock() func() { return func() {} }
