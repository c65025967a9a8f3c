//go:build !linux

package claudecode

import "syscall"

// procAttr is the default: only Linux has a parent-death signal.
func procAttr() *syscall.SysProcAttr { return nil }
