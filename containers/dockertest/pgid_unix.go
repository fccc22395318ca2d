//go:build unix

package dockertest

import "syscall"

// ownProcessGroup puts a child in a process group of its own, out of reach
// of the signals a terminal or a CI runner sends to the test's group.
func ownProcessGroup() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
