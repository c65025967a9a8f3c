package claudecode

import "syscall"

// procAttr makes claude die with the relay: after a kill -9 of the relay
// it would otherwise run on, spending tokens and running tools for an
// answer nobody will get.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
