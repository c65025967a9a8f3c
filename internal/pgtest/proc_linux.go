package pgtest

import "syscall"

// procAttr makes initdb and the server die with the test binary.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
