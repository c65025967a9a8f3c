//go:build !linux

package claudecode

import "syscall"

// procAttr is the default: only Linux has a parent-death signal. Elsewhere
// (macOS) claude outlives a kill -9 of the relay, at least until it finds
// its output closed; a normal stop or abort still ends it (run.abort).
func procAttr() *syscall.SysProcAttr { return nil }
