//go:build !unix

package dockertest

import "syscall"

func ownProcessGroup() *syscall.SysProcAttr { return nil }
