//go:build unix && !linux

package proctest

import (
	"errors"
	"syscall"
)

// Alive reports whether pid exists. There is no /proc to tell a zombie
// from a running process; a zombie counts as alive, which errs towards a
// failing test, and orphans are reaped by launchd (init) at once.
func Alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
