//go:build !linux

package pgtest

import "syscall"

// procAttr is the default: there is no parent-death signal here, so a test
// binary that panics or times out leaves its server running (Stop ends it
// on a normal exit). binDir looks for Debian's binaries only, so away from
// Linux the tests skip before starting one.
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }
