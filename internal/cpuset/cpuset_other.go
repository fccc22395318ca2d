//go:build !linux

package cpuset

import "errors"

var errUnsupported = errors.New("cpuset: CPU affinity is not supported on this system")

func usable() ([]int, error) { return nil, errUnsupported }

func pin([]int) error { return errUnsupported }
